"""Golden lowering cases (tests/golden/decompose_*.onnxtxt): exact text after lowering, the
decompositions the case names were the ones used, a full-checker pass, equal outputs on seeded
inputs, a second lowering that changes nothing; negative cases raise a clear ConversionError.
Every decomposition in passes.decompose has at least one case."""

from __future__ import annotations

import onnx
import onnx_ir as ir
import pytest

from maxlower.api import lower_with_report
from maxlower.runtime import bit_equal, run_model
from passes import ConversionError
from passes.decompose import BY_NAME
from passes.legalize import LegalizePass
from tests.golden import GOLDEN_DIR, canonical_text, load_cases, random_feeds

CASES = [
    pytest.param(case, id=f"{path.stem}:{case.name}")
    for path in sorted(GOLDEN_DIR.glob("decompose_*.onnxtxt"))
    for case in load_cases(path, lowering=True)
]
POSITIVE = [c for c in CASES if not c.values[0].error]
NEGATIVE = [c for c in CASES if c.values[0].error]


def _family(name: str) -> str:
    """Widenings to each wide type are one decomposition with a parameter."""
    return name.split("_widen_to_")[0] + "_widen" if "_widen_to_" in name else name


def test_every_decomposition_has_a_golden_case_and_every_case_an_intent():
    used = {step for case in CASES for step in case.values[0].steps}
    assert used - set(BY_NAME) == set(), "golden cases name unknown decompositions"
    missing = {_family(n) for n in BY_NAME} - {_family(n) for n in used}
    assert missing == set(), "decompositions without a golden case"
    assert all(case.values[0].intent for case in CASES)
    assert len(NEGATIVE) >= 8


@pytest.mark.parametrize("case", NEGATIVE)
def test_negative_case_raises(case):
    with pytest.raises(ConversionError, match=case.error) as info:
        case.run()
    message = str(info.value)
    assert "To make it possible:" in message and info.value.op_type in message


@pytest.mark.parametrize("case", POSITIVE)
def test_golden_text_and_steps(case):
    assert case.expected_text, f"{case.name} has no expect block: run python -m tests.golden"
    lowered, report = lower_with_report(case.source_model(), case.profile())
    lowerings = report.lowerings
    expected = onnx.parser.parse_model(case.expected_text)
    assert canonical_text(lowered) == canonical_text(expected)
    used = {step for lowering in lowerings for step in lowering.steps}
    assert set(case.steps) <= used, f"expected {case.steps}, used {sorted(used)}"
    if not case.steps:
        assert lowerings == []


@pytest.mark.parametrize("case", POSITIVE)
def test_golden_numerics_validity_and_idempotence(case):
    source = case.source_model()
    lowered = case.run()
    onnx.checker.check_model(lowered, full_check=True)
    assert lowered.opset_import == source.opset_import
    for seed in range(3):
        feeds = random_feeds(source, case.feeds, seed=seed)
        expected, _ = run_model(source, feeds)
        actual, _ = run_model(lowered, feeds)
        for e, a in zip(expected, actual, strict=True):
            assert bit_equal(e, a), f"seed {seed}: {e!r} != {a!r}"
    model = ir.serde.deserialize_model(lowered)
    before = canonical_text(ir.serde.serialize_model(model))
    assert LegalizePass(case.profile())(model).modified is False
    assert canonical_text(ir.serde.serialize_model(model)) == before
