"""ExpandOpsPass: replace chosen ops by their ONNX function bodies, at the model's opset.

    LayerNormalization-17(x, scale, bias)  at opset 17  →  ReduceMean, Sub, Sqrt, Div, ...
                                                           (onnx.defs' body, at opset 17)
    Relu-14(x)                                          →  unchanged (no function body)
                                                           unless listed: ConversionError

ConvertOtherOpsPass expands an op when the target opset lacks it. This pass does the same
without changing the opset: for a backend without a kernel for the op, or to compare a
converted model with the spec's definition of the op it expanded (onnxruntime's fused
LayerNormalization kernel rounds differently from the body). Every node of the default
domain whose op is in `op_types` is expanded, in the main graph, subgraphs and functions.
"""

from __future__ import annotations

import onnx_ir as ir

from passes.builder import schema_version
from passes.errors import ConversionError
from passes.graph_utils import containers, node_label
from passes.version.expand import expand_function_body
from passes.version.other_ops import convert_small_model


class ExpandOpsPass(ir.passes.InPlacePass):
    """Expand every node of `op_types` into its function body; refuse ops that have none."""

    def __init__(self, op_types: set[str] | frozenset[str]) -> None:
        super().__init__()
        self.op_types = frozenset(op_types)

    def call(self, model: ir.Model) -> ir.passes.PassResult:
        modified = False
        for _, container, opsets in containers(model):
            opset = opsets.get("")
            if opset is None:
                continue
            in_function = isinstance(container, ir.Function)
            for node in list(ir.traversal.RecursiveGraphIterator(container)):
                if node.domain != "" or node.op_type not in self.op_types:
                    continue
                version = schema_version(node.op_type, opset)

                def convert(small: ir.Model, body_opset: int, opset: int = opset) -> None:
                    convert_small_model(small, body_opset, opset, opset)

                failure = expand_function_body(node, version, opset, opset, in_function, convert)
                if failure is not None:
                    raise ConversionError(
                        node_label(node),
                        node.op_type,
                        failure,
                        f"leave {node.op_type} out of the ops to expand",
                    )
                modified = True
        return ir.passes.PassResult(model, modified)
