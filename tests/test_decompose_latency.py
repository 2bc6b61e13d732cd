"""benchmarks/decompose_latency.py: the quick run writes its own section of RESULTS.md (and
nothing else), with a row per measured decomposition and the onnxruntime loadability table."""

from __future__ import annotations

import re

import pytest

from tests import benchmark_scripts

SCRIPT = benchmark_scripts.ROOT / "benchmarks" / "decompose_latency.py"
START, END = "<!-- decompose-latency:start -->", "<!-- decompose-latency:end -->"


def test_the_script_starts_and_takes_the_quick_runs_options():
    """The quick run itself, a benchmark, is in the slow tier."""
    benchmark_scripts.assert_takes_quick_options(SCRIPT)


@pytest.mark.slow
def test_quick_run_writes_only_its_section(tmp_path):
    results = benchmark_scripts.seeded_results(tmp_path, START, END)
    benchmark_scripts.run(SCRIPT, "--quick", "--results", str(results), timeout=300)
    section = benchmark_scripts.only_section(results, START, END)
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
