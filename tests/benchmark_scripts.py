"""What the tests of a benchmark script share: run it as a user does, and the RESULTS.md
section it owns between its two markers."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run(script: Path, *args: str, timeout: int) -> subprocess.CompletedProcess:
    """The script run from the repository root, as its docs show it; asserts exit 0."""
    process = subprocess.run(
        [sys.executable, str(script), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert process.returncode == 0, process.stdout[-2000:] + process.stderr[-3000:]
    return process


def assert_takes_quick_options(script: Path) -> None:
    """The script imports what it uses and takes the options of the quick run."""
    process = run(script, "--help", timeout=120)
    assert "--quick" in process.stdout and "--results" in process.stdout


def seeded_results(directory: Path, start: str, end: str) -> Path:
    """A RESULTS.md with a stale section between the markers and text around it."""
    results = directory / "RESULTS.md"
    results.write_text(f"# Benchmark results\n\nkeep me\n\n{start}\nstale\n{end}\n\nkeep me too\n")
    return results


def only_section(results: Path, start: str, end: str) -> str:
    """The new section, after asserting that the script replaced only that."""
    text = results.read_text()
    assert "keep me\n" in text and "keep me too" in text and "stale" not in text
    assert text.count(start) == text.count(end) == 1
    return text[text.index(start) : text.index(end)]
