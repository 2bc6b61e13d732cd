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
        return np.array([v for v in raw if info.min <= v <= info.max], dtype=t)
    info = ml_dtypes.finfo(t) if dtype == TP.BFLOAT16 else np.finfo(t)
    raw = [0.0, -0.0, 1.0, -1.0, 0.5, 1.5, 2.5, -2.5, np.inf, -np.inf, np.nan]
    raw += [float(info.max), float(-info.max), float(info.smallest_subnormal), 2.0**24 + 1]
    raw += [65504.0, 65520.0, 3.0e38, 1e-30]
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
