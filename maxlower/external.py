"""External tensors wherever they sit, resolved against the model's own directory.

    walk(proto)                       the one walk of a protobuf: every graph and every
                                      attribute holding a tensor or a graph, with where
    tensors(proto)                    every TensorProto, with where it is
    all_graphs(proto)                 every graph that holds initializers
    external_protos(proto)            every TensorProto with external data: initializers,
                                      sparse tensors, tensor attributes (Constant's value),
                                      in the main graph, subgraphs, functions and
                                      training_info
    location_dirs(proto, base_dirs)   {location: directory} for those tensors
    read_in(tensor, base_dir)         a copy of one tensor with its bytes in raw_data
    inlined(proto, base_dirs)         a copy of the model with every external tensor read in
    ir_external_tensors(model)        the same walk in onnx_ir (functions included)
    set_base_dirs(model, base_dir)    onnx_ir's set_base_dir, for functions too, and
                                      attribute tensors read in
    ir_read_all_in(model)             every external tensor of an onnx_ir model read in,
                                      each from its own directory

A TensorProto names its file relative to the model's directory, and only the loader knows
that directory. Handed on as bytes (onnxruntime, onnx.reference, onnx.checker), a model with
a relative location is resolved against the *working directory*: `maxlower verify` run
elsewhere would read and print whatever file of that name lies there. So nothing reaches
those libraries with an external reference: the verifier gets `inlined` models, the checker
gets main-graph weights as typed inputs and everything else read in (maxlower.io), and each
read goes through onnx_ir's `ExternalTensor`, with the model's directory, after
`maxlower.safety.check_model_data` has checked the location.

onnx.external_data_helper does not fit: `load_external_data_for_model` walks initializers,
attributes and functions but not sparse tensors or training_info, and resolves through
onnx's C++ loader, which refuses every symlink; onnx_ir's `load_to_model` reads only
initializers.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import onnx
import onnx_ir as ir

from maxlower.errors import InvalidModelError
from passes.errors import concise
from passes.graph_utils import holds_graphs, subgraph_place

BaseDirs = str | os.PathLike | dict[str, str]


def is_external(tensor: onnx.TensorProto) -> bool:
    return tensor.data_location == onnx.TensorProto.EXTERNAL


def location(tensor: onnx.TensorProto) -> str:
    return next((e.value for e in tensor.external_data if e.key == "location"), "")


def external_protos(
    proto: onnx.ModelProto, *, initializers: bool = True, checked: bool = False
) -> list[onnx.TensorProto]:
    """Every external TensorProto of the model (`initializers=False`: not the dense
    initializers of any graph, which maxlower.io treats on their own; `checked`: the
    model passed onnx's checker, so the faster walk is exact, see `tensors`)."""
    walk = tensors(proto, initializers=initializers, typed=checked)
    return [t for t, _ in walk if is_external(t)]


def all_graphs(proto: onnx.ModelProto) -> Iterator[onnx.GraphProto]:
    """The main graph and its subgraphs, then training_info's graphs and theirs: every
    graph that holds initializers (functions hold none)."""
    return (item for _, item in walk(proto, functions=False, attributes=False))


def tensors(
    proto: onnx.ModelProto, *, initializers: bool = True, typed: bool = False
) -> Iterator[tuple[onnx.TensorProto, str]]:
    """Every TensorProto of the model, with where it is: initializers, sparse ones, and
    tensor attributes, in the main graph, every subgraph, every function and the graphs of
    training_info. `initializers=False` leaves out the dense initializers of every graph
    (sparse ones and attributes are still walked). `typed`: trust each attribute's type
    field, five times faster, for a model onnx's checker has passed (it refuses a type
    that does not match the data); training_info, which it does not check, is walked in
    full."""
    for where, item in walk(proto, typed=typed):
        if isinstance(item, onnx.AttributeProto):
            yield from ((t, where) for t in _attribute_tensors(item))
            continue
        if initializers:
            yield from ((t, where) for t in item.initializer)
        for sparse in item.sparse_initializer:
            yield sparse.values, where
            yield sparse.indices, where


def walk(
    proto: onnx.ModelProto,
    *,
    typed: bool = False,
    functions: bool = True,
    attributes: bool = True,
) -> Iterator[tuple[str, onnx.GraphProto | onnx.AttributeProto]]:
    """The one walk of a model's protobuf: every graph, and every attribute that holds a
    tensor or a graph, each with where it is, in the file's order: the main graph, then
    each function's nodes, then training_info's graphs; a graph before its nodes, an
    attribute before the subgraphs it holds.

    `functions=False` leaves out the functions; `attributes=False` yields the graphs only,
    and looks only at the nodes of ops that can hold a graph (If, Loop, Scan, any other
    domain's). `typed`: as in `tensors`."""
    yield from _walk_graph(proto.graph, "main graph", typed, attributes)
    for function in proto.functions if functions else ():
        where = f"function {function.domain}::{function.name}"
        yield from _walk_nodes(function.node, where, typed, attributes)
    for index, training in enumerate(proto.training_info):
        for field in ("initialization", "algorithm"):
            if training.HasField(field):
                where = f"training_info[{index}].{field}"
                yield from _walk_graph(getattr(training, field), where, False, attributes)


def node_text(node: onnx.NodeProto, index: int) -> str:
    """How messages name a node: its name quoted, or its place when it has none."""
    return repr(node.name) if node.name else f"#{index}"


# The attribute types that hold a tensor or a graph (UNDEFINED: look, the type may be unset).
_HOLDING_TYPES = frozenset(
    {
        onnx.AttributeProto.UNDEFINED,
        onnx.AttributeProto.TENSOR,
        onnx.AttributeProto.TENSORS,
        onnx.AttributeProto.GRAPH,
        onnx.AttributeProto.GRAPHS,
        onnx.AttributeProto.SPARSE_TENSOR,
        onnx.AttributeProto.SPARSE_TENSORS,
    }
)


def _walk_graph(
    graph: onnx.GraphProto, where: str, typed: bool, attributes: bool
) -> Iterator[tuple[str, onnx.GraphProto | onnx.AttributeProto]]:
    yield where, graph
    yield from _walk_nodes(graph.node, where, typed, attributes)


def _walk_nodes(
    nodes, where: str, typed: bool, attributes: bool
) -> Iterator[tuple[str, onnx.GraphProto | onnx.AttributeProto]]:
    for index, node in enumerate(nodes):
        if not attributes and node.domain in ("", "ai.onnx") and not holds_graphs(node.op_type):
            continue  # reading every attribute of 20,000 nodes costs a tenth of a second
        for attribute in node.attribute:
            if typed and attribute.type not in _HOLDING_TYPES:
                continue
            has = attribute.HasField
            holds_tensors = has("t") or has("sparse_tensor") or attribute.tensors
            holds_tensors = holds_tensors or attribute.sparse_tensors
            if not (holds_tensors or has("g") or attribute.graphs):
                continue  # ints, floats, strings: most attributes, and cheap to pass by
            label = f"node {node_text(node, index)} ({node.op_type}) in {where}"
            if attributes:
                yield label, attribute
            shown = node_text(node, index)
            for subgraph in [attribute.g] if has("g") else []:
                where_inside = subgraph_place(where, node, attribute.name, shown=shown)
                yield from _walk_graph(subgraph, where_inside, typed, attributes)
            for k, subgraph in enumerate(attribute.graphs):
                where_inside = subgraph_place(where, node, attribute.name, k, shown=shown)
                yield from _walk_graph(subgraph, where_inside, typed, attributes)


def _attribute_tensors(attribute: onnx.AttributeProto) -> Iterator[onnx.TensorProto]:
    if attribute.HasField("t"):
        yield attribute.t
    yield from attribute.tensors
    for sparse in [attribute.sparse_tensor] if attribute.HasField("sparse_tensor") else []:
        yield sparse.values
        yield sparse.indices
    for sparse in attribute.sparse_tensors:
        yield sparse.values
        yield sparse.indices


def base_dir_of(tensor: onnx.TensorProto, base_dirs: BaseDirs | None) -> str | None:
    """The directory `tensor`'s location is relative to; None if nobody said."""
    if base_dirs is None or isinstance(base_dirs, str | os.PathLike):
        return None if base_dirs is None else str(base_dirs)
    return base_dirs.get(location(tensor))


def location_dirs(proto: onnx.ModelProto, base_dir: str | os.PathLike) -> dict[str, str]:
    """{location: base_dir} for every external tensor of `proto` (a model derived from one
    onnx's checker passed)."""
    return {location(t): str(base_dir) for t in external_protos(proto, checked=True)}


def read_in(tensor: onnx.TensorProto, base_dir: str | None) -> onnx.TensorProto:
    """A copy of `tensor` with its data in raw_data, read from `base_dir` by onnx_ir's
    ExternalTensor (which also refuses a location leading out of the directory). Never
    resolved against the working directory: without a directory it is refused."""
    if not base_dir:
        raise InvalidModelError(
            f"tensor {tensor.name!r} keeps its data in the external file "
            f"{location(tensor)[:200]!r}, and nothing says which directory that file is in: "
            "give the model's path, or load it with onnx.load(path), which reads the data in"
        )
    external = ir.serde.deserialize_tensor(tensor, base_dir)
    try:
        data = external.tobytes()
    except (OSError, ValueError) as error:
        raise InvalidModelError(
            f"cannot read the external data of tensor {tensor.name!r} ({concise(error)})"
        ) from error
    finally:
        if isinstance(external, ir.ExternalTensor):
            external.release()
    inline = onnx.TensorProto()
    inline.CopyFrom(tensor)
    inline.ClearField("external_data")
    inline.data_location = onnx.TensorProto.DEFAULT
    inline.raw_data = data
    return inline


def read_all_in(found: list[onnx.TensorProto], base_dirs: BaseDirs | None) -> None:
    """Read each of `found` (TensorProtos inside a model) in, in place."""
    for tensor in found:
        tensor.CopyFrom(read_in(tensor, base_dir_of(tensor, base_dirs)))


def inlined(proto: onnx.ModelProto, base_dirs: BaseDirs | None) -> onnx.ModelProto:
    """A copy of `proto` with every external tensor, wherever it sits, read in from
    `base_dirs` (one directory, or {location: directory}): what the verifier runs."""
    copy = onnx.ModelProto()
    copy.CopyFrom(proto)
    read_all_in(external_protos(copy), base_dirs)
    return copy


# --- onnx_ir ------------------------------------------------------------------------------


def ir_tensors(model: ir.Model) -> Iterator[ir.TensorProtocol]:
    """Every tensor of an onnx_ir model: initializers and tensor attributes in every graph,
    subgraph and function (onnx_ir reads no sparse tensors and no training_info)."""
    containers = [model.graph, *model.functions.values()]
    for container in containers:
        for graph in [container, *_subgraphs(container)]:
            if isinstance(graph, ir.Graph):
                for value in graph.initializers.values():
                    if value.const_value is not None:
                        yield value.const_value
        for node in ir.traversal.RecursiveGraphIterator(container):
            for attribute in node.attributes.values():
                if attribute.is_ref() or attribute.value is None:
                    continue
                if attribute.type == ir.AttributeType.TENSOR:
                    yield attribute.value
                elif attribute.type == ir.AttributeType.TENSORS:
                    yield from attribute.value


def _subgraphs(container) -> Iterator[ir.Graph]:
    for node in ir.traversal.RecursiveGraphIterator(container):
        for attribute in node.attributes.values():
            if attribute.is_ref() or attribute.value is None:
                continue
            if attribute.type == ir.AttributeType.GRAPH:
                yield attribute.value
            elif attribute.type == ir.AttributeType.GRAPHS:
                yield from attribute.value


def ir_external_tensors(model: ir.Model) -> list[ir.ExternalTensor]:
    return [t for t in ir_tensors(model) if isinstance(t, ir.ExternalTensor)]


def ir_location_dirs(model: ir.Model) -> dict[str, str]:
    """{location: base_dir} of the model's external tensors ('' where none is set)."""
    return {str(t.location): str(t.base_dir or "") for t in ir_external_tensors(model)}


def set_base_dirs(model: ir.Model, base_dir: str | os.PathLike) -> None:
    """Every external tensor of `model` (functions included) is relative to `base_dir`,
    and those in attributes (a Constant's value) are read in from there: the passes check
    single nodes with onnx's checker, which would look for an attribute's file in the
    working directory. Initializers stay lazy (they are the weights)."""
    for tensor in ir_external_tensors(model):
        tensor.base_dir = str(base_dir)
    _read_attributes_in(model, None)


def ir_read_all_in(model: ir.Model, fallback: str | os.PathLike | None = None) -> None:
    """Every external tensor of `model` (a clone: tensors are shared with the original,
    and none of them is changed) replaced by its data, read from the tensor's own
    directory, or from `fallback` where it has none; refused where neither says."""
    for container in [model.graph, *model.functions.values()]:
        for graph in [container, *_subgraphs(container)]:
            for value in graph.initializers.values() if isinstance(graph, ir.Graph) else ():
                if _lazy(value.const_value):
                    value.const_value = _loaded(value.const_value, fallback)
    _read_attributes_in(model, fallback)


def _read_attributes_in(model: ir.Model, fallback: str | os.PathLike | None) -> None:
    for node in _all_nodes(model):
        for name, attribute in list(node.attributes.items()):
            if attribute.is_ref() or attribute.value is None:
                continue
            if attribute.type == ir.AttributeType.TENSOR and _lazy(attribute.value):
                loaded = _loaded(attribute.value, fallback)
                node.attributes[name] = ir.Attr(name, attribute.type, loaded)
            elif attribute.type == ir.AttributeType.TENSORS and any(map(_lazy, attribute.value)):
                value = [_loaded(t, fallback) if _lazy(t) else t for t in attribute.value]
                node.attributes[name] = ir.Attr(name, attribute.type, value)


def _all_nodes(model: ir.Model) -> Iterator[ir.Node]:
    for container in [model.graph, *model.functions.values()]:
        yield from ir.traversal.RecursiveGraphIterator(container)


def _lazy(tensor) -> bool:
    return isinstance(tensor, ir.ExternalTensor)


def _loaded(
    tensor: ir.ExternalTensor, fallback: str | os.PathLike | None = None
) -> ir.TensorProtocol:
    """The tensor's data, from its base_dir (else `fallback`); onnx_ir's reader refuses a
    location that leads out of that directory. Never from the working directory."""
    if not tensor.base_dir:
        if not fallback:
            raise InvalidModelError(
                f"tensor {tensor.name!r} keeps its data in the external file "
                f"{str(tensor.location)[:200]!r}, and nothing says which directory that file "
                "is in: give the model's path, or set the tensors' base_dir "
                "(onnx_ir.external_data.set_base_dir)"
            )
        tensor = ir.ExternalTensor(
            tensor.location,
            tensor.offset,
            tensor.length,
            tensor.dtype,
            shape=tensor.shape,
            name=tensor.name,
            base_dir=str(fallback),
        )
    try:
        return ir.external_data.convert_tensors_from_external([tensor])[0]
    except (OSError, ValueError) as error:
        raise InvalidModelError(
            f"cannot read the external data of tensor {tensor.name!r} ({concise(error)})"
        ) from error


__all__ = [
    "all_graphs",
    "base_dir_of",
    "external_protos",
    "inlined",
    "ir_external_tensors",
    "ir_location_dirs",
    "ir_read_all_in",
    "location",
    "location_dirs",
    "node_text",
    "read_all_in",
    "read_in",
    "set_base_dirs",
    "tensors",
    "walk",
]
