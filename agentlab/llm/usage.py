"""What the model calls of a run cost: a dated price table and usage roll-ups.

Prices are USD per million tokens. The Claude rows are Anthropic's list prices as
checked on `PRICES_CHECKED`; they change, so the date travels with them and every
function takes a `prices` table you can override (or edit `PRICES` in place). The
simulator's rows are invented, scaled like a large and a small real model, so cost
experiments on the simulator have realistic proportions.

`usage_report(run.calls)` rolls the calls up per role, per model and in total. A
model with no price is counted at zero and named in the report (with a warning),
so a run on a local model still gets its token totals.
"""

from __future__ import annotations

import html
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from agentlab.llm.base import Completion, Usage, brief

PRICES_CHECKED = "2026-11-21"
PRICES_SOURCE = "https://platform.claude.com/docs/en/about-claude/pricing"


@dataclass(frozen=True)
class Price:
    """USD per million tokens. `cache_write` is the 5-minute cache-write rate, `cache_write_1h`
    the 1-hour one (None: 2x input, the documented multiplier; see `llm.cache`). A model whose
    prompts over `long_above` tokens cost more has every rate multiplied by `long_factor` then."""

    input: float
    output: float
    cache_read: float
    cache_write: float
    note: str = ""
    cache_write_1h: float | None = None
    long_above: int | None = None
    long_factor: float = 1.0


PRICES: dict[str, Price] = {
    "claude-fable-5-2": Price(8.00, 40.00, 0.20, 10.00),
    "claude-opus-5-5": Price(4.00, 20.00, 0.20, 5.00),
    "claude-sonnet-5-5": Price(2.00, 10.00, 0.10, 2.50),
    # its 1-hour write rate and its 5x tier over 100k prompt tokens: the Haiku 5.5 overview page
    "claude-haiku-5-5": Price(
        0.10, 0.50, 0.01, 0.125, "prompts over 100k tokens cost 5x", 0.20, long_above=100_000, long_factor=5.0
    ),
    "sim-large": Price(3.00, 15.00, 0.30, 3.75, "invented for the simulator"),
    "sim-small": Price(0.25, 1.25, 0.025, 0.3125, "invented for the simulator"),
    "sim-planner": Price(0.80, 4.00, 0.08, 1.00, "invented for the simulator"),
}


def cache_multipliers(model: str, prices: Mapping[str, Price] | None = None) -> dict[str, float]:
    """`model`'s cache rates as multiples of its input price, from the price table: "read", "write"
    (5 minutes) and "write_1h". Writes are 1.25x and 2x on every model here; reads are not one
    figure: the documentation's 0.1x holds on some models, and the table gives others less."""
    p = (PRICES if prices is None else prices)[model]
    write_1h = 2 * p.input if p.cache_write_1h is None else p.cache_write_1h
    return {"read": p.cache_read / p.input, "write": p.cache_write / p.input, "write_1h": write_1h / p.input}


def cost(model: str, usage: Usage, prices: Mapping[str, Price] | None = None) -> float:
    """USD for `usage` on `model`: fresh input, output, cache reads, and cache writes at their
    5-minute and 1-hour rates; a prompt (input, read and written tokens) over the model's
    `long_above` at `long_factor` times every rate. A model missing from the table is a
    ValueError naming it. Give it one call's usage: the long-prompt tier is per request."""
    table = PRICES if prices is None else prices
    if model not in table:
        raise ValueError(
            f"no price for model {model!r} (known: {', '.join(sorted(table))}); "
            f"add one with PRICES[{model!r}] = Price(input, output, cache_read, cache_write)"
        )
    p = table[model]
    write_1h = 2 * p.input if p.cache_write_1h is None else p.cache_write_1h
    dollars = (
        usage.input_tokens * p.input
        + usage.output_tokens * p.output
        + usage.cache_read_tokens * p.cache_read
        + usage.cache_write_tokens * p.cache_write
        + usage.cache_write_1h_tokens * write_1h
    ) / 1_000_000
    long = p.long_above is not None and usage.prompt_tokens > p.long_above
    return dollars * p.long_factor if long else dollars


MAX_TOKENS = 10**9  # more tokens than any one call carries (a context window is 10^5 to 10^6)


def api_usage(usage: Any) -> Usage:
    """A Messages API reply's `usage` as a `Usage`: fresh input, output, cache reads, and cache
    writes for 5 minutes and for an hour (all 5-minute when the reply does not split them).
    Counts no real reply carries are a ValueError naming the field: a missing input or output
    count, one that is not a whole number from 0 to MAX_TOKENS, a split that disagrees with its
    total. Billing a made-up count silently is worse than refusing the reply."""
    if not isinstance(usage, dict):
        raise ValueError(f"usage is not an object: {brief(repr(usage), 60)}")
    fresh = _count(usage, "input_tokens", "usage", required=True)
    output = _count(usage, "output_tokens", "usage", required=True)
    read = _count(usage, "cache_read_input_tokens", "usage")
    written = _count(usage, "cache_creation_input_tokens", "usage")
    split = usage.get("cache_creation")
    if split is None:
        return Usage(fresh, output, read, written)
    if not isinstance(split, dict):
        raise ValueError(f"usage.cache_creation is not an object: {brief(repr(split), 60)}")
    minutes = _count(split, "ephemeral_5m_input_tokens", "usage.cache_creation")
    hour = _count(split, "ephemeral_1h_input_tokens", "usage.cache_creation")
    if minutes + hour != written:
        raise ValueError(
            f"usage.cache_creation splits {minutes:,} + {hour:,} tokens, but "
            f"usage.cache_creation_input_tokens says {written:,}"
        )
    return Usage(fresh, output, read, minutes, hour)


def recorded_usage(counts: Any) -> Usage:
    """A `Usage` as the kit records one (`llm.replay`: its own field names), each count checked as
    `api_usage` checks a reply's: a ValueError names the field."""
    if not isinstance(counts, dict) or set(counts) - set(Usage.__dataclass_fields__):
        raise ValueError(f"usage is not an object of {', '.join(Usage.__dataclass_fields__)}")
    return Usage(**{name: _count(counts, name, "usage") for name in Usage.__dataclass_fields__})


def _count(counts: dict, name: str, where: str, required: bool = False) -> int:
    """One token count of a reply: a whole number from 0 to MAX_TOKENS (None: 0, unless required)."""
    n = counts.get(name)
    if n is None and not required:
        return 0
    if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n <= MAX_TOKENS:
        said = "missing" if n is None else brief(repr(n), 40)
        raise ValueError(f"{where}.{name} is {said}, not a token count from 0 to {MAX_TOKENS:,}")
    return n


@dataclass(frozen=True)
class Tally:
    """Calls, tokens and dollars for one group of calls (a role, a model, or all)."""

    calls: int = 0
    usage: Usage = field(default_factory=Usage)
    cost: float = 0.0

    def __add__(self, other: Tally) -> Tally:
        return Tally(self.calls + other.calls, self.usage + other.usage, self.cost + other.cost)


@dataclass(frozen=True)
class UsageReport:
    """Usage rolled up per role, per model and in total; `unpriced` lists models costed at zero."""

    by_role: dict[str, Tally]
    by_model: dict[str, Tally]
    total: Tally
    unpriced: tuple[str, ...] = ()

    @property
    def cached(self) -> bool:
        """Whether any call read or wrote the prompt cache (then the report shows both)."""
        u = self.total.usage
        return u.cache_read_tokens + u.cache_write_tokens + u.cache_write_1h_tokens > 0

    def to_text(self) -> str:
        cache = f"{'cache read':>12}{'cache write':>13}" if self.cached else ""
        lines = [f"{'':<22}{'calls':>6}{'input tok':>11}{'output tok':>12}{cache}{'cost (USD)':>12}"]
        for title, groups in (("by role", self.by_role), ("by model", self.by_model)):
            lines.append(title)
            lines += [_row(f"  {name}", t, name in self.unpriced, self.cached) for name, t in groups.items()]
        lines.append(_row("total", self.total, cached=self.cached))
        lines.append(_footnote(self.unpriced))
        return "\n".join(lines)

    __str__ = to_text

    def _repr_html_(self) -> str:
        titles = ("", "calls", "input tokens", "output tokens")
        titles += ("cache read", "cache write") if self.cached else ()
        head = "".join(f"<th>{h}</th>" for h in (*titles, "cost (USD)"))
        rows = []
        for title, groups in (("by role", self.by_role), ("by model", self.by_model)):
            rows.append(f'<tr><th colspan="{len(titles) + 1}" style="text-align:left">{title}</th></tr>')
            rows += [_html_row(name, t, name in self.unpriced, self.cached) for name, t in groups.items()]
        total = _html_row("total", self.total, cached=self.cached)
        rows.append(total.replace("<tr>", '<tr style="font-weight:bold">'))
        return (
            f'<table class="agentlab-usage"><thead><tr>{head}</tr></thead>'
            f"<tbody>{''.join(rows)}</tbody></table>"
            f"<p><small>{html.escape(_footnote(self.unpriced))}</small></p>"
        )


def usage_report(calls: Any, prices: Mapping[str, Price] | None = None) -> UsageReport:
    """Roll up (step id, role, Completion) triples, e.g. `run.calls` (or a Run itself)."""
    table = PRICES if prices is None else prices
    calls: Iterable[tuple[str, str, Completion]] = getattr(calls, "calls", calls)
    by_role: dict[str, Tally] = {}
    by_model: dict[str, Tally] = {}
    unpriced: list[str] = []
    for _step_id, role, completion in calls:
        try:
            dollars = cost(completion.model, completion.usage, table)
        except ValueError:
            dollars = 0.0
            if completion.model not in unpriced:
                unpriced.append(completion.model)
        one = Tally(1, completion.usage, dollars)
        by_role[role] = by_role.get(role, Tally()) + one
        by_model[completion.model] = by_model.get(completion.model, Tally()) + one
    if unpriced:
        warnings.warn(
            f"no price for {', '.join(unpriced)}: counted as $0 in this report "
            "(add them to agentlab.llm.usage.PRICES to cost them)",
            stacklevel=2,
        )
    total = sum(by_role.values(), Tally())
    return UsageReport(by_role, by_model, total, tuple(unpriced))


def _row(name: str, t: Tally, unpriced: bool = False, cached: bool = False) -> str:
    dollars = "no price" if unpriced else f"{t.cost:.4f}"
    u = t.usage
    written = u.cache_write_tokens + u.cache_write_1h_tokens
    cache = f"{u.cache_read_tokens:>12,}{written:>13,}" if cached else ""
    return f"{name:<22}{t.calls:>6}{u.input_tokens:>11,}{u.output_tokens:>12,}{cache}{dollars:>12}"


def _html_row(name: str, t: Tally, unpriced: bool = False, cached: bool = False) -> str:
    dollars = "no price" if unpriced else f"{t.cost:.4f}"
    u = t.usage
    cells = [html.escape(name), str(t.calls), f"{u.input_tokens:,}", f"{u.output_tokens:,}"]
    if cached:
        cells += [f"{u.cache_read_tokens:,}", f"{u.cache_write_tokens + u.cache_write_1h_tokens:,}"]
    return "<tr>" + "".join(f"<td>{c}</td>" for c in (*cells, dollars)) + "</tr>"


def _footnote(unpriced: tuple[str, ...]) -> str:
    note = f"Claude list prices as of {PRICES_CHECKED}; simulator prices are invented."
    if unpriced:
        note += f" No price for {', '.join(unpriced)} (counted as $0)."
    return note
