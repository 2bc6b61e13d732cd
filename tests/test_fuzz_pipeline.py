"""Fuzzing every pass: random valid family models (tests/strategies.py), converted to a
random target opset, lowered with a random profile, and checked with the project's
verifier against the original.

Per case: the conversion is refused with a ConversionError that names node, op, reason and
remedy, or it gives a model that passes the full checker, that a second conversion leaves
alone, and that the verifier finds equivalent; the same for the lowering, whose result
also holds no node the profile rejects; the input model is never modified.

Per case also: the command line and the library give the same model or refusal, and a
conversion through a drawn intermediate opset succeeds and verifies whenever the two direct
ones do (two known classes are counted instead: see `_assert_chain_converts`).

Budget: the slow tier runs EXAMPLES cases, the default tier a small share (tests/budget.py),
the same ones every run (derandomised: a red CI is a real regression, not a new draw). To fuzz
for a while instead:

    python -m pytest -m slow --hypothesis-profile=long tests/test_fuzz_pipeline.py -k pipeline -s

runs ten times as many fresh cases (about half an hour), and prints how many ran. A
failure is shrunk to a minimal model, printed, and saved as ONNX text (with the target,
profile and verifier seed in its header) in FAILURE_DIRECTORY (the system's temporary
directory's maxlower-fuzz-failures); `python -m tests.test_fuzz_pipeline FILE` replays a saved
case.
"""

from __future__ import annotations

import collections
import os
import pathlib
import re
import sys
import tempfile
import time

import numpy as np
import onnx
import onnx.reference
import onnx_ir as ir
import pytest
from hypothesis import event, given, note, settings
from hypothesis.control import current_build_context

import maxlower
from maxlower.api import lower
from maxlower.profiles import load_profile
from maxlower.runtime import onnxruntime_session
from maxlower.serde import deserialize
from passes.builder import schema_version
from passes.errors import ConversionError
from passes.function_types import InferFunctionTypesPass
from tests import budget
from tests.strategies import FuzzCase, family_models, fuzz_cases
from tests.test_doors import Outcome, model_differences, run_cli, run_library
from tests.test_io_sparse import both_paths

EXAMPLES = 1000  # in the slow tier (tests/budget.py)
STRATEGY_EXAMPLES = 300
FAILURE_DIRECTORY = pathlib.Path(tempfile.gettempdir()) / "maxlower-fuzz-failures"

# (deadline and health checks: the suite's hypothesis profile, tests/conftest.py)
SETTINGS = dict(database=None)  # a failure is saved as ONNX text instead (see failure_file)


# --- the property -------------------------------------------------------------------------


def check_case(case: FuzzCase) -> str:
    """Run one case through convert, lower and verify; returns what happened (for the
    statistics); raises AssertionError on a failure."""
    original = onnx.ModelProto()
    original.CopyFrom(case.model)  # compared as messages: equal ones may serialise differently
    library = _assert_doors_agree(case)
    try:
        converted, report = maxlower.convert_with_report(case.model, case.target)
    except ConversionError as error:
        _assert_well_formed(error)
        return f"convert refused: {error.op_type}"
    _assert_unmodified(case.model, original, "convert")
    _assert_every_version_change_listed(case.model, case.target, report, converted)
    assert library.code == 0 and library.model == converted, "convert is not deterministic"
    onnx.checker.check_model(converted, full_check=True)
    names = [v.name for v in converted.graph.value_info]
    assert len(names) == len(set(names)), f"value_info names a value twice: {names}"
    _assert_command_line_path_agrees(case)
    _, again = maxlower.convert_with_report(converted, case.target)
    assert not again.kinds(), f"a second conversion changed it again: {again.kinds()}"
    verified = _assert_equivalent(case, converted) + _assert_chain_converts(case)
    if case.profile is None:
        return f"converted, {verified}"
    before = onnx.ModelProto()
    before.CopyFrom(converted)
    try:
        lowered = lower(converted, case.profile)
    except ConversionError as error:
        _assert_well_formed(error)
        return f"converted, {verified}; lower refused: {case.profile}"
    _assert_unmodified(converted, before, "lower")
    onnx.checker.check_model(lowered, full_check=True)
    _assert_only_accepted_nodes(lowered, case.profile)
    return f"converted, {verified}; lowered for {case.profile}, {_assert_equivalent(case, lowered)}"


def _assert_every_version_change_listed(model, target: int, report, converted) -> None:
    """Every main-graph node whose schema version differs at the target and that is still
    there in `converted` (some output of it still computed) is in the report, under some
    kind (a family node with only type-only steps too: it is relabelled). A node a rewrite
    absorbed is gone, not relabelled: the Constant of ReduceMax-18's empty axes becomes
    ReduceMax-13's reduce-over-all (the rewrite of the ReduceMax says so)."""
    computed = {o for node in converted.graph.node for o in node.output}
    defaults = [o.version for o in model.opset_import if o.domain in ("", "ai.onnx")]
    if not defaults:
        return
    source = defaults[-1]  # (onnx's checker reads the last: tests.strategies, aliases)
    listed = {entry.node for entry in [*report.rewrites, *report.conversions]}
    for node in model.graph.node:
        if node.domain not in ("", "ai.onnx"):
            continue
        if not computed.intersection(node.output):
            continue  # absorbed by a rewrite that is listed itself
        if _since(node.op_type, source) != _since(node.op_type, target):
            label = node.name or f"<unnamed {node.op_type}>"
            assert label in listed, f"{label} ({node.op_type}) changed version, not listed"


def _since(op_type: str, opset: int) -> int | None:
    try:
        return onnx.defs.get_schema(op_type, opset, "").since_version
    except onnx.defs.SchemaError:  # (not an op there)
        return None


def _assert_doors_agree(case: FuzzCase) -> Outcome:
    """The command line and the library: the same model or the same refusal (every door,
    the same answer); returns the library's outcome."""
    library = run_library(case.model, case.target)
    with tempfile.TemporaryDirectory() as directory:
        path = pathlib.Path(directory) / "model.onnx"
        onnx.save(case.model, path)
        cli = run_cli(path, case.target, pathlib.Path(directory) / "out.onnx")
    assert library.code != 4, f"the library crashed: {library.message}"
    assert (cli.code, cli.message) == (library.code, library.message), (cli, library)
    if cli.code == 0:
        assert model_differences(cli.model, library.model) == []
    return library


def _assert_chain_converts(case: FuzzCase) -> str:
    """convert(m, target) succeeded: if convert(m, via) does too, then so must
    convert(convert(m, via), target), and the result must compute what m does.

    Two classes are known and counted instead of failing:
    - a form maxlower chose for opset `via` whose own ops have no exact form at the target:
      the refused node is one the first conversion made (none is known since ArgMax's
      select_last_index=1 maps its index back by a Gather wherever the axis is static);
    - `via` above both opsets, across a change of the refused node's op: the newer schema
      states less than the older one required (Max-6 needs inputs of one shape, Max-8
      broadcasts, so coming back the shapes must be proven equal)."""
    if case.via is None:
        return ""
    try:
        halfway = maxlower.convert(case.model, case.via)
    except ConversionError:
        return ""
    try:
        chained = maxlower.convert(halfway, case.target)
    except ConversionError as error:
        if error.node_name not in _node_names(case.model):
            return "; chained: a form made at the other opset has no exact form at the target"
        low = max(_effective_opset(case.model), case.target)
        op = error.op_type
        if case.via > low and schema_version(op, case.via) != schema_version(op, low):
            return "; chained: up across a change of the op and back (the newer says less)"
        raise
    _assert_equivalent(case, chained)
    return "; chained too"


def _effective_opset(model: onnx.ModelProto) -> int:
    """The default-domain opset onnx's checker reads: the last '' entry, else 'ai.onnx'."""
    versions = {o.domain: o.version for o in model.opset_import}
    return versions.get("", versions.get("ai.onnx"))


def _node_names(model: onnx.ModelProto) -> set[str]:
    graphs = [model.graph, *model.functions]
    names = set()
    while graphs:
        graph = graphs.pop()
        for node in graph.node:
            names.add(node.name)
            graphs += [a.g for a in node.attribute if a.HasField("g")]
            graphs += [g for a in node.attribute for g in a.graphs]
    return names


def _assert_command_line_path_agrees(case: FuzzCase) -> None:
    """`maxlower convert` converts a main-graph-only model without onnx_ir for the nodes
    that keep their schema, and copies the conversion of nodes that convert alike
    (maxlower.sparse, maxlower.replay): it must write what the full onnx_ir path writes."""
    graph_ops = {n.op_type for n in case.model.graph.node}
    if case.model.functions or graph_ops & {"If", "Loop", "Scan"}:
        return  # the command line takes the full path for these
    with tempfile.TemporaryDirectory() as directory:
        path = pathlib.Path(directory) / "model.onnx"
        onnx.save(case.model, path)
        full, sparse = both_paths(path, case.target)
    assert sparse is None or sparse == full, "the command line's sparse path differs"


def _assert_well_formed(error: ConversionError) -> None:
    assert error.node_name and error.op_type and error.reason and error.remedy, repr(error)
    assert "To make it possible:" in str(error)


def _assert_equivalent(case: FuzzCase, candidate: onnx.ModelProto) -> str:
    """'verified', or why nothing could be compared; AssertionError on a difference."""
    report = maxlower.verify(case.model, candidate, seed=case.seed)
    if report.status == "inconclusive":
        # an op version no runtime here implements: onnxruntime has no kernel below opset 7
        # and none for some types (Max-6 on double), onnx.reference none for some old
        # versions (Clip-1). The verifier tells which model it was.
        unimplemented = any("no runtime here implements" in n for n in report.notes)
        return "result runs nowhere" if unimplemented else "original runs nowhere"
    if not report.ok and _nested_reductions(case.model):
        # The verifier tells "NaN reached a ReduceMax/ArgMax/..." (unspecified by ONNX) only in
        # the main graph; inside a subgraph or function such a difference is reported as
        # real. Compare again on finite values: what differs there is a real difference.
        finite = maxlower.verify(case.model, candidate, seed=case.seed, ranges=_finite(case))
        if finite.ok:
            return "verified on finite values (NaN reached a nested ReduceMax/ArgMax)"
        report = finite
    assert report.ok, f"{report.summary()}\n\nresult:\n{onnx.printer.to_text(candidate)}"
    return "verified"


def _nested_reductions(model: onnx.ModelProto) -> bool:
    graphs = [a.g for n in model.graph.node for a in n.attribute if a.HasField("g")]
    nodes = [n for g in graphs for n in g.node] + [n for f in model.functions for n in f.node]
    while graphs:  # deeper subgraphs too
        graph = graphs.pop()
        inner = [a.g for n in graph.node for a in n.attribute if a.HasField("g")]
        graphs += inner
        nodes += [n for g in inner for n in g.node]
    return any(n.op_type in ("ReduceMax", "ArgMax", "ReduceMin", "ArgMin") for n in nodes)


def _finite(case: FuzzCase) -> dict[str, tuple[float, float]]:
    """Value ranges for every floating-point input: the finite half of each type."""
    ranges = {}
    for value in case.model.graph.input:
        elem = value.type.tensor_type.elem_type
        if elem in (onnx.TensorProto.FLOAT16, onnx.TensorProto.BFLOAT16):
            ranges[value.name] = (-60000.0, 60000.0)
        elif elem in (onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE):
            ranges[value.name] = (-1e30, 1e30)
    return ranges


def _assert_unmodified(model: onnx.ModelProto, copy: onnx.ModelProto, step: str) -> None:
    assert model == copy, f"{step} modified its input"


def _assert_only_accepted_nodes(model: onnx.ModelProto, profile_name: str) -> None:
    profile = load_profile(profile_name)
    # (maxlower's deserialize: a main-graph value named like onnx_ir's function value types,
    # 'dom::F/x', must not type the function's x)
    typed = deserialize(onnx.shape_inference.infer_shapes(model))
    InferFunctionTypesPass()(typed)  # function bodies typed from their calls, as lower does
    opset = typed.opset_imports[""]
    graphs = [typed.graph, *typed.functions.values()]
    for graph in graphs:
        for node in ir.traversal.RecursiveGraphIterator(graph):
            reason = profile.rejection(node, opset) if node.domain == "" else None
            assert reason is None, f"{profile_name} rejects node {node.name!r}: {reason}"


# --- failures: shrunk, printed and saved --------------------------------------------------


def failure_directory() -> pathlib.Path:
    FAILURE_DIRECTORY.mkdir(parents=True, exist_ok=True)
    return FAILURE_DIRECTORY


def checked(case: FuzzCase, label: str) -> str:
    """`check_case`, saving the case as ONNX text when it fails for the last time: hypothesis
    replays each minimal failing case once more at the end (`is_final`), and only that
    replay writes a file."""
    text = case.text()  # before running: a failure may be the input being modified
    note(text)
    try:
        return check_case(case)
    except Exception as error:
        if current_build_context().is_final:
            _saved[label] = _saved.get(label, 0) + 1
            path = failure_directory() / f"{label}-{_saved[label]}.onnxtxt"
            path.write_text(f"// {type(error).__name__}: {_first_line(error)}\n{text}")
            note(f"saved as {path}")
        raise


_saved: dict[str, int] = {}


def _first_line(error: BaseException) -> str:
    return (str(error).strip().splitlines() or [""])[0][:300]


# --- the tests ----------------------------------------------------------------------------


@budget.fuzz(STRATEGY_EXAMPLES, **SETTINGS)
@given(family_models())
def test_strategy_models_pass_the_full_checker(model):
    """Guards the strategies themselves: a failure here is a bug in tests/strategies.py."""
    onnx.checker.check_model(model, full_check=True)
    event(f"opset {'below 7' if model.opset_import[0].version < 7 else '7+'}")


def _pipeline_search(outcomes: collections.Counter, max_examples: int, derandomize: bool = False):
    @settings(max_examples=max_examples, derandomize=derandomize, **SETTINGS)
    @given(fuzz_cases())
    def search(case):
        outcome = checked(case, "pipeline")
        outcomes[outcome] += 1
        event(outcome)

    return search


@budget.in_both_tiers
def test_fuzz_pipeline():
    """Convert + lower + verify on random family models: budget.examples(EXAMPLES) cases, the
    same ones every run (fresh ones under the long profile). Prints what happened to the
    cases (-s), also when a case fails (the count then includes the shrinking runs)."""
    outcomes: collections.Counter = collections.Counter()
    started, verdict = time.monotonic(), "a failure (below)"
    try:
        search = _pipeline_search(outcomes, budget.examples(EXAMPLES), budget.derandomized())
        search()
        verdict = "no failure"
    finally:
        total = sum(outcomes.values())
        elapsed = time.monotonic() - started
        print(f"\nfuzz: {total} cases passed, {elapsed:.0f} s, {verdict}")
        for outcome, count in sorted(outcomes.items()):
            print(f"  {count:7d}  {outcome}")


def test_fuzz_finds_and_shrinks_a_planted_bug(monkeypatch, tmp_path):
    """The harness itself: with Max 12 -> 8 for int32 planted to go through float32 (not
    exact above 2^24), the search fails, shrinks to a one-node model and saves it."""
    from tests.mutants import MUTANTS

    mutant = next(m for m in MUTANTS if m.name == "int32_max_through_float32")
    monkeypatch.setattr(f"{__name__}.FAILURE_DIRECTORY", tmp_path)
    strategy = fuzz_cases(opsets=(12, 12), targets=(8, 11), ops=("Max",))

    @settings(max_examples=300, **SETTINGS)
    @given(strategy)
    def search(case):
        checked(case, "planted")

    with mutant.installed(), pytest.raises(AssertionError, match="DIFFERENT"):
        search()
    saved = load_case(next(tmp_path.glob("planted-*.onnxtxt")))
    text = onnx.printer.to_text(saved.model)
    assert [n.op_type for n in saved.model.graph.node] == ["Max"], text
    assert saved.model.graph.input[0].type.tensor_type.elem_type == onnx.TensorProto.INT32, text
    assert 8 <= saved.target <= 11


# --- bugs this suite found (now fixed): each stays as a regression test ---------------------

KNOWN_BUGS = {
    "loop_unused_scan_output_dropped": (
        # passes/version/relabel.py drop_unused_outputs treats a Loop's scan outputs as
        # optional: it removes `scan` but not the body's output, and the Loop is invalid
        """<ir_version: 6, opset_import: ["" : 11]>
        g (float[2] x) => (float[2] y) <int64 n = {2}> {
            y, scan = Loop (n, "", x) <body: graph = body (int64 i, bool c, float[2] v)
                => (bool c2, float[2] v2, float[2] s) {
                c2 = Identity (c)
                v2 = Max (v, x)
                s = Identity (v2)
            }>
        }""",
        10,
    ),
    "function_body_below_opset_6": (
        # the int8 ReduceMax in a function goes through Cast-1 (`to` a string) below 6,
        # which the checker cannot type inside a function body
        """<ir_version: 8, opset_import: ["" : 13, "local" : 1]>
        g (int8[3] x) => (int8 y) { y = local.F (x) }
        <domain: "local", opset_import: ["" : 13]>
        F (X) => (Y) { Y = ReduceMax <keepdims = 0> (X) }""",
        5,
    ),
    "bfloat16_if_relabelled_below_16": (
        # If-13 has no bfloat16 outputs; the If is relabelled anyway
        """<ir_version: 8, opset_import: ["" : 16]>
        g (bfloat16[3] x, bool c) => (bfloat16[3] y) {
            y = If (c) <then_branch = t () => (bfloat16[3] a) { a = Max (x) },
                        else_branch = e () => (bfloat16[3] b) { b = Max (x, x) }>
        }""",
        13,
    ),
    "if_branch_shapes_differ_below_11": (
        # If-1 needs both branches to give one shape; If-11's [2] and [1] are relabelled
        """<ir_version: 6, opset_import: ["" : 11]>
        g (float[2] x, bool c) => (float[?] y) {
            y = If (c) <then_branch = t () => (float[?] a) { a = Max (x) },
                        else_branch = e () => (float[?] b) { b = ReduceMax <keepdims = 1> (x) }>
        }""",
        10,
    ),
    "if_branch_shapes_differ_only_after_conversion": (
        # found by the 30-minute campaign: the then-branch's shape is unknown at 18 (it
        # reduces a run-time-axes ReduceMax) and [1] once converted, the else-branch's [2];
        # If-1's inference failed on the result (exit 4) instead of a refusal
        """<ir_version: 8, opset_import: ["" : 18]>
        g (float[2] x, int64[1] axes, bool c) => (float[?] y) {
            r = ReduceMax (x, axes)
            y = If (c) <then_branch = t () => (float[?] a) { a = ReduceMax <keepdims = 1> (r) },
                        else_branch = e () => (float[?] b) { b = Max (x) }>
        }""",
        6,
    ),
}


# The bugs this suite found that the tests below pin: (model, target opset, profile the
# model was lowered for). benchmarks/known_bugs_prove.py restores each from git history,
# with KNOWN_BUGS, and proves its old output refuted.
FOUND_BUGS = {
    "input_constant_renamed": (
        # the caller's own model was changed in place
        """<ir_version: 8, opset_import: ["" : 18]>
        g (float[1] x) => (float[1] y) {
            axes = Constant <value = int64[1] axes_value {0}> ()
            y = ReduceMax (x, axes)
        }""",
        13,
        None,
    ),
    "float_max_stacked_into_reduce_max_drops_nan": (
        """<ir_version: 4, opset_import: ["" : 7]>
        g (float[2] x0, float[2] x1) => (float[2] y) { y = Max (x0, x1) }""",
        5,
        "onnxruntime",
    ),
    "generated_dim_names_collide": (
        """<ir_version: 7, opset_import: ["" : 12]>
        g (float[N] x) => (int64 last, float[N] z, int64[?] scans) <int64 trips = {2}> {
            y = ArgMax <axis = -1, keepdims = 0> (x)
            last, scan = Loop (trips, "", y) <body: graph = body (int64 i, bool c, int64 v)
                => (bool c2, int64 v2, int64 s) {
                c2 = Identity (c)
                v2 = Max (v, y)
                s = Max (v2)
            }>
            z = Max (x)
            scans = Max (scan)
        }""",
        11,
        "primitives",
    ),
}


@pytest.mark.parametrize("bug", KNOWN_BUGS)
def test_known_bug_conversion_is_valid_or_refused(bug):
    text, target = KNOWN_BUGS[bug]
    model = onnx.parser.parse_model(text)
    onnx.checker.check_model(model, full_check=True)
    try:
        converted = maxlower.convert(model, target)
    except ConversionError:
        return
    onnx.checker.check_model(converted, full_check=True)


@pytest.mark.parametrize("step", ["convert", "lower"])
def test_known_bug_input_constant_renamed(step):
    model = onnx.parser.parse_model(FOUND_BUGS["input_constant_renamed"][0])
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    maxlower.convert(model, 13) if step == "convert" else lower(model, "primitives")
    assert model == copy


def test_float_max_stacked_into_reduce_max_keeps_nan():
    """Found by this suite: below opset 6 (no Max kernel in onnxruntime) float Max was
    stacked into a ReduceMax, which drops the NaN Max must propagate. The stacked form now
    adds a NaN term where an input is NaN (refusing would be exact too)."""
    model = onnx.parser.parse_model(FOUND_BUGS["float_max_stacked_into_reduce_max_drops_nan"][0])
    converted = maxlower.convert(model, 5)
    try:
        lowered = lower(converted, "onnxruntime")
    except ConversionError:
        return  # refusing is exact too
    report = maxlower.verify(model, lowered)
    assert report.ok, report.summary()


def test_generated_dim_names_do_not_collide_after_lowering():
    """Found by this suite: value_info gave onnx's generated dim name unk__0 to dims of
    different sizes; onnxruntime plans buffers by dim name and failed once N changed."""
    model = onnx.parser.parse_model(FOUND_BUGS["generated_dim_names_collide"][0])
    lowered = lower(maxlower.convert(model, 11), "primitives")
    sessions = [onnxruntime_session(m) for m in (model, lowered)]  # as the verifier runs them
    for n in (4, 1):
        x = np.arange(n, dtype=np.float32)
        expected, actual = (s.run(None, {"x": x}) for s in sessions)
        for e, a in zip(expected, actual, strict=True):
            np.testing.assert_array_equal(e, a)


# --- replaying a saved case ---------------------------------------------------------------


def load_case(path: str | os.PathLike) -> FuzzCase:
    text = pathlib.Path(path).read_text()
    header = dict(re.findall(r"^// (target|profile|verify seed|via): (.*)$", text, re.M))
    body = "\n".join(line for line in text.splitlines() if not line.startswith("//"))
    profile, via = header["profile"], header.get("via", "None")
    return FuzzCase(
        onnx.parser.parse_model(body),
        int(header["target"]),
        None if profile == "(none)" else profile,
        int(header["verify seed"]),
        None if via == "None" else int(via),
    )


if __name__ == "__main__":  # python -m tests.test_fuzz_pipeline FILE
    print(check_case(load_case(sys.argv[1])))


def test_if_branches_of_unknown_dims_survive_a_round_trip():
    """Found by the chained-conversion fuzz: at opset 10 the branches give [2] and [?],
    which If-1 accepts; converting to 11 wrote the refined [2] into the then-branch's
    output, and 11 → 10 was refused. If-1 needs one shape (the same rank, no two static
    dims that differ), as its own checker rule has it, not a static one."""
    model = onnx.parser.parse_model("""<ir_version: 6, opset_import: ["" : 10]>
        g (float[2] x, float[?] z, bool c) => (float[?] y) {
            y = If (c) <then_branch = t () => (float[?] a) { a = Max (x, x) },
                        else_branch = e () => (float[?] b) { b = Max (z, z) }>
        }""")
    up = maxlower.convert(model, 13)
    back = maxlower.convert(up, 10)
    onnx.checker.check_model(back, full_check=True)
    assert maxlower.verify(model, back).ok


def test_found_a_constant_absorbed_by_a_rewrite_is_not_a_relabel():
    """Found by the slow tier's fuzz: the empty-axes Constant of a ReduceMax-18 is absorbed
    when the ReduceMax becomes reduce-over-all; every node still there is listed, and the
    absorbed one is gone from the output, not relabelled."""
    model = onnx.parser.parse_model(
        """<ir_version: 8, opset_import: ["" : 18]>
        fuzz (float[1] x0) => (float[?] v3) {
           axes2 = Constant <value: tensor = int64[0] axes2_value {}> ()
           [reducemax_v3] v3 = ReduceMax (x0, axes2)
        }"""
    )
    converted, report = maxlower.convert_with_report(model, 1)
    assert [n.op_type for n in converted.graph.node] == ["ReduceMax"]
    assert [r.node for r in report.rewrites] == ["reducemax_v3"]
    _assert_every_version_change_listed(model, 1, report, converted)
