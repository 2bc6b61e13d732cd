"""benchmarks/verify_cost.py: the quick run writes its section, keeps the others, and its
figures and verdicts mean what they say."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "verify_cost.py"
START, END = "<!-- verify-cost:start -->", "<!-- verify-cost:end -->"


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
def test_quick_run_writes_its_section(tmp_path: Path):
    results = tmp_path / "RESULTS.md"
    results.write_text(f"# Benchmark results\n\nkeep me\n\n{START}\nstale\n{END}\n\nkeep me too\n")
    process = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--jobs", "2", "--results", str(results)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert process.returncode == 0, process.stdout[-2000:] + process.stderr[-3000:]
    text = results.read_text()
    assert text.count(START) == text.count(END) == 1
    assert "stale" not in text and "keep me\n" in text and "keep me too" in text
    section = text[text.index(START) : text.index(END)]
    assert "A: 100 nodes at opset 18" in section and "input float32 [256, 1024]" in section
    assert "verdict equivalent" in section
    ratios = re.findall(r"\| ([\d.]+ m?s) \| (\d+)× \|", section)
    assert len(ratios) == 2 and all(int(ratio) >= 1 for _, ratio in ratios)
    conformance = re.search(
        r"\| (\d+) correct conversions .*? \| (\d+) \| (\d+) \| (\d+) \| "
        r"(\d+) \|",
        section,
    )
    pairs, verifications, equivalent, different, inconclusive = map(int, conformance.groups())
    assert pairs > 0 and verifications == equivalent == pairs and different == inconclusive == 0
    mutants = re.search(r"\| (\d+) planted bugs .*? \| (\d+) \| (\d+) \| (\d+) \|", section)
    count, verified, equivalent, different = map(int, mutants.groups())
    assert count >= 12 and verified == different == count and equivalent == 0
    assert "missed with some seed: none" in section
