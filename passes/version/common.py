"""Adapter pieces that more than one op of the family needs."""

from __future__ import annotations

from collections.abc import Callable

import onnx_ir as ir

from passes.builder import Builder
from passes.extremum import FAMILIES
from passes.graph_utils import replace_node, require_rank

ELEMENTWISE = frozenset(f.elementwise for f in FAMILIES)  # Max, Min: variadic, all data


def type_only(adapter: Callable) -> Callable:
    """Mark an adapter for a step that only changed the op's type constraints: it leaves a
    node as it is whenever every input and output type of the node is one the destination
    schema admits. The command line's sparse path leaves such nodes in protobuf
    (maxlower/sparse.py); tests/test_round_trips_and_scopes.py checks the claim for every
    marked step and every admitted type."""
    adapter.type_only = True
    return adapter


@type_only
def unchanged(node: ir.Node, b: Builder) -> None:
    """The neighbouring version accepts the node as it is (the step only widened the op)."""
    return None


@type_only
def refuse_bfloat16(node: ir.Node, b: Builder) -> None:
    """Below opset 13 no op, Cast included, accepts bfloat16, so there is no exact form."""
    if any(v is not None and v.dtype == ir.DataType.BFLOAT16 for v in node.inputs):
        raise b.refuse(
            "its input is bfloat16, and no ONNX op before opset 13 (Cast included) accepts "
            "bfloat16, so no exact form exists",
            "target opset 13 or later, or convert the model's bfloat16 tensors to float32 first",
        )


def require_known_dtype(node: ir.Node, b: Builder, why: str) -> ir.DataType:
    """The data input's element type, or a refusal: guessing could emit a wrong form."""
    dtype = node.inputs[0].dtype
    if dtype is None:
        raise b.refuse(
            f"the element type of {node.inputs[0].name!r} is unknown, and {why}",
            "declare the input's type (inside a function, call it with typed values from the "
            "main graph)",
        )
    return dtype


def normalise_axis_attribute(node: ir.Node, b: Builder) -> str | None:
    """Opset 1 versions reject negative `axis`; add the rank (ArgMax)."""
    axis = node.attributes.get_int("axis", 0)
    if axis >= 0:
        return None
    rank = require_rank(
        node, node.inputs[0], f"the negative axis {axis} must become non-negative below opset 11"
    )
    if axis + rank < 0:
        raise b.refuse(f"axis {axis} is out of range for rank {rank}", "a valid axis")
    node.attributes["axis"] = ir.AttrInt64("axis", axis + rank)
    return f"axis {axis} normalised to {axis + rank}"


def normalise_axes_attribute(node: ir.Node, b: Builder) -> str | None:
    """Opset 1 versions reject negative `axes`; add the rank (ReduceMax)."""
    axes = node.attributes.get_ints("axes", None)
    if axes is None or all(a >= 0 for a in axes):
        return None
    rank = require_rank(
        node,
        node.inputs[0],
        f"the negative axes {list(axes)} must become non-negative below opset 11",
    )
    normalised = [a + rank if a < 0 else a for a in axes]
    if any(a < 0 for a in normalised):
        raise b.refuse(f"axes {list(axes)} are out of range for rank {rank}", "valid axes")
    node.attributes["axes"] = ir.AttrInt64s("axes", normalised)
    return f"axes {list(axes)} normalised to {normalised}"


def compute_in_wider_type(
    node: ir.Node,
    b: Builder,
    wide: ir.DataType,
    family_version: int,
    finish: Callable[[ir.Value], ir.Value] = lambda y: y,
) -> ir.Value:
    """Cast every input to `wide`, run the same op at `family_version`, cast back.

    `finish` runs on the wide result before the narrowing cast (used to pin the empty-set
    result of a reduction to the narrow type's identity). Returns the narrow result, already
    standing in for `node`.
    """
    narrow = node.inputs[0].dtype
    # Max/Min: every input is data. ReduceMax/Min: input 0 is data, input 1 (axes) stays int64.
    data_count = len(node.inputs) if node.op_type in ELEMENTWISE else 1
    wide_inputs = [b.cast(v, wide) if i < data_count else v for i, v in enumerate(node.inputs)]
    wide_out = b.op(
        node.op_type, wide_inputs, dict(node.attributes), family_version=family_version, dtype=wide
    )
    result = b.cast(finish(wide_out), narrow)
    replace_node(node, result)
    return result
