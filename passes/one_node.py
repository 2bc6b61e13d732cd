"""A node taken out of its graph on its own, where a rewrite of it can be tried safely.

    OneNodeModel(node, opset)   a model whose graph is a copy of `node` alone; each distinct
                                input of the node becomes a graph input ("mirror" __mirror<k>),
                                or an initializer holding the same tensor when it is a small
                                constant (rewrites, and onnx.version_converter's adapters,
                                read constant axes and shapes from there); each output the
                                node has (not an omitted optional one) becomes a graph output
                                __output<i> of the node's type
    .proto()                    the same as a ModelProto, its outputs typed by strict ONNX
                                shape inference (what onnx.version_converter wants)

The legaliser tries decompositions in one (passes.legalize.scratch); version conversion
hands one to onnx.version_converter, or inlines a function body into one
(passes.version.one_node, passes.version.expand). Mirrors are named by position, so a form
found for one node can be cloned for any node with the same signature, and spliced back by
position (`mirrors_of`).
"""

from __future__ import annotations

import onnx
import onnx.shape_inference
import onnx_ir as ir

from passes.builder import min_ir_version
from passes.graph_utils import const_tensor

MIRROR = "__mirror"
OUTPUT = "__output"
SMALL_CONSTANT = 4096  # elements; larger constant inputs are seen as plain inputs


def small_constant(value: ir.Value) -> ir.TensorProtocol | None:
    """The value's constant tensor if it has one of at most SMALL_CONSTANT elements. Rewrites
    read constants such as axes; a large weight given to Max is only data to them."""
    tensor = const_tensor(value)
    if tensor is None or tensor.size > SMALL_CONSTANT:
        return None
    return tensor


def mirrors_of(node: ir.Node) -> list[ir.Value]:
    """The distinct inputs of `node`, in order: what a one-node model's mirrors stand for."""
    return list({id(v): v for v in node.inputs if v is not None}.values())


def present_outputs(node: ir.Node) -> list[ir.Value]:
    """The outputs `node` has, without omitted optional ones: a one-node model's outputs."""
    return [v for v in node.outputs if v.name]


class OneNodeModel:
    """A copy of `node` alone in a model at `opset` (see the module docstring).

    `original` is the node, `mirrors` its distinct inputs (mirror k stands for mirrors[k]),
    `node`, `graph` and `model` the copy. The IR version is the lowest `opset` allows, at
    least 8 (onnx.version_converter and the checker want a recent one), unless given.
    """

    def __init__(self, node: ir.Node, opset: int, ir_version: int | None = None) -> None:
        self.original = node
        self.mirrors = mirrors_of(node)
        copies, inputs, initializers = {}, [], []
        for k, value in enumerate(self.mirrors):
            tensor = small_constant(value)
            mirror = ir.Value(
                name=f"{MIRROR}{k}",
                type=value.type,
                shape=value.shape.copy() if value.shape is not None else None,
                # A copy: serialising or renaming a value renames its tensor, and a tensor
                # read from a ModelProto writes the name through to the caller's proto.
                const_value=None if tensor is None else ir.tensor(tensor.numpy().copy()),
            )
            copies[id(value)] = mirror
            (initializers if tensor is not None else inputs).append(mirror)
        self.node = ir.Node(
            node.domain,
            node.op_type,
            [copies[id(v)] if v is not None else None for v in node.inputs],
            [
                ir.Attr(a.name, a.type, a.value, a.ref_attr_name, doc_string=a.doc_string)
                for a in node.attributes.values()
            ],
            num_outputs=len(node.outputs),
            name=node.name,
            doc_string=node.doc_string,
            metadata_props=dict(node.metadata_props),
        )
        outputs = []
        for i, (mine, theirs) in enumerate(zip(self.node.outputs, node.outputs)):
            if not theirs.name:  # an omitted optional output stays omitted
                mine.name = ""
                continue
            mine.name = f"{OUTPUT}{i}"
            mine.type = theirs.type
            mine.shape = theirs.shape.copy() if theirs.shape is not None else None
            outputs.append(mine)
        self.graph = ir.Graph(
            inputs,
            outputs,
            nodes=[self.node],
            initializers=initializers,
            opset_imports={"": opset},
            name="one_node",
        )
        if ir_version is None:
            ir_version = max(8, min_ir_version(opset))
        self.model = ir.Model(self.graph, ir_version=ir_version)

    def proto(self) -> onnx.ModelProto:
        """The model as a ModelProto whose outputs have the types ONNX shape inference gives
        (strict). Raises ValueError when an input's type is unknown, or an output's cannot
        be inferred."""
        for mirror in self.graph.inputs:
            if mirror.type is None:
                value = self.mirrors[int(mirror.name.removeprefix(MIRROR))]
                raise ValueError(f"input {value.name!r} has no type")
        model = ir.serde.serialize_model(self.model)
        for output in model.graph.output:
            output.ClearField("type")  # what inference gives at this opset, not the graph's
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True)
        types = {v.name: v.type for v in inferred.graph.value_info}
        for output in model.graph.output:
            if output.name not in types:
                value = self.original.outputs[int(output.name.removeprefix(OUTPUT))]
                raise ValueError(f"ONNX shape inference gives no type for {value.name!r}")
            output.type.CopyFrom(types[output.name])
        return model
