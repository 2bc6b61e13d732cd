"""Pieces that the decompositions of both extremum families share (Max, ReduceMax, ArgMax and
their Min twins; passes.extremum gives the family of a node from its op_type).

A decomposition is `rewrite(node, b) -> str | None`, the shape of a version adapter: it
replaces `node` with other ops written by `b` (a `passes.builder.Builder` at the model's
opset) and returns one line saying what it did; it returns None when it does not apply to
this node (say, the n-ary chain on a binary Max), and raises ConversionError through
`b.refuse` when it applies but has no exact form at this opset. Family nodes that it emits are
announced through `b.on_family`, at the schema version of the opset they are written for.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence

import numpy as np
import onnx_ir as ir

from passes.builder import Builder, schema_accepts, schema_version
from passes.extremum import FAMILY_OF, Extremum
from passes.graph_utils import replace_node, require_dtype

DT = ir.DataType
FLOATS = frozenset({DT.FLOAT16, DT.BFLOAT16, DT.FLOAT, DT.DOUBLE})
SIGNED = frozenset({DT.INT8, DT.INT16, DT.INT32, DT.INT64})
UNSIGNED = frozenset({DT.UINT8, DT.UINT16, DT.UINT32, DT.UINT64})

# Exact widenings (design note, "Casts only where exact"), the narrowest first: every value of
# the narrow type is a value of the wide one, and the order of values is kept.
EXACT_WIDENINGS: dict[DT, tuple[DT, ...]] = {
    DT.BOOL: (DT.UINT8, DT.INT32),
    DT.INT8: (DT.INT32, DT.INT64, DT.FLOAT),
    DT.UINT8: (DT.INT32, DT.INT64, DT.FLOAT),
    DT.INT16: (DT.INT32, DT.INT64, DT.FLOAT),
    DT.UINT16: (DT.INT32, DT.INT64, DT.FLOAT),
    DT.INT32: (DT.INT64, DT.DOUBLE),
    DT.UINT32: (DT.INT64, DT.DOUBLE),
    DT.FLOAT16: (DT.FLOAT, DT.DOUBLE),
    DT.BFLOAT16: (DT.FLOAT, DT.DOUBLE),
    DT.FLOAT: (DT.DOUBLE,),
}
WIDE_TYPES = tuple(dict.fromkeys(t for ts in EXACT_WIDENINGS.values() for t in ts))

Rewrite = Callable[[ir.Node, Builder], "str | None"]


@dataclasses.dataclass(frozen=True)
class Decomposition:
    """One exact rewrite of one op; `summary` is the before → after form, for reports."""

    name: str
    op_type: str
    rewrite: Rewrite
    summary: str
    # Chosen only when nothing else fits, whatever it costs: it routes NaN through an op
    # whose NaN behaviour ONNX leaves open (Max stacked into a ReduceMax).
    last_resort: bool = False


def current_version(op_type: str, opset: int) -> int:
    version = schema_version(op_type, opset)
    assert version is not None, f"{op_type} does not exist at opset {opset}"
    return version


def require_accepts(b, op_type: str, dtype: DT, what: str) -> None:
    """Refuse unless `op_type` at the builder's opset takes `dtype` (`what`: the form)."""
    b.require_accepts(op_type, dtype, what)


def widen_node(
    node: ir.Node,
    b: Builder,
    wide: DT,
    pin_empty_set: bool = False,
) -> str:
    """Cast the data input(s) to `wide`, run the same op at the current version, cast back.

    Max/Min cast every input; the reductions and ArgMax/ArgMin only input 0 (axes stay
    int64). An arg op's int64 result needs no cast back. `pin_empty_set` brings the wide
    result to the narrow type's identity before narrowing: a ReduceMax over an empty set
    gives the wide type's minimum, which the narrow type does not hold (int32's for a uint8
    input), and a ReduceMin the wide type's maximum.
    """
    family = FAMILY_OF[node.op_type]
    narrow = require_dtype(node, node.inputs[0], "widening casts from its element type")
    data_count = len(node.inputs) if node.op_type == family.elementwise else 1
    inputs = [b.cast(v, wide) if i < data_count else v for i, v in enumerate(node.inputs)]
    out_dtype = DT.INT64 if node.op_type == family.arg else wide
    result = b.op(
        node.op_type,
        inputs,
        {name: attr for name, attr in node.attributes.items()},
        family_version=current_version(node.op_type, b.opset),
        dtype=out_dtype,
    )
    if node.op_type != family.arg:
        if pin_empty_set:
            result = pinned(b, result, family, family.identity(narrow).astype(wide.numpy()))
        result = b.cast(result, narrow)
    replace_node(node, result)
    pinned_what = ", empty set pinned to the narrow identity" if pin_empty_set else ""
    return f"{narrow.name} {node.op_type} computed exactly in {wide.name}{pinned_what}"


def pinned(b: Builder, y: ir.Value, family: Extremum, bound: np.ndarray) -> ir.Value:
    """family.pick(y, bound) for a scalar `bound`, without the family's ops: Clip where the
    opset's Clip takes y's type (Clip-12 and later take integers), else
    Where(beats(bound, y), bound, y)."""
    if schema_accepts("Clip", b.opset, y.dtype):
        return b.clip_pick(y, bound, family)
    m = b.const(bound)
    beaten = b.binary(family.beats, m, y, dtype=DT.BOOL)
    return b.op("Where", [beaten, m, y], dtype=y.dtype, shape=y.shape)


def elementwise(b: Builder, family: Extremum, x: ir.Value, y: ir.Value) -> ir.Value:
    """The family's elementwise op on x and y of one element type: for bool Or (Max) or And
    (Min), as False < True; the op itself where the opset's schema takes the type (a family
    node, so a profile without it lowers it in turn); else the NaN-exact select form
    (`passes.decompose.max.select`)."""
    from passes.decompose.max import select  # max.py imports this module

    dtype = x.dtype
    if dtype == DT.BOOL:
        return b.op("Or" if family.direction > 0 else "And", [x, y], dtype=DT.BOOL)
    op = family.elementwise
    if dtype is not None and schema_accepts(op, b.opset, dtype):
        return b.op(op, [x, y], family_version=current_version(op, b.opset), dtype=dtype)
    return select(b, family, x, y, dtype)


def snake_case(op_type: str) -> str:
    """ReduceMax -> reduce_max: the prefix of an op's decomposition names."""
    return re.sub(r"(?<!^)([A-Z])", r"_\1", op_type).lower()


def reduced_shape(b: Builder, x: ir.Value, axis: int, rank: int) -> ir.Value:
    """x's shape with `axis` set to 1, as an int64 vector: a constant where x's shape is
    static, else Shape(x) * keep + reduced (one Mul and one Add on `rank` integers)."""
    dims = list(x.shape) if x.shape is not None else [None] * rank
    if all(isinstance(d, int) for d in dims):
        dims[axis] = 1
        return b.const(np.array(dims, dtype=np.int64))
    keep = np.ones(rank, dtype=np.int64)
    keep[axis] = 0
    shape = b.op("Shape", [x], dtype=DT.INT64, shape=ir.Shape([rank]))
    kept = b.binary("Mul", shape, b.const(keep), dtype=DT.INT64)
    return b.binary("Add", kept, b.const(1 - keep), dtype=DT.INT64)


def filled(b: Builder, value: np.ndarray, shape: ir.Value, like: ir.Shape | None) -> ir.Value:
    """A tensor of `shape` (an int64 vector) holding `value` everywhere (Expand of a scalar)."""
    return b.op("Expand", [b.const(value), shape], dtype=DT.from_numpy(value.dtype), shape=like)


def non_negative_axes(node: ir.Node, axes: Sequence[int], rank: int, b: Builder) -> list[int]:
    normalised = [a + rank if a < 0 else a for a in axes]
    if any(not 0 <= a < rank for a in normalised):
        raise b.refuse(f"axes {list(axes)} are out of range for rank {rank}", "valid axes")
    return normalised


def kept_shape(shape: ir.Shape | None, axis: int) -> ir.Shape | None:
    """`shape` with `axis` set to 1 (the keepdims shape of a reduction over `axis`)."""
    if shape is None:
        return None
    dims = list(shape)
    dims[axis] = 1
    return ir.Shape(dims)


def widening_decompositions(
    op_type: str, pin: Callable[[ir.Node, DT], bool] | None = None
) -> list[Decomposition]:
    """One decomposition per wide type W: `op_type` computed in W (see `widen_node`).

    The search in `passes.legalize` tries each and keeps the cheapest one that the profile
    accepts. `pin(node, W)` says whether the empty-set result must be pinned.
    """

    def make(wide: DT) -> Decomposition:
        def rewrite(node: ir.Node, b: Builder) -> str | None:
            dtype = node.inputs[0].dtype
            if dtype is None or wide not in EXACT_WIDENINGS.get(dtype, ()):
                return None
            if not schema_accepts(op_type, b.opset, wide):
                raise b.refuse(
                    f"{op_type} at opset {b.opset} does not take {wide.name}",
                    "a target opset whose schema takes the wide type",
                )
            return widen_node(node, b, wide, pin_empty_set=pin(node, wide) if pin else False)

        back = "" if op_type == FAMILY_OF[op_type].arg else ", cast back"
        return Decomposition(
            f"{snake_case(op_type)}_widen_to_{wide.name.lower()}",
            op_type,
            rewrite,
            f"{op_type}(x: T) → {op_type}(Cast(x, {wide.name})){back} (exact widening)",
        )

    return [make(wide) for wide in WIDE_TYPES]
