"""`agentlab gateway ...`: the instructor's commands (serve, learner add/revoke/rotate/list, report).

`add_parser(commands)` adds the `gateway` command to the kit's `agentlab` parser and `main(args)`
runs it, so the kit's CLI needs two lines for the whole gateway. Every command takes `--db` (the
class's SQLite file, default class.db); errors are one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import csv
import os
import secrets
import signal
import sys

DEFAULT_DB = "class.db"
KEY_VARIABLE = "ANTHROPIC_API_KEY"  # where `serve` reads the instructor's key


def add_parser(commands: argparse._SubParsersAction) -> None:
    """The `gateway` command and its subcommands, under the kit's `agentlab` parser."""
    gateway = commands.add_parser(
        "gateway", help="run a class on a real model: a token and a budget per learner"
    )
    actions = gateway.add_subparsers(dest="gateway_action", required=True)
    db = argparse.ArgumentParser(add_help=False)
    db.add_argument("--db", default=DEFAULT_DB, help=f"the class's SQLite file (default {DEFAULT_DB})")

    serve = actions.add_parser("serve", parents=[db], help="serve learners until Ctrl-C")
    serve.add_argument(
        "--upstream", default=None, help="the Messages API to forward to (default Anthropic's)"
    )
    serve.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (0.0.0.0: the whole network)"
    )
    serve.add_argument("--port", type=int, default=8766, help="port (default 8766; 0: any free one)")
    serve.add_argument(
        "--timeout", type=float, default=600.0, help="seconds to wait for the upstream (default 600)"
    )
    serve.add_argument(
        "--map", action="append", default=[], metavar="OLD=NEW", help="send model OLD as NEW (repeatable)"
    )
    serve.add_argument("--log", action="store_true", help="print one line per request (names, never tokens)")

    learner = actions.add_parser("learner", help="add, revoke, rotate or list learners")
    verbs = learner.add_subparsers(dest="learner_action", required=True)
    add = verbs.add_parser("add", parents=[db], help="register a learner and print the lines they export")
    add.add_argument("name")
    add.add_argument("--dollars", required=True, help="budget per UTC day, like 2/day (or none)")
    add.add_argument("--max-tokens", type=int, default=None, help="cap on a request's max_tokens")
    add.add_argument("--models", default=None, help="allowed models, comma-separated (default any)")
    add.add_argument("--total", type=float, default=None, help="budget in dollars for the whole course")
    add.add_argument("--per-minute", type=int, default=None, help="requests per minute (default no limit)")
    add.add_argument("--concurrent", type=int, default=None, help="requests at once (default no limit)")
    add.add_argument(
        "--url", default="http://127.0.0.1:8766", help="the gateway's address as learners reach it"
    )
    for verb, said in (
        ("revoke", "stop a learner's token at once"),
        ("rotate", "give a learner a new token"),
    ):
        one = verbs.add_parser(verb, parents=[db], help=said)
        one.add_argument("name")
        if verb == "rotate":
            one.add_argument("--url", default="http://127.0.0.1:8766", help="the gateway's address")
    verbs.add_parser("list", parents=[db], help="learners, their limits, and whether revoked")

    check = actions.add_parser(
        "check-models", parents=[db], help="name the class's model ids the upstream lost"
    )
    check.add_argument("--upstream", default=None, help="the Messages API to ask (default Anthropic's)")

    recordings = actions.add_parser("recordings", help="a learner's calls, as a recording to replay")
    what = recordings.add_subparsers(dest="recordings_action", required=True)
    export = what.add_parser("export", parents=[db], help="write DIR/NAME.jsonl for AGENTLAB_REPLAY")
    export.add_argument("name")
    export.add_argument("folder", metavar="DIR")
    export.add_argument("--since", default=None, help="only calls from this UTC time, like 2026-11-30T14:00")
    export.add_argument("--until", default=None, help="only calls up to this UTC time")

    budget = actions.add_parser(
        "budget", parents=[db], help="the class's dollars per day, all learners together"
    )
    budget.add_argument("dollars", nargs="?", default=None, help="like 40/day, or none; omitted: show it")

    report = actions.add_parser(
        "report", parents=[db], help="CSV per learner and model: calls, tokens, dollars"
    )
    report.add_argument("--out", default="-", help="file to write (default '-': stdout)")


def main(args: argparse.Namespace) -> int:
    """Run `agentlab gateway ...` (as parsed by the parser `add_parser` extended)."""
    from agentlab.gateway.store import Ledger

    action = {"learner": getattr(args, "learner_action", ""), "recordings": "export"}.get(
        args.gateway_action, args.gateway_action
    )
    try:
        if action == "serve":
            return serve(args)
        if action == "check-models":
            return check_models(args)
        ledger = Ledger(args.db)
        try:
            commands = {"add": add, "revoke": revoke, "rotate": rotate, "list": listing, "report": report}
            commands.update({"export": export_recording, "budget": class_budget})
            return commands[action](ledger, args)
        finally:
            ledger.close()
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


def exports(url: str, token: str) -> str:
    """The two lines a learner runs (or puts in their notebook's environment)."""
    return f"export ANTHROPIC_BASE_URL={url}\nexport ANTHROPIC_API_KEY={token}"


def add(ledger, args: argparse.Namespace) -> int:
    from agentlab.gateway.limits import parse_dollars, parse_models

    for option in ("max_tokens", "per_minute", "concurrent"):
        value = getattr(args, option)
        if value is not None and value < 1:
            raise ValueError(f"--{option.replace('_', '-')} must be a whole number >= 1, got {value}")
    if args.total is not None and not 0 <= args.total < float("inf"):
        raise ValueError(f"--total must be a number of dollars >= 0, got {args.total}")
    limits = (args.max_tokens, parse_models(args.models), args.per_minute, args.concurrent, args.total)
    token = ledger.add_learner(args.name, parse_dollars(args.dollars), *limits)
    print(exports(args.url, token))
    return 0


def revoke(ledger, args: argparse.Namespace) -> int:
    ledger.revoke(args.name)
    print(f"revoked {args.name}: their token stops working at their next request")
    return 0


def rotate(ledger, args: argparse.Namespace) -> int:
    print(exports(args.url, ledger.rotate(args.name)))
    return 0


def listing(ledger, args: argparse.Namespace) -> int:
    rows = ledger.learners()
    titles = f"{'dollars/day':>12}{'max_tokens':>11}{'per min':>8}{'at once':>8}"
    print(f"{'learner':<20}{titles}  {'models':<30}status")
    for one in rows:
        dollars = "none" if one.dollars_per_day is None else f"{one.dollars_per_day:.2f}"
        cap, rate, once = (
            "none" if n is None else str(n) for n in (one.max_tokens, one.per_minute, one.concurrent)
        )
        status = "revoked" if one.revoked else "active"
        models = ",".join(one.models) or "any"
        print(f"{one.name:<20}{dollars:>12}{cap:>11}{rate:>8}{once:>8}  {models:<30}{status}")
    print(f"{len(rows)} learner(s) in {ledger.path}")
    return 0


def report(ledger, args: argparse.Namespace) -> int:
    from agentlab.gateway.store import REPORT_FIELDS

    rows = ledger.report()
    out = sys.stdout if args.out == "-" else open(args.out, "w", newline="")
    try:
        writer = csv.DictWriter(out, REPORT_FIELDS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(  # never 2.3e-05
            {**row, "dollars": f"{row['dollars']:.8f}", "dollars_today": f"{row['dollars_today']:.8f}"}
            for row in rows
        )
    finally:
        if out is not sys.stdout:
            out.close()
    return 0


def export_recording(ledger, args: argparse.Namespace) -> int:
    from agentlab.gateway.recordings import export, utc_time

    window = utc_time(args.since, "--since"), utc_time(args.until, "--until")
    path, calls, cut = export(ledger, args.name, args.folder, *window)
    cuts = f" ({cut} cut short by the gateway: they replay as the error they were)" if cut else ""
    print(f"wrote {calls} call(s) of {args.name} to {path}{cuts}")
    print(f"replay them offline: AGENTLAB_BACKEND=replay AGENTLAB_REPLAY={path}")
    return 0


def class_budget(ledger, args: argparse.Namespace) -> int:
    from agentlab.gateway.limits import parse_dollars

    if args.dollars is not None:
        try:
            dollars = parse_dollars(args.dollars)
        except ValueError:
            raise ValueError(
                f"budget {args.dollars!r}: write the class's dollars per day, like 40/day (or none)"
            ) from None
        ledger.set_class_budget(dollars)
    limit = ledger.class_budget()
    print(
        "the class has no budget of its own (each learner's still holds)"
        if limit is None
        else f"the class's budget: ${limit:.2f}/day, all learners together (resets at 00:00 UTC)"
    )
    return 0


def check_models(args: argparse.Namespace) -> int:
    """Exit 0 if the upstream lists every model the class uses; else 1, naming each gone one."""
    from agentlab.gateway.models import class_models, gone, listed_models
    from agentlab.gateway.store import Ledger

    ledger = Ledger(args.db)
    try:
        configured = class_models(learner.models for learner in ledger.learners())
    finally:
        ledger.close()
    missing = gone(configured, listed_models(upstream(args.upstream)))
    for one in missing:
        instead = f"; the nearest listed is {one.nearest}" if one.nearest else ""
        print(f"gone: {one.model} is not in the upstream's model list{instead}")
    print(f"{len(configured) - len(missing)} of {len(configured)} model(s) the class uses are listed")
    return 1 if missing else 0


def parse_map(text: str) -> tuple[str, str]:
    """`"old=new"` -> ("old", "new"); ValueError otherwise."""
    old, _, new = text.partition("=")
    if not old.strip() or not new.strip():
        raise ValueError(f"--map {text!r}: write OLD=NEW, like claude-haiku-4-1=claude-haiku-5-5")
    return old.strip(), new.strip()


def upstream(url: str | None, timeout: float = 600.0):
    """The upstream at `url`, else where ANTHROPIC_BASE_URL points (as the SDK reads it), else
    Anthropic's API; with the key from the environment."""
    from agentlab.gateway.upstream import DEFAULT_URL, Upstream

    key = os.environ.get(KEY_VARIABLE, "")
    if not key and url is None:
        raise ValueError(
            f"set {KEY_VARIABLE} to your key in the gateway's environment (or give --upstream URL)"
        )
    return Upstream(url or os.environ.get("ANTHROPIC_BASE_URL") or DEFAULT_URL, key, timeout)


def serve(args: argparse.Namespace) -> int:
    from agentlab.gateway.server import GatewayServer
    from agentlab.gateway.store import Ledger

    if not 0 < args.timeout <= 86_400:
        raise ValueError(f"--timeout must be between 0 and 86400 seconds, got {args.timeout:g}")
    way_out = upstream(args.upstream, args.timeout)
    mapped = dict(parse_map(one) for one in args.map)
    ledger = Ledger(args.db)
    log = (lambda line: print(line, flush=True)) if args.log else None
    board = secrets.token_urlsafe(16)  # this run's dashboard token: in memory and on this console only
    try:
        server = GatewayServer(ledger, way_out, args.port, args.host, log, board, mapped)
    except OSError as e:
        ledger.close()
        raise ValueError(
            f"cannot listen on {args.host}:{args.port}: {e.strerror or e} (--port 0: any free port)"
        ) from None
    with_key = f"with the key from ${KEY_VARIABLE}" if way_out.key else "with no key"
    print(f"agentlab gateway at {server.url}, forwarding to {way_out.url} {with_key}; ledger {args.db}")
    print(f"Spend so far: {server.url}/dashboard?token={board}")
    print(
        "Add learners with `agentlab gateway learner add NAME --dollars 2/day`. Ctrl-C stops it.", flush=True
    )
    signal.signal(signal.SIGINT, signal.default_int_handler)  # a background job starts with SIGINT ignored
    try:
        server.serve_forever(poll_interval=0.1)
    except KeyboardInterrupt:
        print("\nStopped; every answered call is in the ledger.")
    finally:
        server.stop()
        ledger.close()
    return 0
