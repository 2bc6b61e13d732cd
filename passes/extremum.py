"""The extremum families: Max (Max, ReduceMax, ArgMax) and its mirror Min (Min, ReduceMin,
ArgMin), as one parameter that every family-aware pass takes.

The two families share their ONNX history and their exactness rules; they differ in the
direction of the comparison and in the identity element, and in nothing else that a rewrite
may rely on. In particular `-x` is *not* a way to turn one into the other: it is not exact for
integers (the negation of INT_MIN wraps) and it swaps the sign of zero, so a rewrite must name
the family's own ops (`family.elementwise`, `family.beats`) instead of negating.

    from passes.extremum import FAMILY_OF, MAX, MIN
    family = FAMILY_OF[node.op_type]       # ReduceMin -> MIN
    b.op(family.beats, [x, y])             # Less for Min: True where x wins over y
    family.identity(DT.INT8)               # 127 for Min: what ReduceMin gives on an empty set
"""

from __future__ import annotations

import dataclasses

import numpy as np
import onnx_ir as ir

DT = ir.DataType
_FLOATS = frozenset({DT.FLOAT16, DT.BFLOAT16, DT.FLOAT, DT.DOUBLE})


@dataclasses.dataclass(frozen=True)
class Extremum:
    """One family. `beats` is the strict comparison under which x wins over y."""

    name: str  # "max" / "min": used in decomposition names and messages
    elementwise: str  # Max / Min
    reduce: str  # ReduceMax / ReduceMin
    arg: str  # ArgMax / ArgMin
    beats: str  # Greater / Less
    beats_or_equal: str  # GreaterOrEqual / LessOrEqual
    # +1 for Max, -1 for Min: the identity is the infinity (or bound) of the opposite sign.
    direction: int

    @property
    def ops(self) -> tuple[str, str, str]:
        return (self.elementwise, self.reduce, self.arg)

    def identity(self, dtype: DT) -> np.ndarray:
        """What the family's reduction gives on an empty set: for Max -inf, the type's minimum,
        False; for Min +inf, the type's maximum, True. Typed as `dtype` (a 0-d array)."""
        if dtype == DT.BOOL:
            return np.array(self.direction < 0)
        if dtype in _FLOATS:
            return np.array(-self.direction * np.inf, dtype=dtype.numpy())
        info = np.iinfo(dtype.numpy())
        return np.array(info.min if self.direction > 0 else info.max, dtype=dtype.numpy())

    def pick(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """numpy's elementwise family op, NaN-propagating (np.maximum / np.minimum)."""
        return np.maximum(x, y) if self.direction > 0 else np.minimum(x, y)


MAX = Extremum("max", "Max", "ReduceMax", "ArgMax", "Greater", "GreaterOrEqual", +1)
MIN = Extremum("min", "Min", "ReduceMin", "ArgMin", "Less", "LessOrEqual", -1)
FAMILIES: tuple[Extremum, ...] = (MAX, MIN)
# op_type -> its family, for every op of both families.
FAMILY_OF: dict[str, Extremum] = {op: f for f in FAMILIES for op in f.ops}
FAMILY_OPS: frozenset[str] = frozenset(FAMILY_OF)

__all__ = ["FAMILIES", "FAMILY_OF", "FAMILY_OPS", "MAX", "MIN", "Extremum"]
