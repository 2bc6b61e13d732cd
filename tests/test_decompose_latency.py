"""benchmarks/decompose_latency.py: the quick run writes its own section of RESULTS.md (and
nothing else), with a row per measured decomposition and the onnxruntime loadability table."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "decompose_latency.py"
START, END = "<!-- decompose-latency:start -->", "<!-- decompose-latency:end -->"


def test_the_script_starts_and_takes_the_quick_runs_options():
    """The script imports what it uses (maxlower's modules as they are) and takes the options
    the quick run below passes; the quick run itself, a benchmark, is in the slow tier."""
    process = subprocess.run(
        [sys.executable, str(SCRIPT), "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert process.returncode == 0, process.stderr[-3000:]
    assert "--quick" in process.stdout and "--results" in process.stdout


@pytest.mark.slow
def test_quick_run_writes_only_its_section(tmp_path):
    results = tmp_path / "RESULTS.md"
    results.write_text(f"# Benchmark results\n\nkeep me\n\n{START}\nstale\n{END}\n\nkeep me too\n")
    process = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--results", str(results)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert process.returncode == 0, process.stderr[-3000:]
    text = results.read_text()
    assert "keep me\n" in text and "keep me too" in text and "stale" not in text
    assert text.count(START) == text.count(END) == 1
    section = text[text.index(START) : text.index(END)]
    rows = re.findall(
        r"^\| (Max|ReduceMax|ArgMax) \| `(\w+)` \| [^|]+ \| (float32|int32) \| ([\d,]+) \| "
        r"([\d,]+) \| ([\d.]+)x \| (?:–|`[\w -]+`: [\d.]+x) \| ≤ ([\d.]+)x \| "
        r"(met|missed by [\d.]+x: .+) \|$",
        section,
        re.MULTILINE,
    )
    assert len(rows) >= 4
    for _, _, _, native, decomposed, ratio, target, verdict in rows:
        measured = float(decomposed.replace(",", "")) / float(native.replace(",", ""))
        assert abs(measured - float(ratio)) < 0.02 * measured + 0.02
        assert (verdict == "met") == (float(ratio) <= float(target))
    lowered = re.search(
        r"^\| maxlower convert --profile onnxruntime \| (\d+) \| (\d+) \| (\d+) \|$",
        section,
        re.MULTILINE,
    )
    assert lowered and lowered.group(1) == lowered.group(2) and lowered.group(3) == "0"
