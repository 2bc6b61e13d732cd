"""A batch of real exports: `maxlower convert DIR --opset N -o OUT` with --jobs 1 and
--jobs 2 side by side, then --resume (issue 30's acceptance).

    python benchmarks/batch.py --corpus /work/corpus --opset 13 --results benchmarks/RESULTS.md

The corpus is a folder of exports (`benchmarks/real_exports.py --out DIR` makes one:
torchvision and transformers models from small configs, both torch exporters). Each repeat
runs the two job counts one after the other, in alternating order, as separate commands;
the figures are medians. Every run's outputs must be the same files, byte for byte, with
the same statuses in the JSON lines, and the --resume run must do no work twice: every
model is `resumed` and no output is written again (mtimes unchanged). The exit code is 1
when either fails.
"""

from __future__ import annotations

import argparse
import collections
import datetime
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))
from benchmarks.report import git_revision, machine, versions_text, write_section  # noqa: E402

START_MARKER = "<!-- batch:start -->"
END_MARKER = "<!-- batch:end -->"


def run_batch(corpus: Path, opset: int, out: Path, jobs: int, *extra: str) -> tuple[float, int]:
    """Wall seconds and exit code of one batch command."""
    command = [sys.executable, "-m", "maxlower", "convert", str(corpus), "--opset", str(opset)]
    command += ["-o", str(out), "--jobs", str(jobs), "-q", *extra]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    return time.perf_counter() - started, done.returncode


def outputs_of(out: Path) -> dict[str, bytes]:
    return {
        p.relative_to(out).as_posix(): p.read_bytes()
        for p in sorted(out.rglob("*"))
        if p.is_file() and p.name != ".maxlower-batch.jsonl"
    }


def statuses(lines: Path) -> dict[str, str]:
    records = [json.loads(line) for line in lines.read_text().splitlines()]
    return {Path(r["input"]).name: r["status"] for r in records}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--opset", type=int, default=13)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--results", type=Path, default=None)
    args = parser.parse_args()
    models = sorted(args.corpus.rglob("*.onnx"))
    work = Path(tempfile.mkdtemp(prefix="maxlower-batch-bench-"))
    seconds: dict[int, list[float]] = {1: [], 2: []}
    reference_outputs, reference_statuses, problems, code = None, None, [], None
    for repeat in range(args.repeats):
        for jobs in (1, 2) if repeat % 2 == 0 else (2, 1):
            out, lines = work / f"out-{jobs}-{repeat}", work / f"lines-{jobs}-{repeat}.jsonl"
            wall, code = run_batch(args.corpus, args.opset, out, jobs, "--json", str(lines))
            seconds[jobs].append(wall)
            print(f"--jobs {jobs}, repeat {repeat}: {wall:.1f} s, exit code {code}", flush=True)
            if reference_outputs is None:
                reference_outputs, reference_statuses = outputs_of(out), statuses(lines)
            elif outputs_of(out) != reference_outputs or statuses(lines) != reference_statuses:
                problems.append(f"--jobs {jobs}, repeat {repeat}: outputs or statuses differ")
    assert reference_statuses is not None
    last = work / f"out-2-{args.repeats - 1}"
    stamps = {p: p.stat().st_mtime_ns for p in last.rglob("*.onnx")}
    lines = work / "resume.jsonl"
    resume_wall, _ = run_batch(args.corpus, args.opset, last, 2, "--resume", "--json", str(lines))
    resumed = [json.loads(line)["resumed"] for line in lines.read_text().splitlines()]
    if not all(resumed) or {p: p.stat().st_mtime_ns for p in last.rglob("*.onnx")} != stamps:
        problems.append(f"--resume redid {resumed.count(False)} models")
    one, two = statistics.median(seconds[1]), statistics.median(seconds[2])
    counts = collections.Counter(reference_statuses.values())
    text = "\n".join(
        [
            START_MARKER,
            "## A batch of real exports: --jobs 1 against --jobs 2",
            "",
            "Written by `benchmarks/batch.py`; rerun it rather than editing this section.",
            "",
            f"- Date: {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC",
            f"- Machine: {machine()}",
            f"- Versions: {versions_text()}, maxlower git {git_revision()}",
            f"- Command: `python benchmarks/batch.py --corpus CORPUS --opset {args.opset} "
            f"--repeats {args.repeats} --results benchmarks/RESULTS.md`",
            f"- Corpus: {len(models)} models made by `benchmarks/real_exports.py`",
            f"- Statuses at opset {args.opset}: "
            + ", ".join(f"{status} {n}" for status, n in counts.most_common())
            + f" (exit code {code})",
            "",
            "| run | median wall time | runs |",
            "|---|---:|---|",
            f"| `--jobs 1` | {one:.1f} s | {', '.join(f'{s:.1f}' for s in seconds[1])} |",
            f"| `--jobs 2` | {two:.1f} s | {', '.join(f'{s:.1f}' for s in seconds[2])} |",
            f"| `--jobs 2 --resume` after a full run | {resume_wall:.1f} s | "
            f"{resumed.count(True)} of {len(resumed)} models skipped |",
            "",
            f"`--jobs 2` is **{one / two:.2f}×** faster than `--jobs 1` (the target is 1.7×). "
            + (
                "Every run wrote the same files byte for byte, with the same statuses."
                if not problems
                else "PROBLEMS: " + "; ".join(problems)
            ),
            END_MARKER,
        ]
    )
    print(text)
    if args.results is not None:
        write_section(args.results, text + "\n", START_MARKER, END_MARKER)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
