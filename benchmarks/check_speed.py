"""`maxlower check` on every committed fixture × every shipped profile: seconds per model.

Issue 18 asks for under 2 s per model. Each pair runs the command in this process (click's
CliRunner: the file is read, checked, typed and planned as on the command line, JSON report
included), so the figure excludes Python's start-up and imports; the slowest pairs are then
run again as real `maxlower check` subprocesses, start-up included. Writes the
`check-speed` section of benchmarks/RESULTS.md (`--no-write` only prints).

    python benchmarks/check_speed.py
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from click.testing import CliRunner

from benchmarks.report import REPO_ROOT, machine, versions, write_section
from maxlower.cli import cli
from maxlower.profiles import shipped_profiles
from tests.fixtures.catalog import fixtures

START, END = "<!-- check-speed:start -->", "<!-- check-speed:end -->"
LIMIT = 2.0


def time_in_process(path: Path, profile: str, json_path: Path) -> tuple[float, int]:
    runner = CliRunner()
    start = time.perf_counter()
    result = runner.invoke(cli, ["check", str(path), "-p", profile, "--json", str(json_path)])
    return time.perf_counter() - start, result.exit_code


def time_subprocess(path: Path, profile: str) -> tuple[float, float]:
    """(wall clock, CPU time of the child) of one `maxlower check` process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "maxlower", "check", str(path), "-p", profile, "-q"],
        capture_output=True,
        check=False,
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    profiles = sorted(shipped_profiles())
    rows: list[tuple[str, str, float, int]] = []
    began = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for fixture in fixtures():
            for profile in profiles:
                seconds, code = time_in_process(fixture.path, profile, Path(tmp) / "r.json")
                rows.append((fixture.name, profile, seconds, code))
    slowest = sorted(rows, key=lambda r: -r[2])[:3]
    spawned = [
        (n, p, time_subprocess(next(f.path for f in fixtures() if f.name == n), p))
        for n, p, _, _ in slowest
    ]
    times = [r[2] for r in rows]
    codes = {c: sum(1 for r in rows if r[3] == c) for c in sorted({r[3] for r in rows})}
    per_profile = {p: max(r[2] for r in rows if r[1] == p) for p in profiles}
    lines = [
        START,
        "## `maxlower check`: seconds per model, every fixture × every shipped profile",
        "",
        "Written by `benchmarks/check_speed.py`; rerun it rather than editing this section.",
        "",
        f"- Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}",
        f"- Machine: {machine()} (shared with other jobs while this ran)",
        "- Versions: " + ", ".join(f"{k} {v}" for k, v in versions().items()),
        f"- Pairs: {len(fixtures())} fixtures × {len(profiles)} profiles = {len(rows)} "
        f"({time.perf_counter() - began:.0f} s in all); exit codes {codes}",
        "",
        f"In process (file read, checked, typed and planned; --json written): median "
        f"{statistics.median(times):.2f} s, slowest {max(times):.2f} s; "
        f"{sum(t >= LIMIT for t in times)} pairs at or above {LIMIT:g} s.",
        "",
        "| profile | slowest fixture, s |",
        "|---|---:|",
        *[f"| {p} | {t:.2f} |" for p, t in per_profile.items()],
        "",
        "The three slowest pairs again as `python -m maxlower check ... -q` subprocesses "
        "(Python start-up and imports included):",
        "",
        "| fixture | profile | in process, s | subprocess wall clock, s | subprocess CPU, s |",
        "|---|---|---:|---:|---:|",
        *[
            f"| {n} | {p} | {t:.2f} | {wall:.2f} | {cpu:.2f} |"
            for (n, p, t, _), (_, _, (wall, cpu)) in zip(slowest, spawned, strict=True)
        ],
        "",
        "The machine's two cores were shared with other jobs during the run, so wall clock "
        "exceeds CPU time; most of a subprocess's time is Python importing onnx and numpy "
        "(`python -X importtime -m maxlower check ...`).",
        END,
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    if not args.no_write:
        write_section(REPO_ROOT / "benchmarks" / "RESULTS.md", text, START, END)


if __name__ == "__main__":
    main()
