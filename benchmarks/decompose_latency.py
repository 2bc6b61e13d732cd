#!/usr/bin/env python
"""onnxruntime latency of each exact decomposition against the native op, side by side.

For Max, ReduceMax and ArgMax on float32 [64, 4096] and int32 [64, 4096] (reductions over the
last axis), each decomposition of `passes.decompose` is applied once to the native node (the
family nodes it emits stay native), and also the full `primitives` lowering; the native and
the decomposed model run alternately in one loop in onnxruntime's CPU EP (default graph
optimisations, one thread: maxlower.runtime.onnxruntime_session), and the table gives
medians and their ratio. Targets (issue 5): every ArgMax/ReduceMax decomposition at most 2x
native, a Max decomposition at most 1.2x; a row that misses says by how much, and the notes
say what limits it.

A second table counts, over the 41 conformance cases converted to every opset from 7 to the
latest, the pairs whose converted model is correct (it reproduces the expected outputs in
onnxruntime or, failing that, onnx.reference) but cannot be loaded or run by onnxruntime:
for onnx.version_converter, for maxlower's conversion alone, and for maxlower's conversion
lowered with the `onnxruntime` profile.

`--weights` measures the per-op latencies behind passes/legalize/cost.py's WEIGHTS instead
and prints them (relative to Add on float32 [64, 4096]).

Usage (from the repository root):

    python benchmarks/decompose_latency.py                   # refresh its RESULTS.md section
    python benchmarks/decompose_latency.py --quick --results /tmp/r.md
    python benchmarks/decompose_latency.py --weights

Only the section between `<!-- decompose-latency:start -->` and `<!-- decompose-latency:end -->`
is rewritten.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import statistics
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import onnx
import onnx_ir as ir
from onnx import TensorProto, helper

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from benchmarks.report import machine, versions_text, write_section  # noqa: E402
from maxlower.lower import lower  # noqa: E402
from maxlower.runtime import onnxruntime_session  # noqa: E402
from passes.decompose import BY_NAME  # noqa: E402
from passes.legalize import apply_decomposition  # noqa: E402

START_MARKER = "<!-- decompose-latency:start -->"
END_MARKER = "<!-- decompose-latency:end -->"
DEFAULT_RESULTS = ROOT / "benchmarks" / "RESULTS.md"
SHAPE = (64, 4096)
OPSET = 18
DTYPES = {"float32": TensorProto.FLOAT, "int32": TensorProto.INT32}
TARGETS = {"Max": 1.2, "ReduceMax": 2.0, "ArgMax": 2.0}


@dataclasses.dataclass(frozen=True)
class Row:
    """One measured comparison: the native node, and the same node decomposed."""

    op: str
    form: str  # a decomposition name, or "primitives" for the full lowering
    variant: str  # what the native node is, e.g. "axis 1, keepdims 0"
    notes: str  # what limits the decomposition when it misses its target


def native_model(op: str, dtype: int, variant: str) -> onnx.ModelProto:
    """One family node on [64, 4096] inputs, at opset 18."""
    inputs = [helper.make_tensor_value_info("x", dtype, SHAPE)]
    initializers, names, attributes = [], ["x"], {}
    out_type, out_shape = dtype, None
    if op == "Max":
        count = 3 if "3 inputs" in variant else 2
        partner = [SHAPE[1]] if "broadcast" in variant else list(SHAPE)
        for i in range(1, count):
            inputs.append(helper.make_tensor_value_info(f"x{i}", dtype, partner))
            names.append(f"x{i}")
        out_shape = list(SHAPE)
    elif op == "ReduceMax":
        axes = [0, 1] if "axes 0,1" in variant else [1]
        attributes["keepdims"] = 0
        if "run-time axes" in variant:
            inputs.append(helper.make_tensor_value_info("axes", TensorProto.INT64, [len(axes)]))
        else:
            initializers.append(onnx.numpy_helper.from_array(np.array(axes), "axes"))
        names.append("axes")
        out_shape = [] if len(axes) == 2 else [SHAPE[0]]
        if "run-time axes" in variant:
            attributes["keepdims"] = 1
            out_shape = [SHAPE[0], 1]
    else:
        rank1 = "rank 1" in variant
        if rank1:
            inputs[0] = helper.make_tensor_value_info("x", dtype, [SHAPE[0] * SHAPE[1]])
        attributes.update(axis=0 if rank1 else 1, keepdims=0)
        attributes["select_last_index"] = 1 if "last" in variant else 0
        out_type, out_shape = TensorProto.INT64, [] if rank1 else [SHAPE[0]]
    node = helper.make_node(op, names, ["out"], name="native", **attributes)
    output = helper.make_tensor_value_info("out", out_type, out_shape)
    graph = helper.make_graph([node], op, inputs, [output], initializer=initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 9
    return onnx.shape_inference.infer_shapes(model)


def decomposed_model(native: onnx.ModelProto, form: str) -> onnx.ModelProto:
    if form == "primitives":
        return lower(native, "primitives")
    model = ir.serde.deserialize_model(native)
    what = apply_decomposition(next(iter(model.graph)), BY_NAME[form], OPSET)
    assert what, f"{form} does not apply"
    proto = ir.serde.serialize_model(model)
    onnx.checker.check_model(proto, full_check=True)
    return proto


def feeds_for(model: onnx.ModelProto, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    feeds = {}
    for value in model.graph.input:
        tensor = value.type.tensor_type
        shape = [d.dim_value for d in tensor.shape.dim]
        if value.name == "axes":
            feeds["axes"] = np.array([1] if shape == [1] else [0, 1], dtype=np.int64)
            continue
        dtype = helper.tensor_dtype_to_np_dtype(tensor.elem_type)
        feeds[value.name] = rng.integers(-1000, 1000, size=shape).astype(dtype)
        if dtype == np.bool_:  # half True, in no pattern (as a comparison of data gives)
            feeds[value.name] = rng.integers(0, 2, size=shape).astype(bool)
    return feeds


def measure_pair(a: onnx.ModelProto, b: onnx.ModelProto, runs: int) -> tuple[float, float]:
    """Median seconds of a and of b, run alternately on the same inputs; the outputs must be
    equal (the decompositions are exact)."""
    feeds = feeds_for(a)
    sa, sb = onnxruntime_session(a, optimized=True), onnxruntime_session(b, optimized=True)
    out_a, out_b = sa.run(None, feeds), sb.run(None, feeds)
    for x, y in zip(out_a, out_b, strict=True):
        assert x.dtype == y.dtype and np.array_equal(x, y), "decomposition differs"
    for _ in range(3):  # warm-up
        sa.run(None, feeds), sb.run(None, feeds)
    times_a, times_b = [], []
    for _ in range(runs):
        for s, times in ((sa, times_a), (sb, times_b)):
            start = time.perf_counter()
            s.run(None, feeds)
            times.append(time.perf_counter() - start)
    return statistics.median(times_a), statistics.median(times_b)


ROWS = [
    Row(
        "Max",
        "max_binary_to_select",
        "2 inputs",
        "onnxruntime's Where branches on every element: on a data-dependent condition it "
        "costs 41 Adds (--weights), about 20 Max, and the select form needs it",
    ),
    Row(
        "Max",
        "max_binary_to_arithmetic",
        "2 inputs (int32)",
        "Greater, 2 Casts, Not, 2 Mul and an Add: 7 kernels against one",
    ),
    Row(
        "Max",
        "max_nary_to_binary_chain",
        "3 inputs",
        "two binary Max write an intermediate tensor that the 3-input kernel does not",
    ),
    Row(
        "Max",
        "max_broadcasting_to_explicit",
        "broadcast [4096]",
        "Expand materialises the broadcast input",
    ),
    Row(
        "Max",
        "max_widen_to_double",
        "2 inputs (float32)",
        "3 Casts (each 1.8 Adds in onnxruntime) and a Max on twice the bytes",
    ),
    Row(
        "Max",
        "max_widen_to_int64",
        "2 inputs (int32)",
        "3 Casts (each 1.8 Adds in onnxruntime) and a Max on twice the bytes",
    ),
    Row(
        "Max",
        "max_stack_and_reduce",
        "2 inputs",
        "Unsqueeze + Concat copy both inputs before the reduction",
    ),
    Row(
        "Max",
        "primitives",
        "2 inputs",
        "floats: the select form, whose Where dominates; integers: the arithmetic form",
    ),
    Row(
        "ReduceMax",
        "reduce_max_slice_tree",
        "axis 1, keepdims 0",
        "12 levels of Slice + Max: about 2 full passes, and each level is a separate kernel",
    ),
    Row(
        "ReduceMax",
        "reduce_max_loop",
        "axis 1, keepdims 0",
        "4096 Loop iterations, each a Gather, Unsqueeze and Max on 64 elements: per-iteration "
        "overhead dominates",
    ),
    Row(
        "ReduceMax",
        "reduce_max_axes_to_chain",
        "axes 0,1 (all)",
        "a second reduction over the intermediate [64] result",
    ),
    Row(
        "ReduceMax",
        "reduce_max_runtime_axes_to_constant",
        "run-time axes [1], keepdims 1",
        "per axis one ReduceMax, a Tile of the data and a Concat: the data is copied twice",
    ),
    Row(
        "ReduceMax",
        "reduce_max_widen_to_double",
        "axis 1 (float32)",
        "2 Casts around the reduction, each 3x the reduction itself in onnxruntime",
    ),
    Row(
        "ReduceMax",
        "reduce_max_widen_to_int64",
        "axis 1 (int32)",
        "2 Casts around the reduction, each 3x the reduction itself in onnxruntime",
    ),
    Row(
        "ReduceMax",
        "primitives",
        "axis 1, keepdims 0",
        "the Slice tree, with each Max as the select form (floats: its Where dominates) or "
        "the 7-kernel arithmetic form (integers)",
    ),
    Row(
        "ArgMax",
        "arg_max_to_reduce_max",
        "axis 1, first index",
        "ReduceMax, Equal, (IsNaN and Or for floats), Where and ReduceMin: 4-6 kernels against one",
    ),
    Row(
        "ArgMax",
        "arg_max_to_reduce_max",
        "axis 1, last index",
        "as the first index, plus index arithmetic on the small result",
    ),
    Row(
        "ArgMax",
        "arg_max_select_last_index_to_reversal",
        "axis 1, last index",
        "a Slice with step -1 copies the data before the native ArgMax",
    ),
    Row(
        "ArgMax",
        "arg_max_rank1_to_rank2",
        "rank 1 [262144], axis 0",
        "onnxruntime's ArgMax is fast on rank 1 and slow on [1, n] (as slow as on "
        "[64, 4096]); the Unsqueeze/Squeeze themselves are views",
    ),
    Row("ArgMax", "arg_max_widen_to_double", "axis 1 (float32)", "a Cast before the ArgMax"),
    Row("ArgMax", "arg_max_widen_to_int64", "axis 1 (int32)", "a Cast before the ArgMax"),
    Row(
        "ArgMax",
        "primitives",
        "axis 1, first index",
        "the comparison form, with its ReduceMax as the primitive Slice tree above",
    ),
]


def dtypes_of(row: Row) -> list[str]:
    for name in DTYPES:
        if f"({name})" in row.variant:
            return [name]
    return list(DTYPES)


def latency_table(runs: int, quick: bool) -> tuple[list[str], list[dict]]:
    lines = [
        "| op | decomposition | native node | dtype | native (µs) | decomposed (µs) | ratio "
        "| target | verdict |",
        "|---|---|---|---|---:|---:|---:|---:|---|",
    ]
    records = []
    rows = ROWS[:: max(1, len(ROWS) // 4)] if quick else ROWS
    for row in rows:
        for dtype_name in dtypes_of(row):
            native = native_model(row.op, DTYPES[dtype_name], row.variant)
            decomposed = decomposed_model(native, row.form)
            native_s, decomposed_s = measure_pair(native, decomposed, runs)
            ratio = round(decomposed_s / native_s, 2)  # the verdict goes by the ratio shown
            target = TARGETS[row.op]
            verdict = "met" if ratio <= target else f"missed by {ratio / target:.2f}x: {row.notes}"
            records.append(
                dict(
                    op=row.op,
                    form=row.form,
                    variant=row.variant,
                    dtype=dtype_name,
                    native_us=native_s * 1e6,
                    decomposed_us=decomposed_s * 1e6,
                    ratio=ratio,
                    target=target,
                )
            )
            lines.append(
                f"| {row.op} | `{row.form}` | {row.variant} | {dtype_name} | "
                f"{native_s * 1e6:,.0f} | {decomposed_s * 1e6:,.0f} | {ratio:.2f}x | "
                f"≤ {target}x | {verdict} |"
            )
            print(lines[-1], flush=True)
    return lines, records


def loadability_table(quick: bool) -> list[str]:
    """Correct conversions that onnxruntime cannot load or run, per converter."""
    import maxlower
    from maxlower.lower import convert_and_lower
    from maxlower.runtime import bit_equal, run_model
    from tests.conformance import family_cases

    def version_converter(model, opset):
        return onnx.version_converter.convert_version(model, opset)

    def maxlower_convert(model, opset):
        return maxlower.convert(model, opset)

    def maxlower_lowered(model, opset):
        return convert_and_lower(model, opset, "onnxruntime")[0]

    converters: dict[str, Callable] = {
        "onnx.version_converter": version_converter,
        "maxlower convert": maxlower_convert,
        "maxlower convert --profile onnxruntime": maxlower_lowered,
    }
    latest = onnx.defs.onnx_opset_version()
    opsets = [7, 13, latest] if quick else list(range(7, latest + 1))
    cases = family_cases()[:8] if quick else family_cases()
    lines = [
        f"Pairs: {len(cases)} conformance cases × opsets {opsets[0]}–{opsets[-1]}"
        f"{' (quick: a subset)' if quick else ''}. **correct** passes the full checker and "
        "reproduces the expected outputs (onnxruntime, else onnx.reference); **onnxruntime "
        "fails** counts the correct ones that onnxruntime's CPU EP (optimisations off) cannot "
        "load or run.",
        "",
        "| converter | pairs | correct | correct, but onnxruntime fails |",
        "|---|---:|---:|---:|",
    ]
    for name, convert in converters.items():
        pairs = correct = failing = 0
        for case in cases:
            inputs, expected = case.data_sets[0]
            for opset in opsets:
                pairs += 1
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        model = convert(case.model, opset)
                    onnx.checker.check_model(model, full_check=True)
                    feeds = {v.name: x for v, x in zip(model.graph.input, inputs)}
                    outputs, _ = run_model(model, feeds)
                    if not all(bit_equal(e, a) for e, a in zip(expected, outputs, strict=True)):
                        continue
                except Exception:
                    continue
                correct += 1
                try:
                    onnxruntime_session(model).run(None, feeds)
                except Exception:
                    failing += 1
        lines.append(f"| {name} | {pairs} | {correct} | {failing} |")
        print(lines[-1], flush=True)
    return lines


def weights(runs: int) -> None:
    """Per-op latency on float32 [64, 4096], relative to Add (cost.py's WEIGHTS)."""
    ops = {
        "Add": ("Add", 2, {}),
        "Max": ("Max", 2, {}),
        "Greater": ("Greater", 2, {}),
        "Equal": ("Equal", 2, {}),
        "IsNaN": ("IsNaN", 1, {}),
        "Where": ("Where", 3, {}),
        "Cast": ("Cast", 1, {"to": TensorProto.DOUBLE}),
        "Slice": ("Slice", 1, {}),
        "Concat": ("Concat", 2, {"axis": 0}),
        "Expand": ("Expand", 1, {}),
        "Unsqueeze": ("Unsqueeze", 1, {}),
        "Identity": ("Identity", 1, {}),
        "ReduceMax": ("ReduceMax", 1, {"keepdims": 0}),
        "ReduceMin": ("ReduceMin", 1, {}),
        "ArgMax": ("ArgMax", 1, {"axis": 1}),
        "Or": ("Or", 2, {}),
        "Not": ("Not", 1, {}),
    }
    results = {}
    for name, (op, arity, attributes) in ops.items():
        elem = TensorProto.BOOL if op in ("Or", "Not") else TensorProto.FLOAT
        inputs = [helper.make_tensor_value_info(f"i{k}", elem, SHAPE) for k in range(arity)]
        names = [f"i{k}" for k in range(arity)]
        initializers = []
        if op == "Where":
            inputs[0] = helper.make_tensor_value_info("i0", TensorProto.BOOL, SHAPE)
        extra = {
            "Slice": [("starts", [0]), ("ends", [2048]), ("axes", [1])],
            "Expand": [("shape", [2, *SHAPE])],
            "Unsqueeze": [("axes", [0])],
            "ReduceMax": [("axes", [1])],
            "ReduceMin": [("axes", [1])],
        }.get(op, [])
        for init_name, init_value in extra:
            initializers.append(onnx.numpy_helper.from_array(np.array(init_value), init_name))
            names.append(init_name)
        node = helper.make_node(op, names, ["out"], **attributes)
        graph = helper.make_graph(
            [node],
            op,
            inputs,
            [helper.make_empty_tensor_value_info("out")],
            initializer=initializers,
        )
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
        model.ir_version = 9
        model = onnx.shape_inference.infer_shapes(model)
        feeds = feeds_for(model)
        s = onnxruntime_session(model, optimized=True)
        for _ in range(3):
            s.run(None, feeds)
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            s.run(None, feeds)
            times.append(time.perf_counter() - start)
        results[name] = statistics.median(times)
    for name, seconds in results.items():
        print(f"{name:10s} {seconds * 1e6:9.1f} µs  weight {seconds / results['Add']:.2f}")


METHOD = (
    "- Method: one node on [64, 4096] inputs at opset {opset} (reductions over the last axis, "
    "keepdims 0), and the same node with one decomposition applied (family nodes it emits "
    "stay native; `primitives` is the full lowering); onnxruntime CPU EP, default graph "
    "optimisations, 1 thread; the two run alternately, {runs} times each after 3 warm-up "
    "runs, on the same random inputs, and their outputs are checked to be equal. Medians; "
    "ratio = decomposed / native."
)
TARGETS_TEXT = (
    "- Targets (issue 5): ArgMax/ReduceMax decompositions ≤ 2x native, Max ≤ 1.2x. A row that "
    "misses says by how much and what limits it. The decompositions are for backends that "
    "lack the native form (or a type or attribute of it), where there is no native time to "
    "compare with; here onnxruntime runs both, which is what makes a ratio measurable."
)


def section(
    latency: list[str], loadability: list[str], runs: int, seconds: float, command: str
) -> str:
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        START_MARKER,
        "## Decompositions against the native op, in onnxruntime",
        "",
        "Written by `benchmarks/decompose_latency.py`; rerun it rather than editing this section.",
        "",
        f"- Date: {now}; machine: {machine()}",
        f"- Versions: {versions_text()}",
        f"- Command: `{command}` ({seconds:.0f} s wall clock)",
        METHOD.format(opset=OPSET, runs=runs),
        TARGETS_TEXT,
        "",
        *latency,
        "",
        "### Correct conversions that onnxruntime cannot run",
        "",
        *loadability,
        END_MARKER,
    ]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--runs", type=int, default=None, help="timed runs per model (default 100, quick 5)"
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="a few rows, few runs, a subset of the conformance pairs",
    )
    parser.add_argument("--results", type=Path, default=DEFAULT_RESULTS)
    parser.add_argument("--no-results", action="store_true")
    parser.add_argument(
        "--weights",
        action="store_true",
        help="print per-op latencies relative to Add, and nothing else",
    )
    args = parser.parse_args(argv)
    runs = args.runs or (5 if args.quick else 100)
    if args.weights:
        weights(runs)
        return 0
    started = time.monotonic()
    latency, _ = latency_table(runs, args.quick)
    loadability = loadability_table(args.quick)
    command = "python benchmarks/decompose_latency.py" + (" " + " ".join(argv or sys.argv[1:]))
    text = section(latency, loadability, runs, time.monotonic() - started, command.strip())
    if not args.no_results:
        write_section(args.results, text, START_MARKER, END_MARKER)
        print(f"wrote {args.results}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
