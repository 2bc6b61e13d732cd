"""What the red team of this session's prover changes found (unsound PROVED verdicts, each
shown different in onnxruntime), one class a test, fixed where its rule lives:

1. a subgraph's initializer named like a main-graph value gave that value a length
   (passes.graph_utils.add_reshape_ranks reads each graph's own names first);
2. a Reshape to a graph input with a default took the default's length (the converter's
   inference keeps a default a caller may override out: maxlower.io._light_model);
3. a declared value_info decided a Softmax's rank, and a relabel across 13 was trusted
   (a relabel across a change of meaning is a site, typed by what holds in every run);
4. AveragePool-19 and AveragePool-11, one function by the spec, run to other bits in
   onnxruntime (shared.KERNELS_APART: never shared, never a trusted relabel);
5. Resize's empty roi read as left out at every version with tf_crop_and_resize (an error
   there, a value when left out): only below 13, and never the roi of a crop;

and what the second red team found: a graph output's declaration typed a site's input
(now only a site's outputs), and identical nodes read constants of other values (now
compared, canonical.same_node_relabelled: tests/test_prove_shared.py)."""

from __future__ import annotations

import numpy as np
import onnx
import onnx.helper as oh
import pytest
from onnx import TensorProto as TP

import maxlower
from maxlower.errors import ProofInconclusive
from maxlower.io import check_and_infer
from maxlower.prove.canonical import same_by_schema
from maxlower.prove.sites import prove_models
from maxlower.runtime import onnxruntime_session

pytest.importorskip("z3", reason="the prover needs z3-solver: pip install -e '.[prove]'")

X = np.random.default_rng(0).standard_normal(24).astype(np.float32)


def _run(model: onnx.ModelProto, feeds: dict) -> np.ndarray:
    return onnxruntime_session(model).run(None, feeds)[0]


def _softmax_after_reshape(shape_from: str) -> onnx.ModelProto:
    """x float[24] reshaped to a shape `shape_from` gives, Softmax-11 over axis 1, and
    back to [24]: axis 1 is the last axis only where that shape has 2 entries."""
    x = oh.make_tensor_value_info("x", TP.FLOAT, [24])
    y = oh.make_tensor_value_info("y", TP.FLOAT, [24])
    s_in = oh.make_tensor_value_info("s_in", TP.INT64, ["n"])
    c = oh.make_tensor_value_info("c", TP.BOOL, [])
    z = oh.make_tensor_value_info("z", TP.INT64, [2])
    flat = oh.make_tensor("flat", TP.INT64, [1], [24])
    nodes = [
        oh.make_node("Reshape", ["x", "s"], ["r"], name="reshape"),
        oh.make_node("Softmax", ["r"], ["q"], axis=1, name="softmax"),
        oh.make_node("Reshape", ["q", "flat"], ["y"], name="back"),
    ]
    inputs, outputs, inits, infos = [x], [y], [flat], []
    if shape_from == "a default":
        inputs.append(oh.make_tensor_value_info("s", TP.INT64, ["n"]))
        inits.append(oh.make_tensor("s", TP.INT64, [2], [2, 12]))
    else:
        nodes.insert(0, oh.make_node("Identity", ["s_in"], ["s"], name="identity"))
        inputs.append(s_in)
    if shape_from == "a declared value_info":
        infos.append(oh.make_tensor_value_info("s", TP.INT64, [2]))
    if shape_from == "a declared output":  # (declared, never checked: red team of 6fe6590)
        outputs.append(oh.make_tensor_value_info("r", TP.FLOAT, [2, 12]))
    if shape_from == "a subgraph's initializer":

        def branch(name: str, values: list[int]) -> onnx.GraphProto:
            out = oh.make_tensor_value_info("o_" + name, TP.INT64, [2])
            own = oh.make_tensor("s", TP.INT64, [2], values)  # named like the outer s
            node = oh.make_node("Identity", ["s"], ["o_" + name])
            return oh.make_graph([node], name, [], [out], initializer=[own])

        nodes.append(
            oh.make_node(
                "If", ["c"], ["z"], then_branch=branch("t", [1, 2]), else_branch=branch("e", [3, 4])
            )
        )
        inputs.append(c)
        outputs.append(z)
    graph = oh.make_graph(nodes, "g", inputs, outputs, initializer=inits, value_info=infos)
    model = oh.make_model(graph, opset_imports=[oh.make_opsetid("", 11)], ir_version=8)
    onnx.checker.check_model(model, full_check=True)
    return model


def _feeds(model: onnx.ModelProto) -> dict:
    names = {v.name for v in model.graph.input}
    feeds = {"x": X, "s_in" if "s_in" in names else "s": np.array([2, 3, 4], np.int64)}
    if "c" in names:
        feeds["c"] = np.array(True)
    return feeds


@pytest.mark.parametrize(
    "shape_from",
    ["a subgraph's initializer", "a default", "a declared value_info", "a declared output"],
)
def test_a_rank_only_a_false_source_gives_proves_nothing(shape_from):
    """Fed [2, 3, 4] (its declared type allows it), the shape makes r of rank 3, where
    Softmax-11 over axis 1 is not Softmax-13's: whatever the conversion writes, --prove
    does not say PROVED unless onnxruntime agrees."""
    model = _softmax_after_reshape(shape_from)
    try:
        converted, report = maxlower.convert_with_report(model, 13, prove=True)
    except ProofInconclusive:
        return
    same = np.array_equal(_run(model, _feeds(model)), _run(converted, _feeds(model)))
    assert same, report.proof


@pytest.mark.parametrize("shape_from", ["a subgraph's initializer", "a default"])
def test_inference_gives_no_rank_from_a_name_that_is_not_the_value(shape_from):
    typed = check_and_infer(_softmax_after_reshape(shape_from))
    r = next(v for v in typed.graph.value_info if v.name == "r")
    assert not r.type.tensor_type.HasField("shape"), r


def _average_pool(opset: int) -> onnx.ModelProto:
    x = oh.make_tensor_value_info("x", TP.FLOAT, [1, 1, 64, 64])
    y = oh.make_tensor_value_info("y", TP.FLOAT, [1, 1, 63, 63])
    nodes = [
        oh.make_node("AveragePool", ["x"], ["p"], kernel_shape=[2, 2]),
        oh.make_node("Neg", ["p"], ["y"]),
    ]
    graph = oh.make_graph(nodes, "g", [x], [y])
    return oh.make_model(graph, opset_imports=[oh.make_opsetid("", opset)], ir_version=8)


def test_average_pool_across_19_is_neither_shared_nor_a_trusted_relabel():
    at19, at11 = _average_pool(19), _average_pool(11)
    x = {"x": np.random.default_rng(1).standard_normal((1, 1, 64, 64)).astype(np.float32)}
    assert not np.array_equal(_run(at19, x), _run(at11, x)), "onnxruntime's kernels agree now"
    assert prove_models(at19, at11, timeout=30).status != "proved"
    with pytest.raises(ProofInconclusive):
        maxlower.convert(at19, 11, prove=True)


def _resize(opset: int, roi: bool) -> onnx.ModelProto:
    names = ["x", "roi" if roi else "", "", "sizes"]
    inits = [oh.make_tensor("sizes", TP.INT64, [4], [1, 1, 2, 8])]
    if roi:
        inits.append(oh.make_tensor("roi", TP.FLOAT, [0], []))
    node = oh.make_node(
        "Resize", names, ["y"], mode="linear", coordinate_transformation_mode="tf_crop_and_resize"
    )
    x = oh.make_tensor_value_info("x", TP.FLOAT, [1, 1, 2, 4])
    y = oh.make_tensor_value_info("y", TP.FLOAT, None)
    graph = oh.make_graph([node], "g", [x], [y], initializer=inits)
    return oh.make_model(graph, opset_imports=[oh.make_opsetid("", opset)], ir_version=8)


@pytest.mark.parametrize(("with_roi", "without"), [(11, 13), (13, 19), (18, 18)])
def test_an_empty_roi_of_a_crop_is_not_a_roi_left_out(with_roi, without):
    assert same_by_schema(_resize(with_roi, True), _resize(without, False)) is None


# The third red team (of aed5c82): a Constant that a region outputs, a candidate node of no
# part, and a kernel that follows the model's opset.
def _squeeze_reduce(opset: int, extra: list, constant: int | None = None) -> onnx.ModelProto:
    """Squeeze(x) over axis 0 then ReduceSum over axis 1 of float[1,64,64], axes as the
    opset spells them; with `constant`, a Constant c (read by ReduceSum as its axes at 13)
    also given as an output; `extra` nodes after."""
    from onnx import numpy_helper

    x = oh.make_tensor_value_info("x", TP.FLOAT, [1, 64, 64])
    outputs = [oh.make_tensor_value_info("y", TP.FLOAT, [64, 1])]
    inits = [numpy_helper.from_array(np.array([k], np.int64), f"ax{k}") for k in (0, 1)]
    inits.append(numpy_helper.from_array(np.array([100], np.int64), "bad"))
    nodes = []
    axes = "ax1"
    if constant is not None:
        value = numpy_helper.from_array(np.array([constant], np.int64), "cv")
        nodes.append(oh.make_node("Constant", [], ["c"], value=value))
        nodes.append(oh.make_node("Identity", ["c"], ["cout"]))
        outputs.append(oh.make_tensor_value_info("cout", TP.INT64, [1]))
        axes = "c"
    if opset < 13:
        nodes += [
            oh.make_node("Squeeze", ["x"], ["t"], axes=[0]),
            oh.make_node("ReduceSum", ["t"], ["y"], axes=[1]),
        ]
    else:
        nodes += [
            oh.make_node("Squeeze", ["x", "ax0"], ["t"]),
            oh.make_node("ReduceSum", ["t", axes], ["y"]),
        ]
    graph = oh.make_graph(nodes + extra, "g", [x], outputs, initializer=inits)
    return oh.make_model(graph, opset_imports=[oh.make_opsetid("", opset)], ir_version=8)


def test_a_constant_a_region_gives_out_is_compared():
    reference = _squeeze_reduce(11, [], constant=0)
    for extra in ([], [oh.make_node("Neg", ["t"], ["unused"])]):
        candidate = _squeeze_reduce(13, extra, constant=1)
        x = {"x": np.random.default_rng(0).random((1, 64, 64)).astype(np.float32)}
        ref_out = onnxruntime_session(reference).run(None, x)[1]
        assert not np.array_equal(ref_out, onnxruntime_session(candidate).run(None, x)[1])
        assert prove_models(reference, candidate, timeout=30).status != "proved"


def test_a_candidate_node_of_no_part_still_runs():
    """An out-of-bounds Gather nothing reads fails the candidate on every input."""
    reference = _squeeze_reduce(11, [])
    candidate = _squeeze_reduce(13, [oh.make_node("Gather", ["t", "bad"], ["junk"], axis=0)])
    assert prove_models(reference, candidate, timeout=30).status != "proved"
    assert prove_models(reference, _squeeze_reduce(13, []), timeout=30).status == "proved"


def _log_sum_exp(opset: int) -> onnx.ModelProto:
    x = oh.make_tensor_value_info("x", TP.FLOAT16, [64, 64])
    y = oh.make_tensor_value_info("y", TP.FLOAT16, [1, 1])
    node = oh.make_node("ReduceLogSumExp", ["x"], ["y"])
    graph = oh.make_graph([node], "g", [x], [y])
    return oh.make_model(graph, opset_imports=[oh.make_opsetid("", opset)], ir_version=8)


def test_float16_log_sum_exp_is_not_one_function_across_opsets():
    """onnxruntime computes 13's in float32 (1.001e+04) and 18's and 20's in float16 (inf)."""
    x = {"x": np.full((64, 64), 1e4, np.float16)}
    at = {v: _log_sum_exp(v) for v in (13, 18, 20)}
    assert not np.array_equal(_run(at[13], x), _run(at[18], x)), "onnxruntime agrees now"
    for a, b in ((13, 18), (18, 20)):
        assert same_by_schema(at[a], at[b]) is None
        assert prove_models(at[a], at[b], timeout=30).status != "proved"
