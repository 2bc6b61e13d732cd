"""benchmarks/verify_cost.py: the quick run writes its section, keeps the others, and its
figures and verdicts mean what they say."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests import benchmark_scripts

SCRIPT = benchmark_scripts.ROOT / "benchmarks" / "verify_cost.py"
START, END = "<!-- verify-cost:start -->", "<!-- verify-cost:end -->"


def test_the_script_starts_and_takes_the_quick_runs_options():
    """The quick run itself, a benchmark, is in the slow tier."""
    benchmark_scripts.assert_takes_quick_options(SCRIPT)


@pytest.mark.slow
def test_quick_run_writes_its_section(tmp_path: Path):
    results = benchmark_scripts.seeded_results(tmp_path, START, END)
    benchmark_scripts.run(SCRIPT, "--quick", "--jobs", "2", "--results", str(results), timeout=300)
    section = benchmark_scripts.only_section(results, START, END)
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
