"""The order-type abstraction: graphs that only compare, select and move their data.

A graph built of Max/Min, ReduceMax/ReduceMin, ArgMax/ArgMin, the comparisons, IsNaN,
Where (and Neg for floats, below), the ops that move elements (Slice, Concat, Reshape...)
and Boolean logic computes, from data of one type, results that depend only on the *order
type* of the data: which elements are NaN, which are equal, which is less. Each of those
ops commutes with every strictly increasing map φ of the values that keeps NaN, -inf and
+inf (for an integer type: its minimum and maximum), since those are the only data
constants the graph may hold (the empty reduction's identity, padding): op(φ(x)) =
φ(op(x)) for the data results, op(φ(x)) = op(x) for the indices and Booleans. So for two
such graphs G and H and any input x, take its ranks r in a small ordered domain and a φ
with φ(r) = x: G(x) = φ(G(r)) and H(x) = φ(H(r)). Equal on every r, they are equal on
every x.

The domain is a bit-vector of w bits. For a float type it is signed and symmetric, so that
Neg (order-reversing) is in the fragment too: the ranks stand for an *odd* φ (φ(-r) =
-φ(r)), which exists for every input because ranks ±1..±(2^(w-1) - 2) hold its distinct
finite nonzero magnitudes (2^(w-1) - 2 >= the number of data elements); 0 is the zero
(-0.0 and +0.0 are one value: the abstraction holds under the comparison policy that
counts them equal, and is not used under --signed-zeros), ±(2^(w-1) - 1) are ±inf, and
-2^(w-1), its own negation, is NaN. For an integer type it is unsigned, 0 is the minimum
and 2^w - 1 the maximum (2^w - 2 >= the number of data elements), and Neg is outside (it
wraps at the minimum). Indices, shapes and Booleans keep their exact semantics.

`order_equal` runs both graphs in this domain (the interpreter, with the element steps
that read data replaced) and asks the solver whether an r separates them: no, they are
proved for every input of the type at these shapes; an op outside the fragment (anything
that reads a data value otherwise: Add, Cast to another type, a data constant that is not
an extreme...) gives None, and the full-precision proof decides. A separating r proves
nothing about the real type (an r need not be the ranks of a value of it): None too.
"""

from __future__ import annotations

import dataclasses
import itertools
import time

import numpy as np
import onnx
import z3
from onnx import TensorProto as TP

from maxlower.prove import solving
from maxlower.prove.semantics import (
    FLOAT_SORTS,
    Interpreter,
    NeedsValue,
    OutsideFragment,
    Tensor,
    constant_term,
    elementwise,
    greater,
    identity_of,
)

# The ops that may read an order-abstracted tensor, and at which input positions (None:
# every position). Each only compares, selects or moves its data elements.
ORDER_OPS: dict[str, tuple[int, ...] | None] = {
    "Max": None,
    "Min": None,
    "Where": None,
    "Equal": None,
    "Greater": None,
    "Less": None,
    "GreaterOrEqual": None,
    "LessOrEqual": None,
    "IsNaN": None,
    "Identity": None,
    "Concat": None,
    "Cast": None,  # to its own type only (checked in `cast`)
    "ReduceMax": (0,),
    "ReduceMin": (0,),
    "ArgMax": (0,),
    "ArgMin": (0,),
    "Slice": (0,),
    "Squeeze": (0,),
    "Unsqueeze": (0,),
    "Reshape": (0,),
    "Expand": (0,),
    "Tile": (0,),
    "Transpose": (0,),
    "Gather": (0,),
    "Shape": (0,),
    "Size": (0,),
    # a subgraph's nodes are checked as they run; the trip count and the condition are
    # read by `ints` and as Booleans, so a rank there is refused
    "Loop": None,
    "If": None,
    "Neg": None,  # floats only (checked in op_Neg)
}
# Integer types of `semantics` whose comparisons, on bit-vectors of any width, are the
# signed (float ranks) or unsigned (integer ranks) ones
SIGNED, UNSIGNED = TP.INT64, TP.UINT64


class NotOrderInvariant(OutsideFragment):
    pass


class OrderInterpreter(Interpreter):
    """The interpreter with the data of type `dtype` abstracted to ranks of `width` bits."""

    def __init__(self, dtype: int, width: int) -> None:
        super().__init__()
        self.dtype, self.width = dtype, width
        self.sort = z3.BitVecSort(width)
        self.floats = dtype in FLOAT_SORTS
        if self.floats:  # signed, symmetric: Neg is the ranks' negation (NaN is its own)
            half = 1 << (width - 1)
            self.nan_value = z3.BitVecVal(half, width)  # -2^(w-1)
            self.low, self.high = z3.BitVecVal(half + 1, width), z3.BitVecVal(half - 1, width)
            self.order = SIGNED
        else:
            self.nan_value = None
            self.low, self.high = z3.BitVecVal(0, width), z3.BitVecVal((1 << width) - 1, width)
            self.order = UNSIGNED

    def abstract(self, term) -> bool:
        return isinstance(term, z3.ExprRef) and term.sort() == self.sort

    def to_rank(self, term) -> z3.ExprRef:
        """A data element in the domain: a concrete extreme (or NaN) is its rank."""
        if self.abstract(term):
            return term
        value = z3.simplify(term)
        extremes = [
            (identity_of(self.dtype, +1), self.low),
            (identity_of(self.dtype, -1), self.high),
        ]
        if self.floats and z3.is_true(z3.simplify(z3.fpIsNaN(value))):
            return self.nan_value
        for number, rank in extremes:
            if z3.is_true(z3.simplify(value == constant_term(self.dtype, number))):
                return rank
        raise NotOrderInvariant("a data constant other than NaN and the extremes")

    def node(self, node, env):
        positions = ORDER_OPS.get(node.op_type, ())
        for k, name in enumerate(node.input):
            if not name or (positions is None or k in positions):
                continue
            if any(self.abstract(t) for t in env[name].arr.reshape(-1)):
                raise NotOrderInvariant(f"{node.op_type} reads a data value at input {k}")
        return super().node(node, env)

    def ints(self, tensor, domain, why):
        if tensor is not None and any(self.abstract(t) for t in tensor.arr.reshape(-1)):
            raise NotOrderInvariant(f"{why} computed from the data")
        return super().ints(tensor, domain, why)

    # -- the element steps that read data ----------------------------------------------
    def _mixed(self, dtype, *terms) -> bool:
        return dtype == self.dtype and any(self.abstract(t) for t in terms)

    def not_nan(self, x) -> z3.BoolRef:
        return x != self.nan_value if self.floats else z3.BoolVal(True)

    def compare(self, fn, dtype, a, b):
        if not self._mixed(dtype, a, b):
            return super().compare(fn, dtype, a, b)
        x, y = self.to_rank(a), self.to_rank(b)
        # every ONNX comparison is false when an operand is NaN
        return z3.And(self.not_nan(x), self.not_nan(y), fn(self.order, x, y))

    def nan(self, dtype, a):
        if not self._mixed(dtype, a):
            return super().nan(dtype, a)
        return z3.Not(self.not_nan(a))

    def pick(self, dtype, direction, a, b):
        if not self._mixed(dtype, a, b):
            return super().pick(dtype, direction, a, b)
        x, y = self.to_rank(a), self.to_rank(b)
        first, second = (x, y) if direction > 0 else (y, x)
        # NaN propagates; a tie keeps either, which are one value here
        wins = greater(self.order, first, second)
        ahead = z3.And(self.not_nan(first), self.not_nan(second), wins)
        return z3.If(z3.Or(z3.Not(self.not_nan(x)), ahead), x, y)

    def select(self, dtype, c, a, b):
        if not self._mixed(dtype, a, b):
            return super().select(dtype, c, a, b)
        return z3.If(c, self.to_rank(a), self.to_rank(b))

    def op_Neg(self, args, attrs, env):
        """-x of a float: -φ(r) = φ(-r) for the odd φ the ranks stand for (see the module
        docstring); NaN, ±inf and ±0 map as they should. Integers wrap at the minimum: not
        in the fragment."""
        x = args[0]
        if not any(self.abstract(t) for t in x.arr.reshape(-1)):
            return super().op_Neg(args, attrs, env)
        if not self.floats or x.dtype != self.dtype:
            raise NotOrderInvariant("Neg of integer data")
        return Tensor(x.dtype, elementwise(lambda t: -self.to_rank(t), x.arr))

    def cast(self, src, dst, x):
        if self.abstract(x):
            if src != dst:
                raise NotOrderInvariant(f"Cast of the data to {TP.DataType.Name(dst)}")
            return x
        return super().cast(src, dst, x)


def width_for(dtype: int, count: int) -> int:
    """Bits for `count` distinct finite values besides the extremes (and NaN), at a width
    that no ONNX integer type has, so a rank is never mistaken for an integer."""
    if dtype in FLOAT_SORTS:  # ±1..±(2^(w-1) - 2) for the magnitudes: count of them
        width = int(count + 2).bit_length() + 1
    else:
        width = max(2, int(count + 1).bit_length())
    while width in (8, 16, 32, 64):
        width += 1
    return width


def order_equal(
    before: onnx.ModelProto,
    after: onnx.ModelProto,
    dtype: int,
    timeout: float,
    max_dim: int = 4,
) -> bool | None:
    """True when the two graphs are equal for every input of `dtype` (±0 counted equal,
    NaN equal to NaN) by the order-type argument, at every binding of their symbolic dims
    to 0..`max_dim` (as `prove`); None when it does not apply or decides nothing."""
    from maxlower.prove.core import dim_names_of, signature_of

    if dtype == TP.BOOL:
        return None
    deadline = time.perf_counter() + timeout
    try:
        signature = signature_of(before, after)
    except OutsideFragment:
        return None
    if any(s.dtype not in (dtype, TP.BOOL) for s in signature):
        return None
    names = dim_names_of(signature)
    defined = False
    for sizes in itertools.product(range(max_dim + 1), repeat=len(names)):
        verdict = _binding_equal(before, after, dtype, signature, dict(zip(names, sizes)))
        if verdict == "undefined":
            continue
        if verdict is None:
            return None
        defined = True
        remaining = deadline - time.perf_counter()
        if remaining <= 0 or not _unsat(verdict, remaining):
            return None
    # a reference defined at no binding proves nothing (as maxlower.prove.core.prove)
    return True if defined else None


def _binding_equal(before, after, dtype, signature, binding):
    """The solver's query at one binding ((reference run, candidate run, differences)),
    "undefined" when the reference is undefined there for every input (ArgMax over an
    empty axis), or None when the abstraction does not apply."""
    inputs = _rank_inputs(signature, binding, dtype)
    runs = []
    try:
        for side, model in (("reference", before), ("candidate", after)):
            interpreter = OrderInterpreter(dtype, inputs.width)
            try:
                runs.append((interpreter, interpreter.interpret(model, inputs.tensors)))
            except OutsideFragment as error:
                if side == "reference" and "empty axis" in str(error):
                    return "undefined"
                raise
        differs = _differences(runs)
    except (NotOrderInvariant, NeedsValue, OutsideFragment, ValueError, IndexError, KeyError):
        return None
    except z3.Z3Exception:  # a rank met a term of another sort: outside the fragment
        return None
    if differs is None:
        return None
    return runs[0][1], runs[1][1], differs


def _unsat(query, seconds: float) -> bool:
    ref, cand, differs = query
    solver = z3.Solver()
    # only the reference's errors free the query: an undefined value frees its elements
    # alone (maxlower.prove.core._differences), never the whole run; the candidate's are
    # all kept, the stricter side
    solver.add(*ref.errors)
    undefined = z3.Not(z3.And(*cand.defined)) if cand.defined else z3.BoolVal(False)
    solver.add(z3.Or(undefined, *differs))
    return solving.check(solver, seconds).status == "unsat"


@dataclasses.dataclass
class _Inputs:
    tensors: dict[str, Tensor]
    width: int


def _rank_inputs(signature, binding, dtype) -> _Inputs:
    """Rank variables for the data inputs, exact ones for the Boolean inputs."""
    from maxlower.prove.core import symbolic_inputs, value_shape

    data = [s for s in signature if s.dtype == dtype]
    count = sum(int(np.prod(value_shape(s, binding), dtype=np.int64)) for s in data)
    width = width_for(dtype, count)
    flags = [s for s in signature if s.dtype == TP.BOOL]
    tensors, _ = symbolic_inputs(flags, binding, {})
    for s in data:
        shape = value_shape(s, binding)
        cells = [z3.BitVec(f"{s.name}[{i}]", width) for i in range(int(np.prod(shape)))]
        arr = np.empty(len(cells), dtype=object)
        arr[:] = cells
        tensors[s.name] = Tensor(dtype, arr.reshape(shape))
    return _Inputs(tensors, width)


def _differences(runs) -> list | None:
    """The conditions under which an output differs, compared in the domain (a concrete
    data element, the identity of an empty reduction say, as its rank)."""
    from maxlower.prove.core import Policy, same_under_policy

    (ia, ra), (ib, rb) = runs
    if len(ra.outputs) != len(rb.outputs):
        return None
    differs = []
    for x, y in zip(ra.outputs, rb.outputs):
        if x.shape != y.shape or x.dtype != y.dtype:
            return None
        for p, q in zip(x.arr.reshape(-1), y.arr.reshape(-1)):
            if ia.abstract(p) or ib.abstract(q):
                differs.append(ia.to_rank(p) != ib.to_rank(q))
            else:
                differs.append(z3.Not(same_under_policy(x.dtype, p, q, Policy())))
    return differs


__all__ = ["ORDER_OPS", "OrderInterpreter", "order_equal", "width_for"]
