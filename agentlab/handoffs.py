"""Handoffs: one agent active at a time, and a transfer hands it the conversation.

The fourth pattern of the wiki page's table (notebook 00 names the course's texts). A triage
agent reads the request and, instead of answering, calls a transfer tool; the tool's result is the
next agent, which takes over and answers (or hands over again). Nothing runs in parallel and
nobody reports back: control moves. The shape is openai's swarm (`swarm/core.py`): a transfer is a
tool call that returns an agent, and the whole loop is ask, append, call tools, switch agent.

What the next agent starts from is the design decision, `carry`:

- "history": the conversation goes on, as in swarm: the specialist reads everything so far;
- "note": the specialist starts a fresh context holding only the triage's note. Its context
  stays small, and the user's request is gone: the classic bug, a specialist answering another
  question than the one asked;
- "intent": a fresh context that forwards the user's request word for word, then the note.

Every transfer is logged (`HandoffRun.transfers`): who handed over to whom, the note, and the
messages the receiver started from, so a dropped request can be seen in the log.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from agentlab.agents import ToolFunction
from agentlab.llm.base import (
    LLM,
    Completion,
    Message,
    ModelError,
    Tool,
    assistant_message,
    paid,
    tool_results_message,
)
from agentlab.prompts import (
    ONE_AT_A_TIME,
    handoff_request,
    react_system,
    team_line,
    transfer_target,
    transfer_tool,
)
from agentlab.react import world_tools
from agentlab.valid import number
from agentlab.world import ARCHIPELAGO

CARRY = ("history", "note", "intent")


@dataclass(frozen=True)
class Specialist:
    """One agent of a handoff desk: its instructions (system prompt), its tools, and the agents
    it may hand the conversation over to."""

    name: str
    description: str
    instructions: str
    tools: tuple[ToolFunction, ...] = ()
    transfers: tuple[str, ...] = ()


@dataclass(frozen=True)
class Transfer:
    """One handoff, as logged: at model call `turn`, `source` handed over to `target` with `note`;
    `sent` is what `target` started from (the messages its first call read)."""

    turn: int
    source: str
    target: str
    note: str
    sent: tuple[Message, ...]

    def __str__(self) -> str:
        first = _text(self.sent[0]) if self.sent else ""
        shown = " ".join(first.split())
        return (
            f"call {self.turn}: {self.source} -> {self.target}, note {self.note!r}; the {self.target} "
            f"starts from {len(self.sent)} message(s), the first: {shown[:300]!r}"
        )


@dataclass
class HandoffRun:
    """What a handoff run did: the answer and who gave it, every transfer, every model call as
    (call id, agent, Completion), virtual seconds, and how it ended ("done", "stopped", "failed")."""

    task: str
    carry: str
    answer: str | None = None
    status: str = "running"
    agent: str = ""  # who answered (or was active when the run ended)
    transfers: list[Transfer] = field(default_factory=list)
    calls: list[tuple[str, str, Completion]] = field(default_factory=list)
    elapsed: float = 0.0
    reason: str = ""

    @property
    def deliverable(self) -> str | None:
        return self.answer

    def summary(self) -> str:
        tokens = sum(c.usage.input_tokens for _, _, c in self.calls)
        head = (
            f"{self.status}: {len(self.calls)} model calls, {len(self.transfers)} transfer(s), "
            f"{tokens:,} input tokens, {self.elapsed:.1f} s (virtual); answered by {self.agent or 'nobody'}"
        )
        return head + (f" - {self.reason}" if self.reason else "")

    def __str__(self) -> str:
        log = [str(t) for t in self.transfers] or ["(no transfer)"]
        return "\n".join(
            [f"Task: {self.task}  [carry={self.carry!r}]", *log, self.summary(), f"Answer: {self.answer}"]
        )


def handoff(
    task: str,
    llm: LLM,
    desk: Mapping[str, Specialist] | None = None,
    *,
    start: str = "triage",
    carry: str = "intent",
    model: str | None = None,
    max_turns: int = 12,
    max_tokens: int = 1024,
) -> HandoffRun:
    """Answer `task` starting with agent `start` of `desk` (default: `world_desk()`), one agent
    active at a time, at most `max_turns` model calls in all. `carry` is what a transfer hands on:
    "history", "note" or "intent" (see the module's docstring)."""
    if not isinstance(task, str) or not task.strip():
        raise ValueError("the task must be a non-empty string")
    if carry not in CARRY:
        raise ValueError(f"carry must be one of {CARRY}, got {carry!r}")
    number(max_turns, "max_turns", minimum=1, whole=True)
    desk = world_desk() if desk is None else desk
    if start not in desk:
        raise ValueError(f"no agent {start!r} at the desk; its agents: {', '.join(desk)}")
    if unknown := [f"{a.name} -> {t}" for a in desk.values() for t in a.transfers if t not in desk]:
        raise ValueError(f"a transfer to an agent not at the desk: {', '.join(unknown)}")
    agent, run = desk[start], HandoffRun(task.strip(), carry, agent=start)
    messages: list[Message] = [{"role": "user", "content": run.task}]
    for turn in range(1, max_turns + 1):
        tools = {t.name: t for t in agent.tools}
        specs = [t.spec for t in agent.tools] + [_transfer_spec(desk[n]) for n in agent.transfers]
        try:
            reply = llm.complete(
                system=agent.instructions, messages=messages, tools=specs, model=model, max_tokens=max_tokens
            )
        except ModelError as error:  # the calls it paid for still count
            run.calls += [(f"call{turn}", agent.name, c) for c in paid(error)]
            run.status, run.reason = "failed", f"ModelError: {error}"
            return run
        run.calls.append((f"call{turn}", agent.name, reply))
        run.elapsed = round(run.elapsed + reply.latency, 6)
        if reply.stop_reason == "max_tokens":  # a reply cut off is no answer
            run.status, run.reason = "stopped", f"stopped by max_tokens={max_tokens}: call {turn} was cut off"
            return run
        if not reply.tool_calls:
            run.answer, run.status = reply.text.strip(), "done"
            return run
        messages = [*messages, assistant_message(reply)]
        results, errors, handed = {}, [], None
        for call in reply.tool_calls:
            target = transfer_target(call.name)
            if target in agent.transfers and handed is None:  # one transfer a turn: control moves once
                handed, note = target, str(call.args.get("note", ""))
                results[call.id] = f"Transferred to the {target}."
                continue
            try:
                if call.name not in tools:
                    raise ValueError(f"there is no tool {call.name!r}; tools: {', '.join(tools) or 'none'}")
                results[call.id] = tools[call.name](call.args)
                run.elapsed = round(run.elapsed + tools[call.name].seconds, 6)
            except Exception as e:  # the model reads the error, as in every tool loop of the kit
                results[call.id], errors = f"{type(e).__name__}: {e}", [*errors, call.id]
        messages.append(tool_results_message(results, errors))
        if handed is not None:
            messages = _hand_over(carry, messages, run.task, note, agent.name)
            run.transfers.append(Transfer(turn, agent.name, handed, note, tuple(messages)))
            agent = desk[handed]
            run.agent = handed
    run.status, run.reason = "stopped", f"stopped by max_turns={max_turns}: no answer after {max_turns} calls"
    return run


def _hand_over(carry: str, messages: list[Message], task: str, note: str, source: str) -> list[Message]:
    """The messages the next agent starts from."""
    if carry == "history":
        return messages
    intent = task if carry == "intent" else None
    return [{"role": "user", "content": handoff_request(note, source, intent)}]


def _transfer_spec(target: Specialist) -> Tool:
    return Tool(
        transfer_tool(target.name),
        f"Hand the conversation over to the {target.name}, who {target.description}.",
        {
            "type": "object",
            "properties": {"note": {"type": "string", "description": "what the next agent should know"}},
            "required": ["note"],
            "additionalProperties": False,
        },
    )


def _text(message: Message) -> str:
    content = message.get("content", "")
    if isinstance(content, str):
        return content
    return " ".join(str(b.get("text", b.get("content", ""))) for b in content if isinstance(b, Mapping))


# --- the desk for the task world -----------------------------------------------------------------

_SPECIALISTS = {  # name: (what it does, its tools)
    "researcher": ("follows chains of facts through the records", ("lookup", "search")),
    "analyst": ("adds up, subtracts and compares figures from the records", ("lookup", "calculate")),
}


def world_desk(tool_seconds: float = 0.1, page_tokens: int = 0) -> dict[str, Specialist]:
    """A triage agent and two specialists for the Skerrow Isles. The triage has no tools of the
    world, only transfers; each specialist is a ReAct agent with its own tools (`tool_seconds` a
    call, lookups with pages of `page_tokens` as in `react.world_tools`)."""
    tools = {t.name: t for t in world_tools(tool_seconds, page_tokens)}
    desk = {
        name: Specialist(
            name,
            description,
            f"{react_system(ARCHIPELAGO)} {ONE_AT_A_TIME} You are the {name}: you {description}.",
            tuple(tools[t] for t in names),
        )
        for name, (description, names) in _SPECIALISTS.items()
    }
    lines = "\n".join(team_line(s.name, s.description, [t.name for t in s.tools]) for s in desk.values())
    triage = Specialist(
        "triage",
        "reads each question and hands it to the right specialist",
        f"You are the triage agent of the records office of {ARCHIPELAGO}. You answer nothing yourself: "
        "hand each question over to the specialist who can answer it, with a short note for them.\n"
        f"The specialists:\n{lines}",
        transfers=tuple(desk),
    )
    return {"triage": triage, **desk}
