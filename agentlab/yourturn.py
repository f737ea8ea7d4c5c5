"""Your turn: a lesson cell where you write a few lines that the lesson then uses, and the one-line
self-check that tells you whether they work.

A cell of this kind holds a stub (`...` where your lines go) or a working default, then calls
`your_turn(cell_id, test, hint)`. `test` is a function of no arguments that tries your lines and
returns what is wrong with them in a few words, or "" when they work; your code raising
`NotImplementedError` (the stub's `...` raising it) means "not written yet". Whatever happens,
`your_turn` prints two lines at most, never a traceback into the kit, and the lesson carries on:
each lesson says what it uses when your lines are not written yet.

`agentlab progress` reads these cells' saved outputs, as it reads the exercises' checks.
"""

from __future__ import annotations

from collections.abc import Callable

NOT_WRITTEN = "not written yet: write your lines in the cell above, then run both cells again"
PASSED = "The check passed."  # what `agentlab.course.checks.check` prints too, so progress reads both


def your_turn(cell_id: str, test: Callable[[], str | None], hint: str) -> bool:
    """Try the learner's lines with `test`; print whether they work, and where to look if not."""
    print(f"Checking {cell_id}:")
    try:
        problem = test()
    except NotImplementedError:
        print(f"  {NOT_WRITTEN}")
        return False
    except Exception as error:  # the learner's code: say what it raised, in one line
        said = f"{type(error).__name__}: {error}".splitlines()[0][:200]
        print(f"  ✗ your lines raised {said}. Look at: {hint}")
        return False
    if problem:
        print(f"  ✗ {problem}. Look at: {hint}")
        return False
    print(PASSED)
    return True


def not_written() -> None:
    """What a stub's placeholder calls: the self-check reads it as "not written yet"."""
    raise NotImplementedError("your turn: write this part")
