"""`maxlower inspect` lists every op of the model with its schema version and count
(issue 30: `check` names what it did not check; `inspect` is the inventory)."""

from __future__ import annotations

import onnx
from click.testing import CliRunner
from onnx import TensorProto, helper

from maxlower.cli import cli
from maxlower.inspect import OpUse, op_inventory


def model_with_everywhere() -> onnx.ModelProto:
    """Relu in the main graph, in both If branches and in a local function; a custom op."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])

    def branch(name):
        out = helper.make_tensor_value_info(f"{name}_out", TensorProto.FLOAT, [2])
        return helper.make_graph(
            [helper.make_node("Relu", ["r"], [f"{name}_out"])], name, [], [out]
        )

    function = helper.make_function(
        "local", "F", ["a"], ["b"], [helper.make_node("Relu", ["a"], ["b"])],
        [helper.make_opsetid("", 13)],
    )  # fmt: skip
    nodes = [
        helper.make_node("Relu", ["x"], ["r"]),
        helper.make_node("ReduceMax", ["r"], ["m"], keepdims=0),
        helper.make_node("Cast", ["m"], ["c"], to=TensorProto.BOOL),
        helper.make_node(
            "If", ["c"], ["i"], then_branch=branch("then"), else_branch=branch("else")
        ),
        helper.make_node("F", ["i"], ["f"], domain="local"),
        helper.make_node("Custom", ["f"], ["y"], domain="vendor"),
    ]
    graph = helper.make_graph(nodes, "g", [x], [y])
    return helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("local", 1),
                       helper.make_opsetid("vendor", 1)],
        functions=[function],
    )  # fmt: skip


def test_every_op_in_every_graph_with_its_version():
    uses = op_inventory(model_with_everywhere())
    assert uses == [
        OpUse("Relu", "", 13, 4),  # main graph, two branches, the function's body
        OpUse("Cast", "", 13, 1),
        OpUse("If", "", 13, 1),
        OpUse("ReduceMax", "", 13, 1),
        OpUse("Custom", "vendor", None, 1),  # no schema: no version, still counted
    ]
    assert [u.label() for u in uses][-1] == "vendor::Custom"


def test_inspect_prints_the_inventory(tmp_path):
    path = tmp_path / "m.onnx"
    onnx.save(model_with_everywhere(), path)
    done = CliRunner().invoke(cli, ["inspect", str(path)], catch_exceptions=False)
    assert "ops: 5 kinds, 8 nodes" in done.output
    assert "Relu-13 ×4" in done.output and "vendor::Custom ×1" in done.output
