"""The compositional argument for max-only graphs: each output element is the max of a set.

max (and min) is a semilattice: associative, commutative and idempotent, with NaN
absorbing (it propagates) and the family's identity (-inf, the type's minimum, False) as
the max of the empty set. A graph built only from the family's elementwise op and
reduction (Or for bool Max, And for bool Min) and ops that move elements (Slice, Concat,
Squeeze, Unsqueeze, Reshape, Expand, Tile, Transpose, Gather at constant indices,
Identity) therefore computes, in each output element, the max of a *set* of input
elements, whatever the order and the grouping. Two such graphs are equal for every input,
with -0.0 and +0.0 counted equal (a tie between them may go either way), exactly when
those sets are equal: where they differ, an element in one set and not the other set to
the top value (+inf or the type's maximum) and the rest to the bottom shows it.

`semilattice_equal(a, b)` runs both graphs in this set domain (the interpreter's
structural ops, on numpy arrays of frozensets) and compares the sets: True or False, or
None when a graph is not max-only (then the SMT proof decides). It needs no solver, and
scales to n = 4096 and beyond.
"""

from __future__ import annotations

import numpy as np
import onnx
import z3
from onnx import TensorProto as TP

from maxlower.prove import budget as budgets
from maxlower.prove.semantics import (
    Interpreter,
    NeedsValue,
    OutsideFragment,
    Tensor,
    constant_term,
    elementwise,
    identity_of,
)

MOVES = frozenset(
    {
        "Identity",
        "Slice",
        "Concat",
        "Squeeze",
        "Unsqueeze",
        "Reshape",
        "Expand",
        "Tile",
        "Transpose",
        "Gather",
        "Constant",
        "Shape",
        "Size",
    }
)
FAMILY_OPS = {+1: {"Max", "ReduceMax"}, -1: {"Min", "ReduceMin"}}
BOOL_OPS = {+1: "Or", -1: "And"}


class NotMaxOnly(Exception):
    pass


class SetInterpreter(Interpreter):
    """The interpreter in the set domain: a data element is a frozenset of input positions;
    integer tensors (axes, shapes) stay concrete terms."""

    def __init__(self, dtype: int) -> None:
        super().__init__()
        self.dtype = dtype
        self.direction: int | None = None

    def node(self, node, env):
        family = next((d for d, ops in FAMILY_OPS.items() if node.op_type in ops), None)
        if node.op_type == BOOL_OPS.get(+1) and self.dtype == TP.BOOL:
            family = +1
        elif node.op_type == BOOL_OPS.get(-1) and self.dtype == TP.BOOL:
            family = -1
        if family is None and node.op_type not in MOVES:
            raise NotMaxOnly(node.op_type)
        if family is not None:
            if self.direction not in (None, family):
                raise NotMaxOnly("both families")
            self.direction = family
        return super().node(node, env)

    def _as_set(self, item):
        if isinstance(item, frozenset):
            return item
        if self.direction is None:
            raise NotMaxOnly("a constant before the family is known")
        identity = constant_term(self.dtype, identity_of(self.dtype, self.direction))
        if z3.is_true(z3.simplify(item == identity)):
            return frozenset()
        raise NotMaxOnly("a data constant other than the identity")

    def _union(self, a, b):
        return self._as_set(a) | self._as_set(b)

    def _family(self, args, direction):
        out = args[0].arr
        for other in args[1:]:
            out = elementwise(self._union, out, other.arr)
        return Tensor(args[0].dtype, out.copy())

    def op_Or(self, args, attrs, env):
        return Tensor(TP.BOOL, elementwise(self._union, args[0].arr, args[1].arr))

    op_And = op_Or

    def _fold(self, dtype, row, direction, op):
        out: frozenset = frozenset()
        for item in row:
            out |= self._as_set(item)
        return out


def _sets(model: onnx.ModelProto, dtype: int):
    inputs = {}
    for value in model.graph.input:
        t = value.type.tensor_type
        shape = tuple(d.dim_value for d in t.shape.dim)
        if t.elem_type != dtype or any(not d.HasField("dim_value") for d in t.shape.dim):
            raise NotMaxOnly("an input of another type, or of a symbolic shape")
        count = int(np.prod(shape, dtype=object))
        budgets.current().elements(count, f"input {value.name!r} of shape {list(shape)}")
        cells = [frozenset({(value.name, i)}) for i in range(count)]
        arr = np.empty(len(cells), dtype=object)
        arr[:] = cells
        inputs[value.name] = Tensor(dtype, arr.reshape(shape))
    interpreter = SetInterpreter(dtype)
    run = interpreter.interpret(model, inputs)
    return run.outputs, interpreter


def semilattice_equal(a: onnx.ModelProto, b: onnx.ModelProto) -> bool | None:
    """Whether two max-only graphs are equal (±0 counted equal); None when either is not
    max-only, or they differ in their inputs' types."""
    dtypes = {v.type.tensor_type.elem_type for m in (a, b) for v in m.graph.input}
    if len(dtypes) != 1:
        return None
    dtype = dtypes.pop()
    try:
        (out_a, ia), (out_b, ib) = _sets(a, dtype), _sets(b, dtype)
        if ia.direction != ib.direction and None not in (ia.direction, ib.direction):
            return None
        direction = ia.direction or ib.direction
        if direction is None:
            return None
        ia.direction = ib.direction = direction
        if len(out_a) != len(out_b):
            return False
        for x, y in zip(out_a, out_b):
            if x.shape != y.shape or x.dtype != y.dtype:
                return False
            for p, q in zip(x.arr.reshape(-1), y.arr.reshape(-1)):
                if ia._as_set(p) != ib._as_set(q):
                    return False
        return True
    except (NotMaxOnly, NeedsValue, OutsideFragment, ValueError, IndexError, KeyError):
        return None
    except (z3.Z3Exception, TypeError, AttributeError):  # a set where a number is read
        return None


def semilattice_witness(a: onnx.ModelProto, b: onnx.ModelProto) -> dict[str, np.ndarray] | None:
    """Inputs on which two max-only graphs differ, when their sets differ (None when they
    do not, or a graph is not max-only): the first input element in one output element's
    set and not the other's at the top value (+inf, the type's maximum, True; the bottom
    for the Min family), every other element at the family's identity."""
    dtypes = {v.type.tensor_type.elem_type for m in (a, b) for v in m.graph.input}
    if len(dtypes) != 1 or semilattice_equal(a, b) is not False:
        return None
    dtype = dtypes.pop()
    (out_a, ia), (out_b, ib) = _sets(a, dtype), _sets(b, dtype)
    direction = ia.direction or ib.direction or +1
    ia.direction = ib.direction = direction
    odd = None
    for x, y in zip(out_a, out_b):
        for p, q in zip(x.arr.reshape(-1), y.arr.reshape(-1)):
            apart = ia._as_set(p) ^ ib._as_set(q)
            if apart:
                odd = min(apart)
                break
        if odd is not None:
            break
    if odd is None:
        return None
    np_dtype = onnx.helper.tensor_dtype_to_np_dtype(dtype)
    inputs = {}
    for value in a.graph.input:
        shape = tuple(d.dim_value for d in value.type.tensor_type.shape.dim)
        inputs[value.name] = np.full(shape, identity_of(dtype, direction), dtype=np_dtype)
    name, index = odd
    inputs[name].reshape(-1)[index] = identity_of(dtype, -direction)
    return inputs


__all__ = ["semilattice_equal", "semilattice_witness"]
