"""Every real export of the corpus converted down, with --verify, as one batch per target
(issue 29's acceptance: function ops expanded by default, and verified).

    python benchmarks/real_corpus_verify.py --corpus CORPUS --results benchmarks/RESULTS.md

CORPUS is what `benchmarks/real_exports.py --out DIR` makes (torchvision and transformers
models from small configs, both torch exporters). For each target (13 and 11 by default)
it runs `maxlower convert CORPUS --opset T -o OUT --verify --jobs 2 --json LINES` and
tabulates each model's outcome: converted (and which ops were expanded) or refused (with
the reason), and the verification's status. The exit code is 1 when any conversion is
DIFFERENT or crashes: a conversion that changes meaning must never be written.
"""

from __future__ import annotations

import argparse
import collections
import datetime
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))
from benchmarks.report import git_revision, machine, versions_text, write_section  # noqa: E402

START_MARKER = "<!-- real-corpus-verify:start -->"
END_MARKER = "<!-- real-corpus-verify:end -->"


def batch(corpus: Path, target: int, work: Path, jobs: int) -> tuple[list[dict], float]:
    lines = work / f"opset{target}.jsonl"
    command = [sys.executable, "-m", "maxlower", "convert", str(corpus), "--opset", str(target)]
    command += ["-o", str(work / f"opset{target}"), "--verify", "--jobs", str(jobs), "-q"]
    command += ["--json", str(lines)]
    started = time.perf_counter()
    subprocess.run(command, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    return [json.loads(line) for line in lines.read_text().splitlines()], seconds


def outcome(record: dict) -> tuple[str, str, str]:
    """(conversion, expanded ops, verification status) of one model."""
    result = record["result"] or {}
    verification = (result.get("verification") or {}).get("status", "")
    if record["status"] in ("ok", "different"):
        expanded = sorted({c["op_type"] for c in result.get("changes", {}).get("expanded", [])})
        return "converted", ", ".join(expanded), verification or record["status"]
    reason = (record["error"] or record["status"]).split(": ", 1)[-1]
    return f"{record['status']}: {reason[:90]}", "", ""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--targets", type=int, nargs="+", default=[13, 11])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--results", type=Path, default=None)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="maxlower-corpus-verify-"))
    rows: dict[str, dict[int, tuple[str, str, str]]] = collections.defaultdict(dict)
    totals, bad = {}, []
    for target in args.targets:
        records, seconds = batch(args.corpus, target, work, args.jobs)
        totals[target] = (len(records), seconds)
        for record in records:
            name = Path(record["input"]).name
            rows[name][target] = outcome(record)
            if record["status"] in ("different", "crashed", "internal error"):
                bad.append(f"{name} → {target}: {record['status']} {record['error'] or ''}")
    header = "| model | " + " | ".join(f"→ {t}" for t in args.targets) + " |"
    table = [header, "|---|" + "---|" * len(args.targets)]
    for name in sorted(rows):
        cells = []
        for target in args.targets:
            conversion, expanded, verified = rows[name].get(target, ("", "", ""))
            text = verified if conversion == "converted" else conversion
            cells.append(text + (f" (expanded: {expanded})" if expanded else ""))
        table.append(f"| {name} | " + " | ".join(cells) + " |")
    summary = []
    for target in args.targets:
        counts = collections.Counter(
            row[target][2] if row[target][0] == "converted" else row[target][0].split(":")[0]
            for row in rows.values()
            if target in row
        )
        n, seconds = totals[target]
        summary.append(
            f"- → {target}: {n} models in {seconds:.0f} s: "
            + ", ".join(f"{k} {v}" for k, v in counts.most_common())
        )
    text = "\n".join(
        [
            START_MARKER,
            "## The real-export corpus converted down, with --verify",
            "",
            "Written by `benchmarks/real_corpus_verify.py`; rerun it rather than editing this "
            "section.",
            "",
            f"- Date: {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC",
            f"- Machine: {machine()}",
            f"- Versions: {versions_text()}, maxlower git {git_revision()}",
            "- Command: `python benchmarks/real_corpus_verify.py --corpus CORPUS "
            "--results benchmarks/RESULTS.md` (CORPUS from `benchmarks/real_exports.py`)",
            *summary,
            "",
            "Each cell: the verification's status where the model converted (`equivalent`, "
            "or `equivalent_except_expanded_function_rounding` where an expanded function's "
            "body rounds unlike onnxruntime's fused kernel, the body itself matched bit for "
            "bit), else the refusal's reason.",
            "",
            *table,
            "",
            "No conversion DIFFERENT or crashed."
            if not bad
            else "PROBLEMS:\n" + "\n".join(f"- {b}" for b in bad),
            END_MARKER,
        ]
    )
    print(text)
    if args.results is not None:
        write_section(args.results, text + "\n", START_MARKER, END_MARKER)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
