"""The prover's semantics are its trusted base: the interpreter (maxlower.prove.semantics),
run on concrete inputs, must give onnx.reference's outputs bit for bit (NaN: any NaN).

Inputs are the specials of each dtype (±0, ±inf, NaN, the extremes, the smallest
subnormal, ties for rounding, 2^24+1 and 2^53+1) in every pair, so every tie rule is met
(numpy keeps the first operand of a float16 Max tie, the second for the other types).
"""

from __future__ import annotations

import itertools

import ml_dtypes
import numpy as np
import onnx
import pytest
from onnx import TensorProto as TP
from onnx.reference import ReferenceEvaluator

pytest.importorskip("z3", reason="the prover needs z3-solver: pip install -e '.[prove]'")

from maxlower.prove.core import concrete_outputs
from maxlower.prove.semantics import FLOAT_SORTS, INT_BITS
from tests import tiers

FLOATS = [TP.FLOAT16, TP.BFLOAT16, TP.FLOAT, TP.DOUBLE]
INTS = list(INT_BITS)
ALL = [*FLOATS, *INTS, TP.BOOL]


def np_dtype(dtype: int) -> np.dtype:
    return onnx.helper.tensor_dtype_to_np_dtype(dtype)


def specials(dtype: int) -> np.ndarray:
    t = np_dtype(dtype)
    if dtype == TP.BOOL:
        return np.array([False, True])
    if dtype in INT_BITS:
        info = np.iinfo(t)
        raw = [info.min, info.min + 1, -1, 0, 1, 2, info.max - 1, info.max, 2**24 + 1, 2**53 + 1]
        raw += [2**25 + 2**17 + 1]  # rounding through float32 makes it a bfloat16 tie
        return np.array([v for v in raw if info.min <= v <= info.max], dtype=t)
    info = ml_dtypes.finfo(t) if dtype == TP.BFLOAT16 else np.finfo(t)
    raw = [0.0, -0.0, 1.0, -1.0, 0.5, 1.5, 2.5, -2.5, np.inf, -np.inf, np.nan]
    raw += [float(info.max), float(-info.max), float(info.smallest_subnormal), 2.0**24 + 1]
    raw += [65504.0, 65520.0, 3.0e38, 1e-30]
    # just past a bfloat16 (float16) tie by less than float32 keeps: rounding through
    # float32 first makes a tie of them, rounding once does not (ml_dtypes before 0.7)
    raw += [1 + 2**-8 + 2**-40, 1 + 2**-11 + 2**-40]
    with np.errstate(over="ignore"):
        return np.array(raw, dtype=np.float64).astype(t)


def model(op: str, in_types: list[int], out_type: int, attrs=None, shapes=None, opset=20):
    shapes = shapes or [[None]] * len(in_types)
    inputs = [
        onnx.helper.make_tensor_value_info(f"x{i}", t, s)
        for i, (t, s) in enumerate(zip(in_types, shapes))
    ]
    out = onnx.helper.make_tensor_value_info("y", out_type, None)
    node = onnx.helper.make_node(op, [i.name for i in inputs], ["y"], **(attrs or {}))
    graph = onnx.helper.make_graph([node], "g", inputs, [out])
    return onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", opset)])


def same_bits(expected: np.ndarray, actual: np.ndarray) -> bool:
    if expected.dtype != actual.dtype or expected.shape != actual.shape:
        return False
    if expected.dtype.kind in "fV" or expected.dtype == ml_dtypes.bfloat16:
        e, a = expected.astype(np.float64), actual.astype(np.float64)
        nan = np.isnan(e) & np.isnan(a)
        width = expected.dtype.itemsize * 8
        eb, ab = expected.view(f"u{width // 8}"), actual.view(f"u{width // 8}")
        return bool(np.all(nan | (eb == ab)))
    return bool(np.array_equal(expected, actual))


def check(m: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> None:
    with np.errstate(all="ignore"):
        expected = ReferenceEvaluator(m).run(None, feeds)
    actual = concrete_outputs(m, feeds)
    for e, a in zip(expected, actual):
        e = np.asarray(e)
        assert same_bits(e, a), (
            f"{onnx.printer.to_text(m.graph)}\ninputs {feeds}\nexpected {e}\nactual {a}"
        )


def pairs(dtype: int) -> tuple[np.ndarray, np.ndarray]:
    s = specials(dtype)
    a, b = zip(*itertools.product(s, s))
    t = np_dtype(dtype)
    return np.array(a, dtype=t), np.array(b, dtype=t)


NUMERIC = [*FLOATS, *INTS]


@pytest.mark.parametrize("dtype", NUMERIC, ids=lambda t: TP.DataType.Name(t))
@pytest.mark.parametrize(
    "op", ["Max", "Min", "Greater", "Less", "Equal", "GreaterOrEqual", "LessOrEqual"]
)
def test_binary_ops_match_onnx_reference(op, dtype):
    out = dtype if op in ("Max", "Min") else TP.BOOL
    a, b = pairs(dtype)
    check(model(op, [dtype, dtype], out), {"x0": a, "x1": b})


@pytest.mark.parametrize("dtype", NUMERIC, ids=lambda t: TP.DataType.Name(t))
@pytest.mark.parametrize("op", ["Add", "Sub", "Mul"])
def test_arithmetic_matches_onnx_reference(op, dtype):
    a, b = pairs(dtype)
    check(model(op, [dtype, dtype], dtype, opset=14), {"x0": a, "x1": b})


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda t: TP.DataType.Name(t))
def test_division_and_nan_tests_match_onnx_reference(dtype):
    a, b = pairs(dtype)
    check(model("Div", [dtype, dtype], dtype, opset=14), {"x0": a, "x1": b})
    check(model("IsNaN", [dtype], TP.BOOL), {"x0": a})
    check(model("Relu", [dtype], dtype, opset=14), {"x0": a})


def test_bool_logic_matches_onnx_reference():
    a, b = pairs(TP.BOOL)
    for op in ("Or", "And", "Xor", "Equal"):
        check(model(op, [TP.BOOL, TP.BOOL], TP.BOOL), {"x0": a, "x1": b})
    check(model("Not", [TP.BOOL], TP.BOOL), {"x0": a})
    c = np.array([True, False] * (len(a) // 2))
    check(model("Where", [TP.BOOL, TP.BOOL, TP.BOOL], TP.BOOL), {"x0": c, "x1": a, "x2": b})


def _castable(values: np.ndarray, src: int, dst: int) -> np.ndarray:
    """The values whose cast is defined: a float → integer cast needs a value in range."""
    if src in FLOAT_SORTS and dst in INT_BITS:
        info = np.iinfo(np_dtype(dst))
        wide = values.astype(np.float64)
        keep = np.isfinite(wide) & (np.trunc(wide) >= info.min) & (np.trunc(wide) <= info.max)
        return values[keep]
    return values


@pytest.mark.parametrize("src", ALL, ids=lambda t: TP.DataType.Name(t))
def test_every_cast_matches_onnx_reference(src):
    for dst in ALL:
        values = _castable(specials(src), src, dst)
        check(model("Cast", [src], dst, {"to": dst}), {"x0": values})


REDUCTIONS = ["ReduceMax", "ReduceMin", "ArgMax", "ArgMin"]
# Every (op, dtype); the default tier runs a diagonal of the integer and bool types, each op
# and each such type at least once, and two float types (their triples take seconds: a
# reduction at float16, whose ties numpy keeps apart, and an arg op at float32; the binary
# ops above take every float type); the slow tier the rest.
DEFAULT_FLOAT_REDUCTIONS = {("ReduceMax", TP.FLOAT16), ("ArgMax", TP.FLOAT)}
REDUCTION_PAIRS = tiers.split(
    [
        pytest.param(op, dtype, id=f"{op}-{TP.DataType.Name(dtype)}")
        for op in REDUCTIONS
        for dtype in ALL
    ],
    keep=lambda pair: (
        pair in DEFAULT_FLOAT_REDUCTIONS
        if pair[1] in FLOATS
        else (ALL.index(pair[1]) % len(REDUCTIONS) == REDUCTIONS.index(pair[0]))
    ),
)


@pytest.mark.parametrize(("op", "dtype"), REDUCTION_PAIRS)
def test_reductions_match_onnx_reference_on_every_triple(op, dtype):
    if dtype == TP.BOOL and op.startswith("Arg"):
        pytest.skip("ArgMax/ArgMin take no bool")
    s = specials(dtype)
    rows = np.array(list(itertools.product(s[:12], repeat=3)), dtype=np_dtype(dtype))
    out = TP.INT64 if op.startswith("Arg") else dtype
    for attrs in ({"keepdims": 0}, {"keepdims": 1, "select_last_index": 1}):
        if not op.startswith("Arg"):
            attrs = {"keepdims": attrs["keepdims"]}
            m = model(op, [dtype, TP.INT64], out, attrs, shapes=[[None, 3], [1]])
            check(m, {"x0": rows, "x1": np.array([1], np.int64)})
        else:
            m = model(op, [dtype], out, {"axis": 1, **attrs}, shapes=[[None, 3]])
            check(m, {"x0": rows})


@pytest.mark.parametrize("dtype", [TP.FLOAT, TP.INT8, TP.BOOL], ids=lambda t: TP.DataType.Name(t))
def test_empty_reductions_give_the_identity(dtype):
    for op in ("ReduceMax", "ReduceMin"):
        m = model(op, [dtype, TP.INT64], dtype, {"keepdims": 0}, shapes=[[2, 0], [1]])
        check(m, {"x0": np.zeros((2, 0), np_dtype(dtype)), "x1": np.array([1], np.int64)})


def test_shape_ops_match_onnx_reference():
    text = """<ir_version: 8, opset_import: ["" : 13]>
    g (float[3, 4] x) => (float[2, 3] a, float[8, 3] b, float[3, 8] c, int64[2] s, int64 n,
                          float[2, 4] d, float[4, 3] e, float[3, 4] f, float[3, 2] h) {
        starts = Constant <value = int64[2] {1, 3}> ()
        ends = Constant <value = int64[2] {3, -10}> ()
        axes = Constant <value = int64[2] {0, 1}> ()
        steps = Constant <value = int64[2] {1, -1}> ()
        sl = Slice (x, starts, ends, axes, steps)
        a = Transpose <perm = [1, 0]> (sl)
        t = Transpose <perm = [1, 0]> (x)
        b = Concat <axis = 0> (t, t)
        reps = Constant <value = int64[2] {1, 2}> ()
        c = Tile (x, reps)
        s = Shape (sl)
        n = Size (x)
        idx = Constant <value = int64[2] {0, -1}> ()
        d = Gather <axis = 0> (x, idx)
        shp = Constant <value = int64[2] {4, -1}> ()
        e = Reshape (x, shp)
        u = Unsqueeze (x, axes)
        sq = Squeeze (u, axes)
        es = Constant <value = int64[2] {3, 1}> ()
        ex = Expand (x, es)
        f = Identity (ex)
        lo = Constant <value = float {-1.0}> ()
        hi = Constant <value = float {1.0}> ()
        cl = Clip (sq, lo, hi)
        i2 = Constant <value = int64[2] {2, 0}> ()
        h = Gather <axis = 1> (cl, i2)
    }"""
    m = onnx.parser.parse_model(text)
    x = np.array(
        [[0.0, -0.0, np.nan, 2.0], [np.inf, -5, 1.5, -0.5], [3, 4, -np.inf, 0.25]], np.float32
    )
    check(m, {"x": x})


def test_if_and_loop_match_onnx_reference():
    text = """<ir_version: 8, opset_import: ["" : 13]>
    g (float[3] x, bool c) => (float[3] y, float[3] z) {
        y = If (c) <then_branch = t () => (float[3] a) { a = Neg (x) },
                    else_branch = e () => (float[3] b) { b = Identity (x) }>
        n = Constant <value = int64 {3}> ()
        go = Constant <value = bool {1}> ()
        z = Loop (n, go, x) <body = body (int64 i, bool cond, float[3] v) => (bool c2, float[3] w) {
            c2 = Identity (cond)
            k = Cast <to = 1> (i)
            w = Add (v, k)
        }>
    }"""
    m = onnx.parser.parse_model(text)
    x = np.array([1.0, -0.0, np.nan], np.float32)
    for c in (True, False):
        check(m, {"x": x, "c": np.array(c)})


# --- every op of the fragment, at every length where numpy changes its algorithm ------------
# numpy sums pairwise from 8 elements (blocks of 8, recursion past 128) and runs SIMD loops
# whose remainders go through scalar code, so an interpreter that equals onnx.reference on
# pairs and triples may not at 8, 16 or 129. Every op the interpreter has (its op table:
# a new op fails test_every_op_of_the_fragment_has_cases until it is given cases) is run
# at each length below along the axis it reduces, slices or broadcasts, on the edge values.
# An op may refuse a case (OutsideFragment: the prover answers INCONCLUSIVE); every answer
# it gives must be onnx.reference's, bit for bit.
from maxlower.prove.semantics import Interpreter, OutsideFragment  # noqa: E402

FRAGMENT = sorted(name.removeprefix("op_") for name in dir(Interpreter) if name.startswith("op_"))
LENGTHS = [*range(10), 16, 128, 129]
SIGNED = [TP.INT8, TP.INT16, TP.INT32, TP.INT64]


def row(dtype: int, n: int, pattern: int) -> np.ndarray:
    """n values of `dtype`. Pattern k >= 0 cycles the specials from the k-th (so each
    special meets every other at some length); -1 alternates -0.0 and +0.0 (the extremes
    for integers, False and True for bool), so that every position holds a tie; -2 (floats)
    cancels a large value so that a sum depends on the order of its adds."""
    t = np_dtype(dtype)
    if pattern >= 0:
        return np.resize(np.roll(specials(dtype), -pattern), n).astype(t)
    if dtype == TP.BOOL:
        return np.resize(np.array([False, True]), n)
    if pattern == -2 and dtype in FLOAT_SORTS:  # a sum whose value depends on its order
        big = 2.0 ** (FLOAT_SORTS[dtype][1] + 1)
        return np.resize(np.array([1.0, big, 1.0, 1.0, -big, 1.0, 1.0]), n).astype(t)
    if dtype in INT_BITS:
        info = np.iinfo(t)
        return np.resize(np.array([info.max, info.min], dtype=t), n)
    return np.resize(np.array([-0.0, 0.0]), n).astype(t)


def _graph(nodes, inputs, outputs, initializers=(), opset=20) -> onnx.ModelProto:
    graph = onnx.helper.make_graph(nodes, "g", inputs, outputs, initializer=list(initializers))
    return onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", opset)])


def _value(name, dtype, shape=None):
    return onnx.helper.make_tensor_value_info(name, dtype, shape)


def _ints(name, values) -> onnx.TensorProto:
    return onnx.numpy_helper.from_array(np.array(values, dtype=np.int64), name)


def _one(op, dtype, out, feeds, attrs=None, consts=(), opset=20):
    """One node reading the feeds (x0, x1, ...) then the constants, giving y."""
    names = [*feeds, *(c.name for c in consts)]
    node = onnx.helper.make_node(op, names, ["y"], **(attrs or {}))
    inputs = [_value(k, onnx.helper.np_dtype_to_tensor_dtype(v.dtype)) for k, v in feeds.items()]
    return _graph([node], inputs, [_value("y", out)], consts, opset), feeds


def _unary(op, out=None, dtypes=NUMERIC):
    def build(dtype, n, pattern):
        if dtype not in dtypes:
            return []
        return [_one(op, dtype, out or dtype, {"x0": row(dtype, n, pattern)}, opset=14)]

    return build


def _binary(op, out=None, dtypes=NUMERIC, arity=2):
    def build(dtype, n, pattern):
        if dtype not in dtypes:
            return []
        # a tie at every position (the same row twice), and two rows that meet apart
        other = pattern if pattern < 0 else pattern + 3
        rows = [row(dtype, n, pattern), row(dtype, n, other)]
        if op == "Div" and dtype in INT_BITS:  # x / 0 is undefined: the prover skips it
            rows[1] = np.where(rows[1] == 0, np.ones_like(rows[1]), rows[1])
        rows = rows + rows[:1] * (arity - 2)
        feeds = {f"x{i}": r for i, r in enumerate(rows)}
        same = {"x0": rows[0], "x1": rows[0]} if arity == 2 else None
        cases = [_one(op, dtype, out or dtype, feeds, opset=14 if op != "Max" else 20)]
        if same is not None and op != "Div":
            cases.append(_one(op, dtype, out or dtype, same, opset=14))
        return cases

    return build


def _where(dtype, n, pattern):
    c = row(TP.BOOL, n, pattern % 2 - 1 if pattern >= 0 else -1)
    a, b = row(dtype, n, pattern), row(dtype, n, pattern + 1 if pattern >= 0 else -1)
    return [_one("Where", dtype, dtype, {"x0": c, "x1": a, "x2": b})]


def _clip(dtype, n, pattern):
    if dtype not in NUMERIC:
        return []
    t = np_dtype(dtype)
    bounds = (0, 1) if dtype in INT_BITS else (-0.0, 1.0)
    low, high = (onnx.numpy_helper.from_array(np.array(v, t), k) for k, v in zip("lh", bounds))
    return [_one("Clip", dtype, dtype, {"x0": row(dtype, n, pattern)}, consts=[low, high])]


def _cast(dtype, n, pattern):
    cases = []
    for to in (TP.FLOAT, TP.FLOAT16, TP.INT32, TP.BOOL):
        values = _castable(row(dtype, n, pattern), dtype, to)
        cases.append(_one("Cast", dtype, to, {"x0": values}, {"to": to}))
    return cases


def _reduce(op):
    """Over the last axis ([2, n]: numpy's contiguous, pairwise/SIMD path) and the first
    ([n, 2]: its strided path), each row a different pattern."""

    def build(dtype, n, pattern):
        arg = op.startswith("Arg")
        if dtype not in (NUMERIC if arg or op == "ReduceSum" else ALL) or (arg and n == 0):
            return []
        other = pattern if pattern < 0 else pattern + 5
        x = np.stack([row(dtype, n, pattern), row(dtype, n, other)])
        cases = []
        for data, axis in ((x, 1), (x.T.copy(), 0)):
            if arg:
                for last in (0, 1):
                    attrs = {"axis": axis, "keepdims": 0, "select_last_index": last}
                    cases.append(_one(op, dtype, TP.INT64, {"x0": data}, attrs))
            else:
                axes = _ints("axes", [axis])
                cases.append(_one(op, dtype, dtype, {"x0": data}, {"keepdims": 0}, [axes]))
        return cases

    return build


def _moving(op):
    """The ops that move elements: their bounds clamp at the length n."""

    def build(dtype, n, pattern):
        if dtype not in (TP.FLOAT, TP.INT8, TP.BOOL, TP.FLOAT16):
            return []
        x = {"x0": row(dtype, n, pattern)}
        consts = {
            "Slice": [
                [_ints("s", [1]), _ints("e", [-1]), _ints("a", [0]), _ints("t", [1])],
                [_ints("s", [-1]), _ints("e", [-n - 5]), _ints("a", [0]), _ints("t", [-1])],
                [_ints("s", [n]), _ints("e", [0]), _ints("a", [0]), _ints("t", [-2])],
                [_ints("s", [0]), _ints("e", [1000]), _ints("a", [0]), _ints("t", [3])],
            ],
            "Tile": [[_ints("r", [2])], [_ints("r", [0])]],
            "Expand": [[_ints("s", [2, n])], [_ints("s", [1, 1])]],
            "Reshape": [[_ints("s", [-1, 1])], [_ints("s", [1, n])], [_ints("s", [0, 1])]],
            "Unsqueeze": [[_ints("a", [0])], [_ints("a", [-1, 0])]],
            "Gather": [[_ints("i", [0, -1, n // 2][: 3 if n else 0])]],
        }.get(op, [[]])
        attrs = {"Concat": {"axis": 0}, "Transpose": {}, "Shape": {"start": -1}}.get(op, {})
        out = TP.INT64 if op in ("Shape", "Size") else dtype
        feeds = {"x0": x["x0"], "x1": x["x0"]} if op == "Concat" else x
        return [_one(op, dtype, out, feeds, attrs, c) for c in consts]

    return build


def _squeeze(dtype, n, pattern):
    if dtype not in (TP.FLOAT, TP.INT8, TP.BOOL):
        return []
    x = row(dtype, n, pattern).reshape(1, n, 1)
    return [
        _one("Squeeze", dtype, dtype, {"x0": x}, consts=[_ints("a", [0, -1])]),
        _one("Squeeze", dtype, dtype, {"x0": x}),
    ]


def _identity_constant(op):
    def build(dtype, n, pattern):
        x = row(dtype, n, pattern)
        if op == "Identity":
            return [_one(op, dtype, dtype, {"x0": x})]
        value = onnx.numpy_helper.from_array(x, "v")
        node = onnx.helper.make_node("Constant", [], ["y"], value=value)
        return [(_graph([node], [], [_value("y", dtype)]), {})]

    return build


def _range(dtype, n, pattern):
    if dtype not in (TP.INT64, TP.INT32, TP.INT16):
        return []
    t = np_dtype(dtype)
    cases = []
    for start, limit, delta in ((0, n, 1), (n, 0, -3), (-n, n, 2)):
        consts = [
            onnx.numpy_helper.from_array(np.array(v, t), k)
            for k, v in zip(("a", "b", "c"), (start, limit, delta))
        ]
        cases.append(_one("Range", dtype, dtype, {}, consts=consts))
    return cases


def _control(op):
    """If (both branches, on a condition given and one computed) and Loop (carried and
    scanned values) over a row of n."""

    def build(dtype, n, pattern):
        if dtype not in (TP.FLOAT, TP.INT32):
            return []
        x = row(dtype, n, pattern)
        if op == "If":
            then = onnx.helper.make_graph(
                [onnx.helper.make_node("Neg", ["x0"], ["a"])], "t", [], [_value("a", dtype)]
            )
            other = onnx.helper.make_graph(
                [onnx.helper.make_node("Identity", ["x0"], ["b"])], "e", [], [_value("b", dtype)]
            )
            node = onnx.helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other)
            inputs = [_value("c", TP.BOOL, []), _value("x0", dtype)]
            m = _graph([node], inputs, [_value("y", dtype)], opset=14)
            return [(m, {"c": np.array(c), "x0": x}) for c in (True, False)]
        body = onnx.helper.make_graph(
            [
                onnx.helper.make_node("Identity", ["k"], ["k2"]),
                onnx.helper.make_node("Max", ["v", "x0"], ["w"]),
                onnx.helper.make_node("Identity", ["v"], ["s"]),
            ],
            "body",
            [_value("i", TP.INT64, []), _value("k", TP.BOOL, []), _value("v", dtype)],
            [_value("k2", TP.BOOL, []), _value("w", dtype), _value("s", dtype)],
        )
        node = onnx.helper.make_node("Loop", ["n", "go", "x1"], ["y", "z"], body=body)
        inputs = [_value("x0", dtype), _value("x1", dtype)]
        go = onnx.numpy_helper.from_array(np.array(True), "go")
        outputs = [_value("y", dtype), _value("z", dtype)]
        m = _graph([node], inputs, outputs, [_ints("n", 3), go], 13)
        return [(m, {"x0": x, "x1": row(dtype, n, pattern + 1 if pattern >= 0 else -1)})]

    return build


BUILDERS = {
    **{op: _binary(op) for op in ("Add", "Sub", "Mul", "Div")},
    **{op: _binary(op, arity=3) for op in ("Max", "Min")},
    **{
        op: _binary(op, TP.BOOL, NUMERIC)
        for op in ("Greater", "Less", "GreaterOrEqual", "LessOrEqual")
    },
    "Equal": _binary("Equal", TP.BOOL, ALL),
    **{op: _binary(op, TP.BOOL, [TP.BOOL]) for op in ("And", "Or", "Xor")},
    "Not": _unary("Not", TP.BOOL, [TP.BOOL]),
    "IsNaN": _unary("IsNaN", TP.BOOL, FLOATS),
    "IsInf": _unary("IsInf", TP.BOOL, FLOATS),
    "Neg": _unary("Neg", None, [*FLOATS, *SIGNED]),
    "Relu": _unary("Relu", None, [*FLOATS, *SIGNED]),
    "Where": _where,
    "Clip": _clip,
    "Cast": _cast,
    **{op: _reduce(op) for op in ("ReduceMax", "ReduceMin", "ReduceSum", "ArgMax", "ArgMin")},
    **{
        op: _moving(op)
        for op in ("Slice", "Concat", "Tile", "Expand", "Reshape", "Unsqueeze", "Gather")
    },
    **{op: _moving(op) for op in ("Transpose", "Shape", "Size")},
    "Squeeze": _squeeze,
    "Identity": _identity_constant("Identity"),
    "Constant": _identity_constant("Constant"),
    "Range": _range,
    "If": _control("If"),
    "Loop": _control("Loop"),
}


def test_every_op_of_the_fragment_has_cases():
    assert sorted(BUILDERS) == FRAGMENT


def _compared(m: onnx.ModelProto, feeds: dict) -> bool:
    """Checks the interpreter's answer against onnx.reference; False if it refuses the
    case (outside the fragment: the prover is inconclusive there, which is sound)."""
    try:
        concrete_outputs(m, feeds)
    except OutsideFragment:
        return False
    check(m, feeds)
    return True


# The default tier: every op, at every length, in the first dtype of DEFAULT_DTYPES that it
# takes, with three patterns (past 16 elements, the ties only); the slow tier: every dtype,
# more patterns.
DEFAULT_DTYPES = [TP.FLOAT, TP.INT8, TP.FLOAT16, TP.BOOL, TP.INT32, TP.INT64]
SLOW_PATTERNS = [-2, -1, 0, 2, 4, 7, 9]


def _run_op(op: str, dtypes, patterns, long_patterns) -> int:
    """How many cases the interpreter answered (each checked); `long_patterns` at n > 16."""
    compared = 0
    for dtype in dtypes:
        for n in LENGTHS:
            for pattern in patterns if n <= 16 else long_patterns:
                for m, feeds in BUILDERS[op](dtype, n, pattern):
                    compared += _compared(m, feeds)
    return compared


@pytest.mark.parametrize("op", FRAGMENT)
def test_every_op_matches_onnx_reference_at_every_length(op):
    dtypes = [d for d in DEFAULT_DTYPES if any(BUILDERS[op](d, 1, 0))][:1]
    assert _run_op(op, dtypes, [-2, -1, 0], [-1]) > 0, f"{op} was compared on no case"


@pytest.mark.slow
@pytest.mark.parametrize("op", FRAGMENT)
def test_every_op_matches_onnx_reference_at_every_length_in_every_dtype(op):
    compared = _run_op(op, ALL, SLOW_PATTERNS, SLOW_PATTERNS)
    assert compared > 0, f"{op} was compared on no case"


# --- a float sum's order: numpy adds 8 or more elements pairwise ----------------------------
def _sum_of_eight(order: str) -> onnx.ModelProto:
    """y = the 8 elements of x added in `order`: "ReduceSum", "chain" (0.0 + x0 + x1 ...) or
    "pairwise" (numpy's: ((x0+x1)+(x2+x3))+((x4+x5)+(x6+x7)))."""
    head = '<ir_version: 8, opset_import: ["" : 13]>\ng (float[8] x) => (float y) '
    if order == "ReduceSum":
        return onnx.parser.parse_model(
            head + "<int64[1] ax = {0}> { y = ReduceSum <keepdims=0> (x, ax) }"
        )
    lines = [
        f"i{k} = Constant <value = int64 {{{k}}}> ()\n e{k} = Gather (x, i{k})" for k in range(8)
    ]
    if order == "chain":  # from 0.0, as the interpreter of main folded it
        lines += ["z = Constant <value = float {0.0}> ()", "s0 = Add(z, e0)"]
        lines += [f"s{k} = Add(s{k - 1}, e{k})" for k in range(1, 8)]
        lines.append("y = Identity(s7)")
    else:
        lines += [f"p{k} = Add(e{2 * k}, e{2 * k + 1})" for k in range(4)]
        lines += ["q0 = Add(p0, p1)", "q1 = Add(p2, p3)", "y = Add(q0, q1)"]
    return onnx.parser.parse_model(head + "{\n " + "\n ".join(lines) + "\n}")


def test_a_float_sum_of_eight_is_proved_equal_to_no_order_of_adds(tmp_path):
    """main proved the left-to-right chain equal to ReduceSum(x[8]) (onnx.reference
    differs: numpy sums pairwise) and refuted numpy's own order with a counterexample that
    onnx.reference did not reproduce. Neither is proved now; a counterexample, if any, is
    one onnx.reference shows."""
    from click.testing import CliRunner

    from maxlower.cli import cli
    from maxlower.prove.sites import prove_models

    big = np.float32(2.0**25)
    x = np.array([big, 1, -big, 1, 0.5, 1, 1, 1], np.float32)
    reference = _sum_of_eight("ReduceSum")
    (expected,) = ReferenceEvaluator(reference).run(None, {"x": x})
    for order in ("chain", "pairwise"):
        candidate = _sum_of_eight(order)
        (got,) = ReferenceEvaluator(candidate).run(None, {"x": x})
        assert (got == expected) == (order == "pairwise"), (order, got, expected)
        report = prove_models(reference, candidate, timeout=20)
        assert report.status != "proved", report.summary()
        found = report.counterexample
        if found is not None:
            assert found.reproduced, report.summary()
            ref_out = ReferenceEvaluator(reference).run(None, found.inputs)
            cand_out = ReferenceEvaluator(candidate).run(None, found.inputs)
            assert not np.array_equal(ref_out, cand_out, equal_nan=True)
        paths = [tmp_path / f"{order}-a.onnx", tmp_path / f"{order}-b.onnx"]
        for path, model in zip(paths, (reference, candidate)):
            onnx.save(model, path)
        result = CliRunner().invoke(cli, ["prove", *map(str, paths), "--timeout", "20"])
        assert result.exit_code in (1, 5) and "PROVED" not in result.output, result.output


def test_a_float_sum_adapted_across_opsets_is_proved_with_its_assumption():
    """ReduceSum-13 (axes an input) to ReduceSum-11 (an attribute) sums the same row of
    the same input: one node by the schemas (maxlower/prove/canonical.py), proved at any
    length for floats and integers alike, with that assumption listed, never by folding
    the float sum in an order numpy does not use."""
    import maxlower

    for dtype in ("float", "int32"):
        model = onnx.parser.parse_model(
            '<ir_version: 8, opset_import: ["" : 13]>\n'
            f"g ({dtype}[2,40] x) => ({dtype}[2,1] y) <int64[1] ax = {{1}}> "
            "{ y = ReduceSum <keepdims=1> (x, ax) }"
        )
        _, report = maxlower.convert_with_report(model, 11, prove=True)
        assert report.proof is not None and report.proof.ok, report.proof.summary()
        assert [s.method for s in report.proof.sites] == ["schema"]
        assert any("ReduceSum-11 and ReduceSum-13" in a for a in report.proof.assumptions)


# --- attributes left out take their schema's default (red team 2, G6) ----------------------
@pytest.mark.parametrize("dtype", [TP.FLOAT, TP.DOUBLE, TP.FLOAT16], ids=TP.DataType.Name)
def test_an_attribute_left_out_is_the_schema_default_clip_6(dtype):
    """Clip-6 without min and max clips to -/+3.402823e+38 (its schema's defaults), so
    +-inf and large doubles are clipped; the interpreter took no bound."""
    check(model("Clip", [dtype], dtype, opset=6), {"x0": specials(dtype)})
