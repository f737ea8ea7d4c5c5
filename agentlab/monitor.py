"""Monitoring: is a step's result good enough to build on?

A planner that only hands out steps is a task splitter; one that looks at each
result before the next step uses it is a planner. A step attempt *fails* in one
of four ways (`FAILURE_KINDS`):

- "error":    its agent raised an exception (a tool refused, a model call failed);
- "timeout":  it took longer than the run allows a step (`run_plan(timeout=...)`);
- "sentinel": its agent said it gave up, by answering "FAILED ..." (or nothing);
- "check":    its output failed a check: a validator you wrote, or a critic.

A *check* is any function `(step, output, context) -> problem or None`. A
*critic* is a check with a name and a verdict. What a critic's verdict rests on
is the whole question: `agreeable_critic` approves anything, like a model asked
"is this right?" that wants to please; `recompute_critic` re-derives the step
with the world's own tools (the safe calculator, lookup) and compares; and
`code_critic` runs the code a step wrote, with tests, in a separate Python
process that is killed if it runs too long. Only the last two can tell a wrong
answer from a right one.

`expected_output` is what the recompute critic re-derives: what a step should
have said, given its inputs, by the world's records; `audit(run)` holds every
finished step of a run to it, after the fact.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass

from agentlab.llm.base import redact
from agentlab.plan import Context, Step, fill_in
from agentlab.prompts import reported
from agentlab.trace import Run
from agentlab.valid import MAX_TIMEOUT, number
from agentlab.world import FUNCTIONS, QuestionError, ToolError, check_answer, gold_answer

FAILURE_KINDS = ("error", "timeout", "sentinel", "check")
_SECONDS = f"a number > 0 (at most {MAX_TIMEOUT:g} s, a day)"  # a code check's time limit
FAILED = "FAILED"  # an agent that cannot do its step may answer with this word first

Check = Callable[[Step, str, Context], "str | None"]


@dataclass(frozen=True)
class Failure:
    """Why one attempt at a step failed: one of `FAILURE_KINDS` and a message naming the problem.
    The message goes into the trace, the run's reason, a retry's note and the checkpoint, so any
    credential in it (a server that echoed the key in an error) is redacted (`llm.redact`)."""

    kind: str
    message: str

    def __post_init__(self):
        if self.kind not in FAILURE_KINDS:
            raise ValueError(f"unknown failure kind {self.kind!r}; expected one of {FAILURE_KINDS}")
        object.__setattr__(self, "message", redact(self.message))


def is_sentinel(output: str) -> bool:
    """Did the agent say it gave up? An answer starting with FAILED, or no answer at all."""
    return not output.strip() or output.lstrip().startswith(FAILED)


def check_name(check: Check) -> str:
    """How a check is called in the trace: a critic's name, else the function's name."""
    return getattr(check, "name", None) or getattr(check, "__name__", type(check).__name__)


def inspect(step: Step, output: str, context: Context, checks: tuple[Check, ...] = ()) -> Failure | None:
    """The first reason to reject `output` (a sentinel, then each check in order), or None.
    A check that itself raises rejects the output too, naming the check: a broken check
    must not wave results through."""
    if is_sentinel(output):
        return Failure("sentinel", f"the agent gave up: {output.strip()[:200]!r}")
    for check in checks:
        try:
            problem = check(step, output, context)
        except Exception as error:  # noqa: BLE001 - any crash in a check is reported, not raised
            return Failure(
                "check", f"{check_name(check)} could not check it: {type(error).__name__}: {error}"
            )
        if problem:
            return Failure("check", f"{check_name(check)} rejected {output[:80]!r}: {problem}")
    return None


def for_steps(check: Check, *step_ids: str) -> Check:
    """A per-step validator: `check`, applied only to the steps named."""

    def only_these(step: Step, output: str, context: Context) -> str | None:
        return check(step, output, context) if step.id in step_ids else None

    only_these.__name__ = f"{check_name(check)}[{','.join(step_ids)}]"
    return only_these


# --- what a step should have output, by the records ---------------------------------------------


def expected_output(step: Step, context: Context) -> str | None:
    """What a step should have output given its inputs, by the records: the result a report
    step was handed, the gold answer to a step's question, or a tool step's real result.
    None when the step is none of these (or names nothing the records know)."""
    instruction = fill_in(step.instruction, context)
    if (result := reported(instruction)) is not None:
        return result
    try:
        return gold_answer(instruction)
    except (QuestionError, ToolError, ValueError):
        pass
    if step.tool in FUNCTIONS:
        args = {k: fill_in(str(v), context) for k, v in step.args.items()}
        try:
            return FUNCTIONS[step.tool](**args)
        except (ToolError, TypeError):
            return None
    return None


def audit(run: Run) -> list[tuple[str, str, str]]:
    """The finished steps of a run whose output is not what the records say it should have
    been, given the inputs the step had: (step id, expected, output), in plan order."""
    wrong = []
    for step in run.plan:
        if step.id in run.outputs:
            expected = expected_output(step, {d: run.outputs[d] for d in step.depends_on})
            if expected is not None and not check_answer(run.outputs[step.id], expected):
                wrong.append((step.id, expected, run.outputs[step.id]))
    return wrong


# --- critics ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Critic:
    """A reviewer that sees each step's output before the run accepts it. `judge` returns the
    problem it found, or None to approve; `basis` says what its verdict rests on."""

    name: str
    judge: Check
    basis: str = ""

    def __call__(self, step: Step, output: str, context: Context) -> str | None:
        return self.judge(step, output, context)


def _approve(step: Step, output: str, context: Context) -> None:
    return None


agreeable_critic = Critic("agreeable critic", _approve, "its own say-so: it approves whatever it is shown")


def _recompute(step: Step, output: str, context: Context) -> str | None:
    expected = expected_output(step, context)  # runs the calculator / lookup on the step's inputs
    if expected is None or check_answer(output, expected):
        return None  # right, or nothing it can re-derive: it abstains rather than guess
    return f"re-running the tools on its inputs gives {expected!r}"


recompute_critic = Critic(
    "recompute critic",
    _recompute,
    "re-running the step with the world's tools: the safe calculator for arithmetic, lookup for facts",
)


# --- running code ------------------------------------------------------------------------------

_FENCE = re.compile(r"```(?:python|py)?\s*\n(.*?)```", re.DOTALL)


@dataclass(frozen=True)
class CodeResult:
    """What running a piece of code did: whether it exited cleanly, and what it printed."""

    ok: bool
    output: str


def run_python(code: str, timeout: float = 5.0) -> CodeResult:
    """Run `code` in a fresh Python process (isolated mode, no user site or environment
    hooks), killed after `timeout` seconds. A separate process is what makes the timeout
    real: a thread cannot be stopped, a process can. It is not a security sandbox."""
    number(timeout, "run_python's timeout", above=0, maximum=MAX_TIMEOUT, must_be=_SECONDS)
    try:
        done = subprocess.run(
            [sys.executable, "-I", "-c", code], capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        return CodeResult(False, f"still running after {timeout:g} s, so it was stopped")
    text = (done.stdout + done.stderr).strip()
    if done.returncode != 0:
        last = text.splitlines()[-1] if text else f"exit status {done.returncode}"
        return CodeResult(False, last)
    return CodeResult(True, text)


def code_of(output: str) -> str:
    """The code in a step's output: the first ```python fenced block, else the whole text."""
    fenced = _FENCE.search(output)
    return fenced.group(1) if fenced else output


def code_critic(tests: str, timeout: float = 5.0) -> Critic:
    """A critic for steps that write code: it runs the code and then `tests` (asserts) in a
    separate process; any exception, failed assert or timeout is its verdict."""
    number(timeout, "code_critic's timeout", above=0, maximum=MAX_TIMEOUT, must_be=_SECONDS)

    def judge(step: Step, output: str, context: Context) -> str | None:
        result = run_python(code_of(output) + "\n\n" + tests, timeout)
        return None if result.ok else f"running it with the tests: {result.output}"

    return Critic("code critic", judge, f"running the code with tests, in a subprocess ({timeout:g} s limit)")
