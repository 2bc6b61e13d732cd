"""The ONNX backend conformance cases of both families (41 of Max, 40 of Min), converted to
every opset.

From 7 to the latest every pair must convert, pass the full checker with the target as its
default opset, and reproduce the case's expected outputs bit-exactly (in onnxruntime with
optimisations off; in onnx.reference where onnxruntime has no kernel). Below 7 the same holds
except for the pairs listed in KNOWN_REFUSALS, each with the reason no exact form is emitted.

The default tier runs one case of each kind (tests/conformance.py: representative_names) at
every opset, and every case at opsets 1 (the known refusals), 7 (the first that every case
converts to) and 13; the slow tier the rest of the matrix.
"""

from __future__ import annotations

import onnx
import pytest

import maxlower
from maxlower.runtime import bit_equal, run_model
from passes import ConversionError
from passes.extremum import MAX, MIN
from tests import tiers
from tests.conformance import both_families_cases, family_cases, representative_names

LATEST = onnx.defs.onnx_opset_version()
CASES = {case.name: case for case in both_families_cases()}
RUNTIME_AXES_CASES = {
    name
    for name, case in CASES.items()
    if case.model.graph.node[0].op_type in (MAX.reduce, MIN.reduce)
    and len(case.model.graph.node[0].input) > 1
}

# (cases, opsets) -> (text of the ConversionError, why there is no exact form to emit)
KNOWN_REFUSALS = [
    (
        RUNTIME_AXES_CASES,
        range(1, 6),
        "Tile with a repeats input",
        "axes are a graph input, so the reduced set is only known at run time; choosing "
        "between reduced and unreduced data needs a data-dependent shape, which before opset 6 "
        "only Tile-1 gives, and neither onnxruntime nor onnx.reference runs Tile-1, so such a "
        "rewrite could not be proven",
    ),
    (
        {"test_max_int64", "test_max_uint64", "test_min_int64", "test_min_uint64"},
        range(1, 6),
        "integer arithmetic",
        "no float type holds every 64-bit integer and Max (Min) before 12 is float-only; the exact "
        "comparison needs integer Sub/Mul/Add, which ONNX only has from opset 6",
    ),
]


def expected_refusal(name: str, opset: int) -> str | None:
    for names, opsets, message, _why in KNOWN_REFUSALS:
        if name in names and opset in opsets:
            return message
    return None


def test_there_are_41_max_and_40_min_cases():
    assert len(family_cases(MAX)) == 41 and len(family_cases(MIN)) == 40
    assert len(CASES) == 81
    # Min has no empty bool case, so one fewer ReduceMin case takes its axes as an input
    assert len(RUNTIME_AXES_CASES) == 9 + 8


# (name, opset): every pair; the default tier's sample is described above
PAIRS = [
    pytest.param(name, opset, id=f"{name}-{opset}")
    for name in sorted(CASES)
    for opset in range(1, LATEST + 1)
]
SAMPLE_OPSETS = (1, 7, 13)


@pytest.mark.parametrize(
    ("name", "opset"),
    tiers.split(
        PAIRS, keep=lambda pair: pair[0] in representative_names() or pair[1] in SAMPLE_OPSETS
    ),
)
def test_conformance_case_converts_exactly(name, opset, record_property):
    case = CASES[name]
    refusal = expected_refusal(name, opset)
    if refusal:
        with pytest.raises(ConversionError, match=refusal):
            maxlower.convert(case.model, opset)
        return
    converted = maxlower.convert(case.model, opset)
    onnx.checker.check_model(converted, full_check=True)
    assert {o.domain: o.version for o in converted.opset_import}[""] == opset
    inputs, expected_outputs = case.data_sets[0]
    feeds = {v.name: x for v, x in zip(converted.graph.input, inputs)}
    outputs, runner = run_model(converted, feeds)
    record_property("runner", runner)  # onnxruntime, or onnx.reference where it has no kernel
    for expected, actual in zip(expected_outputs, outputs, strict=True):
        assert bit_equal(expected, actual), f"{name}@{opset} ({runner}): {expected} != {actual}"
