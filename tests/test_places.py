"""Places in subgraphs: a node inside an If branch or a Loop body is reported at its place,
`main graph > If 'cond' > then_branch` (passes.graph_utils.subgraph_place, the one naming
that conversion, lowering, the report page and the prover share), never as "main graph":
in stdout, --json, convert_with_report and the page, for the family's rewrites and for the
other ops' relabellings alike."""

from __future__ import annotations

import json
import re

import onnx
import pytest
from click.testing import CliRunner
from onnx import TensorProto as T
from onnx import helper as h

import maxlower
from maxlower.changes import records
from maxlower.cli import cli

THEN = "main graph > If 'cond' > then_branch"
ELSE = "main graph > If 'cond' > else_branch"
BODY = "main graph > Loop 'loop' > body"
# (node, its place): each rewritten or relabelled on the way 18 → 13
EXPECTED = {
    ("rm_main", "main graph"),
    ("rm_then", THEN),
    ("rmin_else", ELSE),
    ("rm_loop", BODY),
    ("id_body", BODY),  # an Identity (16 → 13): relabelled, by the other ops' pass
    ("cond", "main graph"),
    ("loop", "main graph"),
}


def nested_model() -> onnx.ModelProto:
    axes = h.make_tensor("axes", T.INT64, [1], [1])

    def branch(tag: str, op: str) -> onnx.GraphProto:
        return h.make_graph(
            [
                h.make_node("Constant", [], [f"a_{tag}"], value=axes, name=f"c_{tag}"),
                h.make_node(op, ["x", f"a_{tag}"], [f"{tag}_out"], keepdims=0, name=f"rm_{tag}"),
            ],
            tag,
            [],
            [h.make_tensor_value_info(f"{tag}_out", T.FLOAT, [3])],
        )

    then_branch = branch("then", "ReduceMax")
    else_branch = branch("else", "ReduceMin")
    else_branch.node[1].name = "rmin_else"
    body = h.make_graph(
        [
            h.make_node("Identity", ["cond_in"], ["cond_out"], name="id_body"),
            h.make_node("ReduceMax", ["x", "a_top"], ["r_loop"], keepdims=0, name="rm_loop"),
            h.make_node("Max", ["carry", "r_loop"], ["carry_out"], name="max_loop"),
        ],
        "body",
        [
            h.make_tensor_value_info("i", T.INT64, []),
            h.make_tensor_value_info("cond_in", T.BOOL, []),
            h.make_tensor_value_info("carry", T.FLOAT, [3]),
        ],
        [
            h.make_tensor_value_info("cond_out", T.BOOL, []),
            h.make_tensor_value_info("carry_out", T.FLOAT, [3]),
        ],
    )
    graph = h.make_graph(
        [
            h.make_node("Constant", [], ["a_top"], value=axes, name="c_top"),
            h.make_node("Constant", [], ["n"], value=h.make_tensor("", T.INT64, [], [2])),
            h.make_node("Constant", [], ["c"], value=h.make_tensor("", T.BOOL, [], [True])),
            h.make_node(
                "If", ["c"], ["y"], then_branch=then_branch, else_branch=else_branch, name="cond"
            ),
            h.make_node("ReduceMax", ["x", "a_top"], ["init"], keepdims=0, name="rm_main"),
            h.make_node("Loop", ["n", "", "init"], ["z"], body=body, name="loop"),
        ],
        "g",
        [h.make_tensor_value_info("x", T.FLOAT, [3, 4])],
        [h.make_tensor_value_info("y", T.FLOAT, [3]), h.make_tensor_value_info("z", T.FLOAT, [3])],
    )
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 18)])
    onnx.checker.check_model(model, full_check=True)
    return model


@pytest.fixture
def source(tmp_path):
    path = tmp_path / "nested.onnx"
    onnx.save(nested_model(), path)
    return path


def test_the_library_reports_each_node_at_its_place():
    _, report = maxlower.convert_with_report(nested_model(), 13)
    found = {(r.node, r.where) for r in records(report)}
    assert found == EXPECTED


def test_stdout_and_json_say_each_place(source, tmp_path):
    out, report = tmp_path / "out.onnx", tmp_path / "r.json"
    result = CliRunner().invoke(
        cli, ["convert", str(source), "--opset", "13", "-o", str(out), "--json", str(report)]
    )
    assert result.exit_code == 0, result.output
    for node, where in EXPECTED - {("cond", "main graph"), ("loop", "main graph")}:
        # a rewrite line says "<place>: node 'X'", a relabelling "<place>: Op a→b ×n: 'X'"
        assert re.search(rf"^    {re.escape(where)}: .*'{node}'", result.stdout, re.M), node
    assert "main graph: Identity" not in result.stdout
    data = json.loads(report.read_text())
    found = {(e["node"], e["where"]) for entries in data["changes"].values() for e in entries}
    assert found == EXPECTED


def test_the_page_says_each_place(source, tmp_path):
    page = tmp_path / "r.html"
    result = CliRunner().invoke(
        cli, ["convert", str(source), "--opset", "13", "--dry-run", "-q", "--report", str(page)]
    )
    assert result.exit_code == 0, result.output
    text = page.read_text("utf-8")
    data = json.loads(
        re.search(r'id="table-data">(.*?)</script>', text, re.S).group(1).replace("\\u003c", "<")
    )
    rows = data["rows"]
    found = {
        (data["names"][rows[k]], data["changes"][rows[k + 1]][4]) for k in range(0, len(rows), 3)
    }
    assert found == EXPECTED
    # each drawn site says its path: main graph › Loop 'loop' › body
    assert "<span>Loop &#x27;loop&#x27;</span>" in text and "<span>body</span>" in text


def test_another_op_adapted_in_a_branch_is_placed_and_drawn(tmp_path):
    """Split-18's num_outputs adapted to 11 inside a branch: its record says the branch, so
    the page finds the node there and draws it (as "main graph" it was found nowhere)."""
    then_branch = h.make_graph(
        [
            h.make_node("Split", ["x"], ["s0", "s1"], axis=1, num_outputs=2, name="split"),
            h.make_node("Concat", ["s1", "s0"], ["t"], axis=1, name="swap"),
        ],
        "then",
        [],
        [h.make_tensor_value_info("t", T.FLOAT, [2, 4])],
    )
    else_branch = h.make_graph(
        [h.make_node("Neg", ["x"], ["e"], name="neg")],
        "else",
        [],
        [h.make_tensor_value_info("e", T.FLOAT, [2, 4])],
    )
    graph = h.make_graph(
        [
            h.make_node("Constant", [], ["c"], value=h.make_tensor("", T.BOOL, [], [True])),
            h.make_node(
                "If", ["c"], ["y"], then_branch=then_branch, else_branch=else_branch, name="cond"
            ),
        ],
        "g",
        [h.make_tensor_value_info("x", T.FLOAT, [2, 4])],
        [h.make_tensor_value_info("y", T.FLOAT, [2, 4])],
    )
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 18)])
    onnx.checker.check_model(model, full_check=True)
    _, report = maxlower.convert_with_report(model, 11)
    found = {(r.kind, r.node, r.where) for r in records(report)}
    assert ("adapted", "split", THEN) in found and ("relabelled", "neg", ELSE) in found
    page = tmp_path / "r.html"
    maxlower.convert(model, 11, report=page)
    text = page.read_text("utf-8")
    assert len(re.findall(r'<svg [^>]*class="site-drawing"', text)) == 1
    assert "node <code>split</code> (Split)" in text


def test_a_broken_subgraph_is_refused_at_its_place(tmp_path):
    """The checks of a model's protobuf name places the same way (an unnamed node as #k)."""
    branch = h.make_graph(
        [h.make_node("Neg", ["nothing"], ["t"], name="neg")],
        "then",
        [],
        [h.make_tensor_value_info("t", T.FLOAT, [2])],
    )
    graph = h.make_graph(
        [
            h.make_node("Constant", [], ["c"], value=h.make_tensor("", T.BOOL, [], [True])),
            h.make_node("If", ["c"], ["y"], then_branch=branch, else_branch=branch),
        ],
        "g",
        [h.make_tensor_value_info("x", T.FLOAT, [2])],
        [h.make_tensor_value_info("y", T.FLOAT, [2])],
    )
    path = tmp_path / "broken.onnx"
    onnx.save(h.make_model(graph, opset_imports=[h.make_opsetid("", 18)]), path)
    result = CliRunner().invoke(cli, ["convert", str(path), "--opset", "13", "--dry-run"])
    assert result.exit_code == 2
    assert "main graph > If #1 > else_branch: input 'nothing' of node 'neg'" in result.output
