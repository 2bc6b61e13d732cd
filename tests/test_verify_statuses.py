"""Verify statuses that say what was seen, the same in stdout, --json, the library and the
page (issue 28):
- a difference only where NaN reaches ReduceMax/ArgMax/ReduceMin/ArgMin is its own status,
  "equivalent except where ONNX leaves NaN unspecified": a pass, but a failure under
  --strict, and never under the headline "EQUIVALENT: no difference";
- an output none of whose elements was compared says "no elements compared", never
  "identical (0 elements compared)";
- when onnxruntime ran no trial, the headline says "verified in onnx.reference only";
- the first divergent value is one bounded line (node, output, index, the two values),
  never a node's text: an If's is its whole subgraph."""

from __future__ import annotations

import json
import pathlib
import re

import numpy as np
import onnx
import pytest
from click.testing import CliRunner
from onnx import TensorProto as T
from onnx import helper as h

import maxlower
from maxlower.cli import cli
from maxlower.verify.report import EQUIVALENT, EQUIVALENT_EXCEPT_NAN

HEADER = '<ir_version: 8, opset_import: ["" : 13]>\nm '
LINE_LIMIT = 600  # characters of any line of the verdict


def parse(text: str) -> onnx.ModelProto:
    return onnx.parser.parse_model(HEADER + text)


def verify_cli(tmp_path: pathlib.Path, reference, candidate, *flags, inputs=None):
    """(stdout, exit code, --json document, page text) of `maxlower verify`."""
    paths = []
    for name, model in (("a.onnx", reference), ("b.onnx", candidate)):
        onnx.save(model, tmp_path / name)
        paths.append(str(tmp_path / name))
    extra = list(flags)
    if inputs is not None:
        np.savez(tmp_path / "in.npz", **inputs)
        extra += ["--inputs", str(tmp_path / "in.npz")]
    report, page = tmp_path / "v.json", tmp_path / "v.html"
    result = CliRunner().invoke(
        cli, ["verify", *paths, *extra, "--json", str(report), "--report", str(page)]
    )
    return result.output, result.exit_code, json.loads(report.read_text()), page.read_text()


def _verdict_html(page: str) -> str:
    return re.search(r'<span class="verdict [a-z]+">(.*?)</span>', page).group(1)


# --- NaN unspecified by ONNX --------------------------------------------------------------

REDUCE = "(float[2, 2] x) => (float[2] y) { y = ReduceMax <keepdims = 0, axes = [1]> (x) }"
NAN_ONLY = (  # the NaN row's result replaced: a difference only where NaN reaches ReduceMax
    "(float[2, 2] x) => (float[2] y) { r = ReduceMax <keepdims = 0, axes = [1]> (x)\n"
    "  isnan = IsNaN(r)\n  seven = Constant <value = float {7.0}> ()\n"
    "  y = Where(isnan, seven, r) }"
)
NAN_FEEDS = {"x": np.array([[np.nan, 1.0], [2.0, 3.0]], np.float32)}


@pytest.mark.parametrize("strict", [False, True])
def test_nan_only_differences_have_their_own_status(strict):
    report = maxlower.verify(parse(REDUCE), parse(NAN_ONLY), inputs=NAN_FEEDS, strict=strict)
    assert report.status == EQUIVALENT_EXCEPT_NAN
    assert report.ok is not strict
    head = report.headline()
    assert not head.startswith("EQUIVALENT: no difference")
    assert "ONNX leaves NaN unspecified" in head or "ONNX LEAVES NaN UNSPECIFIED" in head
    assert report.summary().splitlines()[0].startswith(head)
    data = report.to_dict()
    assert data["status"] == EQUIVALENT_EXCEPT_NAN and data["ok"] is not strict


@pytest.mark.parametrize(("flags", "code"), [((), 0), (("--strict",), 1)])
def test_nan_only_differences_through_the_command_line(tmp_path, flags, code):
    out, exit_code, data, page = verify_cli(
        tmp_path, parse(REDUCE), parse(NAN_ONLY), *flags, inputs=NAN_FEEDS
    )
    assert exit_code == code, out
    assert "EQUIVALENT: no difference" not in out and "EQUIVALENT: no difference" not in page
    first = out.splitlines()[0]
    expected = "NOT EQUIVALENT under --strict" if flags else "EQUIVALENT EXCEPT WHERE ONNX"
    assert expected in first
    assert data["status"] == EQUIVALENT_EXCEPT_NAN and data["ok"] is (code == 0)
    assert expected in data["headline"] and expected in _verdict_html(page)


def test_a_real_difference_is_still_different():
    other = REDUCE.replace("y = ReduceMax", "y = ReduceMin")
    report = maxlower.verify(parse(REDUCE), parse(other), inputs=NAN_FEEDS)
    assert report.status == "different" and not report.ok


# --- nothing compared ---------------------------------------------------------------------

EMPTY = "(float[2, 0] x) => (float[2, 0] y) { y = Relu(x) }"


def test_an_output_with_no_element_compared_is_not_called_identical(tmp_path):
    report = maxlower.verify(parse(EMPTY), parse(EMPTY))
    assert report.runs > 0 and report.outputs[0].elements == 0
    assert report.outputs[0].status == "not compared"
    assert "identical" not in report.summary() and "no elements compared" in report.summary()
    out, exit_code, data, page = verify_cli(tmp_path, parse(EMPTY), parse(EMPTY))
    assert exit_code == 0, out
    assert "identical" not in out and "no elements compared" in out
    assert "no elements compared" in out.splitlines()[0]  # the headline says it too
    assert data["outputs"][0]["status"] == "not compared"
    assert "no elements compared" in page and "✓ equal" not in page


BATCHED = (
    '<ir_version: 8, opset_import: ["" : 13]>\nm (float[n, 3] x) => (float[n, 3] y) { y = Relu(x) }'
)


def test_no_element_compared_in_any_run_is_not_verified(tmp_path):
    """Every trial that ran had the batch dim at 0: dtypes and shapes matched, but no value
    was compared, so nothing is claimed (exit 2, nothing written), and the flags that
    would fix it are named."""
    model = onnx.parser.parse_model(BATCHED)
    report = maxlower.verify(model, model, dims={"n": 0})
    assert report.runs > 0 and report.status == "inconclusive" and not report.ok
    assert report.headline().startswith("NOT VERIFIED (INCONCLUSIVE): no elements compared")
    assert any("--dim" in note for note in report.notes)
    out, exit_code, data, _ = verify_cli(tmp_path, model, model, "--dim", "n=0")
    assert exit_code == 2, out
    assert ": NOT VERIFIED (INCONCLUSIVE): no elements compared" in out.splitlines()[0]
    assert data["status"] == "inconclusive" and data["ok"] is False
    onnx.save(model, tmp_path / "m.onnx")
    written = tmp_path / "out.onnx"
    result = CliRunner().invoke(
        cli,
        [
            "convert",
            str(tmp_path / "m.onnx"),
            "--opset",
            "14",
            "--verify",
            "--dim",
            "n=0",
            "-o",
            str(written),
        ],
    )
    assert result.exit_code == 2, result.output
    assert not written.exists()
    assert "--dim" in result.output
    # the same model with a size that is not 0 is verified
    assert maxlower.verify(model, model, dims={"n": 2}).status == EQUIVALENT


def test_an_output_with_elements_is_identical():
    """(The check above could fail: a compared output says identical.)"""
    report = maxlower.verify(parse(REDUCE), parse(REDUCE))
    assert report.status == EQUIVALENT and report.outputs[0].status == "equal"
    assert "identical (" in report.summary() and "no elements compared" not in report.summary()


# --- onnx.reference only ------------------------------------------------------------------

# onnxruntime has no int16 Max kernel: both models run in onnx.reference on every trial
INT16_MAX = "(int16[3] a, int16[3] b) => (int16[3] y) { y = Max(a, b) }"


def test_the_headline_says_when_onnxruntime_ran_nothing(tmp_path):
    report = maxlower.verify(parse(INT16_MAX), parse(INT16_MAX))
    assert report.ok and report.reference_only
    assert "verified in onnx.reference only" in report.headline()
    out, exit_code, data, page = verify_cli(tmp_path, parse(INT16_MAX), parse(INT16_MAX))
    assert exit_code == 0, out
    assert "verified in onnx.reference only" in out.splitlines()[0]
    assert data["reference_only"] is True and "onnx.reference only" in data["headline"]
    assert "verified in onnx.reference only" in _verdict_html(page)


def test_the_headline_says_nothing_of_it_when_onnxruntime_ran():
    report = maxlower.verify(parse(REDUCE), parse(REDUCE))
    assert not report.reference_only and "onnx.reference only" not in report.headline()


# --- the first divergent value: one bounded line ----------------------------------------

LONG = "v" * 300  # a value name longer than a line may show


def _chain(tag: str, last: onnx.NodeProto) -> list[onnx.NodeProto]:
    """30 Identity nodes, then `last`: a body whose onnx text is long."""
    nodes = [h.make_node("Identity", ["x"], [f"{tag}0"], name=f"{tag}_id0")]
    nodes += [h.make_node("Identity", [f"{tag}{k - 1}"], [f"{tag}{k}"]) for k in range(1, 30)]
    return [*nodes, last]


def _if_model(op: str, nan_to_seven: bool = False) -> onnx.ModelProto:
    """An If whose branches reduce `x` with `op` after 30 Identity nodes (the If's onnx text
    is long); with `nan_to_seven`, the then-branch's NaN results are replaced by 7."""

    def branch(tag: str) -> onnx.GraphProto:
        out = f"{tag}_{LONG}"
        reduce_to = f"{tag}_r" if nan_to_seven else out
        nodes = _chain(
            tag,
            h.make_node(op, [f"{tag}29"], [reduce_to], axes=[1], keepdims=0, name=f"{tag}_reduce"),
        )
        if nan_to_seven:
            nodes += [
                h.make_node("IsNaN", [reduce_to], [f"{tag}_isnan"]),
                h.make_node(
                    "Constant", [], [f"{tag}_7"], value=h.make_tensor("", T.FLOAT, [], [7])
                ),
                h.make_node("Where", [f"{tag}_isnan", f"{tag}_7", reduce_to], [out]),
            ]
        return h.make_graph(nodes, tag, [], [h.make_tensor_value_info(out, T.FLOAT, [2])])

    graph = h.make_graph(
        [
            h.make_node("Constant", [], ["c"], value=h.make_tensor("t", T.BOOL, [], [True])),
            h.make_node(
                "If", ["c"], ["y"], then_branch=branch("t"), else_branch=branch("e"), name="pick"
            ),
        ],
        "g",
        [h.make_tensor_value_info("x", T.FLOAT, [2, 3])],
        [h.make_tensor_value_info("y", T.FLOAT, [2])],
    )
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 13)])
    onnx.checker.check_model(model, full_check=True)
    return model


def _loop_model(op: str) -> onnx.ModelProto:
    """A Loop (one trip) whose body reduces `x` with `op` after 30 Identity nodes."""
    out = f"b_{LONG}"
    body = h.make_graph(
        [
            h.make_node("Identity", ["cond_in"], ["cond_out"]),
            *_chain("b", h.make_node(op, ["b29"], [out], axes=[1], keepdims=0)),
        ],
        "body",
        [
            h.make_tensor_value_info("i", T.INT64, []),
            h.make_tensor_value_info("cond_in", T.BOOL, []),
        ],
        [
            h.make_tensor_value_info("cond_out", T.BOOL, []),
            h.make_tensor_value_info(out, T.FLOAT, [2]),
        ],
    )
    graph = h.make_graph(
        [
            h.make_node("Constant", [], ["n"], value=h.make_tensor("", T.INT64, [], [1])),
            h.make_node("Loop", ["n", ""], ["y"], body=body, name="loop"),
        ],
        "g",
        [h.make_tensor_value_info("x", T.FLOAT, [2, 3])],
        [h.make_tensor_value_info("y", T.FLOAT, [1, 2])],
    )
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 13)])
    onnx.checker.check_model(model, full_check=True)
    return model


def _one_bounded_line(tmp_path, reference, candidate, *, op: str, where: str) -> None:
    """Through the library, stdout, --json and the page: the divergence is one line under
    LINE_LIMIT that names the node and its place, never a body's text."""
    report = maxlower.verify(reference, candidate)
    divergence = report.divergence
    assert divergence is not None and divergence.reference_op == op
    assert divergence.where == where
    line = divergence.line()
    assert "\n" not in line and len(line) < LINE_LIMIT, line
    assert "Identity" not in line and "b29" not in line and "t29" not in line  # no node text
    assert f"output of {op} node" in line and "index (" in line
    assert f"reference {divergence.expected}" in line and f"candidate {divergence.actual}" in line
    if where != "main graph":
        assert f"in {where}" in line
    out, exit_code, data, page = verify_cli(tmp_path, reference, candidate)
    assert exit_code == 1, out
    assert all(len(row) < LINE_LIMIT for row in out.splitlines()), out
    assert line in out
    assert data["divergence"]["line"] == line and data["divergence"]["where"] == where
    shown = re.search(r"<p class='divergence'>(.*?)</p>", page).group(1)
    assert "Identity" not in shown and len(shown) < 2 * LINE_LIMIT


def test_a_divergence_inside_an_if_is_found_in_the_branch_taken(tmp_path):
    """The If's branch both models took runs on its own: the node inside is named, with its
    place, not the If (whose text is its whole subgraph)."""
    reference, candidate = _if_model("ReduceMax"), _if_model("ReduceMin")
    where = "main graph > If 'pick' > then_branch"
    _one_bounded_line(tmp_path, reference, candidate, op="ReduceMax", where=where)


def test_a_divergence_in_a_loop_body_is_the_loop_in_one_line(tmp_path):
    """A Loop body is not looked into: the Loop is named, in one bounded line."""
    reference, candidate = _loop_model("ReduceMax"), _loop_model("ReduceMin")
    _one_bounded_line(tmp_path, reference, candidate, op="Loop", where="main graph")


def test_a_nan_only_difference_inside_an_if_branch_is_unspecified():
    """Found inside the branch, a difference only where NaN reaches a ReduceMax is what
    ONNX leaves unspecified, as in the main graph; outside it, it was a 'difference'."""
    feeds = {"x": np.array([[np.nan, 1.0, 0.0], [2.0, 3.0, 4.0]], np.float32)}
    reference, candidate = _if_model("ReduceMax"), _if_model("ReduceMax", nan_to_seven=True)
    report = maxlower.verify(reference, candidate, inputs=feeds)
    assert report.status == EQUIVALENT_EXCEPT_NAN and report.ok, report.summary()
    found = report.unspecified_divergence
    assert found.unspecified and found.where == "main graph > If 'pick' > then_branch"
    assert found.reference_op == "ReduceMax"
    strict = maxlower.verify(reference, candidate, inputs=feeds, strict=True)
    assert not strict.ok


def test_a_branch_run_on_its_own_counts_only_if_it_gives_what_the_if_gave():
    """onnxruntime may take another kernel on the branch alone: then nothing inside is
    trusted, and the If stays the divergence."""
    import importlib

    core = importlib.import_module("maxlower.verify.core")
    node = next(n for n in _if_model("ReduceMax").graph.node if n.op_type == "If")
    inner_name = node.attribute[0].g.output[0].name
    branch = node.attribute[0].name
    same = {inner_name: np.array([np.nan, 2.0], np.float32)}
    outer = {"y": np.array([np.nan, 2.0], np.float32)}
    assert core._reproduces(same, outer, node, branch)
    other = {inner_name: np.array([3.0, 2.0], np.float32)}
    assert not core._reproduces(other, outer, node, branch)


def test_convert_verify_says_the_same(tmp_path):
    """`convert --verify`: the same headline in stdout and in --json's verification."""
    source, report = tmp_path / "m.onnx", tmp_path / "r.json"
    onnx.save(parse(INT16_MAX), source)
    result = CliRunner().invoke(
        cli,
        ["convert", str(source), "--opset", "12", "--verify", "--dry-run", "--json", str(report)],
    )
    assert result.exit_code == 0, result.output
    verification = json.loads(report.read_text())["verification"]
    assert "verified in onnx.reference only" in verification["headline"]
    assert f"verification: {verification['headline']} (" in result.output


# a Reshape that keeps dim 0 and infers the rest (as attention exports do): ambiguous, so
# refused by both runtimes, when that dim is 0
KEEPS_DIM_0 = """
(float[n, 4] x) => (float[n] y) {
    shape = Constant <value = int64[2] {0, -1}> ()
    r = Reshape (x, shape)
    y = ReduceMax <axes = [1], keepdims = 0> (r)
}
"""


def test_a_dim_at_0_the_model_does_not_accept_is_not_a_skip(tmp_path):
    """The empty edge is outside the original model (it runs on it in no runtime): that
    trial is 'not accepted', apart from the skips, and the verdict stands on the others."""
    model = parse(KEEPS_DIM_0)
    report = maxlower.verify(model, model)
    statuses = [t.status for t in report.trials]
    assert statuses.count("not accepted") == 1 and "skipped" not in statuses, statuses
    assert report.status == EQUIVALENT and report.ok and report.runs == len(statuses) - 1
    assert "1 at an edge the model does not accept" in report.summary()
    assert any("n=0" in note and "no runtime" in note for note in report.notes)
    out, exit_code, data, page = verify_cli(tmp_path, model, model)
    assert exit_code == 0, out
    assert "0 skipped, 1 at an edge the model does not accept" in out
    assert [t["status"] for t in data["trials"]].count("not accepted") == 1
    assert "1 at an edge the model does not accept" in page
    # a model that accepts the empty edge compares it: nothing is 'not accepted'
    accepting = parse(KEEPS_DIM_0.replace("{0, -1}", "{-1, 2}"))
    assert "not accepted" not in [t.status for t in maxlower.verify(accepting, accepting).trials]


# --- a candidate no runtime here implements -----------------------------------------------

# A bool ReduceMax converted down to opset 1 (found by the slow fuzz tier) runs in no
# runtime here: onnxruntime has no kernel below opset 7 (Cast-1), onnx.reference none for
# Clip-1
BOOL_REDUCE = """<ir_version: 8, opset_import: ["" : 20]>
m (bool[3] x) => (bool y) { y = ReduceMax <keepdims = 0> (x) }"""


def test_a_candidate_no_runtime_implements_is_not_verified(tmp_path):
    """Nothing can be compared where every runtime lacks an op of the candidate: that is
    INCONCLUSIVE with the runtimes' reasons and where to check it, never DIFFERENT."""
    original = onnx.parser.parse_model(BOOL_REDUCE)
    candidate = maxlower.convert(original, 1)
    report = maxlower.verify(original, candidate)
    assert report.status == "inconclusive", report.summary()
    assert {t.status for t in report.trials} == {"skipped"}
    notes = " ".join(report.notes)
    assert "No implementation for operator 'Clip'" in notes, notes
    assert "no runtime here implements every op version of the candidate" in notes, notes
    out, exit_code, data, _ = verify_cli(tmp_path, original, candidate)
    assert exit_code != 0 and data["status"] == "inconclusive", out


def test_a_candidate_that_fails_for_its_own_fault_is_still_different():
    """The rule reads the runtimes' words for a missing implementation only: a candidate
    that both runtimes reject for what it computes (an index past the end) differs."""
    original = parse(
        "(float[3] x) => (float[1] y) { i = Constant <value = int64[1] {0}> ()\ny = Gather (x, i) }"
    )
    candidate = parse(
        "(float[3] x) => (float[1] y) { i = Constant <value = int64[1] {7}> ()\ny = Gather (x, i) }"
    )
    report = maxlower.verify(original, candidate)
    assert report.status == "different", report.summary()


# The red team of that rule: onnx.reference has no DequantizeLinear-13, so a candidate with
# one runs in onnx.reference on no trial; none of that may pass for a runtime's gap
DEQUANTIZED_ZERO = """
  q = Constant <value = int8[1] {0}> ()
  s = Constant <value = float {1.0}> ()
  zero = DequantizeLinear (q, s)"""


def test_a_trial_run_in_onnx_reference_for_the_other_side_is_not_a_runtime_gap():
    """The reference's bool ReduceMax at N=0 runs in onnx.reference only (onnxruntime
    refuses the empty bool set), so the candidate runs there too, and fails on its
    DequantizeLinear: that trial is a difference (the candidate says True where the
    reference says False, in onnxruntime), never a skip beside passing trials."""
    reference = onnx.parser.parse_model(
        '<ir_version: 10, opset_import: ["" : 20]>\n'
        "g (bool[N] x) => (bool y) { y = ReduceMax <keepdims = 0> (x) }"
    )
    candidate = onnx.parser.parse_model(
        '<ir_version: 8, opset_import: ["" : 13]>\ng (bool[N] x) => (bool y) {'
        + DEQUANTIZED_ZERO
        + """
  f = Cast <to = 1> (x)
  fz = Add (f, zero)
  m = ReduceMax <keepdims = 0> (fz)
  y = Cast <to = 9> (m)
}"""
    )
    report = maxlower.verify(reference, candidate)
    assert report.status == "different" and not report.ok, report.summary()


@pytest.mark.parametrize("named", [False, True])
def test_a_name_the_model_supplies_is_never_a_runtime_s_words(named):
    """A node named NOT_IMPLEMENTED, or a local function named like onnx.reference's
    message, does not make a candidate's own failure (a Reshape to 3 columns of N
    elements) a runtime's gap."""
    reference = parse("(float[N] x) => (float[N] y) { y = Identity (x) }")
    candidate = onnx.parser.parse_model(
        '<ir_version: 8, opset_import: ["" : 13, "local" : 1]>\ng (float[N] x) => (float[N] y) {'
        + DEQUANTIZED_ZERO
        + """
  xz = Add (x, zero)
  shp = Constant <value = int64[2] {-1, 3}> ()
  back = Constant <value = int64[1] {-1}> ()
  r = Reshape (xz, shp)
  y = Reshape (r, back)
}"""
    )
    if named:
        candidate.graph.node[6].name = "Could not find an implementation for Add(1) NOT_IMPLEMENTED"
        candidate.functions.append(
            h.make_function(
                "local", "No implementation for operator", ["a"], ["b"],
                [h.make_node("Identity", ["a"], ["b"])], [h.make_opsetid("", 13)],
            )
        )  # fmt: skip
    report = maxlower.verify(reference, candidate)
    assert report.status == "different" and not report.ok, report.summary()
