"""The one guard for numbers given as settings: what it lets through, what it refuses, and how
its message names the setting."""

import math
import re
from fractions import Fraction

import numpy as np
import pytest

from agentlab.plan import PlanError
from agentlab.valid import number


@pytest.mark.parametrize("good", [0, 3, 2.5, Fraction(1, 2), np.float64(0.25), np.int64(7), 10**400])
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
