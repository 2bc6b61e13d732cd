"""Any ONNX backend node case to any opset: converted into a model that passes the full check,
or refused with a ConversionError (exit 3), never an internal error (tests/strategies_backend
.py says which classes this found). Derandomised: CI runs the same share of the pairs
(EXAMPLES in the slow tier, a small share in the default tier: tests/budget.py); for a longer
run use `--hypothesis-profile=long` (all 1,800 cases × 22 targets take hours).
"""

from __future__ import annotations

import onnx
import pytest
from hypothesis import given, note

import maxlower
from maxlower.errors import InvalidModelError
from passes.errors import ConversionError
from tests import budget
from tests.strategies_backend import backend_cases, backend_conversions

EXAMPLES = 120


@pytest.mark.slow  # collecting onnx's backend cases takes seconds (the fuzz test's default
# tier item collects them too, and draws from them)
def test_the_corpus_is_the_whole_backend_suite():
    names = [name for name, _ in backend_cases()]
    assert len(names) > 1000
    assert {
        "test_scan_sum",
        "test_if_seq",
        "test_maxpool_2d_ceil_output_size_reduce_by_one",
    } <= set(names)


@budget.fuzz(EXAMPLES, derandomize=True, database=None)
@given(backend_conversions())
def test_a_backend_case_converts_or_is_refused(drawn):
    name, model, target = drawn
    note(f"{name} → opset {target}")
    try:
        converted = maxlower.convert(model, target)
    except (ConversionError, InvalidModelError) as refusal:
        assert "\n" not in str(refusal)
        return
    onnx.checker.check_model(converted, full_check=True)
    assert {o.version for o in converted.opset_import if o.domain in ("", "ai.onnx")} == {target}
