"""`--report FILE.html` (maxlower.report): what the page holds, that every door writes the
same page, and that the report path follows the output rules (docs/bad-inputs.md).
The page in a real browser: tests/test_report_browser.py."""

from __future__ import annotations

import json
import os
import pathlib
import re
import shutil
import sys

import numpy as np
import onnx
import pytest
from click.testing import CliRunner

import maxlower
from maxlower import pipeline
from maxlower.changes import Record, records, sites
from maxlower.cli import cli
from maxlower.errors import InvalidModelError
from maxlower.pipeline import load_proto
from maxlower.profiles import load_profile
from tests import tiers

ROOT = pathlib.Path(__file__).resolve().parents[1]
MODELS = ROOT / "examples" / "models"
NESTED = MODELS / "nested_opset18.onnx"
REDUCE = MODELS / "reduce_max_opset18.onnx"
# models whose conversions and lowerings rewrite nodes of every kind, in every place
# (main graph, If branches, functions), kept few: each runs the pipeline three times
FIXTURES = [
    NESTED,
    REDUCE,
    *(
        ROOT / "tests" / "fixtures" / "models" / name
        for name in (
            "cnn_classifier.dynamo.onnx",
            "encoder.legacy13.onnx",
            "segmentation.dynamo.onnx",
            "gru_tagger.legacy13.onnx",
            "light_inception_v2.heads.onnx",
        )
    ),
]
sys.path.insert(0, str(ROOT / "tests"))


def run(*args) -> object:
    return CliRunner().invoke(cli, [str(a) for a in args])


def drawings(page: str) -> int:
    return len(re.findall(r'<svg [^>]*class="site-drawing"', page))


def table_rows(page: str) -> list[tuple]:
    """The version table's rows: (node, op, step, kind, message, where, drawing)."""
    found = re.search(r'<script type="application/json" id="table-data">(.*?)</script>', page)
    data = json.loads(found.group(1))
    flat = data["rows"]
    return [
        (data["names"][flat[k]], *data["changes"][flat[k + 1]], flat[k + 2])
        for k in range(0, len(flat), 3)
    ]


def expected_sites(report: pipeline.Report) -> set[tuple[str, str]]:
    """The nodes a page must draw, from the pipeline's report alone: every node changed in
    another way than a relabelling (a node made by an earlier step is drawn in its site)."""
    return {(r.where, r.node) for r in records(report) if r.kind != "relabelled"}


def normalised(page: str) -> str:
    """The page without what differs between two runs of one job: the time taken, and
    what the input is called (a path on the command line, <model> in the library)."""
    page = re.sub(r'<span id="elapsed">[^<]*</span>', "", page)
    page = re.sub(r'<span id="input-name">[^<]*</span>', "", page)
    return re.sub(r"<title>maxlower report: [^<]*</title>", "", page)


def test_the_acceptance_command_draws_every_rewrite(tmp_path):
    page_path = tmp_path / "r.html"
    result = run(
        "convert", NESTED, "--opset", 11, "-o", tmp_path / "out.onnx", "--report", page_path
    )
    assert result.exit_code == 0, result.output
    page = page_path.read_text(encoding="utf-8")
    _, report = maxlower.convert_with_report(onnx.load(NESTED), 11)
    assert drawings(page) == len(expected_sites(report)) == 1
    assert "select_last_index=1 rewritten as reverse + ArgMax + index mapping" in page
    assert "function example.local::LastArgMax" in page
    # every node that changed version is a row of the table (the page's script shows it)
    # (11: the branch's ReduceMin-18 and the graph's ReduceMax-18, family nodes that take
    # only type-only steps to 11, are rows too: relabelled, as the other ops are)
    assert len(table_rows(page)) == sum(report.counts().values()) == 11
    assert ("branch_reduce_max", "ReduceMax", "18→11", "relabelled") in {
        r[:4] for r in table_rows(page)
    }
    assert ("fn_argmax", "ArgMax", "12→11", "rewritten") in {row[:4] for row in table_rows(page)}
    assert "BEFORE" in page and "AFTER" in page


def nested_lowered_page(tmp_path) -> str:
    """The page of `lower NESTED --profile primitives --report` (a dry run)."""
    page_path = tmp_path / "r.html"
    result = run("lower", NESTED, "--profile", "primitives", "--dry-run", "--report", page_path)
    assert result.exit_code == 0, result.output
    return page_path.read_text(encoding="utf-8")


def test_the_page_needs_no_network_and_no_other_file(tmp_path):
    page = nested_lowered_page(tmp_path)
    without_namespaces = page.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "http://" not in without_namespaces and "https://" not in without_namespaces
    assert not re.search(r"<(link|img|iframe|object|embed)\b", page)
    assert not re.search(r"\b(src|href)=['\"](?!#)", page)  # only links inside the page
    assert "@import" not in page and "url(" not in page


def test_a_subgraph_rewrite_says_its_path_and_large_ones_collapse(tmp_path):
    page = nested_lowered_page(tmp_path)
    assert drawings(page) == 3  # both branches' reductions and the function's ArgMax
    assert "<span>main graph</span>" in page
    assert "<span>If &#x27;pick&#x27;</span>" in page
    assert "<span>then_branch</span>" in page and "<span>else_branch</span>" in page
    # the branches' reductions are drawn whole; only the ArgMax's 52 operations (104
    # nodes with its constants) are a group
    assert page.count('class="site-drawing-full"') == 1
    assert "<summary>Show all 52 operations of the replacement</summary>" in page


def test_a_replacement_of_over_30_operations_is_one_expandable_group(tmp_path):
    page_path = tmp_path / "r.html"
    args = ("lower", REDUCE, "--profile", "primitives", "--dry-run", "--report", page_path)
    assert run(*args).exit_code == 0
    page = page_path.read_text(encoding="utf-8")
    # the ArgMax's 37 operations are one group box, with its ops counted, and the whole graph
    # in <details>; the run-time-axes ReduceMax's If tree is drawn whole (an If is one box)
    assert "37 nodes (expand below)" in page
    assert page.count('class="site-drawing-full"') == 1
    assert "<summary>Show all 37 operations of the replacement</summary>" in page


def test_convert_and_lower_draws_each_stage_against_its_own_model(tmp_path):
    page_path = tmp_path / "r.html"
    result = run(
        "convert",
        REDUCE,
        "--opset",
        11,
        "--profile",
        "primitives",
        "--dry-run",
        "--report",
        page_path,
    )
    assert result.exit_code == 0, result.output
    page = page_path.read_text(encoding="utf-8")
    _, report = maxlower.convert_and_lower(onnx.load(REDUCE), 11, "primitives")
    converted = {
        (r.where, r.node) for r in records(report) if r.kind not in ("relabelled", "lowered")
    }
    lowered = {(r.where, r.node) for r in records(report) if r.kind == "lowered"}
    assert drawings(page) == len(converted) + len(lowered)
    assert "<span class='stage'>conversion</span>" in page
    assert "<span class='stage'>lowering</span>" in page


@pytest.mark.parametrize("door", ["convert", "lower"])
def test_the_library_writes_the_page_the_command_line_writes(tmp_path, door):
    cli_page, lib_page = tmp_path / "cli.html", tmp_path / "lib.html"
    if door == "convert":
        assert (
            run("convert", NESTED, "--opset", 11, "--dry-run", "--report", cli_page).exit_code == 0
        )
        maxlower.convert(onnx.load(NESTED), 11, report=lib_page)
    else:
        args = ("lower", NESTED, "--profile", "webnn", "--dry-run", "--report", cli_page)
        assert run(*args).exit_code == 0
        maxlower.lower(onnx.load(NESTED), "webnn", report=lib_page)
    cli_text, lib_text = cli_page.read_text("utf-8"), lib_page.read_text("utf-8")
    assert normalised(cli_text) == normalised(lib_text)
    assert '<span id="input-name">&lt;model&gt;</span>' in lib_text


def test_verify_draws_the_first_diverging_node_in_both_models(tmp_path):
    from mutants import MUTANTS

    mutant = MUTANTS[0]  # select_last_index dropped: ties give the first index
    reference, candidate = tmp_path / "a.onnx", tmp_path / "b.onnx"
    onnx.save(mutant.source_model(), reference)
    onnx.save(mutant.apply(), candidate)
    page_path = tmp_path / "v.html"
    result = run("verify", reference, candidate, "--report", page_path)
    assert result.exit_code == 1, result.output
    page = page_path.read_text(encoding="utf-8")
    assert "DIFFERENT" in page
    assert page.count('class="divergence-drawing"') == 1
    assert page.count("⚠ FIRST DIVERGENCE</text>") == 2  # reference and candidate node
    assert "first diverging value &#x27;y&#x27;" in page
    # the library's report= writes the same page
    library = tmp_path / "lib.html"
    maxlower.verify(reference, candidate, report=library)
    assert normalised(library.read_text("utf-8")) == normalised(page)


def test_convert_verify_marks_the_diverging_node_in_the_rewrite(tmp_path):
    from mutants import MUTANTS

    mutant = MUTANTS[0]
    source = tmp_path / "m.onnx"
    onnx.save(mutant.source_model(), source)
    page_path = tmp_path / "r.html"
    with mutant.installed():
        result = run("convert", source, "--opset", mutant.target, "--verify", "--report", page_path)
    assert result.exit_code == 1
    assert not (tmp_path / f"m.opset{mutant.target}.onnx").exists()  # the model: not written
    page = page_path.read_text(encoding="utf-8")  # the report says why
    assert "The first diverging node is in this drawing" in page
    assert "✗ DIFFERENT" in page


@pytest.mark.parametrize(  # (the larger zoo networks in the slow tier: tests/tiers.py)
    "path", tiers.split(FIXTURES, keep=lambda p: not tiers.large_network(p)), ids=lambda p: p.name
)
@pytest.mark.parametrize("job", ["11", "18", "primitives"])
def test_every_site_is_the_cone_that_computes_its_outputs(path, job):
    """On every fixture: every non-relabelled node is drawn, and its AFTER side computes
    the node's outputs from values that existed before (none of them new)."""
    proto = load_proto(path)
    before = onnx.ModelProto()
    before.CopyFrom(proto)
    as_job = (
        pipeline.Job(profile=load_profile(job)) if job == "primitives" else pipeline.Job(int(job))
    )
    try:
        outcome = pipeline.run(proto, as_job, path.parent)
    except (maxlower.ConversionError, InvalidModelError):
        pytest.skip("no exact form for this job")
    found, unplaced = sites(before, outcome.proto, records(outcome.report))
    assert not unplaced
    assert {(s.where, s.node) for s in found} == expected_sites(outcome.report)
    for site in found:
        assert site.after, site.node
        made = {o for n in site.after for o in n.output}
        assert set(site.outputs) <= made
        read = {i for n in site.after for i in n.input if i} - made
        assert read <= {*site.inputs, *site.new_constants} | _existing(before)


def _existing(model: onnx.ModelProto) -> set[str]:
    from maxlower.changes import all_value_names

    return all_value_names(model)


def test_a_site_record_names_what_the_pipeline_said():
    record = Record("main graph", "n", "ReduceMax", "rewritten", "18→13", "moved")
    assert record.kind == "rewritten" and record.step == "18→13"


# --- the output rules (docs/bad-inputs.md) ---------------------------------------------------


@pytest.fixture
def model_dir(tmp_path) -> pathlib.Path:
    shutil.copy2(NESTED, tmp_path / "m.onnx")
    return tmp_path


def _refused(result, text: str) -> None:
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("maxlower: error: ") and text in lines[0], lines


def _listing(directory: pathlib.Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in directory.iterdir() if p.is_file()}


@pytest.mark.parametrize("command", ["convert", "lower"])
def test_report_naming_the_input_is_refused(model_dir, command):
    before = _listing(model_dir)
    job = ["--opset", "11"] if command == "convert" else ["--profile", "primitives"]
    result = run(command, model_dir / "m.onnx", *job, "--report", model_dir / "m.onnx")
    _refused(result, "which holds the input model (IN)")
    assert _listing(model_dir) == before


def test_report_naming_out_or_json_is_refused(model_dir):
    m = model_dir / "m.onnx"
    _refused(
        run(
            "convert",
            m,
            "--opset",
            11,
            "-o",
            model_dir / "o.onnx",
            "--report",
            model_dir / "o.onnx",
        ),
        "is also OUT",
    )
    _refused(
        run("convert", m, "--opset", 11, "--json", model_dir / "j", "--report", model_dir / "j"),
        "is also --json",
    )
    assert sorted(p.name for p in model_dir.iterdir()) == ["m.onnx"]


def test_report_naming_a_verified_model_is_refused(model_dir):
    m = model_dir / "m.onnx"
    _refused(run("verify", m, m, "--report", m), "which holds the reference model")


@pytest.mark.parametrize("kind", ["directory", "missing-directory", "fifo", "device"])
def test_report_that_is_no_regular_file_is_refused(model_dir, kind):
    target = {
        "directory": model_dir,
        "missing-directory": model_dir / "nowhere" / "r.html",
        "fifo": model_dir / "fifo",
        "device": pathlib.Path("/dev/null"),
    }[kind]
    if kind == "fifo":
        os.mkfifo(target)
    result = run("convert", model_dir / "m.onnx", "--opset", 11, "--report", target)
    _refused(result, str(target))
    assert not (model_dir / "m.opset11.onnx").exists()


def test_no_report_is_left_when_the_conversion_refuses(tmp_path):
    source = tmp_path / "bf16.onnx"
    shutil.copy2(MODELS / "max_bfloat16_opset13.onnx", source)
    result = run("convert", source, "--opset", 12, "--report", tmp_path / "r.html")
    assert result.exit_code == 3
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bf16.onnx"]  # no temporary either


def test_an_earlier_report_survives_a_refusal(tmp_path):
    source = tmp_path / "bf16.onnx"
    shutil.copy2(MODELS / "max_bfloat16_opset13.onnx", source)
    earlier = tmp_path / "r.html"
    earlier.write_text("earlier", encoding="utf-8")
    assert run("convert", source, "--opset", 12, "--report", earlier).exit_code == 3
    assert earlier.read_text(encoding="utf-8") == "earlier"


def test_the_library_refuses_the_same_report_paths(tmp_path):
    model = onnx.load(NESTED)
    with pytest.raises(InvalidModelError, match="does not exist"):
        maxlower.convert(model, 11, report=tmp_path / "nowhere" / "r.html")
    with pytest.raises(InvalidModelError, match="is a directory"):
        maxlower.lower(model, "primitives", report=tmp_path)
    shutil.copy2(NESTED, tmp_path / "m.onnx")
    with pytest.raises(InvalidModelError, match="which holds the reference model"):
        maxlower.verify(tmp_path / "m.onnx", tmp_path / "m.onnx", report=tmp_path / "m.onnx")
    with pytest.raises(maxlower.ConversionError):
        maxlower.convert(
            onnx.load(MODELS / "max_bfloat16_opset13.onnx"), 12, report=tmp_path / "r.html"
        )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.onnx"]


def test_past_max_drawings_the_first_are_drawn_and_the_table_lists_all(tmp_path):
    from maxlower.report.page import MAX_DRAWINGS

    n = MAX_DRAWINGS + 20
    nodes = [
        onnx.helper.make_node("ReduceMax", [f"y{k}", "axes"], [f"y{k + 1}"], name=f"r{k}")
        for k in range(n)
    ]
    graph = onnx.helper.make_graph(
        nodes,
        "chain",
        [onnx.helper.make_tensor_value_info("y0", onnx.TensorProto.FLOAT, [2, 3])],
        [onnx.helper.make_tensor_value_info(f"y{n}", onnx.TensorProto.FLOAT, [2, 1])],
        [onnx.numpy_helper.from_array(np.array([1], np.int64), "axes")],
    )
    model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 18)])
    page_path = tmp_path / "r.html"
    _, report = maxlower.convert_with_report(model, 13, report=page_path)
    assert len(report.rewrites) == n
    page = page_path.read_text(encoding="utf-8")
    assert drawings(page) == MAX_DRAWINGS
    assert f"Rewrites ({MAX_DRAWINGS:,} of {n:,} (the table lists them all))" in page
    assert len(table_rows(page)) == n
