"""benchmarks/conformance_matrix.py: the quick matrix runs; its categories mean what they say."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
import time
from pathlib import Path

import onnx
import pytest

from benchmarks.report import write_section

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "conformance_matrix.py"


@pytest.fixture(scope="module")
def matrix():
    spec = importlib.util.spec_from_file_location("conformance_matrix", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while it executes
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        del sys.modules[spec.name]


@pytest.mark.slow  # the benchmark's quick run (the categories: the tests below)
def test_quick_run_writes_its_section_and_maxlower_is_exact(tmp_path, matrix):
    results = tmp_path / "RESULTS.md"
    results.write_text(
        "# Benchmark results\n\n## Another script's section\n\nkeep me\n\n"
        f"{matrix.START_MARKER}\nstale matrix\n{matrix.END_MARKER}\n\n## After\n\nkeep me too\n"
    )
    dump = tmp_path / "pairs.json"
    started = time.monotonic()
    process = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--results", str(results), "--json", str(dump)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert process.returncode == 0, process.stderr[-3000:]
    assert time.monotonic() - started < 60

    text = results.read_text()
    assert text.count(matrix.START_MARKER) == text.count(matrix.END_MARKER) == 1
    assert "stale matrix" not in text
    assert "keep me\n" in text and "keep me too" in text
    section = text[text.index(matrix.START_MARKER) : text.index(matrix.END_MARKER)]
    row = re.search(
        r"^\| maxlower \| (\d+) \| (\d+) \((\d+) / (\d+)\) \| (\d+) \| (\d+) \| (\d+) "
        r"\| (\d+) \|$",
        section,
        re.MULTILINE,
    )
    assert row, section
    pairs, ok, ok_ort, ok_ref, refused, invalid, wrong, no_kernel = map(int, row.groups())
    assert ok > 0 and wrong == 0 and invalid == 0
    assert ok == ok_ort + ok_ref and pairs == ok + refused + invalid + wrong + no_kernel

    data = json.loads(dump.read_text())
    assert data["counts"]["maxlower"]["ok"] == ok
    assert len(data["results"]) == 3 * pairs
    assert {r["category"] for r in data["results"]} <= set(matrix.CATEGORIES)


def test_write_section_appends_then_replaces_only_its_own(tmp_path, matrix):
    """benchmarks/report.py's writer, which every benchmark script uses for its section."""
    path = tmp_path / "RESULTS.md"
    path.write_text("# Results\n\nother\n\n<!-- x:start -->\nkept\n<!-- x:end -->\n")
    markers = (matrix.START_MARKER, matrix.END_MARKER)
    write_section(path, f"{markers[0]}\none\n{markers[1]}\n", *markers)
    write_section(path, f"{markers[0]}\ntwo\n{markers[1]}\n", *markers)
    assert path.read_text() == (
        "# Results\n\nother\n\n<!-- x:start -->\nkept\n<!-- x:end -->\n\n"
        f"{markers[0]}\ntwo\n{markers[1]}\n"
    )


def _rename_op(model: onnx.ModelProto, op_type: str) -> onnx.ModelProto:
    for node in model.graph.node:
        node.op_type = op_type
    return model


@pytest.mark.parametrize(
    ("converter", "category", "message"),
    [
        (lambda model, opset: model, "invalid", "opset import is 13, not 12"),
        (lambda model, opset: _rename_op(model, "Missing"), "invalid", "checker"),
        (lambda model, opset: _rename_op(model, "Min"), "wrong", "values differ"),
        (lambda model, opset: 1 / 0, "refused", "ZeroDivisionError"),
        (lambda model, opset: time.sleep(5), "refused", "timed out"),
    ],
)
def test_categories(matrix, monkeypatch, converter, category, message):
    case = next(c for c in matrix.family_cases() if c.name == "test_max_int8")
    monkeypatch.setitem(matrix.CONVERTERS, "fake", converter)
    target = 12 if category == "invalid" and "opset" in message else 13
    result = matrix.evaluate_pair(case, "fake", target, timeout=0.5)
    assert result.category == category
    assert message in result.message


def test_maxlower_pair_is_ok(matrix):
    case = next(c for c in matrix.family_cases() if c.name == "test_argmax_keepdims_example")
    result = matrix.evaluate_pair(case, "maxlower", 11, timeout=30)
    assert (result.category, result.runner) == ("ok", "onnxruntime"), result.message
