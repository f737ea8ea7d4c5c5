"""One agent in one loop: the ReAct baseline a team has to beat.

ReAct (Yao et al. 2022, arXiv:2210.03629) interleaves reasoning and acting. The model
thinks, calls a tool, reads what came back, and decides again, until it can answer.
There is no plan and no team: one conversation holds everything, and every call re-sends
all of it. Call t reads the question plus the t - 1 turns before it, so when each turn
adds about g tokens to the history, n calls read about n*B + g*n*(n-1)/2 input tokens in
all (B being what the first call reads): the input grows with the square of the steps.

The loop is `agents.tool_loop`, the same bounded loop every executor of the kit runs,
handed the whole task instead of one step and all three of the world's tools. This
module adds the record a learner needs: each turn's thought, actions and observations,
its tokens and virtual seconds, the transcript exactly as the model last saw it, and
which bound stopped the loop if it did not finish.

The world's lookup returns one name or number. A real service returns a page around the fact
(a record, a JSON document, a web page); `world_tools(page_tokens=...)` gives a lookup that does,
so that what one context has to carry can be measured (notebook 08, context isolation).
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from agentlab.agents import StepFailed, ToolFunction, tool_loop
from agentlab.llm.base import LLM, Completion, Message, ModelError, assistant_message
from agentlab.prompts import ONE_AT_A_TIME, TOGETHER, react_system, with_page
from agentlab.valid import number
from agentlab.world import ARCHIPELAGO, ENTITIES, FUNCTIONS, TOOLS, describe, find_entity

REACT_SYSTEM = react_system(ARCHIPELAGO)  # then ONE_AT_A_TIME (classic ReAct) or TOGETHER


@dataclass(frozen=True)
class Action:
    """One tool call of a turn and what came back (`observation` is None if the loop stopped
    before the model could read it)."""

    tool: str
    args: Mapping[str, Any]
    observation: str | None
    ok: bool = True


@dataclass(frozen=True)
class Turn:
    """One model call of the loop: what it wrote (a thought, or the answer on the last turn),
    the tools it called, and what the turn cost in tokens and virtual seconds."""

    number: int
    thought: str
    actions: tuple[Action, ...]
    completion: Completion
    seconds: float

    input_tokens = property(lambda self: self.completion.usage.input_tokens)
    output_tokens = property(lambda self: self.completion.usage.output_tokens)


@dataclass
class ReactRun:
    """What one ReAct loop did, shaped like a `run.Run` where it can be: `deliverable`,
    `calls` as (turn id, role, Completion) triples for `usage_report`, `elapsed` seconds,
    `status` ("done", "stopped" by a bound, or "failed" on a model error) and `reason`."""

    task: str
    answer: str | None
    status: str
    turns: list[Turn] = field(default_factory=list)
    messages: list[Message] = field(default_factory=list)  # the transcript, as last sent plus the reply
    elapsed: float = 0.0
    reason: str = ""
    stopped_by: str | None = None  # "max_steps" or "max_tokens" when a bound stopped the loop

    @property
    def deliverable(self) -> str | None:
        return self.answer

    @property
    def calls(self) -> list[tuple[str, str, Completion]]:
        return [(f"turn{t.number}", "agent", t.completion) for t in self.turns]

    def summary(self) -> str:
        tokens = sum(t.input_tokens for t in self.turns), sum(t.output_tokens for t in self.turns)
        head = (
            f"{self.status}: {len(self.turns)} model calls, {tokens[0]:,} input + {tokens[1]:,} output "
            f"tokens, {self.elapsed:.1f} s (virtual)"
        )
        return head + (f" - {self.reason}" if self.reason else "")

    def __str__(self) -> str:
        lines = [f"Task: {self.task}"]
        for turn in self.turns:
            lines.append(
                f"turn {turn.number:>2}  {turn.input_tokens:>5} in {turn.output_tokens:>4} out "
                f"{turn.seconds:5.2f} s  {turn.thought}"
            )
            for action in turn.actions:
                args = ", ".join(f"{v}" for v in action.args.values())
                seen = "(not read: the loop stopped)" if action.observation is None else action.observation
                lines.append(f"{'':>33}{action.tool}({args}) -> {'' if action.ok else 'error: '}{seen}")
        lines += [self.summary(), f"Answer: {self.answer}"]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        rows = []
        for turn in self.turns:
            acts = "<br>".join(
                html.escape(f"{a.tool}({', '.join(map(str, a.args.values()))}) -> {a.observation}")
                for a in turn.actions
            )
            cells = (turn.number, turn.input_tokens, turn.output_tokens, f"{turn.seconds:.2f}")
            rows.append(
                "<tr>"
                + "".join(f"<td>{c}</td>" for c in cells)
                + f"<td>{html.escape(turn.thought)}</td><td>{acts}</td></tr>"
            )
        head = "".join(f"<th>{h}</th>" for h in ("turn", "input", "output", "s", "thought", "actions"))
        return (
            f"<p><b>Task:</b> {html.escape(self.task)}</p>"
            f'<table class="agentlab-react"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody>'
            f"</table><p>{html.escape(self.summary())}<br><b>Answer:</b> {html.escape(str(self.answer))}</p>"
        )


def world_tools(seconds: float = 0.1, page_tokens: int = 0) -> list[ToolFunction]:
    """The world's three tools (lookup, search, calculate), each taking `seconds` on the virtual
    clock. With `page_tokens` > 0 a lookup returns its fact followed by a page of about that many
    tokens of records (the looked-up entity's first), as a web service would."""
    number(page_tokens, "page_tokens", minimum=0, whole=True)
    functions = dict(FUNCTIONS)
    if page_tokens:
        functions["lookup"] = lambda entity, attribute: with_page(
            FUNCTIONS["lookup"](entity, attribute), record_page(entity, page_tokens)
        )
    return [ToolFunction(TOOLS[name], functions[name], seconds) for name in ("lookup", "search", "calculate")]


def record_page(entity: str, tokens: int) -> str:
    """About `tokens` tokens (4 characters each) of the world's records, one per line: the
    entity's own first, then those after it in the records' order, from the start again if need be."""
    names = list(ENTITIES)
    start = names.index(find_entity(entity).name)
    lines, size, i = [], 0, start
    while size < 4 * tokens:
        lines.append(describe(ENTITIES[names[i % len(names)]]))
        size, i = size + len(lines[-1]) + 1, i + 1
    return "\n".join(lines)[: 4 * tokens]


def react(
    task: str,
    llm: LLM,
    *,
    model: str | None = None,
    max_steps: int = 12,
    max_tokens: int = 1024,
    tools: Sequence[ToolFunction] | None = None,
    tool_seconds: float = 0.1,
    one_tool_at_a_time: bool = True,
) -> ReactRun:
    """Answer `task` with one agent in one loop of at most `max_steps` model calls.

    `one_tool_at_a_time` is classic ReAct (one action, then its observation); False lets the
    model ask for independent facts together, as parallel tool use does. `tools` default to
    the world's three, each taking `tool_seconds`.
    """
    if not isinstance(task, str) or not task.strip():
        raise ValueError("the task must be a non-empty string")
    number(max_steps, "max_steps", minimum=1, whole=True)
    tools = world_tools(tool_seconds) if tools is None else list(tools)
    system = f"{REACT_SYSTEM} {ONE_AT_A_TIME if one_tool_at_a_time else TOGETHER}"
    seen = _Transcript(llm)
    run = ReactRun(task, None, "running")
    options = {"model": model, "max_turns": max_steps, "max_tokens": max_tokens}
    try:
        work = tool_loop(seen, system, task.strip(), tools, **options)
        run.answer, run.status, run.elapsed = work.output, "done", work.seconds
    except StepFailed as stop:  # a bound stopped it, or the API failed; the calls made still count
        run.elapsed = stop.seconds or 0.0
        if isinstance(stop.__cause__, ModelError):
            run.status, run.reason = "failed", f"ModelError: {stop.__cause__}"
        elif seen.replies[-1].stop_reason == "max_tokens":
            run.status, run.reason, run.stopped_by = "stopped", str(stop), "max_tokens"
        else:
            run.status, run.stopped_by = "stopped", "max_steps"
            run.reason = f"stopped by max_steps={max_steps}: no final answer after {max_steps} model calls"
    run.turns = _turns(seen, {t.name: t.seconds for t in tools})
    run.messages = [*seen.requests[-1], assistant_message(seen.replies[-1])] if seen.replies else []
    if run.stopped_by == "max_steps":  # the last turn's tools ran, unread: it gets what tool_loop counted
        last = run.elapsed - sum(t.seconds for t in run.turns[:-1])
        run.turns[-1] = replace(run.turns[-1], seconds=round(last, 6))
    return run


@dataclass
class _Transcript:
    """Passes every call through to `llm`, keeping the messages sent and the reply received."""

    llm: LLM
    requests: list[list[Message]] = field(default_factory=list)
    replies: list[Completion] = field(default_factory=list)

    @property
    def backend(self) -> str:
        return self.llm.backend

    def complete(self, *, messages: Sequence[Message], **request: Any) -> Completion:
        self.requests.append(list(messages))  # a copy: the loop appends to its own list
        reply = self.llm.complete(messages=messages, **request)
        self.replies.append(reply)
        return reply


def _turns(seen: _Transcript, tool_seconds: Mapping[str, float]) -> list[Turn]:
    """Each reply with the observations its tool calls got, read from the next request sent."""
    turns = []
    for i, reply in enumerate(seen.replies):
        answered = seen.requests[i + 1][-1]["content"] if i + 1 < len(seen.requests) else []
        results = {block["tool_use_id"]: block for block in answered if block.get("type") == "tool_result"}
        actions = []
        for call in reply.tool_calls:
            block = results.get(call.id)
            observation = None if block is None else block["content"]
            actions.append(Action(call.name, dict(call.args), observation, not (block or {}).get("is_error")))
        # tool_loop's clock: the reply's latency, then each tool call that succeeded
        ran = [a for a in actions if a.ok and a.observation is not None]
        seconds = reply.latency + sum(tool_seconds.get(a.tool, 0.0) for a in ran)
        turns.append(Turn(i + 1, reply.text.strip(), tuple(actions), reply, round(seconds, 6)))
    return turns
