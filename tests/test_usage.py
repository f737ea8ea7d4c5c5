"""Costs come from a dated, overridable price table, and roll-ups add up exactly."""

import re

import pytest
from fake_api import FakeAPI, claude, reply

from agentlab.llm import Completion, ModelError, Usage
from agentlab.llm.usage import MAX_TOKENS, PRICES, PRICES_CHECKED, Price, Tally, api_usage, cost, usage_report


def call(step, role, model, inp, out, cache_read=0, cache_write=0):
    return (step, role, Completion("ok", model, "simulated", Usage(inp, out, cache_read, cache_write)))


CALLS = [
    call("plan", "planner", "sim-large", 1200, 300),
    call("s1", "researcher", "sim-small", 800, 120),
    call("s1", "researcher", "sim-small", 950, 60),
    call("s2", "writer", "sim-small", 1500, 400),
    call("s2", "writer", "claude-haiku-5-5", 2000, 500, cache_read=10_000, cache_write=4_000),
]


def test_cost_is_tokens_times_price_per_million_for_every_kind_of_token():
    usage = Usage(
        input_tokens=1_000_000, output_tokens=2_000_000, cache_read_tokens=3_000_000, cache_write_tokens=0
    )
    assert cost("claude-opus-5-5", usage) == pytest.approx(4.00 + 2 * 20.00 + 3 * 0.20)
    assert cost("claude-haiku-5-5", Usage(cache_write_tokens=100_000)) == pytest.approx(0.0125)


# Bills worked out by hand from the price table (USD per million tokens).
BILLS = [
    # sim-large $3 in, $15 out, $0.30 read, $3.75 5-minute write: 200*3 + 100*15 + 1000*0.3 + 2000*3.75
    ("sim-large", Usage(200, 100, 1000, 2000), 0.009900),
    # opus-5-5 $4 in; a 1-hour write is 2x input, $8: 10*4 + 1000*8
    ("claude-opus-5-5", Usage(10, 0, 0, 0, 1000), 0.008040),
    # haiku-5-5 has its own 1-hour rate, $0.20: 1000*0.20
    ("claude-haiku-5-5", Usage(0, 0, 0, 0, 1000), 0.000200),
    # a Haiku 5.5 prompt of exactly 100,000 tokens is not long: 100000*0.10 + 1000*0.50
    ("claude-haiku-5-5", Usage(100_000, 1000), 0.010500),
    # 120,000 is: every rate 5x, (120000*0.10 + 1000*0.50) * 5
    ("claude-haiku-5-5", Usage(120_000, 1000), 0.062500),
    # the prompt counts what was read and written too: 1000 + 99,500 read = 100,500 > 100k,
    # so (1000*0.10 + 99500*0.01 + 100*0.50) * 5
    ("claude-haiku-5-5", Usage(1000, 100, 99_500), 0.005725),
    # the same call with its prompt under 100k: 1000*0.10 + 98000*0.01 + 100*0.50
    ("claude-haiku-5-5", Usage(1000, 100, 98_000), 0.001130),
]


@pytest.mark.parametrize("model, usage, dollars", BILLS)
def test_cost_matches_bills_worked_out_by_hand_with_caching_and_the_long_prompt_tier(model, usage, dollars):
    assert cost(model, usage) == pytest.approx(dollars, abs=1e-12)


def test_the_table_is_dated_and_the_simulator_prices_say_they_are_invented():
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", PRICES_CHECKED)
    assert "invented" in PRICES["sim-large"].note and "invented" in PRICES["sim-small"].note
    assert PRICES["sim-large"].output > PRICES["sim-small"].output  # the large profile costs more


def test_an_unknown_model_is_a_clear_error_from_cost():
    with pytest.raises(ValueError, match=r"no price for model 'llama3.2'.*PRICES\['llama3.2'\] = Price"):
        cost("llama3.2", Usage(10, 10))


def test_prices_can_be_overridden_per_call():
    mine = {"sim-large": Price(1.0, 1.0, 0.0, 0.0)}
    assert cost("sim-large", Usage(500_000, 500_000), prices=mine) == pytest.approx(1.0)


def test_the_totals_equal_the_sum_of_the_parts():
    report = usage_report(CALLS)
    expected = sum((Tally(1, c.usage, cost(c.model, c.usage)) for _, _, c in CALLS), Tally())
    assert report.total.calls == 5 == expected.calls
    assert report.total.usage == expected.usage
    assert report.total.cost == pytest.approx(expected.cost)
    for groups in (report.by_role, report.by_model):
        summed = sum(groups.values(), Tally())
        assert summed.calls == report.total.calls and summed.usage == report.total.usage
        assert summed.cost == pytest.approx(report.total.cost)
    assert report.by_role["researcher"] == Tally(2, Usage(1750, 180), cost("sim-small", Usage(1750, 180)))
    assert report.by_model["sim-small"].calls == 3
    assert report.by_model["claude-haiku-5-5"].usage.cache_read_tokens == 10_000


def test_a_run_object_can_be_passed_directly():
    class FakeRun:
        calls = CALLS

    assert usage_report(FakeRun()).total == usage_report(CALLS).total


def test_an_unpriced_model_counts_as_zero_and_is_named_in_the_report_and_a_warning():
    calls = [*CALLS[:1], call("s9", "writer", "llama3.2", 700, 70)]
    with pytest.warns(UserWarning, match=r"no price for llama3.2: counted as \$0"):
        report = usage_report(calls)
    assert report.unpriced == ("llama3.2",)
    assert report.by_model["llama3.2"] == Tally(1, Usage(700, 70), 0.0)
    assert report.total.cost == pytest.approx(cost("sim-large", Usage(1200, 300)))
    text = report.to_text()
    assert "no price" in text and "No price for llama3.2 (counted as $0)" in text


def test_the_report_prints_as_text_and_html():
    report = usage_report(CALLS)
    text = str(report)
    assert text.splitlines()[1] == "by role"
    # 1200*3 + 300*15 per M; no cache tokens for the planner, but some call has them: both columns
    assert re.search(r"^  planner\s+1\s+1,200\s+300\s+0\s+0\s+0\.0081$", text, re.MULTILINE)
    assert re.search(r"^  claude-haiku-5-5\s+1\s+2,000\s+500\s+10,000\s+4,000\s", text, re.MULTILINE)
    assert re.search(r"^total\s+5\s+6,450\s+1,380\s", text, re.MULTILINE)
    assert f"as of {PRICES_CHECKED}" in text
    page = report._repr_html_()
    assert page.startswith('<table class="agentlab-usage">')
    assert "<td>planner</td><td>1</td><td>1,200</td><td>300</td><td>0</td><td>0</td><td>0.0081</td>" in page
    plain = str(usage_report(CALLS[:4]))  # no call touched the cache: no cache columns
    assert "cache" not in plain and re.search(r"^  planner\s+1\s+1,200\s+300\s+0\.0081$", plain, re.MULTILINE)


# --- counts no real reply carries are refused, naming the field --------------------------------

FINE = {"input_tokens": 10, "output_tokens": 5}


@pytest.mark.parametrize(
    "usage, field",
    [
        ({**FINE, "input_tokens": 10**30}, "usage.input_tokens"),
        ({**FINE, "output_tokens": -1}, "usage.output_tokens"),
        ({**FINE, "cache_read_input_tokens": 2 * 10**9}, "usage.cache_read_input_tokens"),
        ({**FINE, "cache_creation_input_tokens": 1.5}, "usage.cache_creation_input_tokens"),
        ({"output_tokens": 5}, "usage.input_tokens"),
        ({"input_tokens": 10}, "usage.output_tokens"),
        ({**FINE, "input_tokens": True}, "usage.input_tokens"),
        (
            {**FINE, "cache_creation_input_tokens": 300, "cache_creation": {"ephemeral_1h_input_tokens": 9}},
            "usage.cache_creation",
        ),
        (
            {
                **FINE,
                "cache_creation_input_tokens": 300,
                "cache_creation": {"ephemeral_5m_input_tokens": 300, "ephemeral_1h_input_tokens": 300},
            },
            "usage.cache_creation",
        ),
        (
            {**FINE, "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": -7}},
            "usage.cache_creation.ephemeral_1h_input_tokens",
        ),
        ("lots", "usage"),
    ],
    ids=[
        "10^30",
        "negative",
        "over 10^9",
        "not a whole number",
        "no input_tokens",
        "no output_tokens",
        "a bool",
        "a split short of its total",
        "a split over its total",
        "a negative part",
        "not an object",
    ],
)
def test_a_reply_whose_usage_no_real_reply_carries_is_refused_naming_the_field(usage, field):
    api = FakeAPI(reply([{"type": "text", "text": "hi"}], usage=usage))
    with pytest.raises(ModelError, match=re.escape(field)) as refused:
        claude(api).complete(system="s", messages=[{"role": "user", "content": "hi"}])
    assert "\n" not in str(refused.value) and "Traceback" not in str(refused.value)


def test_a_reply_with_a_sound_usage_and_a_split_that_adds_up_is_read():
    usage = {
        **FINE,
        "cache_read_input_tokens": None,  # the API sends null for a count it has nothing to say about
        "cache_creation_input_tokens": 1500,
        "cache_creation": {"ephemeral_5m_input_tokens": 500, "ephemeral_1h_input_tokens": 1000},
    }
    api = FakeAPI(reply([{"type": "text", "text": "hi"}], usage=usage))
    assert claude(api).complete(system="s", messages=[{"role": "user", "content": "hi"}]).usage == Usage(
        10, 5, 0, 500, 1000
    )
    assert api_usage({**FINE, "input_tokens": MAX_TOKENS}).input_tokens == MAX_TOKENS
