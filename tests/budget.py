"""Hypothesis budgets: every fuzz test states its budget here, as the number of cases the slow
tier runs, and one multiplier, the hypothesis profile's, scales all of them (docs/testing.md).

    @budget.fuzz(1000, database=None)     # instead of @settings(max_examples=1000, ...)
    @given(cases())
    def test_something(case): ...

makes the test two items, `test_something[default]` in the default tier and
`test_something[slow]` in the slow tier (the `tier` fixture of tests/conftest.py), and runs
`examples(1000)` cases in either. Which tier a run is of picks the profile (tests/conftest.py):
the default tier's multiplies every budget by 0.05 and is derandomised, the slow tier's runs the
budgets as written. `--hypothesis-profile=long` runs ten times the slow tier's budgets, drawn
afresh (derandomised tests included); it is how to fuzz for longer:

    python -m pytest -m slow --hypothesis-profile=long tests/test_fuzz_pipeline.py
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TypeVar

import pytest
from hypothesis import settings

T = TypeVar("T", bound=Callable)

# The one multiplier, per profile (the profiles themselves: tests/conftest.py).
MULTIPLIERS = {"default": 0.05, "slow": 1.0, "long": 10.0}

# Both tiers of a fuzz test (the `tier` fixture's parameters).
TIERS = ("default", "slow")


def runs_slow_tier(markexpr: str) -> bool:
    """Whether a run with `-m markexpr` selects slow-tier tests (its profile is then "slow")."""
    if not markexpr.strip():
        return True
    try:  # pytest's own parser of -m expressions (not public API)
        from _pytest.mark.expression import Expression
    except ImportError:  # a pytest that moved it: the tier's name is enough
        return "slow" in markexpr.replace("not slow", "")
    return Expression.compile(markexpr).evaluate(lambda name, **_: name == "slow")


def multiplier() -> float:
    """The loaded profile's multiplier (1 for a profile this suite does not define)."""
    return MULTIPLIERS.get(settings.get_current_profile_name(), 1.0)


def examples(n: int) -> int:
    """n, the slow tier's number of cases, scaled by the profile's multiplier (at least 1)."""
    return max(1, math.ceil(n * multiplier()))


def derandomized() -> bool:
    """Whether a test that asks for the same cases every run gets them: in every profile but
    the long one, which is for searching."""
    return settings.get_current_profile_name() != "long"


def in_both_tiers(test: T) -> T:
    """The test as two items, `[default]` in the default tier and `[slow]` in the slow tier:
    for a fuzz test whose budget comes from `examples` (a run of either tier runs its own)."""
    return pytest.mark.usefixtures("tier")(test)


def fuzz(n: int, *, derandomize: bool = False, **kwargs: object) -> Callable[[T], T]:
    """`@settings(max_examples=examples(n), **kwargs)`, and the test in both tiers.

    `derandomize=True`: the same cases every run, in both tiers, as the default tier's profile
    makes every test; the long profile draws fresh ones all the same (it is for searching)."""
    if derandomize and derandomized():
        kwargs["derandomize"] = True

    def decorate(test: T) -> T:
        return in_both_tiers(settings(max_examples=examples(n), **kwargs)(test))

    return decorate
