"""A conversion that changes the shapes a node takes or gives is refused (exit 3), the same by
both doors, instead of written into a model whose other nodes expect the old shapes (each of
these ended in the final check, as an internal error, exit 4). Found by converting every ONNX
backend case to opsets 7..latest:

- onnx.version_converter converts the node by changing its signature, not only the node:
  test_scan_sum, Scan 8 → 9 and later, drops the batch axis from the graph's inputs and
  outputs ([1, 2] → [2]);
- the op's shape formula differs at the target: test_averagepool_2d_ceil_last_window_starts_
  on_pad, AveragePool-22 with ceil_mode, whose last window starts in the padding; versions
  before 22 count that window (output 2×2, not 1×1).
"""

from __future__ import annotations

import warnings

import onnx
import pytest
from click.testing import CliRunner
from onnx import TensorProto, helper

import maxlower
from maxlower.cli import cli
from passes.errors import ConversionError
from tests.test_refusal_messages import LIBRARY_NOISE

LATEST = onnx.defs.onnx_opset_version()


def scan_8_sum(batch: int = 1) -> onnx.ModelProto:
    """test_scan_sum's model, built here (so the test does not depend on the backend data)."""
    body = helper.make_graph(
        [
            helper.make_node("Add", ["sum_in", "next"], ["sum_out"]),
            helper.make_node("Identity", ["sum_out"], ["scan_out"]),
        ],
        "scan_body",
        [
            helper.make_tensor_value_info("sum_in", TensorProto.FLOAT, [2]),
            helper.make_tensor_value_info("next", TensorProto.FLOAT, [2]),
        ],
        [
            helper.make_tensor_value_info("sum_out", TensorProto.FLOAT, [2]),
            helper.make_tensor_value_info("scan_out", TensorProto.FLOAT, [2]),
        ],
    )
    node = helper.make_node(
        "Scan", ["", "initial", "x"], ["y", "z"], num_scan_inputs=1, body=body, name="scan"
    )
    graph = helper.make_graph(
        [node],
        "scan_sum",
        [
            helper.make_tensor_value_info("initial", TensorProto.FLOAT, [batch, 2]),
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 3, 2]),
        ],
        [
            helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 2]),
            helper.make_tensor_value_info("z", TensorProto.FLOAT, [batch, 3, 2]),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 8)])
    onnx.checker.check_model(model, full_check=True)
    return model


def test_the_converter_really_changes_the_graph_inputs():
    """What makes the refusal necessary: the converter's result has other graph inputs."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        converted = onnx.version_converter.convert_version(scan_8_sum(), 9)
    dims = [d.dim_value for d in converted.graph.input[0].type.tensor_type.shape.dim]
    assert dims == [2]


@pytest.mark.parametrize("target", [9, 11, 21])
def test_scan_8_is_refused_the_same_by_both_doors(tmp_path, target):
    with pytest.raises(ConversionError) as raised:
        maxlower.convert(scan_8_sum(), target)
    message = str(raised.value)
    assert "node 'scan' (Scan)" in message
    assert "changes the node's input shape from [1, 2] to [2]" in message
    path = tmp_path / "scan.onnx"
    onnx.save(scan_8_sum(), path)
    result = CliRunner().invoke(cli, ["convert", str(path), "--opset", str(target)])
    assert result.exit_code == 3, result.output
    assert result.stderr == f"maxlower: error: {message}\n"
    assert not LIBRARY_NOISE.search(result.stderr)
    assert list(tmp_path.iterdir()) == [path], "nothing written on a refusal"


def average_pool_22_ceil() -> onnx.ModelProto:
    node = helper.make_node(
        "AveragePool",
        ["x"],
        ["y"],
        name="pool",
        ceil_mode=1,
        count_include_pad=1,
        kernel_shape=[3, 3],
        pads=[1, 1, 1, 1],
        strides=[3, 3],
    )
    graph = helper.make_graph(
        [node],
        "pool",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 2, 2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 1, 1])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)])
    onnx.checker.check_model(model, full_check=True)
    return model


@pytest.mark.parametrize("target", [11, 19, 21])
def test_a_shape_formula_that_differs_at_the_target_is_refused_by_both_doors(tmp_path, target):
    with pytest.raises(ConversionError) as raised:
        maxlower.convert(average_pool_22_ceil(), target)
    message = str(raised.value)
    assert message.startswith("node 'pool' (AveragePool): at opset ")
    assert "differ in dimension 2: (2) vs (1)" in message
    assert message.endswith(f"a target opset in 22..{LATEST} (AveragePool-22 there)")
    path = tmp_path / "pool.onnx"
    onnx.save(average_pool_22_ceil(), path)
    result = CliRunner().invoke(cli, ["convert", str(path), "--opset", str(target)])
    assert result.exit_code == 3, result.output
    assert result.stderr == f"maxlower: error: {message}\n"
    assert list(tmp_path.iterdir()) == [path], "nothing written on a refusal"


def test_the_remedy_works():
    """The remedy's range converts (its last opset, the latest: 22 → latest)."""
    converted = maxlower.convert(average_pool_22_ceil(), LATEST)
    assert converted.graph.output[0].type == average_pool_22_ceil().graph.output[0].type


def test_scan_8_still_converts_within_opset_8():
    """The check refuses only a changed interface: opset 8 to 8 is the model itself."""
    converted = maxlower.convert(scan_8_sum(), 8)
    assert converted.graph.input[0].type == scan_8_sum().graph.input[0].type


def if_13_of_a_sequence() -> onnx.ModelProto:
    """An If whose branches give a sequence: If-13 takes it, If-11 only tensors."""

    def branch(name: str) -> onnx.GraphProto:
        return helper.make_graph(
            [helper.make_node("SequenceConstruct", ["x"], [f"{name}_seq"])],
            name,
            [],
            [helper.make_tensor_sequence_value_info(f"{name}_seq", TensorProto.FLOAT, [2])],
        )

    node = helper.make_node(
        "If", ["cond"], ["s"], then_branch=branch("then"), else_branch=branch("else"), name="pick"
    )
    graph = helper.make_graph(
        [node, helper.make_node("SequenceAt", ["s", "zero"], ["y"])],
        "if_seq",
        [
            helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [2]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
        [helper.make_tensor("zero", TensorProto.INT64, [], [0])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(model, full_check=True)
    return model


def test_control_flow_on_a_sequence_below_its_version_is_refused_by_both_doors(tmp_path):
    """If-11 accepts tensors only: the sequence output is named, and opsets from 13."""
    with pytest.raises(ConversionError) as raised:
        maxlower.convert(if_13_of_a_sequence(), 11)
    message = str(raised.value)
    assert message.startswith(
        "node 'pick' (If): If-11 does not accept seq(tensor(float)) outputs"
    ), message
    assert message.endswith(f"a target opset in 13..{LATEST}")
    path = tmp_path / "if_seq.onnx"
    onnx.save(if_13_of_a_sequence(), path)
    result = CliRunner().invoke(cli, ["convert", str(path), "--opset", "11"])
    assert result.exit_code == 3, result.output
    assert result.stderr == f"maxlower: error: {message}\n"
    assert maxlower.convert(if_13_of_a_sequence(), 13).graph.node[0].op_type == "If"
