"""The phrases a prompt is written with and read back by: each defined once, writer beside reader.

Most of a prompt is free text for the model, and you may reword it at will. A few phrases are
more than that: something reads them back. The simulated model finds the task after "Task: ",
the team in "- role: ... (tools: ...)" lines and a replan's facts in a failure report; a
monitor finds the result a report step was handed. A phrase that is written in one module and
read in another is a contract, and a contract spelt out twice drifts: the writer changes a word
and the reader silently stops recognising it. So each such phrase lives here, once, with the
function that writes it and the regex or function that reads it, built from it; each section
names who writes and who reads. (tests/test_prompts.py checks that every reader reads what its
writer writes, and that no other module spells a phrase out.)
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from agentlab.plan import Plan, fill_in

# --- "- name: text" lines: a step's inputs, a failure report's completed steps ------------------


def _items(pairs: Mapping[str, str]) -> str:
    return "\n".join(f"- {key}: {value}" for key, value in pairs.items())


_ITEM = re.compile(r"^- ([\w.-]+): (.*)$", re.MULTILINE)


def _read_items(text: str) -> list[tuple[str, str]]:
    """(name, text) for each "- name: text" line, the text stripped (only its first line is read)."""
    return [(m.group(1), m.group(2).strip()) for m in _ITEM.finditer(text)]


# --- a planner's request, and the failure report a replan adds ---------------------------------
# `planners.LLMPlanner` writes them (`task_request`, `failure_report`); the simulator reads them.

TASK = "Task: "
_TASK_LINE = re.compile("^" + re.escape(TASK) + "(.+)$", re.MULTILINE)


def task_request(task: str, report: str = "") -> str:
    """What a planner is asked: the task, then (when it replans) the failure report."""
    request = TASK + task.strip()
    return f"{request}\n\n{report}" if report else request


def task_of(request: str) -> str:
    """The task a planner's request asks about; the whole request if it has no task line."""
    match = _TASK_LINE.search(request)
    return match.group(1).strip() if match else request.strip()


FAILURE_REPORT = "Failure report"
_PREVIOUS_PLAN, _COMPLETED, _FAILED = "Previous plan:", "Completed steps:", "Failed step"


def failure_report(plan: Plan, outputs: Mapping[str, str], failure: str) -> str:
    """How a failed run is described to a replanning model: the old plan, what finished, what broke."""
    return (
        f"{FAILURE_REPORT}\n"
        f"{_PREVIOUS_PLAN}\n{plan.to_json(indent=None)}\n"
        f"{_COMPLETED}\n{_items(outputs) or '(none)'}\n"
        f"{_FAILED}: {failure}\n"
        "Write a new plan that finishes the task. Use the completed steps' outputs as literal values "
        "instead of repeating those steps."
    )


def is_failure_report(text: str) -> bool:
    return FAILURE_REPORT in text


def read_failure_report(report: str) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """The previous plan's steps (as JSON objects), read the way the replanning model reads them:
    with each completed step's output in place of its `$id`, in instructions and arguments; and
    those outputs by step id. ([], {}) when the previous plan cannot be read."""
    previous = report.split(_PREVIOUS_PLAN, 1)[-1]
    start, end = previous.find("{"), previous.rfind("}")
    try:
        steps = json.loads(previous[start : end + 1])["steps"]
    except (ValueError, KeyError, TypeError):
        return [], {}
    completed = report.split(_COMPLETED, 1)[-1].split(_FAILED, 1)[0]
    outputs = dict(_read_items(completed))
    return [_filled_in(step, outputs) for step in steps], outputs


def _filled_in(step: dict[str, Any], outputs: Mapping[str, str]) -> dict[str, Any]:
    step = dict(step)
    if "instruction" in step:
        step["instruction"] = fill_in(step["instruction"], outputs)
    if isinstance(step.get("args"), Mapping):
        step["args"] = {k: fill_in(str(v), outputs) for k, v in step["args"].items()}
    return step


# --- the team, in a planner's system prompt ----------------------------------------------------
# `planners.planner_prompt` writes the lines, `hierarchy` a lead's description; the simulator reads them.

_NO_TOOLS = "none"


def team_line(role: str, description: str, tools: Iterable[str]) -> str:
    """One member of the team: "- role: what it does (tools: a, b)"."""
    return f"- {role}: {description or 'no description'} (tools: {', '.join(tools) or _NO_TOOLS})"


_TEAM_LINE = re.compile(r"^- ([\w-]+): .*?(?:\(tools: ([^)]*)\))?\s*$", re.MULTILINE)


def read_team(system: str) -> dict[str, tuple[str, ...]]:
    """role -> the tools it may use, for every team line in a system prompt."""
    return dict(_team(system))  # a dict of its own: the caller may change it, never the one kept


@functools.lru_cache(maxsize=256)  # the simulator reads the same system prompt at every request
def _team(system: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    team = {}
    for m in _TEAM_LINE.finditer(system):
        names = (t.strip() for t in (m.group(2) or "").split(","))
        team[m.group(1)] = tuple(t for t in names if t and t != _NO_TOOLS)
    return tuple(team.items())


# What a manager's planner reads about the role a sub-team plays (`hierarchy.LEAD`): the part to
# hand over and how many parts there may be. `LEAD_DESCRIPTION.format(parts=2)` is its description.
_LEADS, _AT_MOST = "leads a sub-team", "at most {parts} parts"
LEAD_DESCRIPTION = (
    f"{_LEADS} that answers one part of the task, handed over as a whole question "
    f"(such as the total of some of the items); split the task into {_AT_MOST}"
)
_LEAD_LINE = re.compile(
    r"^- ([\w-]+): " + _LEADS + r"\b.*?\b" + _AT_MOST.format(parts=r"(\d+)") + r"\b", re.MULTILINE
)


@functools.lru_cache(maxsize=256)  # read at every planning request, from the same few system prompts
def read_lead(system: str) -> tuple[str, int] | None:
    """(the role that leads sub-teams, the most parts allowed), from its team line; None if none does."""
    match = _LEAD_LINE.search(system)
    return (match.group(1), int(match.group(2))) if match else None


# --- an executor's request: the step, then the inputs it is handed -----------------------------
# `agents.step_prompt` writes it; the simulator reads it.

INPUTS_HEADING = "Inputs from earlier steps:"


def step_request(instruction: str, context: Mapping[str, str]) -> str:
    """What an executor is asked: the instruction, then each input as a "- s1: output" line."""
    if not context:
        return instruction
    return f"{instruction}\n\n{INPUTS_HEADING}\n{_items(context)}"


def read_step_request(request: str) -> tuple[str, list[str]]:
    """The instruction of an executor's request and the inputs it was handed, in order."""
    instruction, inputs = _step_request(request)
    return instruction, list(inputs)  # a list of its own: the caller may change it


@functools.lru_cache(maxsize=4096)  # every turn of an agent's loop hands the simulator the same request
def _step_request(request: str) -> tuple[str, tuple[str, ...]]:
    instruction, _, inputs = request.partition(INPUTS_HEADING)
    return instruction, tuple(text for _, text in _read_items(inputs))


# --- the report step: the plan's last step hands the answer over -------------------------------
# The planner prompt's example and the simulator write it; the simulator, `monitor` and
# `world.steps_needed` read it.

RESULT_TO_REPORT = "The result to report is"
_REPORT = "Report"  # the first word of a report step's instruction
_REPORTED = re.compile(re.escape(RESULT_TO_REPORT) + r" (.+?)\.?\s*$", re.MULTILINE)


def report_instruction(task: str, result: str, in_a_few_words: bool = True) -> str:
    """The last step's instruction: report the answer to `task`, which is `result` (often "$s3")."""
    how = " in a few words" if in_a_few_words else ""
    return f"{_REPORT} the answer to the task{how}: {task} {RESULT_TO_REPORT} {result}."


def reported(text: str) -> str | None:
    """The result a report instruction hands over, or None if `text` hands none over."""
    match = _REPORTED.search(text)
    return match.group(1).strip() if match else None


def is_report(instruction: str) -> bool:
    """Does the instruction ask for a report (rather than for a fact)?"""
    return instruction.startswith(_REPORT)


# --- a lookup's error: the name it may have meant ------------------------------------------------
# `world.tools` writes it; the simulator reads it.

NO_ENTITY = "no entity"  # how the error for a name the records do not know begins
_DID_YOU_MEAN = "did you mean"
_SUGGESTION = re.compile(re.escape(_DID_YOU_MEAN) + r" '([^']+)'")


def did_you_mean(name: str) -> str:
    return f"{_DID_YOU_MEAN} '{name}'?"


def suggested_lookup(error: str, entity: str, attribute: str) -> tuple[str, str] | None:
    """The (entity, attribute) that the error of lookup(entity, attribute) suggests instead, or None."""
    match = _SUGGESTION.search(error)
    if match is None:
        return None
    return (match.group(1), attribute) if error.startswith(NO_ENTITY) else (entity, match.group(1))


# --- one agent on its own (notebook 07) ----------------------------------------------------------
# `react` writes ONE_AT_A_TIME and the simulator reads it; `react` and `compare` share `_agent`.

_ONE_TOOL = "one tool at a time"
ONE_AT_A_TIME = f"Call {_ONE_TOOL}, and read its result before you choose the next."
TOGETHER = "When several facts do not depend on each other, ask for them together in one turn."
_ONE_AT_A_TIME = re.compile(r"\b" + _ONE_TOOL.replace(" at ", " (?:call )?at ") + r"\b", re.IGNORECASE)


@functools.lru_cache(maxsize=256)  # asked at every turn of a loop, of the same few system prompts
def asks_one_at_a_time(system: str) -> bool:
    """Is the agent told to call one tool (or one tool call) at a time, as a classic ReAct agent is?"""
    return bool(_ONE_AT_A_TIME.search(system))


def _agent(world: str) -> str:
    return (
        f"You are an agent answering questions about {world}, an archipelago known only through its records."
    )


def react_system(world: str) -> str:
    """The ReAct agent's system prompt, for the named world (add ONE_AT_A_TIME or TOGETHER)."""
    return _agent(world) + (
        " Work in a loop: think about what you still need, act by calling a tool, read the result, "
        "and decide again. Never answer from memory. When you have every fact you need, reply with the "
        "answer alone: a name or a number, not a sentence."
    )


def chat_system(world: str) -> str:
    """One call with no tools: told who it is in the ReAct agent's words, then to answer."""
    return _agent(world) + " Answer the question."


# --- handing a conversation over (notebook 08, handoffs) ---------------------------------------
# `handoffs` names the transfer tools and writes a specialist's first message; the simulator reads
# the tool names (which specialist it can hand over to) and, as any agent, the message.

_TRANSFER = "transfer_to_"


def transfer_tool(agent: str) -> str:
    """The name of the tool that hands the conversation over to `agent`."""
    return _TRANSFER + agent


def transfer_target(tool: str) -> str | None:
    """The agent that tool `tool` hands over to; None if it is not a transfer tool."""
    target = tool[len(_TRANSFER) :] if tool.startswith(_TRANSFER) else ""
    return target or None


_REQUEST, _NOTE = "The user's request:", "Note from the {source} agent:"


def handoff_request(note: str, source: str, intent: str | None = None) -> str:
    """A specialist's first message after a handoff: the user's request word for word (the intent,
    when it is forwarded), then the note of the agent that handed over."""
    noted = f"{_NOTE.format(source=source)} {note.strip()}"
    return f"{_REQUEST} {intent.strip()}\n\n{noted}" if intent is not None else noted


# --- a tool result that comes with its page (notebook 08, context isolation) ---------------------
# `react.world_tools(page_tokens=...)` writes it; the simulator reads the fact back.

_SOURCE_PAGE = "\n\nSource page:\n"


def with_page(fact: str, page: str) -> str:
    """A tool result as a real service returns it: the fact, then the page it was read from."""
    return f"{fact}{_SOURCE_PAGE}{page}"


def fact_of(result: str) -> str:
    """The fact of a tool result, without the page around it (a result without one is all fact)."""
    return result.split(_SOURCE_PAGE, 1)[0]
