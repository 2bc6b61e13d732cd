"""Per-rewrite-site proofs: `convert` / `lower --prove`, `prove=` on the library doors, and
`maxlower prove A B` composing the proofs of the regions where two models differ.

Each test proves a few small sites (well under a second each), so that the whole file
stays within a few seconds of solver time.
"""

from __future__ import annotations

import json
import pathlib
import shutil

import numpy as np
import onnx
import pytest
from click.testing import CliRunner
from onnx.reference import ReferenceEvaluator

import maxlower
from maxlower.cli import cli

pytest.importorskip("z3", reason="the prover needs z3-solver: pip install -e '.[prove]'")

from maxlower.errors import CounterexampleFound, ProofInconclusive
from maxlower.prove import ProofOptions
from maxlower.prove.core import Policy
from maxlower.prove.sites import (
    FULL_ELEMENTS,
    prove_models,
    site_models,
)

ROOT = pathlib.Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "models"


def _model(text: str) -> onnx.ModelProto:
    model = onnx.parser.parse_model(text)
    onnx.checker.check_model(model, full_check=True)
    return model


MAX_PAIR = _model(
    '<ir_version: 8, opset_import: ["" : 13]>\n'
    "g (float[N] a, float[3] b) => (float[N] y) { y = Max(a, b) }"
)
# constant axes (an initializer) stay a constant of the site; 2 x 2048 is far past the
# full solver, and max-only on both sides: the semilattice method proves it
REDUCE_CONST_AXES = _model(
    '<ir_version: 8, opset_import: ["" : 18]>\n'
    "g (float[2,2048] x) => (float[2,1] y) <int64[1] axes = {1}> "
    "{ y = ReduceMax <keepdims=1> (x, axes) }"
)
# float16: onnxruntime's float16 kernels before and from 13 round apart, so the schemas'
# argument does not take the Transpose form at 11, and Softmax is outside the solver's
# fragment
SOFTMAX = _model(
    '<ir_version: 8, opset_import: ["" : 13]>\n'
    "g (float16[2,3] x) => (float16[2,3] y) { y = Softmax <axis=0> (x) }"
)
CONV_REDUCE = _model(
    '<ir_version: 8, opset_import: ["" : 18]>\n'
    "g (float[1,1,4,4] x, float[1,1,3,3] w) => (float[1,1,2,1] y) <int64[1] ax = {3}> "
    "{ c = Conv(x, w)  y = ReduceMax <keepdims=1> (c, ax) }"
)


def _save(tmp_path: pathlib.Path, name: str, model: onnx.ModelProto) -> pathlib.Path:
    path = tmp_path / name
    onnx.save(model, path)
    return path


def _cli(*args: str):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture
def no_isnan(monkeypatch):
    """A planted wrong rewrite: Max's select form without IsNaN (NaN in the second operand
    is lost: Where(Greater(a, b), a, b) gives b = NaN, but a NaN in a gives b)."""
    from onnx_ir import DataType

    import passes.decompose.max as max_module

    def select(b, family, x, y, dtype):
        return b.op("Where", [b.op(family.beats, [x, y], dtype=DataType.BOOL), x, y], dtype=dtype)

    monkeypatch.setattr(max_module, "select", select)


# --- the site prover on real runs ----------------------------------------------------------
@pytest.mark.parametrize(
    ("example", "args", "methods"),
    [
        ("nested_opset18.onnx", ["convert", "--opset", "11"], ["full"]),
        ("max_bfloat16_opset13.onnx", ["lower", "-p", "primitives"], ["full"]),
        # a PyTorch export: ReduceMax over 2048 elements, ArgMax over 8, each with its
        # constant axes moved to the attribute: one node by the schemas, at any size
        (
            "../../tests/fixtures/models/pointnet.dynamo.onnx",
            ["convert", "--opset", "11"],
            ["schema", "schema"],
        ),
    ],
)
def test_example_models_prove_site_by_site(tmp_path, example, args, methods):
    """The README's example models: every site of the run proved, with its method; the
    verdict is in --json and beside each drawing of --report."""
    out, report, page = tmp_path / "out.onnx", tmp_path / "r.json", tmp_path / "r.html"
    result = _cli(
        *args, EXAMPLES / example, "-o", out, "--prove", "--json", report, "--report", page
    )
    assert result.exit_code == 0, result.output
    assert "proof: PROVED" in result.output and out.exists()
    proof = json.loads(report.read_text())["proof"]
    assert proof["status"] == "proved" and proof["method"] == "sites"
    assert [s["method"] for s in proof["sites"]] == methods
    assert all(s["status"] == "proved" for s in proof["sites"])
    html = page.read_text()
    assert html.count("class='proof'>Proof: <span class='status ok'>PROVED") == len(methods)


def test_constant_axes_moved_to_the_attribute_are_proved_by_the_schemas_at_any_size(tmp_path):
    """ReduceMax-18's constant axes input made ReduceMax-13's attribute: one node, one
    function by the schemas (method schema), at 4096 elements, with the assumption listed."""
    original = pathlib.Path(tmp_path / "r.onnx")
    onnx.save(REDUCE_CONST_AXES, original)
    result = _cli("convert", original, "--opset", "13", "--prove", "--json", tmp_path / "j.json")
    assert result.exit_code == 0, result.output
    proof = json.loads((tmp_path / "j.json").read_text())["proof"]
    (site,) = proof["sites"]
    assert site["method"] == "schema" and site["elements"] == 4096 > FULL_ELEMENTS
    assert any("ReduceMax-13 and ReduceMax-18 compute the same" in a for a in proof["assumptions"])


def test_site_models_keep_initializers_as_constants_and_type_free_inputs():
    from maxlower import pipeline
    from maxlower.changes import scopes, sites, stages
    from maxlower.pipeline import Job

    prepared = pipeline.prepare(_copy(REDUCE_CONST_AXES), "m.onnx")
    before = _copy(prepared)
    outcome = pipeline.run(prepared, Job(13), ".")
    (stage,) = stages(before, outcome, Job(13))
    (site,) = sites(stage.before, stage.after, stage.records)[0]
    ref, cand = site_models(
        site,
        stage.before,
        stage.after,
        scopes(stage.before)[site.where],
        scopes(stage.after)[site.where],
    )
    assert [i.name for i in ref.graph.input] == ["x"] == [i.name for i in cand.graph.input]
    assert [t.name for t in ref.graph.initializer] == ["axes"]
    assert ref.opset_import[0].version == 18 and cand.opset_import[0].version == 13
    for model in (ref, cand):
        onnx.checker.check_model(model, full_check=True)


def _copy(model: onnx.ModelProto) -> onnx.ModelProto:
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    return copy


# --- a planted wrong rewrite ---------------------------------------------------------------
def test_planted_wrong_rewrite_is_a_counterexample_and_nothing_is_written(tmp_path, no_isnan):
    source = _save(tmp_path, "max.onnx", MAX_PAIR)
    out = tmp_path / "low.onnx"
    result = _cli("lower", source, "-p", "primitives", "--prove", "-o", out)
    assert result.exit_code == 1, result.output
    assert not out.exists()
    assert "COUNTEREXAMPLE at node '<unnamed Max>' (Max) in main graph" in result.output
    assert "the difference is reproduced" in result.output
    lines = [line for line in result.output.splitlines() if line.startswith("maxlower: error:")]
    assert len(lines) == 1 and "not written" in lines[0] and "--force" in lines[0]
    inputs = dict(np.load(tmp_path / "low.onnx.counterexample.npz"))
    # the inputs are the site's: the original on them differs from the planted form
    (expected,) = ReferenceEvaluator(MAX_PAIR).run(None, inputs)
    planted = maxlower.lower(MAX_PAIR, "primitives")
    (actual,) = ReferenceEvaluator(planted).run(None, inputs)
    assert not np.array_equal(expected, actual, equal_nan=True)


def test_force_writes_and_keeps_the_exit_code(tmp_path, no_isnan):
    source = _save(tmp_path, "max.onnx", MAX_PAIR)
    out = tmp_path / "low.onnx"
    result = _cli("lower", source, "-p", "primitives", "--prove", "--force", "-o", out)
    assert result.exit_code == 1 and out.exists()
    assert "--force: writing" in result.output


def test_op_outside_the_fragment_is_inconclusive_and_named(tmp_path):
    source = _save(tmp_path, "softmax.onnx", SOFTMAX)
    out = tmp_path / "s11.onnx"
    result = _cli("convert", source, "--opset", "11", "--prove", "-o", out)
    assert result.exit_code == 5, result.output
    assert not out.exists()
    assert "INCONCLUSIVE at node '<unnamed Softmax>' (Softmax)" in result.output
    assert "op Softmax is outside the prover's fragment" in result.output
    assert "--verify" in result.output


# --- one answer through every door ---------------------------------------------------------
@pytest.mark.parametrize("planted", [False, True])
def test_command_line_and_library_agree(tmp_path, request, planted):
    if planted:
        request.getfixturevalue("no_isnan")
    source = _save(tmp_path, "max.onnx", MAX_PAIR)
    out = tmp_path / "low.onnx"
    # (N = 3 is the one size at which MAX_PAIR keeps its declared shapes: the others are
    # no run of it, and a max-dim below 3 leaves the proof inconclusive)
    result = _cli("lower", source, "-p", "primitives", "--prove", "--prove-max-dim", "3", "-o", out)
    options = {"max_dim": 3}
    if not planted:
        assert result.exit_code == 0
        assert onnx.load(out) == maxlower.lower(MAX_PAIR, "primitives", prove=options)
        return
    with pytest.raises(CounterexampleFound) as caught:
        maxlower.lower(MAX_PAIR, "primitives", prove=options)
    assert result.exit_code == caught.value.exit_code == 1
    (line,) = [x for x in result.output.splitlines() if x.startswith("maxlower: error:")]
    # the same site and output (the solver may pick other values on another run)
    assert str(caught.value).split(": counterexample at")[0] in line
    assert caught.value.report.counterexample.reproduced


def test_library_inconclusive_matches_the_command_line(tmp_path):
    source = _save(tmp_path, "softmax.onnx", SOFTMAX)
    result = _cli("convert", source, "--opset", "11", "--prove", "-o", tmp_path / "o.onnx")
    with pytest.raises(ProofInconclusive) as caught:
        maxlower.convert(SOFTMAX, 11, prove=True)
    assert result.exit_code == caught.value.exit_code == 5
    assert str(caught.value) in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--prove-max-dim", "2"], "--prove-max-dim only apply with --prove"),
        (["--prove", "--prove-max-dim", "65"], "--prove-max-dim 65: expected an integer from 0"),
        (["--prove", "--prove-timeout", "0"], "--prove-timeout 0"),
        (["--force"], "--force only apply with --verify"),
    ],
)
def test_bad_prove_options_are_one_line_refusals(tmp_path, args, message):
    source = _save(tmp_path, "max.onnx", MAX_PAIR)
    result = _cli("lower", source, "-p", "primitives", *args)
    assert result.exit_code == 2, result.output
    assert message in result.output and result.output.count("maxlower: error:") == 1


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"max_dim": 65}, "--prove-max-dim 65"),
        ({"depth": 1}, "unknown option"),
        ("yes", "expected True, a dict"),
    ],
)
def test_bad_prove_argument_is_refused_by_the_library(value, message):
    with pytest.raises(maxlower.InvalidModelError, match=message):
        maxlower.lower(MAX_PAIR, "primitives", prove=value)
    assert ProofOptions.of(True) == ProofOptions()


def test_missing_solver_says_how_to_install(tmp_path, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "z3" else real(name, *a)
    )
    source = _save(tmp_path, "max.onnx", MAX_PAIR)
    result = _cli("lower", source, "-p", "primitives", "--prove")
    assert result.exit_code == 2 and "pip install" in result.output
    with pytest.raises(maxlower.InvalidModelError, match="pip install"):
        maxlower.lower(MAX_PAIR, "primitives", prove=True)


# --- prove A B: composition over the differing regions -------------------------------------
def test_prove_composes_region_proofs_when_the_whole_model_is_outside_the_fragment(tmp_path):
    """A Conv (outside the fragment) shared by both models: the ReduceMax region is
    proved, and the proof composes (method "sites"), with the opset assumption stated."""
    original = _save(tmp_path, "a.onnx", CONV_REDUCE)
    converted = _save(tmp_path, "b.onnx", maxlower.convert(CONV_REDUCE, 13))
    report = tmp_path / "p.json"
    result = CliRunner().invoke(
        cli, ["prove", str(original), str(converted), "--json", str(report)]
    )
    assert result.exit_code == 0, result.output
    assert "PROVED: 1 site proved" in result.output and "method sites" in result.output
    assert "compute the same at opsets 18 and 13" in result.output
    data = json.loads(report.read_text())
    assert data["method"] == "sites" and data["sites"][0]["method"] == "schema"


def test_prove_finds_the_differing_region_that_is_wrong(tmp_path):
    """A wrong region beside a Conv: a counterexample naming it, its .npz replayed."""
    reference = _model(
        '<ir_version: 8, opset_import: ["" : 13]>\n'
        "g (float[1,1,3,3] x, float[1,1,1,1] w, float[1,1,3,3] b) => (float[1,1,3,3] y) "
        "{ c = Conv(x, w)  y = Max(c, b) }"
    )
    candidate = _model(
        '<ir_version: 8, opset_import: ["" : 13]>\n'
        "g (float[1,1,3,3] x, float[1,1,1,1] w, float[1,1,3,3] b) => (float[1,1,3,3] y) "
        "{ c = Conv(x, w)  g = Greater(c, b)  y = Where(g, c, b) }"
    )
    report = prove_models(reference, candidate, timeout=30)
    assert report.status == "counterexample" and report.method == "sites"
    assert report.sites[0].op_type == "Max"
    assert report.counterexample is not None and report.counterexample.reproduced
    a, b = _save(tmp_path, "a.onnx", reference), _save(tmp_path, "b.onnx", candidate)
    result = CliRunner().invoke(cli, ["prove", str(a), str(b)])
    assert result.exit_code == 1
    # the models' own inputs (the region's inner value c is not one), on which they differ
    feed = dict(np.load(tmp_path / "b.onnx.counterexample.npz"))
    assert feed.keys() == {"x", "w", "b"}
    expected, actual = (ReferenceEvaluator(m).run(None, feed)[0] for m in (reference, candidate))
    assert not np.array_equal(expected, actual, equal_nan=True)


def test_site_in_a_subgraph_takes_captured_outer_values_as_inputs(tmp_path):
    """Max inside an If branch reads x and y from the main graph: the site's models take
    them as inputs, and the site proves."""
    model = _model(
        '<ir_version: 8, opset_import: ["" : 13]>\n'
        "g (bool c, float[2] x, float[2] y) => (float[2] z) {\n"
        "  z = If (c) <then_branch = t () => (float[2] a) { a = Max(x, y) },"
        " else_branch = e () => (float[2] b) { b = Identity(x) }>\n}"
    )
    lowered, report = maxlower.lower_with_report(model, "primitives", prove=True)
    assert report.lowerings and lowered is not None
    source = _save(tmp_path, "if.onnx", model)
    result = _cli("lower", source, "-p", "primitives", "--prove", "--json", tmp_path / "j.json")
    assert result.exit_code == 0, result.output
    (site,) = json.loads((tmp_path / "j.json").read_text())["proof"]["sites"]
    assert site["where"] == "main graph > If '<unnamed If>' > then_branch"
    assert site["status"] == "proved" and site["method"] == "full"


def test_a_site_past_the_measured_budget_is_inconclusive_naming_node_op_and_size(tmp_path):
    """A float ReduceMax over rows of 8 lowered into select trees: past FULL_FAN_IN (a row
    of 8 takes a minute), so inconclusive at once, and the reason names node, op, size."""
    model = _model(
        '<ir_version: 8, opset_import: ["" : 13]>\n'
        "g (float[2,8] x) => (float[2] y) { y = ReduceMax <axes=[1], keepdims=0> (x) }"
    )
    with pytest.raises(ProofInconclusive) as caught:
        maxlower.lower(model, "primitives", prove=True)
    message = str(caught.value)
    assert "node '<unnamed ReduceMax>' (ReduceMax)" in message
    assert "16 elements, each output element reading about 8" in message
    assert "--verify" in message and "\n" not in message


def test_prove_report_page_shows_each_region_with_its_status(tmp_path):
    original = _save(tmp_path, "a.onnx", CONV_REDUCE)
    converted = _save(tmp_path, "b.onnx", maxlower.convert(CONV_REDUCE, 13))
    page = tmp_path / "p.html"
    result = CliRunner().invoke(
        cli, ["prove", str(original), str(converted), "--report", str(page)]
    )
    assert result.exit_code == 0, result.output
    html = page.read_text()
    assert "<span class='status ok'>PROVED: 1 site proved" in html
    assert "class='proof'>Proof: <span class='status ok'>PROVED</span> (method schema" in html


def test_a_wrong_max_only_region_at_4096_elements_is_refuted_by_the_semilattice_witness():
    """Halves that miss the middle element (a planted wrong slice tree) at n = 4097: far
    past the full solver, refuted by the sets, and the witness replays in onnx.reference."""
    reference = _model(
        '<ir_version: 8, opset_import: ["" : 13]>\n'
        "g (float[4097] x) => (float[1] y) { y = ReduceMax <keepdims=1> (x) }"
    )
    candidate = _model(
        '<ir_version: 8, opset_import: ["" : 13]>\n'
        "g (float[4097] x) => (float[1] y) <int64[1] s0 = {0}, int64[1] e0 = {2048}, "
        "int64[1] s1 = {2049}, int64[1] e1 = {4097}> {\n"
        "  lo = Slice(x, s0, e0)  hi = Slice(x, s1, e1)\n"
        "  a = ReduceMax <keepdims=1> (lo)  b = ReduceMax <keepdims=1> (hi)\n"
        "  y = Max(a, b)\n}"
    )
    report = prove_models(reference, candidate)
    assert report.status == "counterexample" and report.sites[0].method == "semilattice"
    found = report.counterexample
    assert found is not None and found.reproduced
    assert (
        found.inputs["x"][2048] == np.inf and np.isneginf(np.delete(found.inputs["x"], 2048)).all()
    )


# a max-only region beside a Conv (the whole model is outside the fragment): a ReduceMax
# as a Max of two halves, past the full solver's 64 elements
MAX_TREE_REFERENCE = _model(
    '<ir_version: 8, opset_import: ["" : 13]>\n'
    "g (float[1,1,10,10] x, float[1,1,1,1] w) => (float[1,1,1,1] y) "
    "{ c = Conv(x, w)  y = ReduceMax <axes = [2, 3], keepdims = 1> (c) }"
)
MAX_TREE_CANDIDATE = _model(
    '<ir_version: 8, opset_import: ["" : 13]>\n'
    "g (float[1,1,10,10] x, float[1,1,1,1] w) => (float[1,1,1,1] y) "
    "<int64[1] s0 = {0}, int64[1] e0 = {5}, int64[1] s1 = {5}, int64[1] e1 = {10}, "
    "int64[1] two = {2}> {\n"
    "  c = Conv(x, w)  lo = Slice(c, s0, e0, two)  hi = Slice(c, s1, e1, two)\n"
    "  a = ReduceMax <axes = [2, 3], keepdims = 1> (lo)\n"
    "  b = ReduceMax <axes = [2, 3], keepdims = 1> (hi)\n  y = Max(a, b)\n}"
)


def test_signed_zeros_policy_does_not_take_the_semilattice_shortcut():
    """The set argument counts -0.0 equal to +0.0, so under signed zeros a max-only site
    is proved in full (or not at all), never by the sets; the schemas' argument (one node,
    one function, the same bits) holds under either policy, at any size."""
    small = _model(
        '<ir_version: 8, opset_import: ["" : 18]>\n'
        "g (float[2,3] x) => (float[2,1] y) <int64[1] axes = {1}> "
        "{ y = ReduceMax <keepdims=1> (x, axes) }"
    )
    for prove in ({"signed_zeros": True}, True):
        _, report = maxlower.convert_with_report(small, 13, prove=prove)
        assert [s.method for s in report.proof.sites] == ["schema"] and report.proof.ok
    _, report = maxlower.convert_with_report(
        REDUCE_CONST_AXES, 13, prove=ProofOptions(signed_zeros=True)
    )
    assert [s.method for s in report.proof.sites] == ["schema"] and report.proof.ok
    sites = prove_models(MAX_TREE_REFERENCE, MAX_TREE_CANDIDATE, policy=Policy(signed_zeros=True))
    assert "semilattice" not in [s.method for s in sites.sites]
    sites = prove_models(MAX_TREE_REFERENCE, MAX_TREE_CANDIDATE)
    assert [s.method for s in sites.sites] == ["semilattice"] and sites.status == "proved"


# --- found by a red-team pass: changes that no site held --------------------------------------
_WIDE = '<ir_version: 8, opset_import: ["" : 18]>\ng (float[100] x) => (float[100] y) '


@pytest.mark.parametrize(
    "candidate",
    [
        "<float[1] w = {2.0}> { y = Max(x, w) }",  # another initializer value
        "{ w = Constant <value = float[1] {2.0}> ()\n y = Max(x, w) }",  # a node, not w
        "{ w = Constant <value = float[1] {1.0}> ()\n y = Max(x, w) }",  # same value, moved
    ],
)
def test_regions_compare_what_shared_nodes_read(candidate):
    """100 elements are past the whole-model proof, so these are proved by regions; Max
    reads `w` in both, and is the same node only if `w` is the same initializer."""
    reference = onnx.parser.parse_model(_WIDE + "<float[1] w = {1.0}> { y = Max(x, w) }")
    report = prove_models(reference, onnx.parser.parse_model(_WIDE + candidate))
    assert report.status != "proved", report.summary()
    assert prove_models(reference, reference).status == "proved"


def test_a_node_changed_while_relabelled_is_a_site(monkeypatch):
    """An adapter that changes a node in place and reports nothing leaves it recorded as
    relabelled; --prove compares it with the node before and proves the change."""
    import onnx_ir as ir

    from passes.version import other_ops

    original = other_ops._adapters

    def swap_axis(node, old, builder):
        if node.op_type == "Gather":
            node.attributes["axis"] = ir.AttrInt64("axis", 0)

    monkeypatch.setattr(other_ops, "_adapters", lambda node, new: [*original(node, new), swap_axis])
    model = onnx.parser.parse_model("""<ir_version: 7, opset_import: ["" : 11]>
        g (float[3,3] x) => (float[3,3] y) <int64[3] idx = {2, 1, 0}> {
            y = Gather <axis = 1> (x, idx)
        }""")
    with pytest.raises(CounterexampleFound) as caught:
        maxlower.convert(model, 13, prove=True)
    assert "(Gather)" in str(caught.value) and caught.value.report.counterexample.reproduced


# A detector's If, as TorchScript writes it at opset 11: a branch with a node that
# conversion to 13 rewrites (Squeeze's axes to an input) beside one outside the prover's
# fragment (NonMaxSuppression), which is the same on both sides.
DETECTOR_IF = """<ir_version: 7, opset_import: ["" : 11]>
g (bool c, float[1,4,4] boxes, float[1,1,4] scores) => (int64[N, 3] y) {
    [pick] y = If (c) <
        then_branch = then_g () => (int64[A, 3] t) {
            [nms] t = NonMaxSuppression (boxes, scores)
        },
        else_branch = else_g () => (int64[B, 3] e) {
            [nms_else] picked = NonMaxSuppression (boxes, scores)
            [wrap] wrapped = Unsqueeze <axes = [0]> (picked)
            [squeeze] e = Squeeze <axes = [0]> (wrapped)
        }
    >
}"""


def test_a_relabelled_if_is_proved_by_the_sites_of_its_branches():
    """A relabelled If whose branch holds a converted node is no site itself (If-11 and
    If-13 compute the same function of their branches): the branch's changes are sites
    of their own, and the NonMaxSuppression beside them, which no site holds, need not be
    interpreted (it stopped the proof of fasterrcnn's and ssdlite's If at 13)."""
    model = onnx.parser.parse_model(DETECTOR_IF)
    _, report = maxlower.convert_with_report(model, 13, prove=True)
    assert report.proof is not None and report.proof.ok, report.proof
    sites = {s.node for s in report.proof.sites}
    assert {"wrap", "squeeze"} <= sites and "pick" not in sites


def test_a_change_inside_a_relabelled_if_that_nothing_records_is_not_proved(monkeypatch):
    """An adapter of the If that edits its branch (here: the else branch's Unsqueeze gets
    another axis) and reports a relabel: the branch's scope holds a change no site covers,
    so the proof is not PROVED."""
    import onnx_ir as ir

    from passes.version import other_ops

    original = other_ops._adapters

    def edit_branch(node, old, builder):
        if node.op_type == "If":
            for inner in node.attributes["else_branch"].value:
                if inner.op_type == "Unsqueeze" and "axes" in inner.attributes:
                    inner.attributes["axes"] = ir.AttrInt64s("axes", [1])

    monkeypatch.setattr(
        other_ops, "_adapters", lambda node, new: [edit_branch, *original(node, new)]
    )
    model = onnx.parser.parse_model(DETECTOR_IF)
    with pytest.raises((CounterexampleFound, ProofInconclusive)):
        maxlower.convert(model, 13, prove=True)


def test_prove_runs_after_the_summary_and_the_verification(tmp_path, monkeypatch):
    """`convert --verify --prove` prints what it changed, then verifies, then proves: a
    failure of the proof (or a signal during it) leaves the summary and the verdict on
    stdout, and a bad --verify option is refused before any proof (found by a review of
    the layers refactor, which had moved the proof before both)."""
    model = shutil.copy(EXAMPLES / "nested_opset18.onnx", tmp_path / "m.onnx")
    args = ["convert", str(model), "--opset", "11", "--verify", "--prove", "--dry-run"]
    lines = CliRunner().invoke(cli, args).output.splitlines()
    prefixes = (f"{model}: opset 18", "verification:", "proof:")
    first = [next(i for i, line in enumerate(lines) if line.startswith(p)) for p in prefixes]
    assert first == sorted(first), lines
    proved = []
    monkeypatch.setattr("maxlower.prove.sites.prove_run", lambda *a: proved.append(a))
    bad = CliRunner().invoke(cli, [*args, "--range", "nope=0:1"])
    assert bad.exit_code == 2 and "nope" in bad.output
    assert proved == [], "the proof ran before --verify refused its option"


# A TorchScript Reshape-14 says allowzero=0 (its default, what Reshape-13 does), to a shape
# computed at run time: inference gives the output no shape, which the solver needs and the
# schemas' argument does not (vit_b_16, gpt2 and bert exports, 14 -> 13, were INCONCLUSIVE)
RESHAPE_RUNTIME_SHAPE = (
    '<ir_version: 8, opset_import: ["" : 14]>\n'
    "g (float[2,3,4] x, int64[n] shape) => (float y) {\n"
    "  r = Reshape <allowzero = 0> (x, shape)\n  y = ReduceMax <keepdims = 0> (r)\n}"
)


def test_a_reshape_to_a_run_time_shape_is_proved_by_the_schemas(tmp_path):
    model = _model(RESHAPE_RUNTIME_SHAPE)
    _, report = maxlower.convert_with_report(model, 13, prove=True)
    reshape = [s for s in report.proof.sites if s.op_type == "Reshape"]
    assert [s.method for s in reshape] == ["schema"] and report.proof.ok, report.proof.summary()
    assert "any size" in reshape[0].line()
    assert any("Reshape-13 and Reshape-14" in a for a in report.proof.assumptions)
    # the same through the command line, and the proof is of a conversion that runs alike
    source = tmp_path / "m.onnx"
    onnx.save(model, source)
    out = tmp_path / "out.onnx"
    result = CliRunner().invoke(
        cli, ["convert", str(source), "--opset", "13", "--prove", "-o", str(out)]
    )
    assert result.exit_code == 0 and "proof: PROVED" in result.output, result.output
    feeds = {"x": np.arange(24, dtype=np.float32).reshape(2, 3, 4), "shape": np.array([0, -1])}
    expected = ReferenceEvaluator(model).run(None, feeds)
    assert ReferenceEvaluator(onnx.load(out)).run(None, feeds)[0] == expected[0]


def test_a_reshape_that_changes_meaning_is_not_taken_without_shapes():
    """allowzero=1 (a 0 makes an empty dim) has no form at 13: refused, never proved."""
    model = _model(RESHAPE_RUNTIME_SHAPE.replace("allowzero = 0", "allowzero = 1"))
    with pytest.raises(maxlower.ConversionError, match="allowzero"):
        maxlower.convert_with_report(model, 13, prove=True)


# A site in an If branch that reads a main-graph input with a default (an initializer of
# the same name): a caller may feed another value, so the site's model takes it as an input
# like any free value, never as a constant (red team: it was read as the default's tensor,
# so a full proof there would have held at the default only)
OUTER_DEFAULT = _model(
    '<ir_version: 8, opset_import: ["" : 18]>\n'
    "g (bool c, float[2,3] x, int64[1] axes = {1}) => (float[2] y) {\n"
    "  y = If (c) <\n"
    "    then_branch = t () => (float[2] r) { r = ReduceMax <keepdims = 0> (x, axes) },\n"
    "    else_branch = e () => (float[2] r2) { r2 = ReduceMax <keepdims = 0> (x, axes) }>\n"
    "}"
)


def test_a_subgraph_site_takes_an_outer_default_as_an_input():
    from maxlower.changes import scopes

    for where, scope in scopes(OUTER_DEFAULT).items():
        assert "axes" in scope.overridable and "axes" in scope.tensors, where
    branch = scopes(OUTER_DEFAULT)["main graph > If '<unnamed If>' > then_branch"]
    from maxlower.prove.sites import _closed

    _, tensors, free = _closed(branch.nodes, branch)
    assert free == ["x", "axes"] and tensors == []
    # and the conversion's proof holds for other axes than the default
    converted, report = maxlower.convert_with_report(OUTER_DEFAULT, 13, prove=True)
    assert report.proof.ok, report.proof.summary()
    feeds = {"c": np.array(True), "x": np.arange(6, dtype=np.float32).reshape(2, 3)}
    for axes in ([0], [1], [-1]):
        feeds["axes"] = np.array(axes)
        want = ReferenceEvaluator(OUTER_DEFAULT).run(None, feeds)[0]
        assert np.array_equal(ReferenceEvaluator(converted).run(None, feeds)[0], want)
