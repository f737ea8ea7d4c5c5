"""The `agentlab` command: `agentlab demo` runs the pattern in a terminal,
`agentlab run "<task>"` has a model plan and solve a question about the task world,
`agentlab doctor` says whether this machine is ready for the course,
`agentlab serve` runs the simulator behind Anthropic's Messages API on 127.0.0.1,
`agentlab course build` writes the exercises from their solutions,
`agentlab course grade` grades learners' exercise notebooks, each in a sandbox (and capstone
notebooks on the held-out tasks), `agentlab course leaderboard` ranks the capstone submissions, and
`agentlab course release DIR` writes the kit learners get (no solutions, grading cases or keys)."""

from __future__ import annotations

import argparse
import os
import signal
import sys
from pathlib import Path

from agentlab import world
from agentlab.agents import world_team
from agentlab.gateway import cli as gateway_cli
from agentlab.llm import choose_backend, describe_backend, make_llm, usage_report
from agentlab.planners import LLMPlanner
from agentlab.run import orchestrate

DEMO_TASKS = (
    ("a task worth decomposing", "Write a short report on why agents plan before they act."),
    ("a simple task (one agent is enough)", "Greet the class in one sentence."),
)


def demo() -> int:
    for title, task in DEMO_TASKS:
        print(f"=== {title} ===")
        print(orchestrate(task))
        print()
    return 0


def run(args: argparse.Namespace) -> int:
    """Plan and solve one question about the Skerrow Isles on the active backend."""
    if args.samples or not args.task:
        print(f"Sample tasks about {world.ARCHIPELAGO} (ask your own in the same forms):")
        for task in world.sample_tasks():
            print(f"  {task.family:<7} {task.question}")
        print('Run one with: agentlab run "<task>"')
        return 0 if args.samples else 2
    backend = choose_backend()
    options = {}
    if backend == "simulated":
        kinds = [k.strip() for k in args.errors.split(",")] if args.errors else None
        options = {"seed": args.seed, "error_rate": args.error_rate, "error_kinds": kinds}
    elif args.error_rate or args.errors:
        print("--error-rate and --errors apply to the simulated backend only.", file=sys.stderr)
        return 2
    print(describe_backend())
    try:
        llm = make_llm(**options)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    team = world_team(llm, model=args.executor_model)
    planner = LLMPlanner(llm, team, model=args.planner_model, tool_steps=not args.agents_only)
    result = orchestrate(args.task, planner, team, workers=args.workers)
    if result.plan is None:  # planning failed (no valid plan, or the model call failed)
        for reply, problem in planner.rejected:
            print(f"rejected plan: {problem}\n  {reply[:200]}")
        print(result.reason[0].upper() + result.reason[1:], file=sys.stderr)
        return 1
    print(result)
    print()
    print(usage_report(result))
    try:
        gold = world.gold_answer(args.task)
    except (world.QuestionError, world.ToolError):
        print("\n(Not a question the world can answer from its records, so there is no gold answer.)")
    else:
        verdict = "correct" if world.check_answer(result.deliverable, gold) else "WRONG"
        print(f"\nGold answer (from the records): {gold} -> the team's answer is {verdict}.")
    return 0 if result.status == "done" else 1


def doctor() -> int:
    """Whether this machine is ready for the course (agentlab.course.doctor)."""
    from agentlab.course.doctor import doctor as check_this_machine

    return check_this_machine()


def serve_key(args: argparse.Namespace) -> str | None:
    """The key `agentlab serve` wants: from --api-key-file, else $AGENTLAB_SERVE_API_KEY, else none
    (any key will do). Never from the command line, where anyone on the machine reads it (`ps`)."""
    if args.api_key is not None:
        raise ValueError(
            "--api-key would show the key to anyone on this machine (ps): "
            "set AGENTLAB_SERVE_API_KEY, or put it in a file and give --api-key-file PATH"
        )
    if args.api_key_file is None:
        return os.environ.get("AGENTLAB_SERVE_API_KEY") or None
    try:
        key = Path(args.api_key_file).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as e:
        said = getattr(e, "strerror", None) or e
        raise ValueError(f"cannot read the key from {args.api_key_file}: {said}") from None
    if not key or "\n" in key:
        raise ValueError(f"{args.api_key_file} holds no key (one line, the key)")
    return key


def serve(args: argparse.Namespace) -> int:
    """Serve the simulator over Anthropic's Messages API on 127.0.0.1 until Ctrl-C."""
    from agentlab.llm.serve import SimServer

    log = (lambda line: print(line, flush=True)) if args.log else None
    options = {"seed": args.seed, "error_rate": args.error_rate, "fault": args.fault, "every": args.every}
    options["pace"] = args.pace
    try:
        server = SimServer(args.port, **options, api_key=serve_key(args), log=log)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except OSError as e:  # the port is taken, say
        where = f"cannot listen on 127.0.0.1:{args.port}: {e.strerror or e}"
        print(f"error: {where} (--port 0 takes any free port)", file=sys.stderr)
        return 2
    print(f"agentlab serve: the simulator (seed {args.seed}, error rate {args.error_rate:g}) at {server.url}")
    print("answers Anthropic's Messages API (POST /v1/messages); it is a simulator, not a real model.")
    if args.fault:
        which = "every request" if args.every == 1 else f"one request in {args.every}"
        print(f"Fault {args.fault} on {which}.")
    print("Point the kit, or the anthropic SDK, at it (in another shell):")
    print(f"  export ANTHROPIC_BASE_URL={server.url}")
    key = "<the key this server wants>" if server.api_key else "any-key  # any value will do"
    print(f"  export ANTHROPIC_API_KEY={key}")
    print("Ctrl-C stops it.", flush=True)
    # A shell starts a background job with SIGINT ignored, and the child inherits that: ask for it back.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        server.serve_forever(poll_interval=0.1)
    except KeyboardInterrupt:
        print(f"\nStopped after {server.counts['requests']} request(s).")
    finally:
        server.stop()
    return 0


def course_command(args: argparse.Namespace) -> int:
    """Write exercises/ from solutions/ (build), fail if they differ (check), or grade notebooks."""
    from agentlab.course import exercises

    if args.action == "grade":
        return grade_command(args)
    if args.action == "release":
        return release_command(args)
    if args.action == "export":
        return export_command(args)
    if args.action == "leaderboard":
        return leaderboard_command(args)
    try:
        stale = exercises.build(args.root, write=args.action == "build", only=args.notebooks or None)
    except exercises.CourseError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    for path in stale:
        print(f"{'wrote' if args.action == 'build' else 'out of date'}: {path}")
    if args.action == "check" and stale:
        print("Run `agentlab course build` and commit the exercises.", file=sys.stderr)
        return 1
    print(f"{len(stale)} exercise(s) {'rebuilt' if args.action == 'build' else 'out of date'}.")
    return 0


def grade_command(args: argparse.Namespace) -> int:
    """Grade each notebook in its own sandboxed child (a broken one is reported and the batch goes
    on), keeping every result in the results file as it comes (a batch started again resumes), print
    the report with its totals, and write the CSV or JSON gradebook asked for ("-": to stdout, alone).
    Exits 0 only if every exercise of every notebook passed."""
    from pathlib import Path

    from agentlab.course import batch, gradebook, sandbox

    if not args.notebooks:
        print("error: name the learners' notebooks to grade", file=sys.stderr)
        return 2
    if args.timeout <= 0 or args.jobs < 1:
        print("error: --timeout must be a positive number of seconds, --jobs at least 1", file=sys.stderr)
        return 2
    if args.task_timeout <= 0:
        print("error: --task-timeout must be a positive number of seconds", file=sys.stderr)
        return 2
    try:
        sandbox.ready()
    except sandbox.SandboxUnavailable as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    results = None if args.results == "-" else Path(args.results)
    if results and args.fresh and results.exists():
        results.unlink()
    quiet = "-" in (args.csv, args.json)
    resumed = []

    def progress(graded, was_resumed: bool) -> None:
        if was_resumed:
            resumed.append(graded.path)
        elif not quiet:
            print(f"graded {graded.path}", file=sys.stderr, flush=True)

    graded = batch.grade_all(
        args.notebooks, args.timeout, args.root, results, args.jobs, progress, args.task_timeout
    )
    if resumed and not quiet:
        print(
            f"{len(resumed)} notebook(s) already graded in {results}, not graded again (--fresh to regrade)",
            file=sys.stderr,
        )
    outputs = {args.csv: gradebook.to_csv, args.json: gradebook.to_json}
    if not quiet:
        print(gradebook.to_text(graded))
    for target, write in outputs.items():
        if target == "-":
            sys.stdout.write(write(graded))
        elif target:
            with open(target, "w", encoding="utf-8", newline="") as f:
                f.write(write(graded))
    return 0 if gradebook.all_passed(graded) else 1


def leaderboard_command(args: argparse.Namespace) -> int:
    """The capstone leaderboard from the grader's capstone log (beside --results): printed, and
    written as HTML (--html) and CSV (--csv) when asked ("-": to stdout, alone)."""
    from agentlab.course import batch, leaderboard

    if args.notebooks:
        print("error: the leaderboard reads the grader's results only: name no notebooks", file=sys.stderr)
        return 2
    log = batch.capstone_log(Path(args.results))
    if not log.exists():  # an empty board, and why
        print(
            f"no capstone submission graded yet (no {log}): agentlab course grade writes it", file=sys.stderr
        )
    board = leaderboard.board(log)
    outputs = {args.html: leaderboard.to_html, args.csv: leaderboard.to_csv}
    if "-" not in outputs:
        print(leaderboard.to_text(board))
    for target, write in outputs.items():
        if target == "-":
            sys.stdout.write(write(board))
        elif target:
            Path(target).write_text(write(board), encoding="utf-8")
    return 0


def release_command(args: argparse.Namespace) -> int:
    """Write what goes to learners into a folder: no solutions, no grading cases, no keys."""
    from agentlab.course import release

    if len(args.notebooks) != 1:
        print("error: name one folder to write the learners' release into", file=sys.stderr)
        return 2
    try:
        written = release.build(args.root, args.notebooks[0])
    except release.ReleaseError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"wrote {len(written)} files to {args.notebooks[0]} (no solutions, grading cases or keys)")
    return 0


def export_command(args: argparse.Namespace) -> int:
    """`agentlab course export nbgrader DIR [NN ...]`: the exercises as an nbgrader course in DIR."""
    from agentlab.course import nbgrader

    if len(args.notebooks) < 2 or args.notebooks[0] != "nbgrader":
        usage = "agentlab course export nbgrader DIR (optionally then notebook numbers)"
        print(f"error: say `{usage}`", file=sys.stderr)
        return 2
    target, only = Path(args.notebooks[1]), args.notebooks[2:] or None
    solutions = Path(args.root).resolve() / "solutions"
    if not solutions.is_dir():
        where = f"no solutions/ at {solutions}"
        print(f"error: {where}: run it in the kit's folder or point at it with --root KIT", file=sys.stderr)
        return 2
    try:
        written = nbgrader.export(args.root, target, only=only)
    except nbgrader.ExportError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(nbgrader.describe(written, target))
    return 0


def progress(args: argparse.Namespace) -> int:
    """`agentlab progress`: the learner's quizzes and checks, read from their saved notebooks."""
    from agentlab.progress import course_root, items, report

    try:
        print(report(items(course_root(args.root))))
    except FileNotFoundError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


def parser() -> argparse.ArgumentParser:
    """The `agentlab` command line: its commands and their options."""
    parser = argparse.ArgumentParser(prog="agentlab", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("demo", help="run a decomposed task and a simple task, and print both")
    commands.add_parser("doctor", help="check the packages the course needs, and that its backend answers")
    solve = commands.add_parser("run", help="plan and solve a question about the task world")
    solve.add_argument("task", nargs="?", help='e.g. "What is the population of Varra?"')
    solve.add_argument("--samples", action="store_true", help="list sample tasks and stop")
    solve.add_argument("--workers", type=int, default=1, help="steps run at once (default 1)")
    solve.add_argument(
        "--agents-only", action="store_true", help="no direct tool steps: agents do every step"
    )
    solve.add_argument("--planner-model", help="model for the plan (simulator: sim-large or sim-small)")
    solve.add_argument("--executor-model", help="model for the executors")
    solve.add_argument("--seed", type=int, default=0, help="simulator: seed (default 0)")
    solve.add_argument("--error-rate", type=float, default=0.0, help="simulator: chance of an error per call")
    solve.add_argument("--errors", help="simulator: error kinds, comma-separated (default: all)")
    sim = commands.add_parser("serve", help="serve the simulator over Anthropic's Messages API, locally")
    sim.add_argument("--port", type=int, default=8765, help="port on 127.0.0.1 (default 8765; 0: any free)")
    sim.add_argument("--seed", type=int, default=0, help="simulator: seed (default 0)")
    sim.add_argument("--error-rate", type=float, default=0.0, help="simulator: chance of a mistake per call")
    sim.add_argument("--fault", help="an HTTP fault, KIND[:SECONDS]: 429, 500, 529, broken, shape or slow")
    sim.add_argument("--every", type=int, default=1, help="the fault hits every N-th request (default 1)")
    sim.add_argument("--api-key", help=argparse.SUPPRESS)  # refused: it would show in `ps`
    sim.add_argument(
        "--api-key-file",
        metavar="PATH",
        help="accept only the key in this file (default: $AGENTLAB_SERVE_API_KEY; else any key)",
    )
    sim.add_argument(
        "--pace", type=float, default=0.0, help="real seconds per modelled second (default 0: answer at once)"
    )
    sim.add_argument("--log", action="store_true", help="print one line per request and its reply")
    mine = commands.add_parser("progress", help="what you have done in the course, and what is next")
    mine.add_argument("--root", help="the course folder (default: the one around this folder)")
    gateway_cli.add_parser(commands)
    course = commands.add_parser("course", help="generate exercises from solutions; grade notebooks")
    course.add_argument(
        "action",
        choices=("build", "check", "grade", "release", "export", "leaderboard"),
        help="build: write; check: compare; grade: run in a sandbox; release: write the learners' kit to "
        "DIR; export nbgrader DIR: the exercises as an nbgrader course; leaderboard: rank the capstone "
        "submissions graded",
    )
    course.add_argument(
        "notebooks",
        nargs="*",
        help="grade: learners' notebooks, or archives of their folders (.zip, .tar.gz); "
        "build/check: only these (e.g. 03)",
    )
    course.add_argument("--root", default=".", help="the kit's folder (default: here)")
    course.add_argument(
        "--timeout", type=float, default=300, help="grade: seconds each notebook may run (default 300)"
    )
    course.add_argument(
        "--csv", help="grade, leaderboard: also write a CSV gradebook or board to this file ('-': stdout)"
    )
    course.add_argument("--html", help="leaderboard: also write the board as an HTML page ('-': stdout)")
    course.add_argument(
        "--task-timeout",
        type=float,
        default=30,
        help="grade: seconds a capstone team may take on one held-out task (default 30)",
    )
    course.add_argument("--json", help="grade: also write the results as JSON to this file ('-': stdout)")
    course.add_argument(
        "--results",
        default=".agentlab/grades.jsonl",
        help="grade: each result is kept here as it comes, and a batch started again resumes from it "
        "(default .agentlab/grades.jsonl; '-': keep nothing); capstone submissions also go to "
        "capstone.jsonl beside it, which the leaderboard reads",
    )
    course.add_argument("--fresh", action="store_true", help="grade: forget the results file and regrade all")
    course.add_argument("--jobs", type=int, default=1, help="grade: notebooks graded at once (default 1)")
    return parser


def parse(argv: list[str] | None) -> argparse.Namespace:
    """The command line read with options anywhere: `course grade --fresh --csv g.csv a.ipynb b.ipynb`
    as well as the files first. (argparse gives `course`'s list of notebooks the empty list it finds
    before the first option, and would call the files after it unrecognized.)"""
    commands = parser()
    args, extra = commands.parse_known_args(argv)
    unknown = [word for word in extra if word.startswith("-")]
    if unknown or (extra and args.command != "course"):
        commands.error(f"unrecognized arguments: {' '.join(unknown or extra)}")
    if extra:
        args.notebooks = [*args.notebooks, *extra]
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    if args.command == "run":
        return run(args)
    if args.command == "course":
        return course_command(args)
    if args.command == "serve":
        return serve(args)
    if args.command == "progress":
        return progress(args)
    if args.command == "gateway":
        return gateway_cli.main(args)
    return {"demo": demo, "doctor": doctor}[args.command]()


if __name__ == "__main__":
    sys.exit(main())
