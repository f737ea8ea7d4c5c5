"""A simulated LLM: a deterministic stand-in that does the kit's work the way a competent model would.

It is a simulator, not a model, and says so everywhere (`backend = "simulated"`, its repr, the
model names "sim-large", "sim-small" and "sim-planner"). It answers the same requests a real model gets,
recognising each by its structure: a request with a JSON Schema titled `plan.PLAN_SCHEMA_TITLE`
asks for a **plan** (a **replan** when a user message holds a failure report), and anything else
is an **agent turn** (an executor's tool loop, a writer's report, a single ReAct agent). This
module reads the request; `world.plans` and `world.solver` work out the answer, as a model that
knows the task world's grammar and nothing of its data would.

**Errors, on purpose.** With `error_rate` > 0, a call goes wrong with that probability, in one
of the selected `error_kinds` that the request leaves room for (`world.mistakes` makes the
mistake: a broken plan, a misspelt argument, a made-up answer, ...). The large model slips at
that rate whatever it is asked; the small one more often the more a request asks of it: as
rarely as the large model on a one-step request, 3x as often on a typical three-step one, 6x on
a six-step plan (steps counted by `world.steps_needed`), which is what makes routing the easy
requests to it pay. Every mistake is recorded in `injected`, to explain a run afterwards
(in the process that made the call: on a Dask worker, the worker's copy keeps them).

**A planner trained for planning** (notebook 04). "sim-planner" models the specialist of
Plan-and-Act (Erdogan et al., 2025): a small model trained on plans. On a plan or a replan it
slips a quarter as often as the large model, however many steps the plan has; that is all its
training buys. It knows no more of the world (when it does not slip, its plans are the other
profiles' plans, word for word), and on agent turns it is an ordinary small model, with
"sim-small"'s slips. It is quicker than the large model and priced between the two.

**Planted instructions** (notebook 09). With `injection_susceptibility` > 0 it models a model
that can be talked into things: when the newest message it reads spells out a call to one of
its tools in a planted note (`world.injection`), it does what the note asks with this
probability, and still reads the data around the note correctly. At 0 (the default), or with
no note in sight, nothing changes.

**Determinism.** Each call's randomness comes from a SHA-256 hash of (seed, model, the whole
request), never from call order or shared state, so threads cannot change what it says. So the
same request always gets the same answer, and one asked again is answered from memory.

**Prompt caching** (notebook 11). With `cache="5m"` or `"1h"` it marks the kit's breakpoints
as the Claude backend does (`llm.cache.mark`) and reports, as the API does, the tokens it read
from the cache and wrote to it, apart from the fresh input; `llm.cache` says how the cache is
modelled (from the request alone, so it stays deterministic). Off by default (`cache=None`):
every call then pays for its whole prompt as fresh input, as the earlier notebooks count it.

**Tokens.** `count_tokens` is the rule of thumb of about 4 characters per token (rounded up) for
English text; JSON (tool specs, schemas, tool inputs) is counted on its compact serialisation.
Real tokenizers differ by tens of per cent. **Latency** is virtual: the profile's
`overhead + output_tokens / tokens_per_second`.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import threading
from collections.abc import Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass, replace
from json.encoder import c_make_encoder as c_encoder  # None without json's C accelerator
from json.encoder import encode_basestring
from typing import Any

from agentlab.llm import cache as caching
from agentlab.llm.base import Completion, Message, Tool, ToolCall, Usage
from agentlab.plan import PLAN_SCHEMA_TITLE
from agentlab.prompts import is_failure_report
from agentlab.valid import number
from agentlab.world.capstone_model import steps_needed  # the grammar's, and the capstone's questions
from agentlab.world.mistakes import ERROR_KINDS
from agentlab.world.plans import plan_reply
from agentlab.world.solver import Conversation, turn_reply

TYPICAL_STEPS = 3  # the steps of a typical request


@dataclass(frozen=True)
class Profile:
    """How a simulated model behaves: its speed (virtual seconds) and how error-prone it is."""

    name: str
    overhead: float  # seconds before the first output token
    tokens_per_second: float
    error_factor: float  # multiplies the error rate you set (capped at 1)
    summary: str
    scales_with_steps: bool = False  # error_factor is then for a request of TYPICAL_STEPS steps
    plan_error_factor: float | None = None  # on plans and replans, of any length, if it differs

    def errs_times(self, steps: int, planning: bool = False) -> float:
        """How many times the set error rate this model slips at, on a request needing `steps`
        (a plan or a replan when `planning`)."""
        if planning and self.plan_error_factor is not None:
            return self.plan_error_factor
        if not self.scales_with_steps:
            return self.error_factor
        return max(1.0, self.error_factor * steps / TYPICAL_STEPS)


PROFILES = {
    "sim-large": Profile("sim-large", 1.2, 40.0, 1.0, "accurate, slow, expensive"),
    "sim-small": Profile("sim-small", 0.4, 120.0, 3.0, "cheaper, faster, more errors", True),
    "sim-planner": Profile(
        "sim-planner", 0.6, 90.0, 3.0, "trained for planning: few slips on plans, a small model's elsewhere",
        True, plan_error_factor=0.25,
    ),
}


def count_tokens(text: str) -> int:
    """About 4 characters per token, rounded up: the kit's approximate tokenizer."""
    return math.ceil(len(text) / 4)


@dataclass(frozen=True)
class InjectedError:
    """A record of one error the simulator made on purpose (for explaining a run, not for the run)."""

    model: str
    request: str  # "plan", "replan" or "turn"
    kind: str
    detail: str


class SimulatedLLM:
    """The kit's offline model. `error_rate` is the chance per call of one of `error_kinds`
    (all kinds by default); `model` is the default profile, one of `PROFILES`."""

    backend = "simulated"

    def __init__(
        self,
        seed: int = 0,
        error_rate: float = 0.0,
        error_kinds: Sequence[str] | None = None,
        model: str = "sim-large",
        injection_susceptibility: float = 0.0,
        cache: str | None = None,
    ):
        if cache is not None:
            caching.control(cache)  # a ValueError naming the lifetimes, for anything else
        self.cache = cache
        probability = {"minimum": 0, "maximum": 1, "must_be": "between 0 and 1"}
        number(error_rate, "error_rate", **probability)
        number(injection_susceptibility, "injection_susceptibility", **probability)
        kinds = ERROR_KINDS if error_kinds is None else tuple(error_kinds)
        unknown = [k for k in kinds if k not in ERROR_KINDS]
        if unknown:
            raise ValueError(f"unknown error kind(s) {unknown}; choose from {list(ERROR_KINDS)}")
        self.seed, self.error_rate, self.error_kinds = seed, error_rate, kinds
        self.model = _profile(model).name
        self.injection_susceptibility = injection_susceptibility
        self.injected: list[InjectedError] = []  # appended to by every call that erred on purpose
        self._lock = threading.Lock()
        self._answers: dict[tuple, _Answer] = {}  # by request: see `complete`

    def __getstate__(self) -> dict[str, Any]:
        """What travels when it is pickled (to a Dask worker, say): everything but the lock,
        which cannot be pickled and is rebuilt on arrival, and the answers it remembers. The
        copy on a worker answers exactly as this one does (its randomness is the hash of seed,
        model and request), but the mistakes it makes are recorded in *its* `injected`, on the
        worker, not in this one's."""
        state = dict(self.__dict__)
        del state["_lock"], state["_answers"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock, self._answers = threading.Lock(), {}

    def __repr__(self) -> str:
        kinds = "" if self.error_kinds == ERROR_KINDS else f", error_kinds={list(self.error_kinds)}"
        if self.injection_susceptibility:
            kinds += f", injection_susceptibility={self.injection_susceptibility}"
        if self.cache:
            kinds += f", cache={self.cache!r}"
        return (
            f"SimulatedLLM(seed={self.seed}, error_rate={self.error_rate}{kinds}, "
            f"model={self.model!r})  # a simulator, not a real model"
        )

    def complete(
        self,
        *,
        system: str,
        messages: Sequence[Message],
        tools: Sequence[Tool] = (),
        schema: Mapping[str, Any] | None = None,
        model: str | None = None,
        max_tokens: int = 1024,
    ) -> Completion:
        number(max_tokens, "max_tokens", minimum=1, whole=True)
        profile = _profile(model or self.model)
        specs = [_spec(t) for t in tools]  # each made once, used twice: in the request's hash
        shape = _compact(schema)  # and in its tokens
        # the request, as the JSON of [system, messages, specs, schema, max_tokens]
        parts = [_compact(system), _compact(list(messages)), f"[{','.join(specs)}]", shape]
        request = f"[{','.join(parts)},{_compact(max_tokens)}]"
        digest = hashlib.sha256(f"{self.seed}\x00{profile.name}\x00{request}".encode()).hexdigest()
        # the same request always gets the same answer: one asked again is answered from memory
        key = (digest, self.error_rate, self.error_kinds, self.injection_susceptibility, self.cache)
        answer = self._answers.get(key)
        if answer is None:
            answer = self._answer(digest, profile, system, messages, tools, schema, max_tokens, specs, shape)
            with self._lock:
                if len(self._answers) >= ANSWERS_KEPT:  # the oldest goes
                    self._answers.pop(next(iter(self._answers)))
                self._answers[key] = answer
        if answer.mistake:
            with self._lock:
                self.injected.append(answer.mistake)
        calls = tuple(ToolCall(f"toolu_sim_{digest[:12]}_{i}", name, dict(args))
                      for i, (name, args) in enumerate(answer.calls))
        data = None
        if schema is not None and answer.stop != "max_tokens":
            with suppress(json.JSONDecodeError):
                data = json.loads(answer.text)
        return Completion(answer.text, profile.name, self.backend, answer.usage, answer.latency, data, calls,
                          answer.stop)

    def _answer(self, digest, profile, system, messages, tools, schema, max_tokens, specs, shape) -> _Answer:
        """What the model says to a request, worked out: `complete` without the bookkeeping."""
        rng = random.Random(int(digest[:16], 16))
        texts = [_message_text(m) for m in messages]  # each read once: for what it says, and its tokens
        seen = _read(system, messages, texts, tools)
        planning = _is_plan_request(schema)
        rate = min(1.0, self.error_rate * profile.errs_times(steps_needed(seen.request), planning))
        # drawn first, always, so the rate alone decides it; a call that errs may make these mistakes
        kinds = self.error_kinds if rng.random() < rate else ()
        # its own draw, from another part of the hash, so the error draws above stay as they were
        # (at a susceptibility of 0 it can only say no, so it is not drawn)
        obeys = bool(self.injection_susceptibility) and (
            random.Random(int(digest[16:32], 16)).random() < self.injection_susceptibility
        )

        if planning:
            kind = "replan" if seen.report else "plan"
            reply = plan_reply(seen, schema, kinds, rng, obeys)
        else:
            kind = "turn"
            reply = turn_reply(seen, kinds, rng, obeys)
        mistake = InjectedError(profile.name, kind, *reply.error) if reply.error else None

        text, calls = reply.text, tuple(reply.calls)
        stop = "tool_use" if calls else "end_turn"
        output_tokens = count_tokens(text) + sum(count_tokens(_compact({"n": n, "i": a})) for n, a in calls)
        if output_tokens > max_tokens:  # cut off mid-answer, as a real model is
            text, calls, output_tokens, stop = text[: max_tokens * 4], (), max_tokens, "max_tokens"
        prompt = [system, *texts, *specs]
        if schema is not None:
            prompt.append(shape)
        usage = Usage(sum(count_tokens(part) for part in prompt), output_tokens)
        if self.cache:
            named = [{"name": t.name, "description": t.description, "input_schema": t.input_schema}
                     for t in tools]
            body = {"system": system, "tools": named, "messages": [dict(m) for m in messages]}
            if schema is not None:
                body["output_config"] = {"format": {"type": "json_schema", "schema": schema}}
            usage = with_cache(usage, caching.mark(body, self.cache), profile.name)
        latency = round(profile.overhead + output_tokens / profile.tokens_per_second, 3)
        return _Answer(text, calls, stop, usage, latency, mistake)


ANSWERS_KEPT = 10_000  # answers a SimulatedLLM remembers (the oldest are forgotten first)


@dataclass(frozen=True)
class _Answer:
    """What the simulator answered to one request, kept to answer it again."""

    text: str
    calls: tuple[tuple[str, Mapping[str, Any]], ...]  # (tool name, arguments)
    stop: str
    usage: Usage
    latency: float
    mistake: InjectedError | None


def with_cache(usage: Usage, body: Mapping[str, Any], model: str, memory: caching.PromptCache | None = None):
    """`usage` with its input split as the prompt cache would (`llm.cache`) for a Messages API `body`
    and its breakpoints (a top-level one marks the last message); by what `memory` holds, if given."""
    profile, system, pieces = PROFILES.get(model, PROFILES["sim-large"]), body.get("system") or "", []
    for t in body.get("tools") or ():
        spec = _compact([t["name"], t.get("description", ""), t.get("input_schema", {})])
        pieces.append(caching.Piece(count_tokens(spec), caching.breakpoint_of(t), key=spec))
    fmt = (body.get("output_config") or {}).get("format") or {}
    if fmt.get("type") == "json_schema":  # taken to be part of the stable prefix, before the system prompt
        shape = _compact(fmt.get("schema"))
        pieces.append(caching.Piece(count_tokens(shape), key=shape))
    if system:  # a string, or a list of text blocks whose last breakpoint counts
        text = system if isinstance(system, str) else "\n".join(b.get("text", "") for b in system)
        pieces.append(caching.Piece(count_tokens(text), caching.breakpoint_of(system), key=text))
    for m in body["messages"]:
        said, answer = _message_text(m), m.get("role") == "assistant"
        tokens = count_tokens(said)
        seconds = profile.overhead + tokens / profile.tokens_per_second
        pieces.append(caching.Piece(tokens, caching.breakpoint_of(m), answer, seconds, f"{answer}{said}"))
    if isinstance(automatic := body.get("cache_control"), Mapping) and pieces:
        pieces[-1] = replace(pieces[-1], ttl=automatic.get("ttl", "5m"))
    args = (pieces, usage.input_tokens, caching.min_cacheable(model))
    split = memory.use(*args, model) if memory else caching.cache_usage(*args)
    return Usage(split.input, usage.output_tokens, split.read, split.write_5m, split.write_1h)


def _profile(name: str) -> Profile:
    if name not in PROFILES:
        raise ValueError(f"the simulator has no model {name!r}; its profiles are {', '.join(PROFILES)}")
    return PROFILES[name]


# --- reading a request -----------------------------------------------------------------------


def _compact(value: Any) -> str:
    """`value` as compact JSON, keys sorted (by `_ENCODE` where there is a C encoder)."""
    try:
        return "".join(_ENCODE(value, 0)) if _ENCODE else _ENCODER.encode(value)
    except RecursionError:  # a value that holds itself: `_ENCODER`, which looks for one, names it
        return _ENCODER.encode(value)


_SPECS: dict[int, tuple[Tool, str]] = {}  # id(tool) -> (the tool, kept so the id stays its own; its spec)


def _spec(tool: Tool) -> str:
    """A tool's spec as compact JSON, made once per Tool (a loop offers the same tools at every
    turn; a Tool is frozen, and its schema is taken not to change)."""
    known = _SPECS.get(id(tool))
    if known is None or known[0] is not tool:
        if len(_SPECS) >= 1000:  # many tools made on the fly: start again
            _SPECS.clear()
        known = _SPECS[id(tool)] = (tool, _compact([tool.name, tool.description, tool.input_schema]))
    return known[1]


def _plain(value: Any) -> Any:
    """JSON for the odd object in a request (a mapping proxy, say); never a repr with an address."""
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, set | frozenset):
        return sorted(value, key=str)
    raise TypeError(f"a request holds {type(value).__name__}, which is not JSON")


_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=_plain)
# `_ENCODER.encode` makes a C encoder at every call, which costs more than most values' JSON; this one,
# with its settings (markers, default, text, indent, separators, sort_keys, skipkeys, allow_nan), is
# made once. It keeps no markers of the values it is inside, a record threads would share.
_ENCODE = c_encoder and c_encoder(None, _plain, encode_basestring, None, ":", ",", True, False, True)


def _is_plan_request(schema: Mapping[str, Any] | None) -> bool:
    return bool(schema) and (
        schema.get("title") == PLAN_SCHEMA_TITLE or "steps" in schema.get("properties", {})
    )


def _block_text(block: Any) -> str:
    """The text a content block carries, for reading and for counting tokens."""
    if isinstance(block, str):
        return block
    kind = block.get("type")
    if kind == "text":
        return block.get("text", "")
    if kind == "tool_use":
        return _compact({"n": block.get("name"), "i": block.get("input", {})})
    if kind == "tool_result":
        content = block.get("content", "")
        return content if isinstance(content, str) else "".join(_block_text(b) for b in content)
    return _compact(block)


def _message_text(message: Message) -> str:
    content = message.get("content", "")
    return content if isinstance(content, str) else "\n".join(_block_text(b) for b in content)


def _read(
    system: str, messages: Sequence[Message], texts: Sequence[str], tools: Sequence[Tool]
) -> Conversation:
    """What the model reads in a conversation, in one pass: the user's messages (the first one, the
    first holding a failure report, the newest if it is the last message), and every tool call
    made, with its result once one came back. `texts` are the messages' texts (`_message_text`)."""
    users, calls, asked, results = [], [], {}, []
    for m, text in zip(messages, texts, strict=True):
        if m.get("role") == "user":
            users.append(text)
        content = m.get("content")
        for block in content if isinstance(content, list | tuple) else ():
            kind = block.get("type") if isinstance(block, dict | Mapping) else None  # dict: no ABC check
            if kind == "tool_use":
                calls.append((block.get("name"), block.get("input", {})))
                asked[block.get("id")] = calls[-1]
            elif kind == "tool_result" and block.get("tool_use_id") in asked:
                name, args = asked[block.get("tool_use_id")]
                results.append((name, args, _block_text(block), bool(block.get("is_error"))))
    first = users[0] if users else ""
    report = next((text for text in users if is_failure_report(text)), None)
    newest = users[-1] if messages and messages[-1].get("role") == "user" else ""
    names = tuple(t.name for t in tools)
    return Conversation(system, names, first, report, newest, tuple(calls), tuple(results))
