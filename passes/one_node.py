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
    .proto(hold_unknown_ranks=True)
                                the same, valid for onnx.checker also where a value's rank
                                is unknown (see below); `release_holds` undoes the holds

A main graph's inputs and outputs must have a shape (a rank), but a value inside a model
need not: outside PyTorch exports many have a type and no known rank. Such a mirror (or
output) is held: the graph input is a scalar of its element type, and a node of the
HOLD_DOMAIN (which neither onnx.version_converter nor the checker looks into) turns it
into the mirror, typed by value_info as the element type of unknown rank. The node in the
middle is then checked and converted on exactly the types the model gives it.

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
from passes.graph_utils import captured_values, const_tensor

MIRROR = "__mirror"
OUTPUT = "__output"
SMALL_CONSTANT = 4096  # elements; larger constant inputs are seen as plain inputs
HOLD_DOMAIN = "maxlower.hold"  # only ever inside a one-node model, never in a result
_HELD = "__held"


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
        # What its subgraphs read from outside (an If branch's `x`) is a graph input too,
        # under its own name, since the subgraphs name it (`captured`: the outer values).
        self.captured = captured_values(node)
        for value in self.captured:
            shape = value.shape.copy() if value.shape is not None else None
            inputs.append(ir.Value(name=value.name, type=value.type, shape=shape))
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

    def proto(self, *, hold_unknown_ranks: bool = False) -> onnx.ModelProto:
        """The model as a ModelProto whose outputs have the types ONNX shape inference gives
        (strict). Raises ValueError when an input's type is unknown, or an output's cannot
        be inferred. `hold_unknown_ranks`: inputs and outputs of unknown rank are held (see
        the module docstring), so that the model passes onnx.checker."""
        for mirror in self.graph.inputs:
            if mirror.type is None:
                name = mirror.name or ""
                if name.startswith(MIRROR):
                    name = self.mirrors[int(name.removeprefix(MIRROR))].name or ""
                raise ValueError(f"input {name!r} has no type")
        model = ir.serde.serialize_model(self.model)
        if hold_unknown_ranks:
            _hold(model, inputs=True)
        for output in model.graph.output:
            output.ClearField("type")  # what inference gives at this opset, not the graph's
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True)
        types = {v.name: v.type for v in inferred.graph.value_info}
        for output in model.graph.output:
            if output.name not in types:
                value = self.original.outputs[int(output.name.removeprefix(OUTPUT))]
                raise ValueError(f"ONNX shape inference gives no type for {value.name!r}")
            output.type.CopyFrom(types[output.name])
        if hold_unknown_ranks:
            _hold(model, inputs=False)
        return model


def _rank_unknown(info: onnx.ValueInfoProto) -> bool:
    return info.type.HasField("tensor_type") and not info.type.tensor_type.HasField("shape")


def _held_source(info: onnx.ValueInfoProto) -> onnx.ValueInfoProto:
    """A scalar of the element type of `info`: valid as a main graph's input or output."""
    elem_type = info.type.tensor_type.elem_type
    return onnx.helper.make_tensor_value_info(info.name + _HELD, elem_type, [])


def _hold(model: onnx.ModelProto, *, inputs: bool) -> None:
    """Hold the graph inputs (or outputs) of unknown rank: a scalar stands in for each in
    the signature, and a hold node connects the two."""
    infos = model.graph.input if inputs else model.graph.output
    holds = []
    for k, info in enumerate(infos):
        if not _rank_unknown(info):
            continue
        model.graph.value_info.append(info)  # (a copy: the type inside, of unknown rank)
        outer, inner = info.name + _HELD, info.name
        ends = ([outer], [inner]) if inputs else ([inner], [outer])
        holds.append(onnx.helper.make_node("Hold", *ends, domain=HOLD_DOMAIN))
        infos[k].CopyFrom(_held_source(info))
    if not holds:
        return
    nodes = [*holds, *model.graph.node] if inputs else [*model.graph.node, *holds]
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    if all(entry.domain != HOLD_DOMAIN for entry in model.opset_import):
        model.opset_import.append(onnx.helper.make_opsetid(HOLD_DOMAIN, 1))


def release_holds(model: ir.Model) -> None:
    """Undo `proto(hold_unknown_ranks=True)` on a model made from it (converted, say): each
    held input and output is the graph's own again, of unknown rank, and the holds go."""
    graph = model.graph
    for node in [n for n in graph if n.domain == HOLD_DOMAIN]:
        source, held = node.inputs[0], node.outputs[0]
        if source is not None and source.is_graph_input():
            mirror = ir.Value(name=held.name, type=held.type, shape=held.shape)
            ir.convenience.replace_all_uses_with(held, mirror)
            graph.remove(node)
            graph.inputs[graph.inputs.index(source)] = mirror
        else:
            graph.outputs[graph.outputs.index(held)] = source
            graph.remove(node)
    model.opset_imports.pop(HOLD_DOMAIN, None)
