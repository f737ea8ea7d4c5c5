"""Notebook 04's exercise checks: each fails on the stub and on a plausible wrong answer, and passes
on the solution, taken from the solution notebook itself."""

from dataclasses import replace
from pathlib import Path

import notebook_code
import pytest

from agentlab import orchestrate
from agentlab.budget import Budget
from agentlab.course.checks import CheckFailed, check

notebook_code.skip_without_solutions()
ROOT = Path(__file__).resolve().parents[1]
NAME = "04_monitor_and_replan.ipynb"


def exercise_cell(marker: str) -> str:
    return notebook_code.exercise_cell(ROOT / "exercises" / NAME, marker)


@pytest.fixture(scope="module")
def solution():
    return notebook_code.run_cells(ROOT / "solutions" / NAME, answers=True)


@pytest.fixture(scope="module")
def exercise():
    return notebook_code.run_cells(ROOT / "exercises" / NAME, answers=False)


# --- 04.total-check -------------------------------------------------------------------------------


def test_total_check_passes_on_the_solution(solution, capsys):
    check("04.total-check", solution["total_covers_its_parts"])
    assert "All 16 checks passed." in capsys.readouterr().out


def test_total_check_stub_raises_not_implemented(exercise):
    with pytest.raises(NotImplementedError):
        check("04.total-check", exercise["total_covers_its_parts"])


def judges_the_tool_call(step, output, context):
    """Reads the parts from the calculate call's arguments (the call may be the mistake) and the
    total with float() (which refuses '1,250')."""
    if step.tool != "calculate" or "-" in step.args["expression"]:
        return None
    refs = [ref.strip().lstrip("$") for ref in step.args["expression"].split("+")]
    if not all(ref in context for ref in refs):
        return None
    if float(output) < max(float(context[ref]) for ref in refs):
        return "the total is smaller than one of its parts"
    return None


def test_total_check_fails_when_it_judges_the_call_instead_of_the_question(capsys):
    with pytest.raises(CheckFailed, match="7 of 16 checks failed"):
        check("04.total-check", judges_the_tool_call)
    failed = notebook_code.failed_cases(capsys)
    assert failed[0].startswith(
        "✗ the right total, with a thousands separator: no objection: raised ValueError"
    )
    assert failed[1].startswith("✗ the right total in a sentence, as a task's check reads it: no objection")
    assert failed[2] == (
        "✗ a call that subtracts where the question adds (the tool's result, -30): a problem, said in words: "
        "returned None"
    )
    assert (
        failed[3]
        == "✗ an agent's total smaller than one of its parts: a problem, said in words: returned None"
    )


def sum_of_the_question(step, output, context):
    """Works the sum out again and objects to any other total: a critic, not a plausibility check."""
    from agentlab import world
    from agentlab.plan import fill_in

    try:
        question = world.parse_question(fill_in(step.instruction, context))
    except world.QuestionError:
        return None
    if not isinstance(question, world.Arithmetic) or "-" in question.expression:
        return None
    try:
        total, parts = float(world.normalise(output)), [float(p) for p in question.expression.split("+")]
    except ValueError:
        return "not a number"
    return None if total == sum(parts) else f"{output} is not {sum(parts):g}"


def at_least_the_sum(step, output, context):
    """Asks a total to reach the sum of its parts: it has worked the sum out after all."""
    from agentlab import world
    from agentlab.plan import fill_in

    try:
        question = world.parse_question(fill_in(step.instruction, context))
    except world.QuestionError:
        return None
    if not isinstance(question, world.Arithmetic) or "-" in question.expression:
        return None
    try:
        total, parts = float(world.normalise(output)), [float(p) for p in question.expression.split("+")]
    except ValueError:
        return "not a number"
    return None if total >= sum(parts) else f"{output} is less than the parts together"


@pytest.mark.parametrize(
    "wrong, line",
    [
        (
            sum_of_the_question,
            "✗ a plausible total that is not the sum (10% high): plausibility cannot see it",
        ),
        (at_least_the_sum, "✗ a plausible total below the sum, above every part: no objection"),
    ],
    ids=lambda x: getattr(x, "__name__", ""),
)
def test_total_check_catches_a_check_that_works_the_sum_out(wrong, line, capsys):
    notebook_code.caught(capsys, "04.total-check", wrong, line)


# --- 04.retry-then-reroute ------------------------------------------------------------------------


def test_retry_then_reroute_passes_on_the_solution(solution, capsys):
    check("04.retry-then-reroute", solution["attempt_with_recovery"])
    assert "All 8 checks passed." in capsys.readouterr().out


def test_retry_then_reroute_stub_raises_not_implemented(exercise):
    with pytest.raises(NotImplementedError):
        check("04.retry-then-reroute", exercise["attempt_with_recovery"])


def retries_counted_as_attempts(step, context, team, retries, stand_in, checks=()):
    """Reads `retries` as the number of attempts in all (one short), and hands the stand-in the step
    with its tool call unchanged."""
    from agentlab.monitor import Failure, inspect

    attempts = []
    for role in [step.role] * retries + [stand_in.get(step.role)]:
        if role is None:
            break
        try:
            output = team[role](replace(step, role=role), context).output
            failure = inspect(step, output, context, checks)
        except Exception as error:
            failure = Failure("error", str(error))
        attempts.append((role, failure))
        if failure is None:
            return output, attempts
    raise RuntimeError(f"step {step.id} failed")


def test_retry_then_reroute_fails_one_short_and_with_the_tool_call_kept(capsys):
    with pytest.raises(CheckFailed):
        check("04.retry-then-reroute", retries_counted_as_attempts)
    failed = notebook_code.failed_cases(capsys)
    assert failed[0].startswith("✗ FAILED every time: 1 + 2 attempts, then the stand-in: returned")
    assert failed[0].endswith("asked {'researcher': 2, 'backup': 1}")
    assert failed[-1].startswith("✗ the stand-in gets the step as an instruction")


def test_retry_then_reroute_fails_an_unbounded_loop_instead_of_hanging(capsys):
    def until_it_works(step, context, team, retries, stand_in, checks=()):
        while True:
            try:
                output = team[step.role](step, context).output
                if not output.startswith("FAILED"):
                    return output, [(step.role, None)]
            except Exception:
                pass

    with pytest.raises(CheckFailed):
        check("04.retry-then-reroute", until_it_works)
    assert "does the loop have a bound?" in capsys.readouterr().out


def recovery_with(stand_in_retried=False, no_checks=False, tool_kept=False):
    """attempt_with_recovery with one mistake: the stand-in retried as often as the role, the checks
    never consulted, or the stand-in handed the step with its tool call."""
    from agentlab.monitor import Failure, inspect

    def recover(step, context, team, retries, stand_in, checks=()):
        tries = [step] * (1 + retries)
        if step.role in stand_in:
            backup = replace(step, role=stand_in[step.role])
            backup = backup if tool_kept else replace(backup, tool=None, args={})
            tries += [backup] * (1 + retries if stand_in_retried else 1)
        attempts = []
        for tried in tries:
            try:
                output = team[tried.role](tried, context).output
                failure = inspect(step, output, context, () if no_checks else checks)
            except Exception as error:
                failure = Failure("error", str(error))
            attempts.append((tried.role, failure))
            if failure is None:
                return output, attempts
        raise RuntimeError(f"step {step.id!r} failed")

    return recover


@pytest.mark.parametrize(
    "mistake, line",
    [
        (
            {"stand_in_retried": True},
            "✗ the stand-in fails too: the step fails, after one try by the stand-in",
        ),
        ({"no_checks": True}, "✗ an answer the check rejects is a failure too"),
        ({"tool_kept": True}, "✗ the stand-in gets the step as an instruction"),
    ],
    ids=lambda x: next(iter(x)),
)
def test_retry_then_reroute_catches_a_retried_stand_in_unread_checks_and_a_kept_tool(mistake, line, capsys):
    notebook_code.caught(capsys, "04.retry-then-reroute", recovery_with(**mistake), line)


def test_the_solutions_error_names_the_step_and_every_attempt(solution):
    from agentlab.agents import Agent
    from agentlab.plan import Step

    def down(step, context):
        raise ConnectionError("down")

    team = {"researcher": Agent("researcher", down), "backup": Agent("backup", lambda s, c: "FAILED")}
    step = Step("s7", "researcher", "Look it up.")
    with pytest.raises(RuntimeError, match=r"step 's7' failed after 3 attempt\(s\): researcher \(error\), "):
        solution["attempt_with_recovery"](step, {}, team, 1, {"researcher": "backup"})


# --- 04.installments ------------------------------------------------------------------------------


def test_installments_passes_on_the_solution(solution, capsys):
    check("04.installments", solution["run_in_installments"])
    assert "All 10 checks passed." in capsys.readouterr().out


def test_installments_stub_raises_not_implemented(exercise):
    with pytest.raises(NotImplementedError):
        check("04.installments", exercise["run_in_installments"])


def same_cap_every_time(task, planner, team, path, calls_per_installment, max_installments=20):
    """Gives every installment the same cap, forgetting that the budget counts the calls made before
    the resume too, and stops only at "done"."""
    runs = []
    for _ in range(max_installments):
        runs.append(
            orchestrate(
                task, planner, team, checkpoint=path, resume=True, budget=Budget(calls=calls_per_installment)
            )
        )
        if runs[-1].status == "done":
            return runs
    raise RuntimeError(f"not done after {max_installments} installments")


def test_installments_fail_when_every_installment_has_the_same_cap(capsys):
    with pytest.raises(CheckFailed):
        check("04.installments", same_cap_every_time)
    failed = notebook_code.failed_cases(capsys)
    assert failed[0].startswith(
        "✗ a chain of lookups, 2 calls an installment: a list of runs: raised RuntimeError"
    )
    assert any(line.startswith("✗ a step that fails for good") for line in failed)


def test_installments_fail_when_each_one_starts_afresh(capsys):
    def without_resume(task, planner, team, path, calls_per_installment, max_installments=20):
        runs = []
        for n in range(1, max_installments + 1):
            runs.append(
                orchestrate(
                    task, planner, team, checkpoint=path, budget=Budget(calls=n * calls_per_installment)
                )
            )
            if runs[-1].status != "stopped":
                return runs
        raise RuntimeError(f"not over after {max_installments} installments")

    with pytest.raises(CheckFailed):
        check("04.installments", without_resume)
    assert "✗ no step ran twice" in capsys.readouterr().out


def installments_with(message=None, past_failure=False):
    """run_in_installments with one mistake: an error that does not say the bound (`message`), or
    installments paid on after a run has failed for good."""

    def pay(task, planner, team, path, calls_per_installment, max_installments=20):
        runs = []
        for n in range(1, max_installments + 1):
            budget = Budget(calls=n * calls_per_installment)
            runs.append(orchestrate(task, planner, team, checkpoint=path, resume=True, budget=budget))
            if runs[-1].status == "done" or (runs[-1].status == "failed" and not past_failure):
                return runs
        raise RuntimeError(message or f"not over after max_installments={max_installments}")

    return pay


@pytest.mark.parametrize(
    "mistake, line",
    [
        ({"message": "the run did not finish in time"}, "✗ not finished within max_installments=2"),
        ({"message": "not over after 20 installments"}, "✗ not finished within max_installments=3"),
        ({"past_failure": True}, "✗ a step that fails for good: the run ends 'failed'"),
    ],
    ids=["no-bound", "the-default-bound", "past-failure"],
)
def test_installments_catch_an_error_without_its_bound_and_payments_after_a_failure(mistake, line, capsys):
    failed = notebook_code.caught(capsys, "04.installments", installments_with(**mistake), line)
    if "message" in mistake:
        assert len(failed) == 2  # both bounds: "2" or "20" somewhere in the message is not enough


# --- issue 21: wrong answers the checks missed ------------------------------------------------------


def objects_at_a_tie(solution):
    """The solution, but a total no larger than one of its parts is objected to (<= where < is meant)."""

    def wrong(step, output, context):
        said = solution(step, output, context)
        if said is None and step.tool == "calculate" and output in context.values():
            return "the total is no larger than one of its parts"
        return said

    return wrong


def reads_a_question_everywhere(solution):
    """The solution, after parsing every step's instruction as a question (a report has none)."""

    def wrong(step, output, context):
        from agentlab import world
        from agentlab.plan import fill_in

        world.parse_question(fill_in(step.instruction, context))
        return solution(step, output, context)

    return wrong


@pytest.mark.parametrize(
    "mistake, line",
    [
        (objects_at_a_tie, "✗ a total equal to its largest part (the other parts are zero): no objection"),
        (reads_a_question_everywhere, "✗ a step that asks no question: no objection: raised"),
    ],
    ids=["objects-at-a-tie", "crashes-without-a-question"],
)
def test_total_check_catches_an_objection_at_a_tie_and_a_crash_on_a_step_without_a_question(
    solution, mistake, line, capsys
):
    notebook_code.caught(capsys, "04.total-check", mistake(solution["total_covers_its_parts"]), line)


def test_installments_catch_one_installment_too_few(capsys):
    def one_too_few(task, planner, team, path, calls_per_installment, max_installments=20):
        runs = []
        for n in range(1, max_installments):  # stops one installment short of the bound
            budget = Budget(calls=n * calls_per_installment)
            runs.append(orchestrate(task, planner, team, checkpoint=path, resume=True, budget=budget))
            if runs[-1].status in ("done", "failed"):
                return runs
        raise RuntimeError(f"not over after max_installments={max_installments}")

    notebook_code.caught(capsys, "04.installments", one_too_few, "✗ max_installments=")


# --- 04.message-key -------------------------------------------------------------------------------


def test_message_key_passes_on_the_solution(solution, capsys):
    check("04.message-key", solution["message_key"])
    assert "All 7 checks passed." in capsys.readouterr().out


def test_message_key_stub_gets_its_verdict(exercise, capsys):
    with pytest.raises(NotImplementedError):
        check("04.message-key", exercise["message_key"])
    assert "not written yet" in capsys.readouterr().out


COUNTER = iter(range(10**6))


@pytest.mark.parametrize(
    "key, line",
    [
        (lambda task, step, to, text: f"{task}|{step.instruction}|{to}", "✗ a retry after a lost reply"),
        (lambda task, step, to, text: f"{task}|{text}", "✗ two recipients, retried: one message each"),
        (lambda task, step, to, text: f"{step.id}|{to}", "✗ two tasks through the same outbox"),
        (lambda task, step, to, text: f"{task}|{to}", "✗ two steps that each send another figure"),
        (lambda task, step, to, text: str(next(COUNTER)), "✗ the same task run again after a crash"),
        (lambda task, step, to, text: f"{task}\n{step.id}\n{to}", "✗ a replan after a lost reply"),
        (lambda task, step, to, text: str(hash((task, to, text))), "✗ the same task run again after a crash"),
    ],
    ids=["the instruction (a retry's note changes it)", "no recipient", "no task", "no text", "a counter",
         "the step's id (a replan renames it)", "Python's hash() (another in each process)"],
)
def test_message_key_catches_a_key_that_changes_between_attempts_or_names_too_little(key, line, capsys):
    notebook_code.caught(capsys, "04.message-key", key, line)


def recovery_mistaken(unguarded=False, role_as_planned=False, step_unnamed=False):
    """attempt_with_recovery with one mistake: no try/except (an agent's exception ends it all), every
    attempt recorded under the step's own role (the stand-in's too), or a final error that says what
    went wrong but not which step."""
    from agentlab.monitor import Failure, inspect

    def recover(step, context, team, retries, stand_in, checks=()):
        tries = [step] * (1 + retries)
        if step.role in stand_in:
            tries.append(replace(step, role=stand_in[step.role], tool=None, args={}))
        attempts = []
        for tried in tries:
            if unguarded:
                output = team[tried.role](tried, context).output
                failure = inspect(step, output, context, checks)
            else:
                try:
                    output = team[tried.role](tried, context).output
                    failure = inspect(step, output, context, checks)
                except Exception as error:
                    failure = Failure("error", str(error))
            attempts.append((step.role if role_as_planned else tried.role, failure))
            if failure is None:
                return output, attempts
        if step_unnamed:
            raise RuntimeError(f"every attempt failed, the last with: {attempts[-1][1].message}")
        raise RuntimeError(f"step {step.id!r} failed after {len(attempts)} attempt(s)")

    return recover


@pytest.mark.parametrize(
    "mistake, line",
    [
        ({"unguarded": True}, "✗ a fluke: one error, then a retry succeeds: raised ConnectionError"),
        ({"role_as_planned": True}, "✗ FAILED every time: 1 + 2 attempts, then the stand-in: returned"),
        ({"step_unnamed": True}, "✗ the stand-in fails too: the step fails, after one try by the stand-in"),
    ],
    ids=lambda x: next(iter(x)),
)
def test_retry_then_reroute_catches_an_escaping_error_the_wrong_role_recorded_and_an_unnamed_step(
    mistake, line, capsys
):
    notebook_code.caught(capsys, "04.retry-then-reroute", recovery_mistaken(**mistake), line)


@pytest.mark.parametrize(
    "key, line",
    [
        (lambda task, step, to, text: f"{task}|{step.role}|{to}", "✗ two steps that each send another"),
        (lambda task, step, to, text: f"{id(step)}|{to}", "✗ a retry after a lost reply"),
        (lambda task, step, to, text: f"{task[:20]}|{to}|{text.split()[-1]}", "✗ two tasks through"),
    ],
    ids=["the role, not the message", "the step object's id()", "the task cut short"],
)
def test_message_key_catches_a_role_for_a_step_an_object_identity_and_a_task_cut_short(key, line, capsys):
    notebook_code.caught(capsys, "04.message-key", key, line)


def reads_a_number_with_float(solution):
    """The solution as it read a total before "a number" had one meaning: float() of the normalised
    reply, which refuses 'It is 1,250.' (a right answer to a task's check) and takes '1e3'."""

    def wrong(step, output, context):
        from agentlab import world

        said = solution(step, output, context)
        try:
            float(world.normalise(output))
        except ValueError:
            return said or f"{output!r} is not a number"
        return said

    return wrong


def test_total_check_catches_a_reading_of_a_number_other_than_a_tasks_check(solution, capsys):
    notebook_code.caught(
        capsys,
        "04.total-check",
        reads_a_number_with_float(solution["total_covers_its_parts"]),
        "✗ the right total in a sentence, as a task's check reads it: no objection",
    )


def test_a_total_check_and_a_tasks_check_read_a_number_alike(solution):
    from agentlab import world
    from agentlab.plan import Step

    step = Step("s4", "analyst", "What is 215 + 640 + 395?")
    task = world.Task("t1", "fanout", "What is the total?", "1250", 3, "total")
    for reply in ("1250", "1,250", "It is 1,250.", "about a thousand", "1,200 or 1,300", "1250 (215 + 640)"):
        assert task.check(reply) == (world.number_in(reply) == 1250)
        objection = solution["total_covers_its_parts"](step, reply, {})
        assert (objection is None) == (world.number_in(reply) is not None), reply


def total_with_its_own_reading(step, output, context):
    """Right, written another way: the question's numbers found with a regex, the total read with
    the same rule number_in states (the reply's only number, once normalised)."""
    import re

    from agentlab import world
    from agentlab.plan import fill_in

    question = fill_in(step.instruction, context)
    match = re.fullmatch(r"What is ([\d.]+(?: \+ [\d.]+)+)\?", question)
    if not match:
        return None
    numbers = re.findall(r"-?\d+(?:\.\d+)?", world.normalise(output))
    if len(numbers) != 1:
        return f"{output!r} is not a total"
    if float(numbers[0]) < max(float(part) for part in match.group(1).split(" + ")):
        return "a total smaller than one of its parts"
    return None


def test_total_check_passes_a_right_check_written_differently(capsys):
    check("04.total-check", total_with_its_own_reading)
    assert "✗" not in capsys.readouterr().out


# --- the grader's hidden cases: mistakes this notebook's own cases let through (issue 34) --------------
# Each wrong answer is the solution with one change; its own cases pass it, a hidden case catches it.


_LARGEST = "largest = max(float(part) for part in parts)"


@pytest.mark.parametrize(
    "exercise, name, edits, caught",
    [
        (
            "04.total-check",
            "total_covers_its_parts",
            [(_LARGEST, "largest = float(max(part.strip() for part in parts))")],
            "a total below a three-digit part, above a two-digit one (95 + 120 = 110?)",
        ),
        (
            "04.total-check",
            "total_covers_its_parts",
            [(_LARGEST, "largest = max(float(part) for part in parts[:2])")],
            "a total below the third part, above the first two (10 + 20 + 500 = 300?)",
        ),
        (
            "04.total-check",
            "total_covers_its_parts",
            [
                (
                    "    try:\n        question",
                    "    if step.role != 'analyst':\n        return None\n    try:\n        question",
                )
            ],
            "a researcher's sum, smaller than a part: a problem, said in words",
        ),
        (
            "04.total-check",
            "total_covers_its_parts",
            [("if total < largest:", "if total and total < largest:")],
            "a total of 0 for 5 + 7: a problem, said in words",
        ),
        (
            "04.installments",
            "run_in_installments",
            [("range(1, max_installments + 1)", "range(1, max_installments + 2)")],
            "3 calls an installment, max_installments=3, one fewer than it needs: an error",
        ),
    ],
)
def test_hidden_cases_catch_what_the_exercises_own_cases_let_through(exercise, name, edits, caught):
    import graded

    wrong = graded.changed("04", name, *edits)
    assert any(what.startswith(caught) for what in graded.hidden_failures(exercise, wrong))
    assert graded.graded(exercise, wrong).status == "failed"
