"""The inputs a model accepts, read from the model, so that trials run without flags.

    accepted = accepts(model, specs)       # specs: maxlower.verify.inputs.input_specs
    accepted.ranges     {input: Bound}     integer inputs that address something: Gather's
                                           data on its axis, an embedding table, GatherND's
                                           and ScatterND's data dims (main graph and
                                           functions only: a branch may not run)
    accepted.same       {dim: its group}   dims that meet where the graph needs them equal
                                           (broadcasting, Expand, MatMul's inner dims, Concat)
    accepted.sizes      {dim: size}        sizes the graph needs (a dim that meets a static
                                           one; a Reshape to a constant shape)
    accepted.controls   {input: values}    constants the model compares an input with (Equal,
                                           Less, ... against a constant; an If's condition),
                                           so that each branch is taken by some trial
                                           (for Equal, also a value equal to none)

Indices are followed back to a graph input through ops that hand values on unchanged
(`PASS_THROUGH`: Cast, Identity, Reshape, Unsqueeze, Squeeze, Flatten, Expand, Transpose,
and local function calls); an input that several consumers address gets the intersection.
Sizes come from onnx's shape inference, run with every free input dim named by its key
(`x[0]` for an unnamed or -1 dim), and run again once the dims found equal share a name.

This only picks inputs: nothing here loosens a comparison, and a wrong pick skips a trial,
as an unlucky one did before.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Iterator

import numpy as np
import onnx_ir as ir

from passes.graph_utils import const_tensor, constant_ints, infer_shapes

# Ops that hand their first input's values on unchanged (reshaped, cast, repeated).
PASS_THROUGH = frozenset(
    {"Identity", "Cast", "CastLike", "Reshape", "Squeeze", "Unsqueeze", "Flatten", "Expand",
     "Transpose"}
)  # fmt: skip


@dataclasses.dataclass(frozen=True)
class IndexUse:
    """An op input holding indices into another input: `indices` and `data` are input
    positions. `addresses` says what bounds them: "axis" (the data's dim on the axis the
    attribute `axis` names), "leading" (the data's dims from `batch_dims` on, one per entry
    of the indices' last dim: GatherND, ScatterND) or "value" (the data input's value)."""

    indices: int
    data: int
    addresses: str


INDEX_USES = {
    "Gather": IndexUse(1, 0, "axis"),
    "GatherElements": IndexUse(1, 0, "axis"),
    "ScatterElements": IndexUse(1, 0, "axis"),
    "Scatter": IndexUse(1, 0, "axis"),
    "GatherND": IndexUse(1, 0, "leading"),
    "ScatterND": IndexUse(1, 0, "leading"),
}
# (OneHot is not here: an index outside [-depth, depth-1] is defined, a row of off_values,
# so its indices accept every value and a range would hide a rewrite wrong only there.)
# Ops whose inputs broadcast together (numpy rules), and comparisons with a constant.
BROADCASTING = frozenset(
    {"Add", "Sub", "Mul", "Div", "Pow", "Mod", "Max", "Min", "Sum", "Mean", "Equal", "Less",
     "Greater", "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor", "Where", "BitShift",
     "PRelu", "BitwiseAnd", "BitwiseOr", "BitwiseXor"}
)  # fmt: skip
COMPARISONS = frozenset({"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"})
MAX_CONTROLS = 16  # constants of at most this many elements are compared with
MAX_DERIVED_SIZE = 2**24  # a size the graph needs beyond this is not generated
_ROUNDS = 3  # shape inference runs, each with the dims found equal sharing a name

Bound = int | str  # the addressed size: a static size, or the key of a free dim


@dataclasses.dataclass
class Accepted:
    """What `accepts` found (see the module docstring)."""

    ranges: dict[str, list[Bound]] = dataclasses.field(default_factory=dict)
    same: dict[str, str] = dataclasses.field(default_factory=dict)
    sizes: dict[str, int] = dataclasses.field(default_factory=dict)
    controls: dict[str, list] = dataclasses.field(default_factory=dict)
    negative: bool = True  # whether negative indices count from the end (opset 11 on)
    # {input: (its value, the constants an Equal compares it with)}
    equalled: dict[str, tuple] = dataclasses.field(default_factory=dict, repr=False)

    def group(self, dim: str) -> str:
        return self.same.get(dim, dim)

    def index_range(self, name: str, sizes: dict[str, int]) -> tuple[int, int] | None:
        """[low, high) of the indices input `name` with the free dims at `sizes`."""
        bounds = [b if isinstance(b, int) else sizes.get(b) for b in self.ranges.get(name, [])]
        known = [b for b in bounds if b is not None and b > 0]
        if not known:
            return None
        n = min(known)
        return (-n if self.negative else 0), n


def accepts(model: ir.Model, free_dims: Iterable[str]) -> Accepted:
    """What the model accepts (module docstring); `free_dims`: the keys of the generated
    inputs' free dims (maxlower.verify.inputs.InputSpec)."""
    free = list(dict.fromkeys(free_dims))
    accepted = Accepted(negative=model.opset_imports.get("", 21) >= 11)
    model = model.clone()
    inputs = {v.name: v for v in model.graph.inputs}
    for value in inputs.values():  # every free dim named by its key, for inference to carry
        if value.shape is not None:
            value.shape = ir.Shape(
                [
                    d
                    if isinstance(d, int) and d >= 0
                    else (
                        d.value
                        if isinstance(d, ir.SymbolicDim) and d.value
                        else f"{value.name}[{i}]"
                    )
                    for i, d in enumerate(value.shape)
                ]
            )
    solver = _Sizes(free)
    for _ in range(_ROUNDS):
        infer_shapes(model)
        before = (dict(solver.parent), dict(solver.pinned))
        for node in _nodes(model):
            _shape_rules(node, solver)
        if (solver.parent, solver.pinned) == before:
            break
        for value in inputs.values():  # equal dims share their group's name, pinned are sizes
            if value.shape is not None:
                value.shape = ir.Shape([solver.named(d) for d in value.shape])
    accepted.same = {d: solver.find(d) for d in free if solver.find(d) != d}
    accepted.sizes = solver.solve()
    graph_inputs = {id(v): v for v in model.graph.inputs}
    for node in _nodes(model):
        _control_rule(node, model, graph_inputs, accepted)
    # Only ops that run on every input bound their indices: one in an If branch or a Loop
    # body may not run, and the input then accepts any value (a range would hide a rewrite
    # wrong only in the other branch).
    for node in [*model.graph, *(n for f in model.functions.values() for n in f)]:
        _index_rule(node, model, graph_inputs, accepted)
    for source, constants in accepted.equalled.values():
        _add_unequal(accepted, source, constants)
    return accepted


def _nodes(model: ir.Model) -> Iterator[ir.Node]:
    yield from ir.traversal.RecursiveGraphIterator(model.graph)
    for function in model.functions.values():
        yield from ir.traversal.RecursiveGraphIterator(function)


def graph_inputs_behind(
    model: ir.Model, value: ir.Value | None, through: Iterable[str] = PASS_THROUGH
) -> list[ir.Value]:
    """The graph inputs whose values reach `value` through ops in `through` (first input
    only) and local function calls."""
    through = frozenset(through)
    graph_inputs = {id(v) for v in model.graph.inputs}
    calls: dict[tuple[str, str, str], list[ir.Node]] = {}
    found: list[ir.Value] = []
    seen: set[int] = set()
    stack = [value]
    while stack:
        value = stack.pop()
        if value is None or id(value) in seen:
            continue
        seen.add(id(value))
        if id(value) in graph_inputs:
            found.append(value)
            continue
        producer = value.producer()
        if producer is not None:
            if producer.domain == "" and producer.op_type in through and producer.inputs:
                stack.append(producer.inputs[0])
            continue
        if not calls:
            for node in _nodes(model):
                calls.setdefault(node.op_identifier(), []).append(node)
        for function in model.functions.values():
            if value in function.inputs:
                position = list(function.inputs).index(value)
                for call in calls.get(function.identifier(), []):
                    if position < len(call.inputs):
                        stack.append(call.inputs[position])
    return found


# -- index ranges ---------------------------------------------------------------------------
def _index_rule(node: ir.Node, model, graph_inputs, accepted: Accepted) -> None:
    use = INDEX_USES.get(node.op_type) if node.domain == "" else None
    if use is None or max(use.indices, use.data) >= len(node.inputs):
        return
    indices, data = node.inputs[use.indices], node.inputs[use.data]
    if indices is None or data is None:
        return
    bounds: list[Bound] = []
    if use.addresses == "value":
        depth = constant_ints(data)
        bounds = [depth[0]] if depth and len(depth) == 1 else []
    elif data.shape is not None:
        rank = len(data.shape)
        if use.addresses == "axis":
            axis = node.attributes.get_int("axis", 0)
            if -rank <= axis < rank:
                bounds = [data.shape[axis]]
        elif (
            indices.shape is not None and len(indices.shape) and isinstance(indices.shape[-1], int)
        ):
            start = node.attributes.get_int("batch_dims", 0)
            bounds = list(data.shape[start : start + indices.shape[-1]])
    bounds = [b if isinstance(b, int) else b.value for b in bounds]
    if not bounds or any(b is None for b in bounds):
        return
    for source in graph_inputs_behind(model, indices):
        if source.dtype is not None and source.dtype.is_integer():
            accepted.ranges.setdefault(source.name, []).extend(bounds)


# -- control values -------------------------------------------------------------------------
def _control_rule(node: ir.Node, model, graph_inputs, accepted: Accepted) -> None:
    if node.domain != "":
        return
    if node.op_type == "If" and node.inputs and node.inputs[0] is not None:
        for source in graph_inputs_behind(model, node.inputs[0], {"Identity", "Cast", "Not"}):
            _add_controls(accepted, source, [False, True])
        return
    if node.op_type not in COMPARISONS or len(node.inputs) != 2:
        return
    for mine, other in (node.inputs, reversed(node.inputs)):
        tensor = const_tensor(other)
        if tensor is None or math.prod(tensor.shape) > MAX_CONTROLS or mine is None:
            continue
        constants = np.asarray(tensor.numpy()).reshape(-1)
        picked = []
        for c in constants.tolist():
            picked.append(c)
            if node.op_type != "Equal" and isinstance(c, int):
                picked += [c - 1, c + 1]
            elif node.op_type != "Equal" and isinstance(c, float) and math.isfinite(c):
                picked += [float(np.nextafter(c, -np.inf)), float(np.nextafter(c, np.inf))]
        for source in graph_inputs_behind(
            model, mine, {"Identity", "Cast", "Squeeze", "Unsqueeze", "Reshape", "Flatten"}
        ):
            _add_controls(accepted, source, picked)
            if node.op_type == "Equal":
                accepted.equalled.setdefault(source.name, (source, []))[1].extend(picked)


def _add_controls(accepted: Accepted, source: ir.Value, candidates: list) -> None:
    if source.dtype is None:
        return
    dtype = np.dtype(source.dtype.numpy())
    kept = accepted.controls.setdefault(source.name, [])
    for c in candidates:
        if dtype.kind in "iu":
            info = np.iinfo(dtype)
            if not (isinstance(c, int | bool) and info.min <= int(c) <= info.max):
                continue
        elif dtype.kind == "f" and not isinstance(c, int | float | bool):
            continue
        value = np.array(c).astype(dtype)
        if dtype.kind == "f" and float(value) != float(c):
            continue  # not representable: it would compare as another value
        if not any(np.array_equal(value, k) for k in kept):
            kept.append(value)


def _add_unequal(accepted: Accepted, source: ir.Value, constants: list) -> None:
    """A value of `source` that no Equal matches, unless one is there already: with only
    the constants, a branch taken when none is equal would never run in any trial."""
    kept = list(accepted.controls.get(source.name, []))
    dtype = np.dtype(source.dtype.numpy())
    equal = {np.asarray(c).astype(dtype).item() for c in constants if _fits(c, dtype)}
    values = [k.item() for k in kept]
    if not values or any(v not in equal for v in values):
        return  # (no controls: its values are drawn as any input's are)
    if dtype.kind == "b":
        candidates = [False, True]
    elif dtype.kind in "iu":
        info = np.iinfo(dtype)
        candidates = [v for v in (max(values) + 1, min(values) - 1) if info.min <= v <= info.max]
    else:
        finite = [v for v in values if math.isfinite(v)] or [0.0]
        candidates = [float(np.nextafter(max(finite), np.inf)), max(finite) + 1.0, 0.5]
    for candidate in (c for c in candidates if c not in equal):
        _add_controls(accepted, source, [candidate])  # (skips what the dtype cannot hold)
        if len(accepted.controls[source.name]) > len(kept):
            return


def _fits(constant, dtype: np.dtype) -> bool:
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return isinstance(constant, int | bool) and info.min <= int(constant) <= info.max
    return True


# -- sizes ----------------------------------------------------------------------------------
class _Sizes:
    """Free dims found equal (union-find), sizes they must have, and Reshape products."""

    def __init__(self, free: list[str]) -> None:
        self.free = set(free)
        self.order = {d: i for i, d in enumerate(free)}
        self.parent: dict[str, str] = {}
        self.pinned: dict[str, int] = {}
        self.products: list[tuple[list[str], int]] = []

    def find(self, dim: str) -> str:
        while dim in self.parent:
            dim = self.parent[dim]
        return dim

    def key(self, dim) -> str | int | None:
        """A dim of an inferred shape as a free dim's group or a size; None if unknown."""
        if isinstance(dim, int):
            return dim if dim >= 0 else None
        name = dim.value if isinstance(dim, ir.SymbolicDim) else dim
        if name not in self.free:
            return None
        group = self.find(name)
        return self.pinned.get(group, group)

    def named(self, dim):
        key = self.key(dim)
        return dim if key is None else key

    def meet(self, dims: list) -> None:
        """Dims that broadcast together: the free ones equal, and equal to a static size
        above 1 if one is there."""
        keys = [self.key(d) for d in dims]
        groups = [k for k in keys if isinstance(k, str)]
        sizes = {k for k in keys if isinstance(k, int) and k != 1}
        for other in groups[1:]:
            self.union(groups[0], other)
        if groups and len(sizes) == 1:
            self.pin(groups[0], sizes.pop())

    def equal(self, a, b) -> None:
        """Two dims that must be equal (1 is no wildcard here)."""
        keys = [self.key(a), self.key(b)]
        groups = [k for k in keys if isinstance(k, str)]
        sizes = [k for k in keys if isinstance(k, int)]
        if len(groups) == 2:
            self.union(*groups)
        elif groups and sizes:
            self.pin(groups[0], sizes[0])

    def union(self, a: str, b: str) -> None:
        a, b = self.find(a), self.find(b)
        if a == b:
            return
        first, second = sorted((a, b), key=lambda d: self.order.get(d, len(self.order)))
        self.parent[second] = first
        if second in self.pinned:
            self.pinned.setdefault(first, self.pinned.pop(second))

    def pin(self, dim: str, size: int) -> None:
        if 0 <= size <= MAX_DERIVED_SIZE:
            self.pinned.setdefault(self.find(dim), size)

    def product(self, dims: list, target: int) -> None:
        """dims' product must be `target` (a Reshape to a constant shape)."""
        rest, free = target, []
        for d in dims:
            key = self.key(d)
            if key is None:
                return
            if isinstance(key, int):
                if key == 0 or rest % key:
                    return
                rest //= key
            else:
                free.append(key)
        if free:
            self.products.append((free, rest))

    def solve(self) -> dict[str, int]:
        """{free dim: size} for every dim with a size: pins, then Reshape products (the
        last free dim of one takes what the others leave; the others are 1)."""
        pinned = dict(self.pinned)
        changed = True
        while changed:
            changed = False
            for dims, target in self.products:
                groups = [self.find(d) for d in dims]
                rest, open_ = target, []
                for g in groups:
                    if g in pinned:
                        if pinned[g] == 0 or rest % pinned[g]:
                            rest = None
                            break
                        rest //= pinned[g]
                    else:
                        open_.append(g)
                if rest is None or not open_:
                    continue
                distinct = list(dict.fromkeys(open_))
                if len(distinct) == 1 and open_.count(distinct[0]) == 1:
                    if rest <= MAX_DERIVED_SIZE:
                        pinned[distinct[0]] = rest
                        changed = True
                elif len(distinct) > 1 and open_.count(distinct[-1]) == 1:
                    for g in distinct[:-1]:
                        pinned[g] = 1
                    changed = True
        return {d: pinned[self.find(d)] for d in self.free if self.find(d) in pinned}


def _shape_rules(node: ir.Node, sizes: _Sizes) -> None:
    if node.domain != "":
        return
    shapes = [None if v is None or v.shape is None else list(v.shape) for v in node.inputs]
    op = node.op_type
    if op in BROADCASTING:
        known = [s for s in shapes if s is not None]
        if len(known) >= 2:
            _broadcast(sizes, known)
    elif op == "Expand" and len(shapes) == 2 and shapes[0] is not None:
        target = constant_ints(node.inputs[1])
        if target is not None:
            _broadcast(sizes, [shapes[0], target])
    elif op == "MatMul" and len(shapes) == 2 and None not in shapes:
        a, b = shapes
        if a and b:
            sizes.equal(a[-1], b[-2] if len(b) >= 2 else b[0])
            if len(a) > 2 and len(b) > 2:
                _broadcast(sizes, [a[:-2], b[:-2]])
    elif op == "Gemm" and len(shapes) >= 2 and None not in shapes[:2]:
        a, b = shapes[:2]
        if len(a) == 2 and len(b) == 2:
            k_a = a[0] if node.attributes.get_int("transA", 0) else a[1]
            k_b = b[1] if node.attributes.get_int("transB", 0) else b[0]
            sizes.equal(k_a, k_b)
    elif op == "Concat":
        known = [s for s in shapes if s is not None]
        if known and all(len(s) == len(known[0]) for s in known):
            rank = len(known[0])
            axis = node.attributes.get_int("axis", 0)
            for i in range(rank):
                if rank and i != axis % rank:
                    for s in known[1:]:
                        sizes.equal(known[0][i], s[i])
    elif op == "Conv" and len(shapes) >= 2 and None not in shapes[:2]:
        x, w = shapes[:2]
        if len(x) >= 2 and len(w) >= 2 and isinstance(w[1], int):
            sizes.equal(x[1], w[1] * node.attributes.get_int("group", 1))
    elif op == "Reshape" and len(shapes) == 2 and shapes[0] is not None:
        target = constant_ints(node.inputs[1])
        allowzero = node.attributes.get_int("allowzero", 0)
        if target is None or -1 in target or (0 in target and allowzero):
            return
        if 0 in target:
            if len(target) > len(shapes[0]):
                return
            kept = [shapes[0][i] for i, t in enumerate(target) if t == 0]
            sizes_left = [shapes[0][i] for i in range(len(shapes[0]))]
            for k in kept:  # a 0 copies the input's dim: it cancels out
                sizes_left.remove(k)
            sizes.product(sizes_left, math.prod(t for t in target if t != 0))
        else:
            sizes.product(shapes[0], math.prod(target))


def _broadcast(sizes: _Sizes, shapes: list[list]) -> None:
    rank = max(len(s) for s in shapes)
    for i in range(1, rank + 1):
        sizes.meet([s[-i] for s in shapes if len(s) >= i])


# -- why a trial was skipped, and the flag that fixes it ---------------------------------------
# (error text of onnxruntime or onnx.reference, what it means, the flag that fixes it)
_SKIP_CLASSES = (
    (r"out of (data )?bounds|out of range|index .* is out of|indices element", "indices"),
    (r"reshape|ReshapeHelper", "reshape"),
    (r"broadcast|Incompatible dimensions|expand shape|BroadcastIterator", "broadcast"),
)


def skip_reason(error: str, trial) -> str:
    """A skipped trial's reason: the class of the runtime's error and the flag that would
    fix it, then the error itself."""
    import re

    kind = next((k for pattern, k in _SKIP_CLASSES if re.search(pattern, error, re.I)), None)
    at = " ".join(f"{d}={s}" for d, s in trial.sizes.items())
    dims = " ".join(f"--dim {d}=SIZE" for d in list(trial.sizes)[:3]) or "--dim NAME=SIZE"
    shapes = " ".join(
        f"{name}:{','.join(f'D{i + 1}' for i in range(np.ndim(v)))}"
        for name, v in list(trial.feeds.items())[:2]
    )
    fix = f"{at and f'at {at}'}: give {dims} or --input-shapes {shapes}"
    if kind == "indices":
        names = [n for n, v in trial.feeds.items() if np.asarray(v).dtype.kind in "iu"]
        bounds = re.search(r"inclusive range \[(-?\d+),\s*(-?\d+)\]", error)
        span = f"{bounds[1]}:{int(bounds[2]) + 1}" if bounds else "LOW:HIGH"
        flag = f"--range {names[0] if names else 'NAME'}={span}"
        hint = f"indices out of range: give {flag}"
    elif kind == "reshape":
        hint = f"a Reshape rejects the sizes {fix}"
    elif kind == "broadcast":
        hint = f"shapes do not broadcast {fix}"
    else:
        hint = "give inputs it accepts with --inputs, --range, --dim or --input-shapes"
    return f"{hint}; {error}"
