"""onnx_ir from protobuf and back, with what onnx_ir cannot read set aside and put back.

Every move between the two forms in maxlower goes through `deserialize` and `serialize`,
so a model holding a value type onnx_ir has no class for (ZipMap's sequence of maps, an
opaque type) goes through every pass, and a damaged model is an InvalidModelError."""

from __future__ import annotations

import onnx
import onnx_ir as ir

from maxlower.errors import InvalidModelError
from passes.graph_utils import graph_protos

# model.meta key: the value types onnx_ir cannot read, set aside by `deserialize`
_SET_ASIDE = "maxlower.types_onnx_ir_cannot_read"


def deserialize(proto: onnx.ModelProto) -> ir.Model:
    """ir.serde.deserialize_model, with what onnx_ir cannot read (and onnx.checker let
    through: a damaged function, say) an InvalidModelError.

    Value types onnx_ir has no class for (a map, as in ZipMap's sequence of maps; an opaque
    type) are set aside: the values are read untyped and `serialize` puts their types back,
    so a model holding them goes through every pass (none of which reads those values)."""
    set_aside = _set_aside_unreadable_types(proto)
    clashing = _clashing_function_value_names(proto)
    if set_aside or clashing:
        copy = onnx.ModelProto()
        copy.CopyFrom(proto)
        _set_aside_unreadable_types(copy, clear=True)
        clashing_infos = _drop_value_info(copy.graph, clashing)
        proto = copy
    try:
        model = ir.serde.deserialize_model(proto)
        if set_aside:
            model.meta[_SET_ASIDE] = set_aside
        if clashing:  # the main graph's own values: typed by their entries, by hand
            values = ir.convenience.create_value_mapping(model.graph)
            for info in clashing_infos:
                if info.name in values:
                    ir.serde.deserialize_value_info_proto(info, values[info.name])
        return model
    except ir.serde.SerdeError as error:
        details = [str(e).strip().splitlines()[0] for e in (error, error.__cause__) if e]
        raise InvalidModelError(
            f"onnx_ir cannot read the model ({': '.join(filter(None, details))})"
        ) from error


def serialize(model: ir.Model) -> onnx.ModelProto:
    """ir.serde.serialize_model, with the value types `deserialize` set aside put back."""
    proto = ir.serde.serialize_model(model)
    clashing = _clashing_function_value_names(proto)
    if clashing:  # the graph's own entries come first; the others are its functions'
        proto.graph.value_info.extend(_drop_value_info(proto.graph, clashing))
    set_aside = model.meta.get(_SET_ASIDE)
    if set_aside:
        for graph in graph_protos(proto.graph):
            for info in [*graph.input, *graph.output, *graph.value_info]:
                if not info.HasField("type") and info.name in set_aside:
                    info.type.CopyFrom(set_aside[info.name])
    return proto


def _clashing_function_value_names(proto: onnx.ModelProto) -> set[str]:
    """Names of the main graph's values that read as onnx_ir's names for function values
    ('{domain}::{function}/{value}'): below IR 10 it stores function value types in the main
    graph's value_info under such names, and applies every entry so named to the function's
    value, so a main-graph value of that name would type the function, and back."""
    if not proto.functions:
        return set()
    functions = {f"{f.domain}::{f.name}" for f in proto.functions}
    graph = proto.graph
    names = {v.name for v in [*graph.input, *graph.output]}
    names |= {t.name for t in graph.initializer} | {o for n in graph.node for o in n.output}
    return {n for n in names if n.count("/") == 1 and n.split("/")[0] in functions}


def _drop_value_info(graph: onnx.GraphProto, names: set[str]) -> list[onnx.ValueInfoProto]:
    """Remove the value_info entries of `names`; returns the first entry of each name that
    is an intermediate value of `graph` (the graph's own: onnx_ir writes those before its
    functions' entries; graph inputs and outputs have none of their own)."""
    outputs = {v.name for v in graph.output}
    made = {o for node in graph.node for o in node.output} - outputs
    first: dict[str, onnx.ValueInfoProto] = {}
    kept = []
    for info in graph.value_info:
        if info.name not in names:
            kept.append(info)
        elif info.name in made and info.name not in first:
            first[info.name] = info
    if len(kept) != len(graph.value_info):
        copies = [type(i)() for i in kept]
        for copy, info in zip(copies, kept):
            copy.CopyFrom(info)
        firsts = [type(i)() for i in first.values()]
        for copy, info in zip(firsts, first.values()):
            copy.CopyFrom(info)
        del graph.value_info[:]
        graph.value_info.extend(copies)
        return firsts
    return []


def _set_aside_unreadable_types(
    proto: onnx.ModelProto, *, clear: bool = False
) -> dict[str, onnx.TypeProto]:
    """{value name: type} of the graph inputs, outputs and value_info (in every graph)
    whose type onnx_ir cannot read; with `clear`, those types are removed from `proto`
    (value_info entries dropped)."""
    found = {}
    for graph in graph_protos(proto.graph):
        for field in (graph.input, graph.output, graph.value_info):
            for info in list(field):
                if info.HasField("type") and not _readable(info.type):
                    if info.name not in found:  # a graph output's own type first
                        found[info.name] = onnx.TypeProto()
                        found[info.name].CopyFrom(info.type)
                    if clear and field is graph.value_info:
                        field.remove(info)
                    elif clear:
                        info.ClearField("type")
    return found


def _readable(type_proto: onnx.TypeProto) -> bool:
    if type_proto.WhichOneof("value") in ("tensor_type", None):  # (the common case, fast)
        return True
    try:
        return ir.serde.deserialize_type_proto_for_type(type_proto) is not None
    except ir.serde.SerdeError:
        return False


__all__ = ["deserialize", "serialize"]
