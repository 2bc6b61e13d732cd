"""benchmarks/bench.py: its inputs are what it says, and `--quick` runs end to end (the CI
smoke test; no time is asserted)."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest

from maxlower.runtime import bit_equal, run_model

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "bench.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while it executes
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        del sys.modules[spec.name]


def test_wide_graphs_hold_the_family_and_agree_across_opsets(bench):
    rng = np.random.default_rng(0)
    feeds = {
        "x": rng.integers(-3, 3, (2, 3, 4)).astype(np.float32),
        "idx": rng.integers(0, 3, (2, 3, 4)).astype(np.int64),
    }
    outputs = []
    for opset in (20, 13):
        model = bench.wide_model(40, opset)
        onnx.checker.check_model(model, full_check=True)
        ops = [n.op_type for n in model.graph.node]
        assert len(ops) == 40
        assert {op: ops.count(op) for op in set(ops)} == {"ReduceMax": 10, "Max": 20, "ArgMax": 10}
        reduce_inputs = [len(n.input) for n in model.graph.node if n.op_type == "ReduceMax"]
        assert reduce_inputs == [2 if opset >= 18 else 1] * 10
        outputs.append(run_model(model, feeds)[0])
    assert all(map(bit_equal, *outputs))


def test_heavy_and_over_2gb_inputs_are_external_and_valid(bench, tmp_path):
    scale = bench.Scale(wide_nodes=4, weights=3, rows=4, cols=8, big_rows=16, argmax_every=2)
    heavy = bench.write_heavy(tmp_path, scale, over_2gb=False)
    over = bench.write_heavy(tmp_path, scale, over_2gb=True)
    for path, count in ((heavy, 3), (over, 4)):
        model = onnx.load(path, load_external_data=False)
        external = [t for t in model.graph.initializer if t.data_location == 1]
        assert len(external) == count  # the weights; the axes are in the model
        assert all(len(t.dims) == 2 for t in external)
        onnx.checker.check_model(str(path), full_check=True)
    data = Path(f"{over}.data").read_bytes()
    assert data[: scale.weight_bytes] == Path(f"{heavy}.data").read_bytes()
    assert len(data) == scale.weight_bytes + scale.big_rows * scale.cols * 4


@pytest.mark.slow  # the benchmark's quick run: most of a minute
def test_quick_run_writes_its_section_and_every_maxlower_output_checks(tmp_path, bench):
    results = tmp_path / "RESULTS.md"
    results.write_text(
        f"# Benchmark results\n\nkeep me\n\n{bench.START_MARKER}\nstale\n{bench.END_MARKER}\n"
        "\nkeep me too\n"
    )
    dump = tmp_path / "runs.json"
    process = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--quick",
            "--results",
            str(results),
            "--json",
            str(dump),
            "--workdir",
            str(tmp_path / "work"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert process.returncode == 0, process.stderr[-3000:]
    text = results.read_text()
    assert text.count(bench.START_MARKER) == text.count(bench.END_MARKER) == 1
    assert "stale" not in text and "keep me\n" in text and "keep me too" in text
    section = text[text.index(bench.START_MARKER) : text.index(bench.END_MARKER)]
    for heading in (
        "### Acceptance",
        "### wide",
        "### library in-process",
        "### heavy",
        "### start-up",
    ):
        assert heading in section
    assert "### over-2GB" in section and "Carried over" not in section
    maxlower_rows = re.findall(r"^\| [^|]+ \| maxlower \|.*$", section, re.MULTILINE)
    assert len(maxlower_rows) == 7  # 4 wide conversions, heavy, over-2GB, start-up
    assert all("ok: checker + bit-exact" in row for row in maxlower_rows), maxlower_rows
    # the in-process table: both calls, both targets, checked like the files
    library = section[section.index("### library in-process") :].split("\n### ")[0]
    library_rows = re.findall(r"^\| 20→1[38] \| (\S+) \|.*$", library, re.MULTILINE)
    assert sorted(library_rows) == sorted(
        ["maxlower.convert", "onnx.version_converter.convert_version"] * 2
    )
    assert library.count("ok: checker + bit-exact") == 4
    assert "Neither call modified the input ModelProto" in library
    for line in (
        "- library in-process: wide 20→18: maxlower.convert",
        "- library in-process: wide 20→13: maxlower.convert",
        "- wide: command line, whole process, 20→18: maxlower",
        "- wide: command line, whole process, 20→13: maxlower",
        "- start-up: `maxlower convert` of a ",
    ):
        assert line in section

    data = json.loads(dump.read_text())
    keys = [r["key"] for r in data["results"]]
    assert "wide 20→18 onnx.version_converter" in keys and "heavy copy cp (model + data)" in keys
    assert "library 20→13 maxlower.convert" in keys
    for result in data["results"]:
        assert len(result["runs"]) == 1
        run = result["runs"][0]
        in_process = result["key"].startswith("library ")
        assert run["seconds"] > 0 and (run["peak_rss"] == 0) == in_process
        if result["key"].split()[-1] in ("maxlower", "maxlower.convert"):
            assert run["returncode"] == 0 and result["verdict"]["ok"], result
    # outputs are removed, inputs kept for the next run (in the git-ignored work dir)
    work = tmp_path / "work"
    assert not (work / "out").exists()
    assert sorted(p.name for p in work.glob("*.onnx")) == [
        "heavy.onnx",
        "over2gb.onnx",
        "tiny_opset20.onnx",
        "wide_opset13.onnx",
        "wide_opset20.onnx",
    ]
    assert (work / ".gitignore").read_text().splitlines()[-1] == "*"


def test_a_partial_run_keeps_the_other_scenarios_figures_and_dates_them(bench, tmp_path):
    old = tmp_path / "RESULTS.md"
    old.write_text(
        f"{bench.START_MARKER}\n## Scale\n\n- Date: 2026-01-02 03:04 UTC\n"
        "- Versions: maxlower 0.1.0 (git abc1234)\n- Command: `python benchmarks/bench.py` "
        "(9 s wall clock)\n\n### Acceptance\n\n- wide: old wide line\n- heavy: heavy line\n"
        "\n### wide: old\n\nold wide table\n\n### heavy: 3 GB\n\n| heavy table |\n"
        f"{bench.END_MARKER}\n"
    )
    parts = bench.earlier_parts(old)
    assert set(parts) == {"wide", "heavy"}
    accepted, body = parts["heavy"]
    assert accepted == ["- heavy: heavy line (carried over from 2026-01-02 03:04 UTC)"]
    assert body[0] == "### heavy: 3 GB" and body[-1] == "| heavy table |"
    stamp = body[2]
    assert stamp.startswith("Carried over, not rerun: measured 2026-01-02 03:04 UTC")
    assert "`python benchmarks/bench.py`" in stamp and "git abc1234" in stamp
    # carried over once more by a later partial run: the first stamp and date stay
    later = tmp_path / "later.md"
    later.write_text(
        f"{bench.START_MARKER}\n- Date: 2027-01-01 00:00 UTC\n\n### Acceptance\n\n"
        + "\n".join(accepted)
        + "\n\n"
        + "\n".join(body)
        + f"\n{bench.END_MARKER}\n"
    )
    assert bench.earlier_parts(later)["heavy"] == (accepted, body)
