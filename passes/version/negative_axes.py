"""Negative axes for versions that do not count from the back: made nonnegative.

    Unsqueeze-11(x: rank 2){axes=[-1]}, to ≤ 10  →  Unsqueeze-1(x){axes=[2]}
    Concat-11(a, b: rank 3){axis=-1}, to ≤ 10   →  Concat-4(a, b){axis=2}
    Squeeze-11(x: rank unknown){axes=[-1]}, to ≤ 10  →  ConversionError (needs the rank)

Opset 11 let many ops (Squeeze, Unsqueeze, Concat, Split, Flatten, Softmax, the reductions,
OneHot, Compress, TopK, ...) count `axis` / `axes` from the back; the versions before say
nothing of negative values (Squeeze-1: "non-negative integers"), and onnx's shape inference
reads them differently (Unsqueeze-1 with axes=[-1] fails the checker). Which ops and
versions: those whose attribute's description in onnx.defs says negative values count from
the back ("Negative value means ...", "Accepted range is [-r, r-1]") at the source version
and not at the target. The axis counts from the back of the output where the range is said
of it (Unsqueeze's "rank(expanded)", OneHot's [-r-1, r]), else of the first input. A value
equal to the target's own default (TopK-1's axis=-1) is what the target defines, and stays.
"""

from __future__ import annotations

import functools
import re

import onnx
import onnx_ir as ir

from passes.builder import Builder, schema_version
from passes.graph_utils import static_rank
from passes.version.registry import schema_versions

_FROM_THE_BACK = re.compile(r"negative value|\[-r", re.IGNORECASE)
_OF_THE_OUTPUT = re.compile(r"rank\(expanded\)|\[-r-1")


@functools.cache
def _description(op_type: str, version: int, name: str) -> str | None:
    attribute = onnx.defs.get_schema(op_type, version, "").attributes.get(name)
    return None if attribute is None else attribute.description


@functools.cache
def _default(op_type: str, version: int, name: str):
    attribute = onnx.defs.get_schema(op_type, version, "").attributes[name]
    proto = attribute.default_value
    return onnx.helper.get_attribute_value(proto) if proto is not None and proto.name else None


def negative_axes_to_nonnegative(node: ir.Node, old: int, b: Builder) -> str | None:
    """Make the node's negative axis/axes nonnegative where the target version does not
    count from the back (see the module docstring)."""
    new = schema_version(node.op_type, b.opset)
    if new is None:
        return None
    done = []
    for name in ("axis", "axes"):
        attr = node.attributes.get(name)
        source, target = (
            _description(node.op_type, old, name),
            _description(node.op_type, new, name),
        )
        if attr is None or source is None or target is None:
            continue
        if not _FROM_THE_BACK.search(source) or _FROM_THE_BACK.search(target):
            continue
        single = attr.type == ir.AttributeType.INT
        values = [attr.value] if single else list(attr.value)
        if all(v >= 0 for v in values) or attr.value == _default(node.op_type, new, name):
            continue
        of_output = bool(_OF_THE_OUTPUT.search(source))
        value = node.outputs[0] if of_output else node.inputs[0]
        rank = _rank(node, value, of_output, len(values))
        if rank is None:
            raise b.refuse(
                f"its {name} {values[0] if single else values} count from the back, which "
                f"{node.op_type}-{new} does not define, and the rank of {value.name!r} is unknown",
                f"give {value.name!r} a static rank, or target opset "
                f"{_first_counting_from_the_back(node.op_type, name)} or later",
            )
        fixed = [v + rank if v < 0 else v for v in values]
        if single:
            node.attributes[name] = ir.AttrInt64(name, fixed[0])
            done.append(f"{name} {values[0]} → {fixed[0]}")
        else:
            node.attributes[name] = ir.AttrInt64s(name, fixed)
            done.append(f"{name} {values} → {fixed}")
    return "; ".join(done) or None


def _rank(node: ir.Node, value: ir.Value, of_output: bool, count: int) -> int | None:
    rank = static_rank(value)
    if rank is None and of_output and node.op_type == "Unsqueeze":
        inner = static_rank(node.inputs[0])
        rank = None if inner is None else inner + count
    return rank


def _first_counting_from_the_back(op_type: str, name: str) -> int:
    return min(
        v
        for v in schema_versions(op_type)
        if (d := _description(op_type, v, name)) is not None and _FROM_THE_BACK.search(d)
    )
