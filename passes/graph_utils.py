"""Small queries and edits on onnx_ir graphs that several passes share."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator, Sequence

import numpy as np
import onnx
import onnx_ir as ir
from onnx_ir.passes.common import ShapeInferencePass

from passes.errors import ConversionError

# Graph-like containers a pass walks: the main graph, then each model-local function.
Container = ir.Graph | ir.Function


def containers(model: ir.Model) -> Iterator[tuple[str, Container, dict[str, int]]]:
    """(where, graph-like, opset imports) for the main graph and every local function."""
    yield "main graph", model.graph, model.opset_imports
    for function in model.functions.values():
        yield f"function {function.domain}::{function.name}", function, function.opset_imports


def const_tensor(value: ir.Value | None) -> ir.TensorProtocol | None:
    """The constant behind `value` (an initializer, or a Constant node), else None.

    An initializer that is also a graph input is no constant: from IR 4 on it is a default
    that the caller may override, so it is a value known only at run time.

    Like onnx_ir.convenience.get_const_tensor, but it never renames the tensor: that one
    does, and a tensor read from a ModelProto writes the new name back into the caller's
    proto.
    """
    if value is None or value.is_graph_input():
        return None
    if value.const_value is not None:
        return value.const_value
    node = value.producer()
    if node is None or node.op_type != "Constant" or node.domain != "":
        return None
    if len(node.attributes) != 1:
        return None
    attr = next(iter(node.attributes.values()))
    if attr.is_ref():
        return None
    if attr.name == "value":
        return attr.as_tensor()
    dtypes = {
        "value_int": np.int64,
        "value_ints": np.int64,
        "value_float": np.float32,
        "value_floats": np.float32,
    }
    if attr.name in dtypes:
        return ir.tensor(np.array(attr.value, dtype=dtypes[attr.name]))
    return None


def constant_ints(value: ir.Value | None) -> list[int] | None:
    """The integer contents of a constant (initializer, or Constant node), else None."""
    tensor = const_tensor(value)
    if tensor is None:
        return None
    return [int(v) for v in np.asarray(tensor.numpy()).reshape(-1)]


def static_rank(value: ir.Value) -> int | None:
    return None if value.shape is None else len(value.shape)


def static_dim(value: ir.Value, axis: int) -> int | None:
    if value.shape is None:
        return None
    dim = value.shape[axis]
    return dim if isinstance(dim, int) else None


def node_label(node: ir.Node) -> str:
    return node.name or f"<unnamed {node.op_type}>"


def subgraph_place(
    outer: str, node, attribute: str, index: int | None = None, shown: str | None = None
) -> str:
    """The place of a subgraph of `node` (an onnx_ir node or a NodeProto) inside the place
    `outer`: "main graph > If 'cond' > then_branch", "function d::f > Loop 'l' > body",
    "... > Foo 'n' > branches[1]" (a GRAPHS attribute). Every report names places so
    (conversion, lowering, the report page, the prover's scopes, the checks' messages), as
    `node 'X' in <place>`. `shown`: the node as the caller's messages show it (the checks
    of a model's protobuf say "#3" for an unnamed node), instead of its quoted label."""
    body = attribute if index is None else f"{attribute}[{index}]"
    return f"{outer} > {node.op_type} {shown or repr(node_label(node))} > {body}"


def subgraph_places(where: str, container) -> dict[int, str]:
    """{id(subgraph): its place (`subgraph_place`)} for every subgraph inside `container`
    (a graph or a function) whose own place is `where`."""
    places: dict[int, str] = {}
    for node in ir.traversal.RecursiveGraphIterator(container):
        outer = places.get(id(node.graph), where)
        for attr in node.attributes.values():
            if attr.type == ir.AttributeType.GRAPH:
                places[id(attr.value)] = subgraph_place(outer, node, attr.name)
            elif attr.type == ir.AttributeType.GRAPHS:
                for i, graph in enumerate(attr.value):
                    places[id(graph)] = subgraph_place(outer, node, attr.name, i)
    return places


def require_rank(node: ir.Node, value: ir.Value, why: str) -> int:
    rank = static_rank(value)
    if rank is None:
        raise ConversionError(
            node_label(node),
            node.op_type,
            f"the rank of input {value.name!r} is unknown, and {why}",
            "give the input a static rank (a shape in the graph's value_info or inputs), "
            "e.g. by running shape inference on the model",
        )
    return rank


def require_dtype(node: ir.Node, value: ir.Value, why: str) -> ir.DataType:
    if value.dtype is None:
        raise ConversionError(
            node_label(node),
            node.op_type,
            f"the element type of input {value.name!r} is unknown, and {why}",
            "declare the type in the graph (inputs or value_info)",
        )
    return value.dtype


def drop_trailing_omitted_inputs(node: ir.Node) -> bool:
    """Leave out trailing optional inputs given as "" (ReduceMax-18(x, ""), a common
    exporter pattern): the same node for ONNX, and adapters then see one form of absence
    (a version that has fewer inputs takes none of them). Whether any was dropped."""
    count = len(node.inputs)
    while count and node.inputs[count - 1] is None:
        count -= 1
    if count == len(node.inputs):
        return False
    node.resize_inputs(count)
    return True


def replace_node(node: ir.Node, replacement: ir.Value) -> None:
    """Make `replacement` stand for `node`'s only output everywhere, then delete `node`.

    The output keeps its name, type and shape, so graph outputs and later references to the
    name are undisturbed.
    """
    old = node.outputs[0]
    name, dtype, shape = old.name, old.dtype, old.shape
    ir.convenience.replace_all_uses_with(old, replacement, replace_graph_outputs=True)
    graph = node.graph
    graph.remove(node, safe=True)
    replacement.name = name
    if dtype is not None:
        replacement.dtype = dtype
    if shape is not None:
        replacement.shape = shape
    remove_if_orphaned(graph, *[v for v in node.inputs if v is not None])


def captured_values(node: ir.Node) -> list[ir.Value]:
    """The values the node's subgraphs use but do not define: outer-scope values (an If's
    branch reading the main graph's `x`), in order of first use."""
    inner: set[int] = set()
    captured: dict[int, ir.Value] = {}

    def walk(graph: ir.Graph) -> None:
        inner.update(id(v) for v in graph.inputs)
        inner.update(id(v) for v in graph.initializers.values())
        for sub_node in graph:
            for value in sub_node.inputs:
                if value is not None and id(value) not in inner:
                    captured.setdefault(id(value), value)
            for attr in sub_node.attributes.values():
                for sub in _attr_graphs(attr):
                    walk(sub)
            inner.update(id(v) for v in sub_node.outputs)

    for attr in node.attributes.values():
        for graph in _attr_graphs(attr):
            walk(graph)
    return list(captured.values())


def _attr_graphs(attr: ir.Attr) -> list[ir.Graph]:
    if attr.type == ir.AttributeType.GRAPH:
        return [attr.as_graph()]
    if attr.type == ir.AttributeType.GRAPHS:
        return list(attr.as_graphs())
    return []


def is_used(value: ir.Value) -> bool:
    """Whether a node reads `value`, in O(1). onnx_ir's `uses()` copies every use into a
    tuple, so asking it once per rewritten node costs O(n²) when n nodes share an input
    (40,000 ArgMax of one tensor: a minute, benchmarks/RESULTS.md)."""
    uses = getattr(value, "_uses", None)  # onnx_ir's own record of the uses
    return bool(uses) if uses is not None else bool(value.uses())


def remove_if_orphaned(graph: ir.Graph, *values: ir.Value) -> None:
    """Delete Constant nodes and initializers that a rewrite left without users."""
    for value in values:
        if is_used(value) or value.is_graph_output() or value.is_graph_input():
            continue
        producer = value.producer()
        if producer is not None and producer.op_type == "Constant" and producer.domain == "":
            producer.graph.remove(producer, safe=True)
        elif value.is_initializer() and value.graph is not None:
            value.graph.initializers.pop(value.name, None)


def drop_inputs(node: ir.Node, start: int) -> None:
    """Cut `node`'s inputs down to the first `start`, deleting the constants that leaves
    without users (the inputs an attribute now says instead)."""
    used = [v for v in node.inputs[start:] if v is not None]
    node.resize_inputs(start)
    remove_if_orphaned(node.graph, *used)


# onnx's data propagation (shape inference with data_prop=True) works out the values of
# shapes computed from Shape and Size, and so dims that plain inference leaves unknown
# (Expand(z, Shape(x)) gets x's dims), which decide the forms rewrites can take. In onnx
# 1.23 it also holds every 1-D value that reaches Gather, Slice, Concat, Cast or
# Unsqueeze, at about 140 bytes per element: a float[2^40] input asks for 150 TB. So shapes
# are inferred without it first, then again with it only where it can add something (the
# model has a Shape or Size node) and the 1-D values inference found hold at most
# DATA_PROPAGATION_BUDGET elements in all (about 600 MB at worst).
DATA_PROPAGATION_BUDGET = 1 << 22
SHAPE_SOURCES = frozenset({"Shape", "Size"})


def data_propagation_affordable(shapes: Iterable[Sequence[int | None] | None]) -> bool:
    """Whether the 1-D values among `shapes` (None: unknown) stay within the budget."""
    total = 0
    for shape in shapes:
        if shape is not None and len(shape) == 1 and isinstance(shape[0], int):
            total += shape[0]
            if total > DATA_PROPAGATION_BUDGET:
                return False
    return True


def infer_shapes(model: ir.Model) -> None:
    """Types and shapes of every value of `model`, in place, from onnx's shape inference
    (never strict: what it cannot infer stays unknown), with data propagation where it is
    affordable (above). A model holding value types onnx_ir cannot read (ZipMap's sequence of
    maps) cannot come back from onnx's inference: it keeps the types it has."""
    try:
        ShapeInferencePass(strict_mode=False, data_prop=False)(model)
    except ir.serde.SerdeError:
        return
    graphs = [*model.graphs(), *(f.graph for f in model.functions.values())]
    if not any(n.op_type in SHAPE_SOURCES and n.domain == "" for g in graphs for n in g):
        return
    values = [
        v
        for g in graphs
        for v in [*g.inputs, *g.initializers.values(), *(o for n in g for o in n.outputs)]
    ]
    if data_propagation_affordable(None if v.shape is None else tuple(v.shape) for v in values):
        ShapeInferencePass(strict_mode=False, data_prop=True)(model)


def forget_generated_dim_names(model: ir.Model) -> None:
    """Drop the dim names onnx's shape inference makes up (unk__0, ...) from inferred values.

    Inference gives one such name to dims of different sizes in different places, and
    onnxruntime plans buffers by dim name, so a run with other sizes fails. The dims stay,
    unnamed; graph inputs keep theirs.
    """
    graphs = [*model.graphs(), *(f.graph for f in model.functions.values())]
    for graph in graphs:
        for node in graph:
            for value in node.outputs:
                _unname_generated_dims(value)
        for value in graph.outputs:
            _unname_generated_dims(value)


def _unname_generated_dims(value: ir.Value) -> None:
    shape = value.shape
    if shape is None:
        return
    dims = list(shape)
    generated = [
        isinstance(d, ir.SymbolicDim) and isinstance(d.value, str) and d.value.startswith("unk__")
        for d in dims
    ]
    if any(generated):
        value.shape = ir.Shape([None if g else d for d, g in zip(dims, generated)])


def forget_generated_dim_names_in_proto(model: onnx.ModelProto) -> None:
    """The same on a ModelProto (the command line writes the inferred protobuf). Meant for
    protobufs without their large weights (maxlower.io's light models), which serialise in
    milliseconds: most models have no made-up name at all, and then nothing is walked."""
    if b"unk__" not in model.SerializeToString():
        return

    def clear(infos) -> None:
        for info in infos:
            if info.type.HasField("tensor_type"):
                for dim in info.type.tensor_type.shape.dim:
                    if dim.HasField("dim_param") and dim.dim_param.startswith("unk__"):
                        dim.ClearField("dim_param")

    for graph in graph_protos(model.graph):
        clear(graph.value_info)
        clear(graph.output)
    for function in model.functions:
        clear(function.value_info)


def subgraphs(graph: onnx.GraphProto) -> Iterator[onnx.GraphProto]:
    """The graphs held by `graph`'s nodes' attributes (not recursively). Only nodes that can
    hold one are looked at: reading every attribute of 20,000 nodes costs a tenth of a
    second."""
    for node in graph.node:
        if node.domain in ("", "ai.onnx") and not holds_graphs(node.op_type):
            continue
        for attribute in node.attribute:
            if attribute.type == onnx.AttributeProto.GRAPH:
                yield attribute.g
            elif attribute.type == onnx.AttributeProto.GRAPHS:
                yield from attribute.graphs


@functools.cache
def holds_graphs(op_type: str) -> bool:
    """Whether default-domain `op_type` has a graph attribute in some version (If, Loop,
    Scan, ...): looked up per op type met, not by reading every schema (40 ms)."""
    kinds = (onnx.defs.OpSchema.AttrType.GRAPH, onnx.defs.OpSchema.AttrType.GRAPHS)
    return any(
        a.type in kinds
        for v in op_versions(op_type)
        for a in onnx.defs.get_schema(op_type, v, "").attributes.values()
    )


@functools.cache
def op_versions(op_type: str) -> tuple[int, ...]:
    """Every since_version of default-domain `op_type`, ascending; () if there is none.

    Walked down from the latest schema one version at a time: a few lookups, where reading
    onnx.defs.get_all_schemas_with_history() costs 40 ms, a sixth of `maxlower`'s start-up.
    """
    versions: list[int] = []
    opset = onnx.defs.onnx_opset_version()
    while opset >= 1:
        try:
            since = onnx.defs.get_schema(op_type, opset, "").since_version
        except onnx.defs.SchemaError:
            break
        versions.append(since)
        opset = since - 1
    return tuple(reversed(versions))


def graph_protos(graph: onnx.GraphProto) -> Iterator[onnx.GraphProto]:
    """`graph` and every subgraph inside it, depth first."""
    yield graph
    for subgraph in subgraphs(graph):
        yield from graph_protos(subgraph)


# Rounds of inference `with_reshape_ranks` runs at most: a round types what reads
# the Reshapes it ranked; a Reshape whose shape's length only that typing gives needs one
# more (a Reshape to Shape(x) where x comes from another one's output, say).
RESHAPE_RANK_ROUNDS = 4


def add_reshape_ranks(model: onnx.ModelProto) -> bool:
    """Give each Reshape output that inference left without a shape the rank its shape
    input's static length says, with unknown dims: Reshape's output has as many dims as
    its shape input has elements, in every version. onnx's inference says nothing when
    the shape is computed at run time (TorchScript exports with dynamic axes: 501 of
    swin_t's 3,225 values untyped at opset 11), and everything downstream, a Softmax's
    rank included, stays unknown. Returns whether any was given.

    Each graph sees its own values and those of the graphs around it, its own first (a
    subgraph's initializer named like an outer value is not that value: red team of
    089c1ac); an initializer that is also a graph input is a default a caller may
    override, whose length is no fact."""
    graphs = graph_protos(model.graph)
    if not any(n.op_type == "Reshape" for graph in graphs for n in graph.node):
        return False  # (every conversion's check calls this: most graphs are done here)
    return _rank_reshapes_in(model.graph, {}, {})


def _rank_reshapes_in(
    graph: onnx.GraphProto,
    outer_infos: dict[str, onnx.ValueInfoProto | None],
    outer_lengths: dict[str, list[int] | None],
) -> bool:
    infos = dict(outer_infos)
    lengths = dict(outer_lengths)
    inputs = {v.name for v in graph.input}
    made = {name for node in graph.node for name in node.output} | inputs
    for name in made:  # this graph's own values hide the outer ones of their names
        infos[name], lengths[name] = None, None
    for info in (*graph.input, *graph.value_info, *graph.output):
        infos[info.name] = info
    for tensor in graph.initializer:
        lengths[tensor.name] = None if tensor.name in inputs else list(tensor.dims)
    added = False
    for node in graph.node:
        if _rank_one_reshape(node, infos, lengths):
            added = True
        for attribute in node.attribute:
            for body in [attribute.g] * attribute.HasField("g") + list(attribute.graphs):
                added = _rank_reshapes_in(body, infos, lengths) or added
    return added


def _rank_one_reshape(
    node: onnx.NodeProto,
    infos: dict[str, onnx.ValueInfoProto | None],
    lengths: dict[str, list[int] | None],
) -> bool:
    if node.op_type != "Reshape" or node.domain not in ("", "ai.onnx"):
        return False
    if len(node.input) < 2:  # Reshape-1's shape attribute: inference reads it
        return False
    target = infos.get(node.output[0])
    if target is None or not target.type.HasField("tensor_type"):
        return False
    tensor_type = target.type.tensor_type
    length = _static_length(node.input[1], infos, lengths)
    if tensor_type.HasField("shape") or length is None:
        return False
    tensor_type.shape.SetInParent()
    for _ in range(length):
        tensor_type.shape.dim.add()
    return True


def _static_length(
    name: str,
    infos: dict[str, onnx.ValueInfoProto | None],
    initializers: dict[str, list[int] | None],
) -> int | None:
    """The length of the 1-D tensor `name` where its type or initializer gives it."""
    dims = initializers.get(name)
    if dims is not None:
        return dims[0] if len(dims) == 1 else None
    info = infos.get(name)
    if info is None or not info.type.tensor_type.HasField("shape"):
        return None
    dims = info.type.tensor_type.shape.dim
    return dims[0].dim_value if len(dims) == 1 and dims[0].HasField("dim_value") else None


def with_reshape_ranks(
    inferred: onnx.ModelProto, infer: Callable[[onnx.ModelProto], onnx.ModelProto]
) -> onnx.ModelProto:
    """`inferred` (a model inference has typed), with `add_reshape_ranks` applied and
    `infer` run again while it ranks a Reshape output, so that inference carries the
    ranks downstream (at most RESHAPE_RANK_ROUNDS rounds)."""
    for _ in range(RESHAPE_RANK_ROUNDS):
        if not add_reshape_ranks(inferred):
            break
        inferred = infer(inferred)
    return inferred
