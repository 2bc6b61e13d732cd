"""Golden cases of the other-ops pass (tests/fixtures/golden/other_ops.onnxtxt): exact text,
full check, equal outputs on seeded inputs, negatives with their message, and a second
conversion that changes nothing."""

from __future__ import annotations

import numpy as np
import onnx
import onnx_ir as ir
import pytest

import maxlower
from maxlower.runtime import bit_equal, run_model
from passes import ConversionError
from passes.version.other_ops import ConvertOtherOpsPass
from tests.fixtures.catalog import HERE, spec_reference
from tests.golden import canonical_text, load_cases, random_feeds

GOLDEN = HERE / "golden" / "other_ops.onnxtxt"
CASES = [pytest.param(case, id=case.name) for case in load_cases(GOLDEN)]
POSITIVE = [c for c in CASES if not c.values[0].error]
NEGATIVE = [c for c in CASES if c.values[0].error]


def test_cases_state_intent_and_cover_negatives():
    assert len(CASES) >= 15 and len(NEGATIVE) >= 3
    assert all(c.values[0].intent for c in CASES)


@pytest.mark.parametrize("case", NEGATIVE)
def test_negative_case_raises(case):
    with pytest.raises(ConversionError, match=case.error) as info:
        maxlower.convert(case.source_model(), case.target, **case.options)
    assert "To make it possible:" in str(info.value)


@pytest.mark.parametrize("case", POSITIVE)
def test_golden_text(case):
    converted = maxlower.convert(case.source_model(), case.target, **case.options)
    expected = onnx.parser.parse_model(case.expected_text)
    assert canonical_text(converted) == canonical_text(expected)


@pytest.mark.parametrize("case", POSITIVE)
def test_golden_numerics(case):
    source = case.source_model()
    converted = maxlower.convert(source, case.target, **case.options)
    onnx.checker.check_model(converted, full_check=True)
    # LayerNormalization as its function body: what the converted model must reproduce bit
    # for bit (onnxruntime's fused kernel rounds differently; see test_whole_model.py)
    reference = spec_reference(source, frozenset({"LayerNormalization"}))
    for seed in range(2):
        feeds = random_feeds(source, case.feeds, seed=seed)
        if "c" in feeds:  # the If case: run both branches
            feeds["c"] = np.array(bool(seed))
        expected, _ = run_model(reference, feeds)
        actual, runtime = run_model(converted, feeds)
        assert runtime == "onnxruntime"
        assert all(bit_equal(e, a) for e, a in zip(expected, actual, strict=True)), seed


@pytest.mark.parametrize("case", POSITIVE)
def test_converting_again_changes_nothing(case):
    converted = ir.serde.deserialize_model(
        maxlower.convert(case.source_model(), case.target, **case.options)
    )
    before = canonical_text(ir.serde.serialize_model(converted))
    assert ConvertOtherOpsPass(case.target, **case.options)(converted).modified is False
    assert canonical_text(ir.serde.serialize_model(converted)) == before
