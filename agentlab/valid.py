"""One guard for numbers given as settings: durations, counts, caps, probabilities.

Python is generous with numbers in ways a setting must not be: `True` is 1, `"3"` is
text, and NaN compares false with everything, so a NaN duration is never over and a
run waiting for it waits forever. `number` refuses all of those (and the infinities),
checks the bounds, and names the setting in its message.
"""

from __future__ import annotations

import math
import numbers
from typing import TypeVar

N = TypeVar("N")


def number(
    value: N,
    what: str,
    *,
    minimum: float | None = None,
    above: float | None = None,
    maximum: float | None = None,
    whole: bool = False,
    must_be: str | None = None,
    error: type[Exception] = ValueError,
) -> N:
    """`value` itself, if it is a finite real number (an integer if `whole`; never a bool) with
    `minimum <= value`, `above < value` and `value <= maximum` for the bounds given. Otherwise
    `error("<what> must be <must_be>, got <value>")`; `must_be` defaults to the bounds in words."""
    kinds = (int, numbers.Integral) if whole else (int, float, numbers.Real)  # common ones first: faster
    if (
        isinstance(value, bool)
        or not isinstance(value, kinds)
        or not (isinstance(value, int) or math.isfinite(value))  # (an int can be too big for a float)
        or (minimum is not None and value < minimum)
        or (above is not None and value <= above)
        or (maximum is not None and value > maximum)
    ):
        raise error(f"{what} must be {must_be or _described(minimum, above, maximum, whole)}, got {value!r}")
    return value


def _described(minimum: float | None, above: float | None, maximum: float | None, whole: bool) -> str:
    """ "a number >= 0", "a whole number >= 1", "a number in [0, 1]", "a number in (0, 1]"."""
    words = "a whole number" if whole else "a number"
    low = f"[{minimum}" if minimum is not None else f"({above}" if above is not None else None
    if low is not None and maximum is not None:
        return f"{words} in {low}, {maximum}]"
    bounds = ((">=", minimum), (">", above), ("<=", maximum))
    return words + "".join(f" {sign} {bound}" for sign, bound in bounds if bound is not None)
