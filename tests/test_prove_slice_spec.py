"""The interpreter's Slice against the spec's clamping, on every start and end around the
edges of short axes.

onnx.reference slices as numpy does, which differs from the spec for a negative step whose
start lies below -n (the spec clamps it to 0, so x0 is taken; numpy takes nothing), so the
differential test against onnx.reference (test_prove_semantics.py) cannot decide those:
this one asks onnxruntime, which follows the spec there. onnxruntime deviates in one
place, an end of INT64_MAX with a negative step (it takes x0 where the spec's end, clamped
to n-1, takes nothing when the start is 0); there onnx.reference follows the spec and is
asked instead. A prover that counted a negative bound from the end proved a Slice equal
to a Gather it is not."""

from __future__ import annotations

import itertools

import numpy as np
import onnx
import pytest
from onnx.reference import ReferenceEvaluator

pytest.importorskip("z3", reason="the prover needs z3-solver: pip install -e '.[prove]'")

from maxlower.prove.core import concrete_outputs
from maxlower.runtime import onnxruntime_session

BOUNDS = [-(2**63), -9, -6, -5, -4, -1, 0, 1, 4, 5, 6, 9, 2**63 - 1]
STEPS = [-3, -1, 1, 2]


def _slices_model(n: int) -> tuple[onnx.ModelProto, list[tuple[int, int, int]]]:
    """One Slice node per (start, end, step) over x of length n, each its own output."""
    cases = list(itertools.product(BOUNDS, BOUNDS, STEPS))
    nodes, outputs, inits = [], [], []
    for k, (start, end, step) in enumerate(cases):
        names = [f"s{k}", f"e{k}", f"a{k}", f"t{k}"]
        for name, value in zip(names, (start, end, 0, step)):
            inits.append(onnx.numpy_helper.from_array(np.array([value], np.int64), name))
        nodes.append(onnx.helper.make_node("Slice", ["x", *names], [f"y{k}"]))
        outputs.append(onnx.helper.make_tensor_value_info(f"y{k}", onnx.TensorProto.FLOAT, None))
    graph = onnx.helper.make_graph(
        nodes,
        "slices",
        [onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [n])],
        outputs,
        inits,
    )
    model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 18)])
    model.ir_version = 8
    return model, cases


@pytest.mark.parametrize("n", [0, 1, 2, 5])
def test_slice_clamps_as_the_spec_and_onnxruntime_do(n):
    model, cases = _slices_model(n)
    x = np.arange(n, dtype=np.float32) + 1
    runtime = onnxruntime_session(model).run(None, {"x": x})
    reference = ReferenceEvaluator(model).run(None, {"x": x})
    expected = [
        r if (end == 2**63 - 1 and step < 0) else o
        for (_, end, step), o, r in zip(cases, runtime, reference, strict=True)
    ]
    actual = concrete_outputs(model, {"x": x})
    wrong = [
        (case, e.tolist(), a.tolist())
        for case, e, a in zip(cases, expected, actual, strict=True)
        if e.shape != a.shape or not np.array_equal(e, a)
    ]
    assert not wrong, wrong[:5]
