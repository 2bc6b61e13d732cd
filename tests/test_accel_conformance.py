"""Issue 18's acceptance for each accelerator profile, on the 41 conformance cases of the
family and the whole-model fixtures, lowered with `[profile, "onnxruntime"]` (what the
target and onnxruntime both accept):

- nothing the profile rejects is left (every node of every graph and function asked again);
- the result verifies equal to the input (conformance: the case's expected outputs,
  bit-exactly; fixtures: `maxlower.verify` on seeded trials);
- the result runs in onnxruntime's CPU EP (no fallback to onnx.reference).

A model the pair refuses (exit code 3) must be one that `maxlower.check` lists nodes
without an exact form for: the two doors agree on what cannot be done. Each profile must
lower most models, so that the test tests something.

The default tier runs the fixtures but the larger zoo networks (tests/tiers.py), and the
conformance cases for every profile but the two whose run over the 41 cases takes longest
(each still lowers the fixtures there); the slow tier runs the rest.
"""

from __future__ import annotations

import functools

import onnx
import onnx_ir as ir
import pytest

import maxlower
from maxlower.api import lower
from maxlower.io import deserialize
from maxlower.profiles import load_profiles
from maxlower.runtime import bit_equal, onnxruntime_session
from passes.errors import ConversionError
from passes.function_types import InferFunctionTypesPass
from tests import tiers
from tests.conformance import family_cases
from tests.fixtures.catalog import fixtures

ACCELERATORS = ["coreml", "ncnn", "openvino", "qnn-htp", "rknn", "sentis", "tflite"]
CASES = {case.name: case for case in family_cases()}
FIXTURES = {f.name: f for f in fixtures()}
# What each pair refuses among the 41 cases, by design of the target (see each profile's
# sources): CoreML takes ArgMax only into a Cast to int32 (all 16 ArgMax cases give int64
# onwards), QNN HTP takes no int64 Max (test_max_int64).
MOST_REFUSED = {"coreml": 16, "qnn-htp": 1}


def rejected_nodes(model: onnx.ModelProto, profile) -> list[str]:
    """Every node (graphs, subgraphs, functions) that `profile` still rejects."""
    typed = deserialize(onnx.shape_inference.infer_shapes(model))
    InferFunctionTypesPass()(typed)
    opset = typed.opset_imports[""]
    left = []
    for graph in [typed.graph, *typed.functions.values()]:
        for node in ir.traversal.RecursiveGraphIterator(graph):
            reason = profile.rejection(node, opset) if node.domain == "" else None
            if reason is not None:
                left.append(f"{node.name!r} {node.op_type}: {reason}")
    return left


@functools.cache
def _verified(original: bytes, lowered: bytes, expanded: frozenset[str]) -> bool:
    report = maxlower.verify(
        onnx.load_from_string(original),
        onnx.load_from_string(lowered),
        trials=2,
        expanded=expanded,
    )
    return report.ok


def verified(
    original: onnx.ModelProto, lowered: onnx.ModelProto, expanded: frozenset[str] = frozenset()
) -> bool:
    """`maxlower.verify` finds no difference (once per distinct pair of models); where the
    profile's opset window made the conversion expand function ops, it is held to their
    bodies, and the kernels' rounding passes as such."""
    return _verified(original.SerializeToString(), lowered.SerializeToString(), expanded)


def lowered_or_refused(model: onnx.ModelProto, profiles: list[str]) -> onnx.ModelProto | None:
    """The model lowered for `profiles`, or None when refused, after checking that the
    refusal is a one-line exit-3 one that `maxlower.check` foresees."""
    try:
        return lower(model, profiles)
    except ConversionError as error:
        assert "\n" not in str(error) and "To make it possible:" in str(error)
    try:
        report = maxlower.check(model, profiles)
    except ConversionError:  # conversion into the profile's opset window fails: both refuse
        return None
    assert report.unlowered and report.exit_code() == 3, "lower refused, check did not"
    return None


@pytest.mark.parametrize(
    "profile", tiers.split(ACCELERATORS, keep=lambda p: p not in ("coreml", "ncnn"))
)
def test_conformance_cases(profile):
    pair = [profile, "onnxruntime"]
    loaded = load_profiles(pair)
    refused = 0
    for name, case in CASES.items():
        lowered = lowered_or_refused(case.model, pair)
        if lowered is None:
            refused += 1
            continue
        onnx.checker.check_model(lowered, full_check=True)
        assert rejected_nodes(lowered, loaded) == [], name
        inputs, expected = case.data_sets[0]
        feeds = {v.name: x for v, x in zip(lowered.graph.input, inputs)}
        outputs = onnxruntime_session(lowered).run(None, feeds)
        for e, a in zip(expected, outputs, strict=True):
            assert bit_equal(e, a), f"{profile} {name}: {e} != {a}"
    assert refused <= MOST_REFUSED.get(profile, 0)


@pytest.mark.parametrize(
    "name", tiers.split(sorted(FIXTURES), keep=lambda name: not tiers.large_network(name))
)
def test_fixtures(name):
    """Per fixture, every profile: pairs that give the same model are verified once."""
    fixture = FIXTURES[name]
    original = fixture.load()
    lowered_by = {}
    for profile in ACCELERATORS:
        pair = [profile, "onnxruntime"]
        lowered = lowered_or_refused(original, pair)
        if lowered is None:
            continue
        assert rejected_nodes(lowered, load_profiles(pair)) == [], profile
        lowered_by[profile] = lowered
        onnxruntime_session(lowered).run(None, fixture.feeds(lowered))  # no fallback
        if lowered.SerializeToString() != original.SerializeToString():
            expanded = maxlower.lower_with_report(original, pair)[1].expanded_ops()
            assert verified(original, lowered, expanded), f"{profile} {name} differs from the input"
    assert "openvino" in lowered_by and len(lowered_by) >= 4
