"""The one guard for numbers given as settings: what it lets through, what it refuses, and how
its message names the setting."""

import math
import re
from fractions import Fraction

import numpy as np
import pytest

from agentlab.agents import Agent, ToolFunction, Work, stub_writer
from agentlab.budget import Budget
from agentlab.faults import Fault
from agentlab.llm.simulated import SimulatedLLM
from agentlab.plan import Plan, PlanError, Step
from agentlab.run import run_plan
from agentlab.valid import number, shown
from agentlab.world import FUNCTIONS, TOOLS


@pytest.mark.parametrize("good", [0, 3, 2.5, Fraction(1, 2), np.float64(0.25), np.int64(7), 10**300])
def test_finite_real_numbers_come_back_unchanged(good):
    assert number(good, "x") is good


@pytest.mark.parametrize("bad", [True, False, "3", None, [1], 1j])
def test_bools_text_and_other_things_are_not_numbers(bad):
    with pytest.raises(ValueError, match="^" + re.escape(f"x must be a number, got {bad!r}") + "$"):
        number(bad, "x")


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, np.float64("nan")])
def test_nan_and_the_infinities_are_refused(bad):
    """A NaN compares false with everything: a NaN duration would never be over."""
    with pytest.raises(ValueError, match="x must be a number >= 0, got"):
        number(bad, "x", minimum=0)
    with pytest.raises(ValueError, match="x must be a number, got"):
        number(bad, "x")


def test_the_bounds_are_checked_and_named():
    assert number(0, "seconds", minimum=0) == 0
    with pytest.raises(ValueError, match=r"^seconds must be a number >= 0, got -0.5$"):
        number(-0.5, "seconds", minimum=0)
    with pytest.raises(ValueError, match=r"^rate must be a number > 0, got 0$"):
        number(0, "rate", above=0)
    with pytest.raises(ValueError, match=r"^cap must be a number <= 10, got 11$"):
        number(11, "cap", maximum=10)
    assert number(1, "p", minimum=0, maximum=1) == 1
    with pytest.raises(ValueError, match=r"^p must be a number in \[0, 1\], got 1.5$"):
        number(1.5, "p", minimum=0, maximum=1)
    with pytest.raises(ValueError, match=r"^p must be a number in \(0, 1\], got 0$"):
        number(0, "p", above=0, maximum=1)


def test_whole_numbers_refuse_fractions_and_bools():
    assert number(3, "workers", minimum=1, whole=True) == 3
    assert number(np.int64(3), "workers", minimum=1, whole=True) == 3
    for bad in (1.0, 2.5, True, "2", math.nan):
        with pytest.raises(ValueError, match=r"^workers must be a whole number >= 1, got "):
            number(bad, "workers", minimum=1, whole=True)
    with pytest.raises(ValueError, match=r"^workers must be a whole number >= 1, got 0$"):
        number(0, "workers", minimum=1, whole=True)


def test_the_message_and_the_exception_class_can_be_chosen():
    with pytest.raises(ValueError, match=r"^share must be a fraction in \[0, 1\], got 2$"):
        number(2, "share", minimum=0, maximum=1, must_be="a fraction in [0, 1]")
    with pytest.raises(PlanError, match="^the duration of step 's1' must be a number >= 0, got nan$"):
        number(math.nan, "the duration of step 's1'", minimum=0, error=PlanError)


# --- huge numbers and long values -------------------------------------------------------------


def test_an_integer_too_large_for_a_float_is_refused():
    """The clock adds durations to floats: 0.0 + 10**400 raises OverflowError deep inside a run."""
    assert number(10**308, "x") == 10**308
    with pytest.raises(ValueError, match=r"^x must be a number >= 0, got 1000000000.*\(401 characters\)$"):
        number(10**400, "x", minimum=0)
    with pytest.raises(ValueError, match=r"^x must be a number, got an integer of more than 4300 digits$"):
        number(10**5000, "x")  # too long even to print


def test_a_long_bad_value_is_shown_cut_short():
    with pytest.raises(ValueError) as error:
        number("9" * 100_000, "x")
    assert len(str(error.value)) < 120 and "(100,002 characters)" in str(error.value)
    assert shown("s1") == "'s1'" and shown(None) == "None"


# --- every number a setting takes goes through the guard -----------------------------------


NAN = math.nan


@pytest.mark.parametrize(
    "make, message",
    [
        (
            lambda bad: Agent("writer", stub_writer, seconds=bad),
            "the writer agent's seconds must be a number >= 0",
        ),
        (lambda bad: Work("done", seconds=bad), "a Work's seconds must be a number >= 0"),
        (
            lambda bad: ToolFunction(TOOLS["lookup"], FUNCTIONS["lookup"], seconds=bad),
            "the lookup tool's seconds must be a number >= 0",
        ),
        (lambda bad: Fault(kind="slow", seconds=bad), "a fault's seconds must be a number >= 0"),
        (lambda bad: Budget(seconds=bad), "a budget's seconds must be a number >= 0"),
        (lambda bad: run_plan(Plan([Step("s1", "writer", "x")]), timeout=bad), "timeout must be a number"),
        (lambda bad: SimulatedLLM(error_rate=bad), "error_rate must be between 0 and 1"),
        (lambda bad: SimulatedLLM(injection_susceptibility=bad), "injection_susceptibility must be between"),
        (lambda bad: Plan([Step("s1", "writer", "x", duration=bad)]), "step 's1': 'duration' must be"),
    ],
    ids=[
        "Agent",
        "Work",
        "ToolFunction",
        "Fault",
        "Budget",
        "timeout",
        "error_rate",
        "susceptibility",
        "duration",
    ],
)
@pytest.mark.parametrize(
    "bad", [NAN, math.inf, -1, "2", True, 10**400], ids=["nan", "inf", "-1", "text", "True", "10**400"]
)
def test_every_number_setting_refuses_nan_infinity_and_non_numbers_naming_the_setting(make, message, bad):
    with pytest.raises(ValueError, match=re.escape(message)):
        make(bad)


def test_zero_seconds_are_fine_where_time_may_be_zero():
    assert Agent("writer", stub_writer, seconds=0).seconds == 0
    assert Work("done", seconds=0).seconds == 0 and Work("done").seconds is None
    assert ToolFunction(TOOLS["lookup"], FUNCTIONS["lookup"], seconds=0).seconds == 0
