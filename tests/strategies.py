"""Hypothesis strategies for random valid models of the Max and Min families, and the cases
the fuzz suite runs on them (tests/test_fuzz_pipeline.py).

    family_models()   a model that passes onnx.checker (full check): 1-4 steps, each a
                      Max / ReduceMax / ArgMax node or a Min twin (`ops` narrows the
                      choice), an If whose branches hold family nodes,
                      a Loop whose body does, or a call of a model-local function whose
                      body does; subgraphs nest two deep
    fuzz_cases()      a model, a target opset and a lowering profile (or none)

What varies: the source opset (1 to the latest; below 7 only onnx.reference runs it); the
element type (any the op's schema takes at that opset, bfloat16 included); shapes of rank
0-3 with static dims 0-3 and the symbolic dims N and M (which the verifier sizes 0-3);
Max's input count and numpy broadcasting (from opset 8); ReduceMax's axes (absent, empty,
negative from opset 11, as an attribute, or from opset 18 as an initializer, a Constant
node or a graph input), keepdims and noop_with_empty_axes; ArgMax's axis (negative from
11), keepdims and select_last_index (from 12); a Loop's trip count, 0 included. The Min
twins vary alike (the same builders, given the op).

The models are built with onnx.helper; test_strategy_models_pass_the_full_checker
(tests/test_fuzz_pipeline.py) checks them, so a mistake in this module shows up there and
not as a finding about maxlower.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools

import onnx
from hypothesis import strategies as st
from onnx import TensorProto, helper

from passes.builder import min_ir_version
from passes.extremum import FAMILIES, FAMILY_OF

LATEST = onnx.defs.onnx_opset_version()
FAMILY = tuple(op for family in FAMILIES for op in family.ops)  # Max, ..., ArgMin
PROFILES = ("primitives", "onnxruntime", "tensorrt", "webnn", "no-argmax")
FUNCTION_DOMAIN = "fuzz.local"
SYMBOLS = ("N", "M")
MAX_DEPTH = 2  # subgraphs inside subgraphs, not deeper

_TYPES = {
    f"tensor({name})": getattr(TensorProto, name.upper())
    for name in (
        "float16",
        "float",
        "double",
        "bfloat16",
        "bool",
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "uint16",
        "uint32",
        "uint64",
    )
}


@functools.cache
def accepted_types(op: str, opset: int, param: str = "T") -> list[int]:
    """The element types of the schema's `param` at `opset`, in a fixed order."""
    schema = onnx.defs.get_schema(op, opset, "")
    allowed = next(
        c.allowed_type_strs for c in schema.type_constraints if c.type_param_str == param
    )
    return [t for s, t in _TYPES.items() if s in allowed]


Dim = int | str | None  # static, symbolic, unknown


@dataclasses.dataclass(frozen=True)
class Value:
    name: str
    elem: int
    dims: tuple[Dim, ...] | None  # None: rank unknown


@dataclasses.dataclass
class Program:
    """The model being drawn: main-graph inputs, initializers and functions, shared by every
    scope; `Scope` holds one graph's (or function body's) nodes."""

    draw: st.DrawFn
    opset: int
    ops: tuple[str, ...] = FAMILY  # the family ops that nodes are drawn from
    inputs: list[onnx.ValueInfoProto] = dataclasses.field(default_factory=list)
    initializers: list[onnx.TensorProto] = dataclasses.field(default_factory=list)
    functions: list[onnx.FunctionProto] = dataclasses.field(default_factory=list)
    counter: itertools.count = dataclasses.field(default_factory=itertools.count)

    def name(self, prefix: str) -> str:
        return f"{prefix}{next(self.counter)}"

    def new_input(self, elem: int, dims: tuple[Dim, ...], prefix: str = "x") -> Value:
        value = Value(self.name(prefix), elem, dims)
        self.inputs.append(helper.make_tensor_value_info(value.name, elem, list(dims)))
        return value


@dataclasses.dataclass
class Scope:
    program: Program
    values: list[Value]  # what nodes here may read (outer scopes included)
    depth: int = 0
    in_function: bool = False
    nodes: list[onnx.NodeProto] = dataclasses.field(default_factory=list)
    initializers: list[onnx.TensorProto] = dataclasses.field(default_factory=list)
    made: list[Value] = dataclasses.field(default_factory=list)

    @property
    def draw(self) -> st.DrawFn:
        return self.program.draw

    @property
    def opset(self) -> int:
        return self.program.opset

    def add(self, op: str, inputs: list[str], out: Value, **attrs) -> Value:
        self.nodes.append(
            helper.make_node(op, inputs, [out.name], name=f"{op.lower()}_{out.name}", **attrs)
        )
        self.values.append(out)
        self.made.append(out)
        return out

    def output(self, elem: int, dims: tuple[Dim, ...] | None, prefix: str = "v") -> Value:
        return Value(self.program.name(prefix), elem, dims)


# --- dims ---------------------------------------------------------------------------------


def draw_dims(draw, rank: int) -> tuple[Dim, ...]:
    return tuple(draw(st.sampled_from([1, 2, 3, 0, *SYMBOLS])) for _ in range(rank))


def broadcast(a: tuple[Dim, ...], b: tuple[Dim, ...]) -> tuple[Dim, ...] | None:
    """numpy broadcasting of two known shapes, or None when it may fail at run time."""
    result = []
    for x, y in itertools.zip_longest(reversed(a), reversed(b), fillvalue=1):
        if x == 1:
            result.append(y)
        elif y == 1 or x == y:
            result.append(x)
        else:
            return None
    return tuple(reversed(result))


def broadcastable_to(draw, dims: tuple[Dim, ...]) -> tuple[Dim, ...]:
    """A shape that broadcasts to `dims` without changing it: trailing dims, some set to 1."""
    kept = dims[draw(st.integers(0, len(dims))) :]
    return tuple(draw(st.sampled_from([d, 1])) for d in kept)


# --- family nodes -------------------------------------------------------------------------


def add_family_node(scope: Scope, source: Value | None = None, *, keep_rank=False) -> Value | None:
    """One node of either family (Max, ReduceMax, ArgMax or a Min twin) reading `source` (or
    a value drawn from the scope); None if no op takes any value there. `keep_rank` keeps
    the output's rank (and known dims where the op keeps them): reductions and arg ops with
    keepdims=1."""
    draw = scope.draw
    candidates = [v for v in scope.values if source is None or v is source]
    choices = []
    for op in scope.program.ops:
        types = accepted_types(op, scope.opset)
        usable = [v for v in candidates if v.elem in types and _usable(op, v)]
        if usable:
            choices.append((op, usable))
    if not choices:
        return None
    op, usable = draw(st.sampled_from(choices))
    value = draw(st.sampled_from(usable))
    family = FAMILY_OF[op]
    make = {family.elementwise: _max, family.reduce: _reduce_max, family.arg: _arg_max}[op]
    return make(scope, op, value, keep_rank)


def _usable(op: str, value: Value) -> bool:
    if op == FAMILY_OF[op].arg:  # rank >= 1 and an axis that is not a static 0 (spec error)
        return bool(value.dims) and any(d != 0 for d in value.dims)
    return True


def _max(scope: Scope, op: str, x: Value, keep_rank: bool) -> Value:
    draw = scope.draw
    inputs, dims = [x], x.dims
    for _ in range(draw(st.integers(0, 2))):
        other = _max_operand(scope, x, dims, keep_rank)
        if other is None:
            break
        inputs.append(other)
        dims = dims if dims is None or other.dims is None else broadcast(dims, other.dims)
    inputs = list(draw(st.permutations(inputs)))  # the base need not come first
    attrs = {}
    if scope.opset < 6 and draw(st.booleans()):
        attrs["consumed_inputs"] = [0] * len(inputs)
    return scope.add(op, [v.name for v in inputs], scope.output(x.elem, dims), **attrs)


def _max_operand(scope: Scope, x: Value, dims, keep_rank: bool) -> Value | None:
    """Another operand of Max: a value of the scope or a new graph input."""
    draw = scope.draw
    if dims is None:
        shapes_ok = lambda v: v.dims == ()  # noqa: E731  (only scalars broadcast to any rank)
    elif scope.opset < 8:
        shapes_ok = lambda v: v.dims == dims  # noqa: E731  (no broadcasting before Max-8)
    else:

        def shapes_ok(v):
            if v.dims is None:
                return False
            joined = broadcast(dims, v.dims)
            return joined is not None and (not keep_rank or joined == dims)

    existing = [v for v in scope.values if v.elem == x.elem and shapes_ok(v)]
    if existing and draw(st.booleans()):
        return draw(st.sampled_from(existing))
    if scope.in_function:
        return None  # a function body reads only its own inputs
    if dims is None:
        return scope.program.new_input(x.elem, ())
    if scope.opset < 8:
        return scope.program.new_input(x.elem, dims)
    if keep_rank or draw(st.booleans()):
        return scope.program.new_input(x.elem, broadcastable_to(draw, dims))
    # a shape that widens: extra leading dims, and 1s of x broadcast up
    lead = draw_dims(draw, draw(st.integers(0, 1)))
    widened = tuple(
        draw(st.sampled_from([d, 1])) if d != 1 else draw(st.sampled_from([1, 2, "N"]))
        for d in dims
    )
    return scope.program.new_input(x.elem, lead + widened)


def _reduce_max(scope: Scope, op: str, x: Value, keep_rank: bool) -> Value:
    draw = scope.draw
    opset, rank = scope.opset, None if x.dims is None else len(x.dims)
    keepdims = 1 if keep_rank else draw(st.sampled_from([None, 0, 1]))
    attrs = {} if keepdims is None else {"keepdims": keepdims}
    kept = keepdims != 0
    if rank is None:
        axes = None  # reduce everything: the only form that needs no rank
    else:
        low = -rank if opset >= 11 else 0
        listed = st.lists(st.integers(low, rank - 1), max_size=rank, unique_by=lambda a: a % rank)
        axes = draw(st.one_of(listed, listed, st.none())) if rank else None
    inputs = [x.name]
    runtime = False
    if opset < 18:
        if axes:
            attrs["axes"] = axes
        else:
            axes = None  # an empty or absent attribute: every axis
    else:
        noop = draw(st.sampled_from([None, 0, 1]))
        if noop is not None:
            attrs["noop_with_empty_axes"] = noop
        if axes is not None and (axes or draw(st.booleans())):  # [] given, or left out
            inputs.append(scope.program.name("axes"))
            runtime = _axes_input(scope, inputs[-1], axes)
        if not axes:  # absent or empty: every axis, or with noop_with_empty_axes the identity
            axes = [] if noop == 1 else None
    dims = _reduced_dims(x.dims, axes, kept, runtime)
    return scope.add(op, inputs, scope.output(x.elem, dims), **attrs)


def _axes_input(scope: Scope, name: str, axes: list[int]) -> bool:
    """Make `name` hold `axes`: an initializer, a Constant node or (main graph only, where
    the verifier finds it) a graph input; True for the graph input."""
    draw = scope.draw
    how = draw(st.sampled_from(["initializer", "constant", "input"]))
    if scope.depth or scope.in_function:
        how = "constant"
    if how == "initializer":
        scope.program.initializers.append(
            helper.make_tensor(name, TensorProto.INT64, [len(axes)], axes)
        )
    elif how == "input":
        size = draw(st.sampled_from([len(axes), f"k_{name}"]))
        scope.program.inputs.append(helper.make_tensor_value_info(name, TensorProto.INT64, [size]))
    else:
        tensor = helper.make_tensor(f"{name}_value", TensorProto.INT64, [len(axes)], axes)
        scope.nodes.append(helper.make_node("Constant", [], [name], value=tensor))
    return how == "input"


def _reduced_dims(dims, axes, kept: bool, runtime: bool):
    if dims is None:
        return None if kept else ()
    if runtime:
        return tuple(None for _ in dims) if kept else None
    rank = len(dims)
    reduced = set(range(rank)) if axes is None else {a % rank for a in axes}
    if kept:
        return tuple(1 if i in reduced else d for i, d in enumerate(dims))
    return tuple(d for i, d in enumerate(dims) if i not in reduced)


def _arg_max(scope: Scope, op: str, x: Value, keep_rank: bool) -> Value:
    draw = scope.draw
    rank = len(x.dims)
    axes = [a for a in range(rank) if x.dims[a] != 0]
    axis = draw(st.sampled_from(axes))
    if scope.opset >= 11 and draw(st.booleans()):
        axis -= rank
    attrs = {}
    if axis or draw(st.booleans()):
        attrs["axis"] = axis
    keepdims = 1 if keep_rank else draw(st.sampled_from([None, 0, 1]))
    if keepdims is not None:
        attrs["keepdims"] = keepdims
    if scope.opset >= 12 and draw(st.booleans()):
        attrs["select_last_index"] = draw(st.sampled_from([1, 0]))
    dims = _reduced_dims(x.dims, [axis], keepdims != 0, False)
    return scope.add(op, [x.name], scope.output(TensorProto.INT64, dims), **attrs)


# --- nesting ------------------------------------------------------------------------------


def add_if(scope: Scope) -> Value | None:
    """If(cond) with a rank-keeping family node in each branch, on outer values."""
    draw = scope.draw
    cond = scope.program.new_input(TensorProto.BOOL, (), prefix="cond")
    then_scope = _child(scope)
    then_out = add_family_node(then_scope, keep_rank=True)
    if then_out is None or then_out.dims is None:
        return None  # (an output of unknown rank cannot be declared)
    if then_out.elem not in accepted_types("If", scope.opset, "V"):
        return None
    # a Loop in a branch, one of whose outputs the branch leaves unused
    nested = scope.depth + 1 < MAX_DEPTH and draw(st.booleans())
    else_scope = _child(scope)
    else_out = _matching_branch(else_scope, then_out, nested)
    if else_out is None:  # the same nodes in both branches (sibling scopes may share names)
        else_scope.nodes, else_out = list(then_scope.nodes), then_out
        else_scope.initializers = list(then_scope.initializers)
    dims = then_out.dims if then_out.dims == else_out.dims else tuple(None for _ in then_out.dims)
    out = scope.output(then_out.elem, dims, prefix="if")
    branches = {
        name: helper.make_graph(
            child.nodes,
            f"{name}_{out.name}",
            [],
            [helper.make_tensor_value_info(result.name, result.elem, [None] * len(dims))],
            child.initializers,
        )
        for name, child, result in (
            ("then_branch", then_scope, then_out),
            ("else_branch", else_scope, else_out),
        )
    }
    return scope.add("If", [cond.name], out, **branches)


def _matching_branch(scope: Scope, like: Value, nested: bool) -> Value | None:
    """A family node (or, nested, a Loop) whose output has `like`'s type and shape (below
    opset 11 an If needs the same shape in both branches; from 11 the same rank), or None."""
    for attempt in range(3):
        result = (
            add_loop(scope) if nested and attempt == 0 else add_family_node(scope, keep_rank=True)
        )
        if result is None or result.elem != like.elem or result.dims is None:
            continue
        if result.dims == like.dims or (scope.opset >= 11 and len(result.dims) == len(like.dims)):
            return result
    return None


def add_loop(scope: Scope) -> Value | None:
    """Loop M times over a carried value c: c = Max(c, w) or Min(c, w) with w from outside
    (Identity where the op does not take the type), and a scan output of a family node on c."""
    draw = scope.draw
    looped = accepted_types("Loop", scope.opset, "V")
    carried = [v for v in scope.values if v.dims is not None and v.elem in looped]
    if not carried:
        return None
    start = draw(st.sampled_from(carried))
    trips = draw(st.sampled_from([1, 2, 3, 0]))
    count = scope.program.name("trips")  # an initializer: Constant has no int64 before 9
    scope.initializers.append(helper.make_tensor(count, TensorProto.INT64, [], [trips]))
    body = _child(scope)
    iteration, cond_in, cond_out = (scope.program.name(p) for p in ("iter", "cond", "cond"))
    c_in = Value(
        scope.program.name("c"),
        start.elem,
        tuple(None if isinstance(d, str) else d for d in start.dims),
    )
    body.values.append(c_in)
    body.nodes.append(helper.make_node("Identity", [cond_in], [cond_out]))
    elementwise = draw(st.sampled_from([f.elementwise for f in FAMILIES]))
    if elementwise in scope.program.ops and start.elem in accepted_types(elementwise, scope.opset):
        others = [
            v
            for v in scope.values
            if v.elem == start.elem
            and v.dims is not None
            and broadcast(start.dims, v.dims) == start.dims
        ]
        if scope.opset < 8:
            others = [v for v in others if v.dims == start.dims]
        operand = draw(st.sampled_from(others))  # `start` itself is one
        c_out = body.add(elementwise, [c_in.name, operand.name], body.output(start.elem, c_in.dims))
    else:
        c_out = body.add("Identity", [c_in.name], body.output(start.elem, c_in.dims))
    scanned = add_family_node(body, c_out) or add_family_node(body, c_in)
    if scanned is None or scanned.dims is None or scanned.elem not in looped:
        return None
    graph = helper.make_graph(
        body.nodes,
        f"body_{count}",
        [
            helper.make_tensor_value_info(iteration, TensorProto.INT64, []),
            helper.make_tensor_value_info(cond_in, TensorProto.BOOL, []),
            helper.make_tensor_value_info(c_in.name, c_in.elem, list(c_in.dims)),
        ],
        [
            helper.make_tensor_value_info(cond_out, TensorProto.BOOL, []),
            helper.make_tensor_value_info(c_out.name, c_out.elem, [None] * len(c_out.dims)),
            helper.make_tensor_value_info(scanned.name, scanned.elem, [None] * len(scanned.dims)),
        ],
        body.initializers,
    )
    final = scope.output(start.elem, start.dims, prefix="final")
    stacked = scope.output(scanned.elem, (trips, *(None for _ in scanned.dims)), prefix="scan")
    scope.nodes.append(
        helper.make_node(
            "Loop",
            [count, "", start.name],
            [final.name, stacked.name],
            name=f"loop_{count}",
            body=graph,
        )
    )
    scope.values += [final, stacked]
    scope.made += [final, stacked]
    return draw(st.sampled_from([final, stacked]))


def add_call(scope: Scope) -> Value | None:
    """A call of a new model-local function whose body is one or two family nodes."""
    draw = scope.draw
    candidates = [v for v in scope.values if v.dims is not None]
    if not candidates:
        return None
    argument = draw(st.sampled_from(candidates))
    name = scope.program.name("F")
    parameter = Value("X", argument.elem, argument.dims)
    body = Scope(scope.program, [parameter], scope.depth + 1, in_function=True)
    result = add_family_node(body, parameter)
    if result is None:
        return None
    if draw(st.booleans()):
        result = add_family_node(body, result) or result
    function = helper.make_function(
        FUNCTION_DOMAIN,
        name,
        ["X"],
        [result.name],
        body.nodes,
        [helper.make_opsetid("", scope.opset)],
    )
    scope.program.functions.append(function)
    out = scope.output(result.elem, result.dims, prefix="call")
    scope.nodes.append(
        helper.make_node(
            name, [argument.name], [out.name], domain=FUNCTION_DOMAIN, name=f"call_{out.name}"
        )
    )
    scope.values.append(out)
    scope.made.append(out)
    return out


def _child(scope: Scope) -> Scope:
    return Scope(scope.program, list(scope.values), scope.depth + 1, scope.in_function)


def add_step(scope: Scope) -> Value | None:
    draw = scope.draw
    kinds = ["family", "family", "family"]
    if scope.depth < MAX_DEPTH:
        kinds += ["if", "loop", "call"]
    kind = draw(st.sampled_from(kinds))
    return {"family": add_family_node, "if": add_if, "loop": add_loop, "call": add_call}[kind](
        scope
    )


# --- models -------------------------------------------------------------------------------


@st.composite
def family_models(draw, opsets: tuple[int, int] = (1, LATEST), ops=FAMILY) -> onnx.ModelProto:
    """A valid model of 1-4 steps (family nodes, If, Loop, function calls)."""
    low, high = opsets  # opsets 7 and later twice as often: onnxruntime runs them
    usual = st.integers(max(low, 7), high) if high >= 7 else st.integers(low, high)
    opset = draw(st.one_of(usual, st.integers(low, high)))
    program = Program(draw, opset, tuple(ops))
    types = sorted({t for op in ops for t in accepted_types(op, opset)})
    elem = draw(st.sampled_from(types))
    scope = Scope(program, [])
    for _ in range(draw(st.integers(1, 2))):
        scope.values.append(program.new_input(elem, draw_dims(draw, draw(st.integers(0, 3)))))
    for _ in range(draw(st.integers(1, 4))):
        add_step(scope)
    if not scope.made:
        add_family_node(scope) or scope.add(
            "Identity", [scope.values[0].name], scope.output(elem, scope.values[0].dims)
        )
    read = _names_read(scope.nodes)
    outputs = [v for v in scope.made if v.name not in read and v.dims is not None]
    if not outputs:  # only values of unknown rank (ReduceMax over run-time axes): reduce all
        last = scope.made[-1]
        outputs = [scope.add("ReduceMax", [last.name], scope.output(last.elem, ()), keepdims=0)]
    graph = helper.make_graph(
        scope.nodes,
        "fuzz",
        program.inputs,
        [helper.make_tensor_value_info(v.name, v.elem, [None] * len(v.dims)) for v in outputs],
        program.initializers + scope.initializers,
    )
    imports = [helper.make_opsetid("", opset)]
    if program.functions:
        imports.append(helper.make_opsetid(FUNCTION_DOMAIN, 1))
    model = helper.make_model(graph, opset_imports=imports, functions=program.functions)
    model.ir_version = max(min_ir_version(opset), 4, 8 if program.functions else 0)
    return model


def _names_read(nodes) -> set[str]:
    """Every name the nodes read, in their subgraphs too."""
    names = set()
    for node in nodes:
        names.update(node.input)
        for attribute in node.attribute:
            for graph in [attribute.g] if attribute.HasField("g") else attribute.graphs:
                names |= _names_read(graph.node) | {o.name for o in graph.output}
    return names


@dataclasses.dataclass(frozen=True)
class FuzzCase:
    model: onnx.ModelProto
    target: int
    profile: str | None
    seed: int
    via: int | None = None  # also convert through this opset first (chained conversion)

    def text(self) -> str:
        """The case as a comment header and the model in ONNX text (onnx.parser syntax)."""
        return (
            f"// target: {self.target}\n// profile: {self.profile or '(none)'}\n"
            f"// verify seed: {self.seed}\n// via: {self.via}\n"
            f"{onnx.printer.to_text(self.model)}\n"
        )


@st.composite
def fuzz_cases(
    draw, opsets: tuple[int, int] = (1, LATEST), targets: tuple[int, int] = (1, LATEST), ops=FAMILY
) -> FuzzCase:
    model = draw(family_models(opsets, ops))
    _respell_default_import(model, draw(st.sampled_from(IMPORT_SPELLINGS)), draw)
    profile = draw(st.sampled_from([None, *PROFILES]))
    target = draw(st.integers(*targets))
    via = draw(st.one_of(st.none(), st.integers(*targets)))
    return FuzzCase(model, target, profile, draw(st.integers(0, 2**16)), via)


# How exporters spell the default-domain import (skl2onnx writes it twice; some write the
# 'ai.onnx' alias); onnx's checker reads the last '' entry. '' and 'ai.onnx' at different
# versions is refused (tests/test_bad_options.py).
IMPORT_SPELLINGS = ("plain",) * 6 + ("alias", "twice", "alias and plain")


def _respell_default_import(model: onnx.ModelProto, spelling: str, draw) -> None:
    version = next(o.version for o in model.opset_import if o.domain == "")
    others = [o for o in model.opset_import if o.domain != ""]
    imports = {
        "plain": [("", version)],
        "alias": [("ai.onnx", version)],
        "twice": [("", draw(st.integers(1, LATEST))), ("", version)],
        "alias and plain": [("ai.onnx", version), ("", version)],  # (two versions: refused)
    }[spelling]
    del model.opset_import[:]
    model.opset_import.extend(helper.make_opsetid(d, v) for d, v in imports)
    model.opset_import.extend(others)


__all__ = [
    "FAMILY",
    "LATEST",
    "PROFILES",
    "FuzzCase",
    "accepted_types",
    "family_models",
    "fuzz_cases",
]
