"""Issues 5 and 17's acceptance on the ONNX conformance cases of both families (41 of Max, 40
of Min).

primitives:  every case at its own opset and at opsets 11 and 13, lowered with the
             `primitives` profile, has no Max, ReduceMax, ArgMax, Min, ReduceMin or ArgMin
             anywhere, passes the full checker and reproduces the case's expected outputs
             bit-exactly.
onnxruntime: every case converted to every opset from 7 to the latest and lowered with the
             `onnxruntime` profile loads and runs in onnxruntime's CPU EP (graph optimisations
             off; no fallback to onnx.reference) and reproduces the expected outputs. Without
             lowering, onnxruntime cannot run some of these pairs (Max and Min on
             int16/uint16, the empty bool ReduceMax, ...): the test checks that such pairs
             exist, so it tests something.

The default tier runs both on one case of each kind (tests/conformance.py: coarse_kind: every
op, element type, run-time or constant axes, empty set, last index), but the primitives
profile on no bool or empty reduction (seconds each; the onnxruntime profile lowers them
there); the slow tier runs the other cases.
"""

from __future__ import annotations

import onnx
import pytest

import maxlower
from maxlower.api import convert_and_lower, lower
from maxlower.runtime import bit_equal, onnxruntime_session, run_model
from passes.extremum import FAMILY_OPS
from tests import tiers
from tests.conformance import both_families_cases, representative_names

LATEST = onnx.defs.onnx_opset_version()
CASES = {case.name: case for case in both_families_cases()}
FAMILY = set(FAMILY_OPS)  # both families


def all_op_types(model: onnx.ModelProto) -> set[str]:
    """Every op in the main graph, every subgraph and every function."""
    found = set()

    def walk(nodes):
        for node in nodes:
            found.add(node.op_type)
            for attr in node.attribute:
                for graph in [attr.g, *attr.graphs]:
                    walk(graph.node)

    walk(model.graph.node)
    for function in model.functions:
        walk(function.node)
    return found


def default_opset(model: onnx.ModelProto) -> int:
    return {o.domain: o.version for o in model.opset_import}[""]


def feeds_and_expected(case, model: onnx.ModelProto):
    inputs, expected = case.data_sets[0]
    return {v.name: x for v, x in zip(model.graph.input, inputs)}, expected


SAMPLE = representative_names(coarse=True)
BOOL_OR_EMPTY_REDUCTIONS = {
    name
    for name in CASES
    if name.startswith("test_reduce_") and ("bool" in name or "empty" in name)
}


@pytest.mark.parametrize(
    "name", tiers.split(sorted(CASES), keep=lambda name: name in SAMPLE - BOOL_OR_EMPTY_REDUCTIONS)
)
def test_primitives_profile_leaves_no_family_op(name):
    case = CASES[name]
    own = default_opset(case.model)
    for opset in sorted({own, 11, 13}):
        source = case.model if opset == own else maxlower.convert(case.model, opset)
        lowered = lower(source, "primitives")
        assert not FAMILY & all_op_types(lowered), f"{name}@{opset}"
        onnx.checker.check_model(lowered, full_check=True)
        assert default_opset(lowered) == opset
        feeds, expected = feeds_and_expected(case, lowered)
        outputs, runner = run_model(lowered, feeds)
        for e, a in zip(expected, outputs, strict=True):
            assert bit_equal(e, a), f"{name}@{opset} ({runner}): {e} != {a}"


@pytest.mark.parametrize("name", tiers.split(sorted(CASES), keep=SAMPLE.__contains__))
def test_onnxruntime_profile_runs_in_onnxruntime(name):
    case = CASES[name]
    for opset in range(7, LATEST + 1):
        lowered, _ = convert_and_lower(case.model, opset, "onnxruntime")
        onnx.checker.check_model(lowered, full_check=True)
        assert default_opset(lowered) == opset
        feeds, expected = feeds_and_expected(case, lowered)
        outputs = onnxruntime_session(lowered).run(None, feeds)
        for e, a in zip(expected, outputs, strict=True):
            assert bit_equal(e, a), f"{name}@{opset}: {e} != {a}"


@pytest.mark.parametrize(
    ("name", "opset"),
    [
        ("test_max_int16", 13),
        ("test_max_uint16", 18),
        ("test_reduce_max_empty_set_bool", 20),
        ("test_min_int16", 13),
        ("test_min_uint16", 18),
    ],
)
def test_without_lowering_onnxruntime_cannot_run_these(name, opset):
    case = CASES[name]
    converted = maxlower.convert(case.model, opset)
    feeds, _ = feeds_and_expected(case, converted)
    with pytest.raises(Exception, match=r"NOT_IMPLEMENTED|not defined for empty set"):
        onnxruntime_session(converted).run(None, feeds)
