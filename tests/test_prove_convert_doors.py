"""Issue 26's classes through the conversion doors: `maxlower convert --prove` and
`maxlower.convert_with_report(..., prove=True)`, on planted wrong conversions.

Each case plants a wrong rewrite in the real converter (as tests/mutants.py does: an entry
of `passes.version.registry.ADAPTERS` replaced while the model converts; where the defect
is the whole graph's, the pipeline's whole-graph path is forced, because its sparse path
hands an adapter a small model of the node's own). For each case:

- an independent judge (onnx.reference and/or onnxruntime, on a witness input) shows the
  planted conversion differs from its source, so every assertion below could be false;
- both doors must not say PROVED: a counterexample (exit 1, CounterexampleFound) that
  replays in onnx.reference on the site and on the two whole models, or INCONCLUSIVE
  (exit 5, ProofInconclusive) with a reason, or the interface check's refutation (exit 1,
  no inputs needed: a site `<graph interface>` that names the difference); except class
  1, whose PROVED is bounded by design (docs/proof.md, "Case splits"): the verdict names
  the split values, `coverage` says `complete: false`, and the witness lies outside them;
- the right form of the same rewrite (the node rebuilt at the target, behind an Identity,
  so that there is a site to prove) is PROVED through both doors, and says its coverage.

Classes, and what conversion can and cannot produce:

1. split domains: a candidate that differs only where a Range bound (an int64 input of the
   site) is 5 or more: bounded PROVED, named; through a Tile, inconclusive (not split).
2. an undefined split value: run-time axes of ReduceMax, undefined at 5, the candidate
   wrong at 1: refuted.
3. shared decided by too little: conversion has no "shared" nodes, but it has nodes no
   record names. A planted pass that swaps the inputs of a Where (same schema at both
   opsets: never recorded) goes unproved: xfail, a soundness bug (below). One that
   redeclares a graph input's shape is refuted by the interface check.
4. outputs by position: a planted pass that swaps the graph's outputs, or renames one, is
   refuted by the interface check (`prove_run` had none: both were PROVED, exit 0, and
   written); one that renames the outputs across nodes is refuted by its site.
5. semantics: a float ReduceSum (numpy: pairwise) against the left-to-right chain of its
   8 elements in a candidate: not proved (inconclusive, the order named as not modelled).
6. undefined per element: the model's other output is an out-of-range Cast; the
   candidate differs only where that Cast is undefined: refuted.
7. budgets: a candidate that expands to [3000, 3000] (elements budget) or runs a Loop of
   90,000 trips (the deadline, slow tier): inconclusive, within --prove-timeout + 10%.
8. (external data: tests/test_prove_external.py has both doors.)
9. an initializer that is also a graph input, read by the site: the candidate pins it to
   its default: refuted (never exit 4); the right form proved.
10. (the bound named: tests/test_prove_soundness.py has both doors.)

A soundness bug this file found, fixed: `prove_run` (maxlower/prove/sites.py) proved the
sites the run's records name and nothing else, so a node that changed without a record
(a Where, whose schema is the same at both opsets, its inputs swapped by a pass) was taken
as unchanged: "PROVED: composing into a proof of the whole model", exit 0, and written.
Now every graph's other nodes, inputs, outputs and initializers must be the same before
and after (`_unrecorded_changes`), or the proof is inconclusive.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import pathlib
import time
from collections.abc import Callable

import numpy as np
import onnx
import onnx_ir as ir
import pytest
from click.testing import CliRunner
from onnx.reference import ReferenceEvaluator

pytest.importorskip("z3", reason="the prover needs z3-solver: pip install -e '.[prove]'")

import maxlower
import maxlower.pipeline
from maxlower.cli import cli
from maxlower.errors import CounterexampleFound, ProofInconclusive
from passes.graph_utils import replace_node
from passes.version.registry import ADAPTERS

DT = ir.DataType
Adapter = Callable[[ir.Node, ir.Node], "str | None"]
REFUTED, INCONCLUSIVE, BOUNDED = "refuted", "inconclusive", "bounded"
INTERFACE = "interface"  # refuted by the interface check: no input needed to show it
NOT_PROVED = "not proved"  # refuted or inconclusive: what a fix of the xfail cases may give


def _parse(opset: int, signature: str, body: str) -> onnx.ModelProto:
    text = f'<ir_version: 8, opset_import: ["" : {opset}]>\nm {signature}\n{{\n{body}\n}}'
    model = onnx.parser.parse_model(text)
    onnx.checker.check_model(model, full_check=True)
    return model


# --- planted adapters -------------------------------------------------------------------------
def _keepdims(value: int) -> dict:
    return {"keepdims": ir.AttrInt64("keepdims", value)}


def _rebuilt(node: ir.Node, b, version: int) -> ir.Value:
    """The node's op again, at schema `version`, on the same inputs and attributes."""
    attributes = {a.name: a for a in node.attributes.values()}
    dtype = node.outputs[0].dtype
    return b.op(node.op_type, list(node.inputs), attributes, dtype=dtype, family_version=version)


def _right(version: int) -> Adapter:
    """The right form: the node rebuilt at the target's schema, behind an Identity."""

    def adapter(node: ir.Node, b) -> str:
        same = _rebuilt(node, b, version)
        replace_node(node, b.op("Identity", [same], dtype=same.dtype))
        return "rebuilt at the target, behind an Identity"

    return adapter


def _range_bound_at_five(node: ir.Node, b) -> str:
    """Max(a, b) + [Size(Range(0, a, 1)) > 4]: wrong only where a >= 5."""
    m = _rebuilt(node, b, 12)
    zero, one, four = (b.const(np.array(v, np.int64)) for v in (0, 1, 4))
    limit = b.squeeze(node.inputs[0], [0])
    size = b.op("Size", [b.op("Range", [zero, limit, one], dtype=DT.INT64)], dtype=DT.INT64)
    big = b.cast(b.op("Greater", [size, four], dtype=DT.BOOL), DT.INT64)
    replace_node(node, b.op("Add", [m, big], dtype=DT.INT64))
    return "planted: + [a >= 5] through a Range bound"


def _tile_repeats_at_five(node: ir.Node, b) -> str:
    """Max(a, b) + Size(Tile(1, clip(a, 0, 5))) - Size(Tile(1, clip(a, 0, 4))): wrong only
    where a >= 5."""
    a = node.inputs[0]
    m = _rebuilt(node, b, 12)
    zero, one, four, five = (b.const(np.array([v], np.int64)) for v in (0, 1, 4, 5))

    def length(high: ir.Value) -> ir.Value:
        low = b.op("Min", [a, high], dtype=DT.INT64, family_version=12)
        repeats = b.op("Max", [low, zero], dtype=DT.INT64, family_version=12)
        return b.op("Size", [b.op("Tile", [one, repeats], dtype=DT.INT64)], dtype=DT.INT64)

    extra = b.op("Sub", [length(five), length(four)], dtype=DT.INT64)
    replace_node(node, b.op("Add", [m, extra], dtype=DT.INT64))
    return "planted: + [a >= 5] through Tile repeats"


def _axis_one_shifted(node: ir.Node, b) -> str:
    """ReduceMax(x, axes) + [axes == 1]: wrong at axes 1 (and -1)."""
    reduced = _rebuilt(node, b, 20)
    one = b.const(np.array([1], np.int64))
    hit = b.cast(b.op("Equal", [node.inputs[1], one], dtype=DT.BOOL), DT.FLOAT)
    replace_node(node, b.op("Add", [reduced, hit], dtype=DT.FLOAT))
    return "planted: + [axes == 1]"


def _negated_past_1000(node: ir.Node, b) -> str:
    """Where(x > 1000, -Max(x, z), Max(x, z)): wrong exactly where Cast<int8>(x), the
    model's other output, is out of range."""
    m = _rebuilt(node, b, 12)
    far = b.op("Greater", [node.inputs[0], b.const(np.array(1000, np.float32))], dtype=DT.BOOL)
    negated = b.op("Neg", [m], dtype=DT.FLOAT)
    replace_node(node, b.op("Where", [far, negated, m], dtype=DT.FLOAT))
    return "planted: negated where x > 1000"


def _default_pinned(node: ir.Node, b) -> str:
    """Max(a, w) with w, a graph input with a default, read as its default (a constant)."""
    pinned = b.const(np.array([1.0, 2.0], np.float32))
    replace_node(node, b.op("Max", [node.inputs[0], pinned], dtype=DT.FLOAT, family_version=12))
    return "planted: the input's default taken as a constant"


def _sum_minus_chain(node: ir.Node, b) -> str:
    """Max(a, w) + (ReduceSum(a) - (((a0 + a1) + a2) + ... + a7)): numpy sums 8 elements
    pairwise, so the difference is not always 0 (at the witness it is 1)."""
    a = node.inputs[0]
    m = _rebuilt(node, b, 12)
    total = b.op("ReduceSum", [a], _keepdims(1), dtype=DT.FLOAT)
    chain = b.slice(a, [0], [1], [0])
    for i in range(1, 8):
        chain = b.op("Add", [chain, b.slice(a, [i], [i + 1], [0])], dtype=DT.FLOAT)
    extra = b.op("Sub", [total, chain], dtype=DT.FLOAT)
    # (inf - inf is NaN: taken as 0, so that only the order of the adds tells them apart)
    nan = b.op("IsNaN", [extra], dtype=DT.BOOL)
    zero = b.const(np.array([0.0], np.float32))
    extra = b.op("Where", [nan, zero, extra], dtype=DT.FLOAT)
    replace_node(node, b.op("Add", [m, extra], dtype=DT.FLOAT))
    return "planted: + (pairwise sum - left-to-right sum)"


def _expand_3000(node: ir.Node, b) -> str:
    """Max(a, w) + ReduceSum(Expand(1, [3000, 3000])): 9,000,000 elements in one tensor."""
    m = _rebuilt(node, b, 12)
    one = b.const(np.array([1.0], np.float32))
    big = b.op("Expand", [one, b.const(np.array([3000, 3000], np.int64))], dtype=DT.FLOAT)
    total = b.op("ReduceSum", [big], _keepdims(0), dtype=DT.FLOAT)
    replace_node(node, b.op("Add", [m, total], dtype=DT.FLOAT))
    return "planted: + a sum over [3000, 3000]"


def _loop_90000(node: ir.Node, b) -> str:
    """Max(a, w) + Loop(90,000 trips of v + 1): inside the trip budget, past the deadline."""
    m = _rebuilt(node, b, 12)

    def value(name: str, dtype: DT, shape: list[int]) -> ir.Value:
        return ir.Value(name=name, type=ir.TensorType(dtype), shape=ir.Shape(shape))

    i, c, v = value("i", DT.INT64, []), value("c", DT.BOOL, []), value("v", DT.FLOAT, [1])
    step = ir.Value(
        name="k",
        type=ir.TensorType(DT.FLOAT),
        shape=ir.Shape([1]),
        const_value=ir.tensor(np.array([1.0], np.float32), name="k"),
    )
    keep, add = ir.node("Identity", [c], name="keep"), ir.node("Add", [v, step], name="add")
    for out, name, dtype, shape in ((keep, "co", DT.BOOL, []), (add, "vo", DT.FLOAT, [1])):
        out.outputs[0].name, out.outputs[0].dtype = name, dtype
        out.outputs[0].shape = ir.Shape(shape)
    body = ir.Graph(
        [i, c, v], [keep.outputs[0], add.outputs[0]], nodes=[keep, add], initializers=[step],
        name="body",
    )  # fmt: skip
    trips, true = b.const(np.array(90_000, np.int64)), b.const(np.array(True))
    start = b.const(np.array([0.0], np.float32))
    looped = b.op(
        "Loop", [trips, true, start], {"body": ir.AttrGraph("body", body)}, dtype=DT.FLOAT
    )
    looped.shape = ir.Shape([1])
    replace_node(node, b.op("Add", [m, looped], dtype=DT.FLOAT))
    return "planted: + a Loop of 90,000 trips"


def _whole_graph(real: Adapter, change: Callable[[ir.Graph], None]) -> Adapter:
    """The real adapter, after `change` to the node's graph (the main graph: the case forces
    the whole-graph path)."""

    def adapter(node: ir.Node, b) -> str | None:
        change(node.graph)
        return real(node, b)

    return adapter


def _swap_outputs(graph: ir.Graph) -> None:
    graph.outputs[0], graph.outputs[1] = graph.outputs[1], graph.outputs[0]


def _rename_output(graph: ir.Graph) -> None:
    graph.outputs[1].name = "z"


def _cross_rename(graph: ir.Graph) -> None:
    first, second = graph.outputs
    first.name, second.name = "tmp", "y1"
    first.name = "y2"


def _swap_where_inputs(graph: ir.Graph) -> None:
    for node in graph:
        if node.op_type == "Where":
            x, y = node.inputs[1], node.inputs[2]
            node.replace_input_with(1, y)
            node.replace_input_with(2, x)


def _redeclare_input(graph: ir.Graph) -> None:
    graph.inputs[1].shape = ir.Shape([1])


# --- the cases --------------------------------------------------------------------------------
F32, I64 = np.float32, np.int64
MAX_I64 = _parse(13, "(int64[1] a, int64[1] b) => (int64[1] y)", "y = Max(a, b)")
MAX_F32 = _parse(13, "(float[2] a, float[2] w) => (float[2] y)", "y = Max(a, w)")
TWO_OUTPUTS = _parse(
    13, "(float[2] a, float[2] b) => (float[2] y1, float[2] y2)", "y1 = Max(a, b)\ny2 = Min(a, b)"
)
WITH_WHERE = _parse(
    13,
    "(float[2] a, float[2] b, bool[2] c) => (float[2] y, float[2] w)",
    "y = Max(a, b)\nw = Where(c, a, b)",
)
WITH_ADD = _parse(
    13, "(float[2] a, float[2] b) => (float[2] y, float[2] w)", "y = Max(a, b)\nw = Add(a, b)"
)


def _with_default(model: onnx.ModelProto) -> onnx.ModelProto:
    """The model with graph input 'w' also an initializer (its default, [1, 2])."""
    out = onnx.ModelProto()
    out.CopyFrom(model)
    out.graph.initializer.append(onnx.numpy_helper.from_array(np.array([1, 2], F32), "w"))
    onnx.checker.check_model(out, full_check=True)
    return out


REAL_MAX = ADAPTERS["Max", 13, 12]
BUG = "soundness bug: convert --prove proves only the nodes the run's records name"


@dataclasses.dataclass(frozen=True)
class Case:
    klass: int
    source: onnx.ModelProto
    target: int
    key: tuple[str, int, int]
    wrong: Adapter
    witness: dict[str, np.ndarray]
    expect: str  # REFUTED, INTERFACE, INCONCLUSIVE, BOUNDED or NOT_PROVED
    says: str = ""  # in the verdict (inconclusive: the reason; bounded: the split named)
    right: Adapter | None = None
    whole_graph: bool = False  # force the pipeline's whole-graph path
    options: tuple[str, ...] = ()  # --prove-* options (and the library's prove= dict)
    judges: tuple[str, ...] = ("reference", "onnxruntime")
    slow: bool = False
    xfail: str | None = None

    def prove(self) -> dict:
        names = {"--prove-timeout": "timeout", "--prove-max-dim": "max_dim"}
        pairs = zip(self.options[::2], self.options[1::2])
        return {names[k]: float(v) if k == "--prove-timeout" else int(v) for k, v in pairs}


CASES = {
    "1_range_bound_at_5": Case(
        1, MAX_I64, 12, ("Max", 13, 12), _range_bound_at_five,
        {"a": np.array([5], I64), "b": np.array([0], I64)},
        BOUNDED, "a[0] (site '<unnamed Max>') in [0, 1, 2, 3, 4]", _right(12),
    ),
    "1_tile_repeats_at_5": Case(
        1, MAX_I64, 12, ("Max", 13, 12), _tile_repeats_at_five,
        {"a": np.array([5], I64), "b": np.array([0], I64)},
        INCONCLUSIVE, "Tile repeats is computed at run time from the inputs, not split",
    ),
    "2_axes_undefined_at_5_wrong_at_1": Case(
        2,
        _parse(18, "(float[2, 3] x, int64[1] axes) => (float[?, ?] y)",
               "y = ReduceMax<keepdims = 1>(x, axes)"),
        20, ("ReduceMax", 18, 20), _axis_one_shifted,
        {"x": np.arange(6, dtype=F32).reshape(2, 3), "axes": np.array([1], I64)},
        REFUTED, right=_right(20),
    ),
    "3_unrecorded_where_rewired": Case(
        3, WITH_WHERE, 12, ("Max", 13, 12), _whole_graph(REAL_MAX, _swap_where_inputs),
        {"a": np.array([1, 2], F32), "b": np.array([3, 4], F32), "c": np.array([1, 0], bool)},
        NOT_PROVED, whole_graph=True,
    ),
    "3_input_shape_redeclared": Case(
        3, WITH_ADD, 12, ("Max", 13, 12), _whole_graph(REAL_MAX, _redeclare_input),
        {"a": np.array([1, 2], F32), "b": np.array([3, 4], F32)},
        INTERFACE, "input 'b' is declared of shape [2] in the reference and [1]", whole_graph=True,
        judges=("onnxruntime",),
    ),
    "4_outputs_swapped": Case(
        4, TWO_OUTPUTS, 12, ("Max", 13, 12), _whole_graph(REAL_MAX, _swap_outputs),
        {"a": np.array([1, 4], F32), "b": np.array([3, 2], F32)},
        INTERFACE, "the outputs are in another order", whole_graph=True,
    ),
    "4_output_renamed": Case(
        4, TWO_OUTPUTS, 12, ("Max", 13, 12), _whole_graph(REAL_MAX, _rename_output),
        {"a": np.array([1, 4], F32), "b": np.array([3, 2], F32)},
        INTERFACE, "output 'y2' of the reference is not an output of the candidate",
        whole_graph=True,
    ),
    "4_outputs_renamed_across_nodes": Case(
        4, TWO_OUTPUTS, 12, ("Max", 13, 12), _whole_graph(lambda n, b: "renamed", _cross_rename),
        {"a": np.array([1, 4], F32), "b": np.array([3, 2], F32)},
        REFUTED, whole_graph=True,
    ),
    "5_pairwise_sum_against_a_chain": Case(
        5,
        _parse(13, "(float[8] a, float[8] w) => (float[8] y)", "y = Max(a, w)"),
        12, ("Max", 13, 12), _sum_minus_chain,
        {"a": np.array([2.0**25, 1, -(2.0**25), 1, 0.5, 1, 1, 1], F32), "w": np.zeros(8, F32)},
        INCONCLUSIVE, "numpy's order of adds is not modelled", _right(12),
        options=("--prove-timeout", "20"),
    ),
    "6_differs_where_another_output_is_undefined": Case(
        6,
        _parse(13, "(float[1] x, float[1] z) => (int8[1] a, float[1] y)",
               "a = Cast<to = 3>(x)\ny = Max(x, z)"),
        12, ("Max", 13, 12), _negated_past_1000,
        {"x": np.array([2000], F32), "z": np.array([0], F32)},
        REFUTED, right=_right(12),
    ),
    "7_expand_past_the_elements_budget": Case(
        7, MAX_F32, 12, ("Max", 13, 12), _expand_3000,
        {"a": np.array([1, 2], F32), "w": np.array([0, 0], F32)},
        INCONCLUSIVE, "past the prover's budget of 1000000 per tensor", _right(12),
        options=("--prove-timeout", "5"),
    ),
    "7_loop_past_the_deadline": Case(
        7, MAX_F32, 12, ("Max", 13, 12), _loop_90000,
        {"a": np.array([1, 2], F32), "w": np.array([0, 0], F32)},
        INCONCLUSIVE, "timed out", options=("--prove-timeout", "5"),
        judges=("onnxruntime",), slow=True,
    ),
    "9_an_input_with_a_default_pinned": Case(
        9, _with_default(MAX_F32), 12, ("Max", 13, 12), _default_pinned,
        {"a": np.array([0, 0], F32), "w": np.array([5, 6], F32)},
        REFUTED, right=_right(12),
    ),
}  # fmt: skip


def _params(cases, *, xfails: bool = True):
    out = []
    for name in sorted(cases):
        case = cases[name]
        marks = [pytest.mark.slow] if case.slow else []
        if xfails and case.xfail:
            marks.append(pytest.mark.xfail(strict=True, reason=case.xfail))
        out.append(pytest.param(name, marks=marks))
    return out


# --- running ----------------------------------------------------------------------------------
@contextlib.contextmanager
def _planted(case: Case, adapter: Adapter, monkeypatch):
    with monkeypatch.context() as patch:
        patch.setitem(ADAPTERS, case.key, adapter)
        if case.whole_graph:
            patch.setattr(maxlower.pipeline, "convert_sparse", lambda *a, **k: None)
        yield


def _converted(case: Case, adapter: Adapter, monkeypatch) -> onnx.ModelProto:
    """The conversion with `adapter` planted, unproved (what --force would write)."""
    with _planted(case, adapter, monkeypatch):
        return maxlower.convert(case.source, case.target)


def _outputs(model: onnx.ModelProto, feed: dict, judge: str) -> list[tuple[str, np.ndarray]]:
    if judge == "reference":
        values = ReferenceEvaluator(model).run(None, feed)
    else:
        import onnxruntime

        session = onnxruntime.InferenceSession(
            model.SerializeToString(), providers=["CPUExecutionProvider"]
        )
        values = session.run(None, feed)
    return list(zip([o.name for o in model.graph.output], values))


def _differ(source, converted, feed, judge: str, only: list[str] | None = None) -> bool:
    """Whether a caller of `source` sees `converted` differ on `feed` (outputs by position
    and name; a feed the converted model refuses is a difference too)."""
    expected = _outputs(source, feed, judge)
    try:
        actual = _outputs(converted, feed, judge)
    except Exception as error:  # the runtime refuses a feed the source accepts
        if "invalid dimensions for input" in str(error).lower():
            return True
        raise
    if [n for n, _ in expected] != [n for n, _ in actual]:
        return True
    return any(
        (only is None or name in only)
        and (e.shape != a.shape or not np.array_equal(e, a, equal_nan=True))
        for (name, e), (_, a) in zip(expected, actual)
    )


def _cli(case: Case, tmp_path: pathlib.Path, adapter: Adapter, monkeypatch):
    source = tmp_path / "m.onnx"
    onnx.save(case.source, source)
    out, report = tmp_path / "o.onnx", tmp_path / "r.json"
    args = ["convert", str(source), "--opset", str(case.target), "--prove", "-o", str(out)]
    with _planted(case, adapter, monkeypatch):
        start = time.perf_counter()
        result = CliRunner().invoke(cli, [*args, *case.options, "--json", str(report)])
        elapsed = time.perf_counter() - start
    verdict = json.loads(report.read_text())["proof"] if report.exists() else None
    return result, verdict, out, elapsed


def _replays_on_the_models(case: Case, wrong: onnx.ModelProto, inputs: dict) -> None:
    """A counterexample's inputs (the site's, here the models' own) make the source and the
    planted conversion differ in onnx.reference."""
    names = {v.name for v in case.source.graph.input}
    assert set(inputs) <= names, inputs
    feed = {**case.witness, **inputs}
    assert _differ(case.source, wrong, feed, "reference"), feed


# --- the tests --------------------------------------------------------------------------------
@pytest.mark.parametrize("name", _params(CASES, xfails=False))
def test_the_planted_conversion_differs_from_its_source(name, monkeypatch):
    """The independent judge: each planted conversion is wrong on its witness."""
    case = CASES[name]
    wrong = _converted(case, case.wrong, monkeypatch)
    only = ["y"] if case.klass == 6 else None  # (output 'a' is undefined at the witness)
    for judge in case.judges:
        assert _differ(case.source, wrong, case.witness, judge, only), (name, judge)
    if case.right is not None:
        right = _converted(case, case.right, monkeypatch)
        for judge in case.judges:
            assert not _differ(case.source, right, case.witness, judge, only), (name, judge)


@pytest.mark.parametrize("name", _params(CASES))
def test_convert_prove_does_not_prove_a_planted_conversion(name, tmp_path, monkeypatch):
    case = CASES[name]
    result, verdict, out, elapsed = _cli(case, tmp_path, case.wrong, monkeypatch)
    output = result.output
    if case.expect == BOUNDED:
        assert result.exit_code == 0, output
        (line,) = [x for x in output.splitlines() if x.startswith("proof: PROVED")]
        assert f"for the inputs with {case.says} (case-split values) only" in line, line
        assert "for all inputs" not in output
        assert verdict["coverage"]["complete"] is False
        ((element, values),) = verdict["coverage"]["split"].items()
        # the witness is a value the proof did not try
        assert int(case.witness[element.split("[")[0]][0]) not in values
        return
    assert "proof: PROVED" not in output, output
    if case.expect == NOT_PROVED:
        assert result.exit_code in (1, 5) and not out.exists(), output
    elif case.expect == INTERFACE:
        assert result.exit_code == 1 and not out.exists(), output
        assert "proof: COUNTEREXAMPLE at node '<graph interface>'" in output, output
        assert case.says in output, output
        (site,) = [s for s in verdict["sites"] if s["kind"] == "interface"]
        assert site["status"] == "counterexample" and case.says in site["reason"]
    elif case.expect == REFUTED or (case.klass == 5 and result.exit_code == 1):
        assert result.exit_code == 1, output
        assert "the difference is reproduced" in output, output
        assert not out.exists()
        found = dict(np.load(str(out) + ".counterexample.npz"))
        _replays_on_the_models(case, _converted(case, case.wrong, monkeypatch), found)
    else:
        assert result.exit_code == 5, output
        assert verdict["status"] == "inconclusive"
        failing = [s for s in verdict["sites"] if s["status"] != "proved"]
        assert failing and all(s["reason"] for s in failing), verdict
        assert case.says in output, output
    if case.klass == 7:
        timeout = float(case.options[case.options.index("--prove-timeout") + 1])
        assert elapsed < timeout * 1.1, elapsed


@pytest.mark.parametrize("name", _params(CASES))
def test_the_library_does_not_prove_a_planted_conversion(name, monkeypatch):
    case = CASES[name]
    with _planted(case, case.wrong, monkeypatch):
        start = time.perf_counter()
        try:
            _, report = maxlower.convert_with_report(case.source, case.target, prove=case.prove())
        except (CounterexampleFound, ProofInconclusive) as error:
            raised, proof = error, error.report
        else:
            raised, proof = None, report.proof
        elapsed = time.perf_counter() - start
    if case.expect == BOUNDED:
        assert raised is None and proof.ok, proof.summary()
        assert case.says in proof.headline() and proof.coverage["complete"] is False
        return
    assert raised is not None, proof.summary()
    if case.expect == NOT_PROVED:
        assert raised.exit_code in (1, 5), str(raised)
    elif case.expect == INTERFACE:
        assert isinstance(raised, CounterexampleFound) and raised.exit_code == 1
        assert case.says in str(raised) and proof.first_failure.kind == "interface"
    elif case.expect == REFUTED:
        assert isinstance(raised, CounterexampleFound) and raised.exit_code == 1
        found = proof.counterexample
        assert found is not None and found.reproduced, proof.summary()
        _replays_on_the_models(case, _converted(case, case.wrong, monkeypatch), found.inputs)
    elif case.klass == 5 and isinstance(raised, CounterexampleFound):  # (one that replays)
        assert proof.counterexample.reproduced, proof.summary()
        wrong = _converted(case, case.wrong, monkeypatch)
        _replays_on_the_models(case, wrong, proof.counterexample.inputs)
    else:
        assert isinstance(raised, ProofInconclusive) and raised.exit_code == 5
        assert case.says in str(raised), str(raised)
    if case.klass == 7:
        assert elapsed < case.prove()["timeout"] * 1.1, elapsed


RIGHT = {name: case for name, case in CASES.items() if case.right is not None}


@pytest.mark.parametrize("name", _params(RIGHT))
def test_the_right_form_of_each_planted_rewrite_is_proved_through_both_doors(
    name, tmp_path, monkeypatch
):
    case = CASES[name]
    with _planted(case, case.right, monkeypatch):
        _, report = maxlower.convert_with_report(case.source, case.target, prove=case.prove())
    proof = report.proof
    assert proof.ok and len(proof.sites) >= 1, proof.summary()
    result, verdict, out, _ = _cli(case, tmp_path, case.right, monkeypatch)
    assert result.exit_code == 0 and out.exists(), result.output
    assert verdict["coverage"] == proof.coverage
    (line,) = [x for x in result.output.splitlines() if x.startswith("proof: PROVED")]
    # the coverage said: complete, or the bound named
    assert proof.coverage_text() in line
    assert (proof.coverage_text() == "") == proof.coverage["complete"], proof.coverage
    # and the real conversion of the same model is proved too
    _, real = maxlower.convert_with_report(case.source, case.target, prove=case.prove())
    assert real.proof.ok, real.proof.summary()
