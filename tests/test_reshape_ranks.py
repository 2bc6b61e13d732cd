"""The rank of a Reshape to a shape computed at run time (passes.graph_utils.add_reshape_ranks).

onnx's inference leaves such a Reshape's output, and everything downstream of it, without a
shape, although Reshape's output has as many dims as its shape input has elements. So a
TorchScript attention Softmax(axis=3) at opset 11 had no known rank: conversion to 13
wrote the Flatten/Softmax/Reshape form, and the prover, which needs the rank to read the
axis, said INCONCLUSIVE on bert, gpt2, llama, clip, swin_t and vit. With the ranks, the
Softmax is a relabel, proved by the schemas at any size.

The judge of the ranks is onnx.reference: every value that inference types, run on drawn
inputs, has the rank (and every static dim) the inferred type says."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st
from onnx.reference import ReferenceEvaluator

from maxlower.cli import cli
from maxlower.io import check_and_infer
from passes.graph_utils import add_reshape_ranks
from tests import budget

ATTENTION = """
< ir_version: 7, opset_import: ["" : 11] >
attention (float[N, 6, 8] x) => (float[N, 2, 3, 8] y) {
    [node_shape] shape = Shape(x)
    [node_zero] zero = Constant<value = int64[1] {0}>()
    [node_batch] batch = Gather<axis = 0>(shape, zero)
    [node_rest] rest = Constant<value = int64[3] {2, 3, 8}>()
    [node_target] target = Concat<axis = 0>(batch, rest)
    [node_heads] heads = Reshape(x, target)
    [node_softmax] y = Softmax<axis = 3>(heads)
}
"""


def _value_types(model: onnx.ModelProto) -> dict[str, onnx.TypeProto]:
    graph = model.graph
    return {v.name: v.type for v in (*graph.value_info, *graph.output)}


def test_a_reshape_to_a_computed_shape_has_the_rank_of_its_shape():
    inferred = check_and_infer(onnx.parser.parse_model(ATTENTION))
    heads = _value_types(inferred)["heads"].tensor_type
    assert heads.HasField("shape") and len(heads.shape.dim) == 4


def test_a_shape_of_unknown_length_gives_no_rank():
    model = onnx.parser.parse_model(
        ATTENTION.replace("(float[N, 6, 8] x)", "(float[N, 6, 8] x, int64[K] target)")
        .replace("[node_target] target = Concat<axis = 0>(batch, rest)", "")
        .replace("float[N, 2, 3, 8] y", "float y")
    )
    del model.graph.output[0].type.tensor_type.shape.dim[:]
    model.graph.output[0].type.tensor_type.ClearField("shape")
    proto = onnx.ModelProto()
    proto.CopyFrom(model)
    assert not add_reshape_ranks(proto)


def test_the_attention_softmax_converts_by_a_relabel_and_is_proved(tmp_path):
    source, out = tmp_path / "attention.onnx", tmp_path / "attention13.onnx"
    onnx.save(onnx.parser.parse_model(ATTENTION), source)
    args = ["convert", str(source), "--opset", "13", "-o", str(out), "--prove"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    converted = onnx.load(out)
    (softmax,) = [n for n in converted.graph.node if n.op_type == "Softmax"]
    assert "Flatten" not in {n.op_type for n in converted.graph.node}
    assert onnx.helper.get_attribute_value(softmax.attribute[0]) in (3, -1)
    x = np.random.default_rng(0).standard_normal((5, 6, 8)).astype(np.float32)
    runs = [ort.InferenceSession(str(path)).run(None, {"x": x})[0] for path in (source, out)]
    assert runs[0].tobytes() == runs[1].tobytes()


@st.composite
def reshape_chains(draw):
    """x of rank 3 with a symbolic first dim, then 1..3 Reshapes to shapes built at run
    time from the Shape of their input and constants (a -1 somewhere), each of 1..5
    dims, with an op that keeps its input's shape after each."""
    dims = [draw(st.integers(1, 3)), 2, 6]
    lines, current, rank = [], "x", 3
    for step in range(draw(st.integers(1, 3))):
        rank = draw(st.integers(1, 5))
        if rank == 1:
            lines.append(f"s{step} = Constant<value = int64[1] {{-1}}>()")
        else:
            tail = [1] * (rank - 1)
            tail[draw(st.integers(0, rank - 2))] = -1
            constant = ", ".join(str(d) for d in tail)
            lines += [
                f"shape{step} = Shape({current})",
                f"i{step} = Constant<value = int64[1] {{0}}>()",
                f"n{step} = Gather<axis = 0>(shape{step}, i{step})",
                f"c{step} = Constant<value = int64[{rank - 1}] {{{constant}}}>()",
                f"s{step} = Concat<axis = 0>(n{step}, c{step})",
            ]
        lines += [f"r{step} = Reshape({current}, s{step})", f"a{step} = Relu(r{step})"]
        current = f"a{step}"
    lines.append(f"y = Identity({current})")
    body = "\n    ".join(lines)
    declared = ", ".join(f"d{i}" for i in range(rank))  # the last Reshape's rank
    text = f"""
< ir_version: 7, opset_import: ["" : 11] >
chain (float[N, 2, 6] x) => (float[{declared}] y) {{
    {body}
}}
"""
    model = onnx.parser.parse_model(text)
    return model, dims


@budget.fuzz(40, deadline=None)
@given(reshape_chains())
def test_every_inferred_rank_is_the_rank_onnx_reference_computes(drawn):
    model, dims = drawn
    inferred = check_and_infer(model)
    x = np.arange(np.prod(dims), dtype=np.float32).reshape(dims)
    computed = ReferenceEvaluator(model).run(None, {"x": x}, intermediate=True)
    typed = 0
    for name, type_proto in _value_types(inferred).items():
        tensor_type = type_proto.tensor_type
        if not tensor_type.HasField("shape") or name not in computed:
            continue
        value = np.asarray(computed[name])
        declared = tensor_type.shape.dim
        assert value.ndim == len(declared), name
        for axis, dim in enumerate(declared):
            if dim.HasField("dim_value"):
                assert value.shape[axis] == dim.dim_value, (name, axis)
        typed += 1
    reshaped = [n.output[0] for n in model.graph.node if n.op_type == "Reshape"]
    assert all(_value_types(inferred)[r].tensor_type.HasField("shape") for r in reshaped)
    assert typed >= len(reshaped)


@pytest.mark.parametrize("opset", [11, 13])
def test_every_reshape_of_the_attention_is_ranked_at_either_opset(opset):
    model = onnx.parser.parse_model(ATTENTION.replace('"" : 11', f'"" : {opset}'))
    if opset >= 13:
        model.graph.node[-1].attribute[0].i = 3
    inferred = check_and_infer(model)
    ranks = {
        name: len(t.tensor_type.shape.dim)
        for name, t in _value_types(inferred).items()
        if t.tensor_type.HasField("shape")
    }
    assert ranks["heads"] == 4
