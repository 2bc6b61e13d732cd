"""Every golden case: exact text after conversion, a full-checker pass, equal outputs on
seeded inputs, and a second conversion to the same opset that changes nothing."""

from __future__ import annotations

import onnx
import onnx_ir as ir
import pytest

import maxlower
from maxlower.runtime import bit_equal, run_model
from passes import ConversionError, ConvertFamilyPass
from tests.golden import GOLDEN_DIR, canonical_text, load_cases, random_feeds

CASES = [
    pytest.param(case, id=f"{path.stem}:{case.name}")
    for path in sorted(GOLDEN_DIR.glob("*.onnxtxt"))
    for case in load_cases(path)
]


def test_every_golden_file_has_cases():
    assert len(CASES) >= 30
    assert all(case.values[0].intent for case in CASES), "every case states its intent"


@pytest.mark.parametrize("case", [c for c in CASES if c.values[0].error])
def test_negative_case_raises(case):
    with pytest.raises(ConversionError, match=case.error) as info:
        maxlower.convert(case.source_model(), case.target, **case.options)
    message = str(info.value)
    assert "To make it possible:" in message and info.value.op_type in message


@pytest.mark.parametrize("case", [c for c in CASES if not c.values[0].error])
def test_golden_text(case):
    assert case.expected_text, f"{case.name} has no expect block: run python -m tests.golden"
    converted = maxlower.convert(case.source_model(), case.target, **case.options)
    expected = onnx.parser.parse_model(case.expected_text)
    assert canonical_text(converted) == canonical_text(expected)


@pytest.mark.parametrize("case", [c for c in CASES if not c.values[0].error])
def test_golden_numerics_and_validity(case):
    source = case.source_model()
    converted = maxlower.convert(source, case.target, **case.options)
    onnx.checker.check_model(converted, full_check=True)
    assert {o.domain: o.version for o in converted.opset_import}[""] == case.target
    if case.no_run:
        return
    for seed in range(3):
        feeds = random_feeds(source, case.feeds, seed=seed)
        expected, _ = run_model(source, feeds)
        actual, _ = run_model(converted, feeds)
        for e, a in zip(expected, actual):
            assert bit_equal(e, a), f"seed {seed}: {e!r} != {a!r}"


@pytest.mark.parametrize("case", [c for c in CASES if not c.values[0].error])
def test_converting_again_changes_nothing(case):
    converted = ir.serde.deserialize_model(
        maxlower.convert(case.source_model(), case.target, **case.options)
    )
    before = canonical_text(ir.serde.serialize_model(converted))
    result = ConvertFamilyPass(case.target)(converted)
    assert result.modified is False
    assert canonical_text(ir.serde.serialize_model(result.model)) == before
