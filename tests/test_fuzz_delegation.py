"""Fuzz the class of issue 13: on values of unknown rank (tests/strategies_delegation.py),
maxlower is correct wherever onnx.version_converter is, never invalid or wrong, and its
refusals name a remedy without the failed target. Derandomised: CI runs the same cases
(EXAMPLES in the slow tier, a small share in the default tier: tests/budget.py)."""

from __future__ import annotations

import types

from hypothesis import given, note
from hypothesis import strategies as st

from tests import budget
from tests.fixtures.catalog import outputs_of
from tests.fixtures.corpus import TARGETS, generic_feeds
from tests.strategies_delegation import shapeless_models
from tests.test_dominance import benchmark

EXAMPLES = 40


@budget.fuzz(
    EXAMPLES,
    derandomize=True,
)
@given(model=shapeless_models(), target=st.sampled_from(TARGETS))
def test_maxlower_never_loses_to_the_converter_on_values_of_unknown_rank(model, target):
    bench = benchmark()
    note(str(model.graph))
    drawn = types.SimpleNamespace(name="drawn")
    feeds = generic_feeds(model)
    expected, _ = outputs_of(model, feeds)
    theirs = bench.evaluate(drawn, model, feeds, expected, "onnx.version_converter", target)
    mine = bench.evaluate(drawn, model, feeds, expected, "maxlower", target)
    note(f"converter: {theirs.category} {theirs.message}")
    note(f"maxlower: {mine.category} {mine.message}")
    if theirs.category in bench.CORRECT:
        assert mine.category in bench.CORRECT
    assert mine.category in (*bench.CORRECT, "refused")
    assert mine.remedy_problem is None
