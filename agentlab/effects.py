"""Side effects under retry: a step that acts, run twice, acts twice (notebook 04).

Every recovery in the kit runs a step again: `Retry`, a resumed checkpoint, a step whose worker
was killed on the cluster (notebook 10). For a step that only reads, that is safe. A step that
sends a message sends it again, and the cruellest case is a lost reply: the message went out,
the answer never came back, the run sees a failure and the retry sends a second copy.

The fix lives on both sides of the call. The sender names each effect with an *idempotency
key*: the same key for every attempt at the same effect, however it comes to be tried again. So
it names the effect itself (for which task, to whom, saying what), not where in a plan it was
asked for (a replan renames every step: `s2` becomes `r1_s2`), nor the attempt, the time or the
retry's note; and it is the same in every process (a resumed run may be another process, where
Python's `hash()` of the same text differs). The receiver remembers the keys it has done and
answers a repeat with the first receipt, doing nothing new.

`Outbox` is that receiver, writing what it really sends in a `Ledger` (the record of side
effects that notebook 09's guardrails read); `notifier` is an executor whose first reply from
the outbox to each message is lost; `notice_plan` and `notice_team` put them in a two-step plan,
and `NoticePlanner` plans it again when asked to replan.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from agentlab.agents import Agent
from agentlab.plan import Context, Plan, Step
from agentlab.world import lookup
from agentlab.world.injection import Ledger

Key = Callable[[str, Step, str, str], str]  # (task, step, recipient, text) -> the effect's name


@dataclass
class Outbox:
    """The message service, seen from its side: every message it sends goes in `ledger`; a
    message whose key it has seen before is not sent again and gets the first receipt back."""

    ledger: Ledger = field(default_factory=Ledger)
    receipts: dict[str, str] = field(default_factory=dict)

    def send_message(self, to: str, text: str, key: str | None = None) -> str:
        if key is not None and key in self.receipts:
            return self.receipts[key]
        receipt = f"#{len(self.sent) + 1}: {self.ledger.send_message(to, text)}"
        if key is not None:
            self.receipts[key] = receipt
        return receipt

    @property
    def sent(self) -> list[dict[str, str]]:
        """The messages that really went out, in order."""
        return [args for tool, args in self.ledger.actions if tool == "send_message"]


class LostReply(TimeoutError):
    """The service did not answer in time: the message may or may not have gone out."""


def notifier(
    outbox: Outbox, task: str, key: Key | None = None, to: Sequence[str] = ("Ines Marrow",)
) -> Agent:
    """An executor that sends what its inputs found to each of `to`. The first reply to each
    message it sends is lost after the message went out, so the run sees the step fail. With
    `key`, every message carries `key(task, step, recipient, text)`."""
    lost: set[str] = set()

    def send(step: Step, context: Context) -> str:
        text = f"{task} {'; '.join(context.values())}".strip()
        keys = [key(task, step, name, text) if key else None for name in to]
        receipts = [outbox.send_message(name, text, k) for name, k in zip(to, keys, strict=True)]
        if text not in lost:
            lost.add(text)
            raise LostReply("no reply from the message service within 5 s (the message may have gone out)")
        return "sent " + ", ".join(receipts)

    return Agent("notifier", send, seconds=1.0, description="sends messages: a side effect")


def notice_plan(entity: str = "Varra", attribute: str = "population") -> Plan:
    """Look a figure up, then send it on: one step that reads, one that acts."""
    return Plan(
        [
            Step(
                "s1",
                "clerk",
                f"Look up the {attribute} of {entity}.",
                args={"entity": entity, "attribute": attribute},
            ),
            Step("s2", "notifier", "Send the figure on.", depends_on=("s1",)),
        ]
    )


def _clerk(step: Step, context: Context) -> str:
    return lookup(**step.args)


def notice_team(outbox: Outbox, task: str, key: Key | None = None, to: Sequence[str] = ("Ines Marrow",)):
    """A clerk that reads the records and a notifier that sends through `outbox`."""
    clerk = Agent("clerk", _clerk, seconds=1.0, description="reads the records")
    return {"clerk": clerk, "notifier": notifier(outbox, task, key, to)}


@dataclass(frozen=True)
class NoticePlanner:
    """A planner for `notice_plan`'s task which, asked to replan after a failure, plans the whole
    task again: look the figure up, send it on. The run renames the new steps (`r1_s1`,
    `r1_s2`), as it renames every replanned step."""

    entity: str = "Varra"
    attribute: str = "population"

    def replan(self, task: str, plan: Plan, outputs: Mapping[str, str], failure: str) -> Plan:
        return notice_plan(self.entity, self.attribute)
