"""Build the small example models under examples/models/ (they are committed; rerun to rebuild).

    python examples/make_example_models.py [DIR]     (DIR defaults to examples/models)

reduce_max_opset18.onnx   what PyTorch's dynamo exporter writes and older runtimes reject:
                          ReduceMax with `axes` as a graph input, ReduceMax with a constant
                          axes initializer and noop_with_empty_axes, ArgMax with
                          select_last_index=1, and a broadcasting Max (opset 18)
nested_opset18.onnx       family nodes inside a model-local function and an If branch
max_bfloat16_opset13.onnx a bfloat16 Max: no exact form exists below opset 13
"""

from __future__ import annotations

import pathlib
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

MODELS = pathlib.Path(__file__).resolve().parent / "models"


def reduce_max_opset18() -> onnx.ModelProto:
    nodes = [
        helper.make_node(
            "ReduceMax",
            ["x", "axes"],
            ["reduced_runtime_axes"],
            name="reduce_runtime_axes",
            keepdims=1,
        ),
        helper.make_node(
            "ReduceMax",
            ["x", "const_axes"],
            ["reduced_const_axes"],
            name="reduce_const_axes",
            keepdims=1,
            noop_with_empty_axes=1,
        ),
        helper.make_node(
            "ArgMax",
            ["x"],
            ["last_argmax"],
            name="argmax_last",
            axis=2,
            keepdims=0,
            select_last_index=1,
        ),
        helper.make_node("Max", ["x", "bias"], ["clamped"], name="max_broadcast"),
    ]
    graph = helper.make_graph(
        nodes,
        "reduce_max_opset18",
        inputs=[
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4]),
            helper.make_tensor_value_info("axes", TensorProto.INT64, [1]),
            helper.make_tensor_value_info("bias", TensorProto.FLOAT, [3, 1]),
        ],
        outputs=[
            # which dims are reduced is only known at run time
            helper.make_tensor_value_info(
                "reduced_runtime_axes", TensorProto.FLOAT, ["r0", "r1", "r2"]
            ),
            helper.make_tensor_value_info("reduced_const_axes", TensorProto.FLOAT, [2, 1, 4]),
            helper.make_tensor_value_info("last_argmax", TensorProto.INT64, [2, 3]),
            helper.make_tensor_value_info("clamped", TensorProto.FLOAT, [2, 3, 4]),
        ],
        initializer=[numpy_helper.from_array(np.array([1], dtype=np.int64), "const_axes")],
    )
    return helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 18)],
        ir_version=8,
        producer_name="maxlower-examples",
    )


def nested_opset18() -> onnx.ModelProto:
    """ArgMax(select_last_index=1) in a local function; ReduceMax in an If branch."""
    function = helper.make_function(
        "example.local",
        "LastArgMax",
        ["data"],
        ["index"],
        [
            helper.make_node(
                "ArgMax",
                ["data"],
                ["index"],
                name="fn_argmax",
                axis=-1,
                keepdims=0,
                select_last_index=1,
            )
        ],
        opset_imports=[helper.make_opsetid("", 18)],
    )
    then_branch = helper.make_graph(
        [helper.make_node("ReduceMax", ["x"], ["then_out"], name="branch_reduce_max", keepdims=0)],
        "then_branch",
        inputs=[],
        outputs=[helper.make_tensor_value_info("then_out", TensorProto.FLOAT, [])],
    )
    else_branch = helper.make_graph(
        [helper.make_node("ReduceMin", ["x"], ["else_out"], name="branch_reduce_min", keepdims=0)],
        "else_branch",
        inputs=[],
        outputs=[helper.make_tensor_value_info("else_out", TensorProto.FLOAT, [])],
    )
    graph = helper.make_graph(
        [
            helper.make_node(
                "LastArgMax", ["x"], ["index"], name="call_last_argmax", domain="example.local"
            ),
            helper.make_node(
                "If",
                ["pick_max"],
                ["extreme"],
                name="pick",
                then_branch=then_branch,
                else_branch=else_branch,
            ),
        ],
        "nested_opset18",
        inputs=[
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 5]),
            helper.make_tensor_value_info("pick_max", TensorProto.BOOL, []),
        ],
        outputs=[
            helper.make_tensor_value_info("index", TensorProto.INT64, [2]),
            helper.make_tensor_value_info("extreme", TensorProto.FLOAT, []),
        ],
    )
    return helper.make_model(
        graph,
        functions=[function],
        ir_version=8,
        opset_imports=[helper.make_opsetid("", 18), helper.make_opsetid("example.local", 1)],
        producer_name="maxlower-examples",
    )


def max_bfloat16_opset13() -> onnx.ModelProto:
    graph = helper.make_graph(
        [helper.make_node("Max", ["a", "b"], ["m"], name="max_bf16")],
        "max_bfloat16_opset13",
        inputs=[
            helper.make_tensor_value_info("a", TensorProto.BFLOAT16, [4]),
            helper.make_tensor_value_info("b", TensorProto.BFLOAT16, [4]),
        ],
        outputs=[helper.make_tensor_value_info("m", TensorProto.BFLOAT16, [4])],
    )
    return helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 13)],
        ir_version=7,
        producer_name="maxlower-examples",
    )


BUILDERS = {
    "reduce_max_opset18.onnx": reduce_max_opset18,
    "nested_opset18.onnx": nested_opset18,
    "max_bfloat16_opset13.onnx": max_bfloat16_opset13,
}


def main(argv: list[str]) -> int:
    directory = pathlib.Path(argv[0]) if argv else MODELS
    directory.mkdir(parents=True, exist_ok=True)
    for filename, build in BUILDERS.items():
        model = build()
        onnx.checker.check_model(model, full_check=True)
        path = directory / filename
        onnx.save(model, path)
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
