"""Every real export of the corpus converted down with --prove, as one batch per target
(issue 27's acceptance: `convert --prove` PROVED on the conversions that convert, with every
site proved, at the models' real sizes).

    python benchmarks/real_corpus_prove.py --corpus CORPUS --results benchmarks/RESULTS.md

CORPUS is what `benchmarks/real_exports.py --out DIR` makes (torchvision and transformers
models from small configs, both torch exporters). For each target (13 and 11 by default)
it runs `maxlower convert CORPUS --opset T -o OUT --prove --jobs 2 --json LINES` and
tabulates each model: refused (with the reason), or the proof's status, its sites and how
many were proved, by which methods, its seconds, and for an INCONCLUSIVE proof the site
that stopped it and why. A refused conversion is not a proof's failure: the shares are
over the conversions that convert. Then, for every conversion that converts (written with
--force when its proof is inconclusive), `maxlower prove SOURCE CONVERTED --json` proves the
whole pair by regions (the "prove A B" columns): its status, its seconds, and the
assumptions it lists.
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
from benchmarks.real_corpus_verify import batch  # noqa: E402
from benchmarks.report import git_revision, machine, versions_text, write_section  # noqa: E402

START_MARKER = "<!-- real-corpus-prove:start -->"
END_MARKER = "<!-- real-corpus-prove:end -->"
REASON_CHARS = 160  # of a blocker's reason, in the table


def row(record: dict) -> dict:
    """One model's line: refused, or its proof."""
    name = Path(record["input"]).name
    result = record.get("result") if isinstance(record.get("result"), dict) else None
    proof = (result or {}).get("proof")
    if proof is None:  # refused (or crashed): no proof to report
        reason = (record.get("error") or record["status"]).split(". To make it possible")[0]
        return {"model": name, "converted": False, "status": record["status"], "why": reason}
    sites = proof.get("sites") or []
    proved = [s for s in sites if s["status"] == "proved"]
    methods = collections.Counter(s["method"] for s in proved)
    return {
        "model": name,
        "converted": True,
        "status": proof["status"],
        "sites": len(sites),
        "proved": len(proved),
        "methods": ", ".join(f"{m} {n}" for m, n in sorted(methods.items())) or "-",
        "seconds": proof.get("seconds") or 0.0,
        "why": stopped_by(sites),
    }


def stopped_by(sites: list[dict]) -> str:
    """The first site not proved, as 'Op 'node': why' ('' when every one is)."""
    blocker = next((s for s in sites if s["status"] != "proved"), None)
    if blocker is None:
        return ""
    return f"{blocker['op_type']} {blocker['node']!r}: {blocker.get('reason') or ''}"


def prove_pair(record: dict, work: Path) -> dict:
    """`maxlower prove` of a converted model against its source: status, seconds, and the
    assumptions listed (or why it stopped)."""
    report = work / (Path(record["input"]).name + ".prove.json")
    command = [sys.executable, "-m", "maxlower", "prove", record["input"], record["output"]]
    started = time.perf_counter()
    done = subprocess.run([*command, "--json", str(report)], capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if not report.exists():
        return {"pair": "error", "pair_seconds": seconds, "pair_why": done.stderr.strip()[-200:]}
    proof = json.loads(report.read_text())
    return {
        "pair": proof["status"],
        "pair_seconds": seconds,
        "pair_why": stopped_by(proof.get("sites", [])),
        "assumptions": proof.get("assumptions", []),
    }


def short(text: str) -> str:
    text = " ".join(text.split()).replace("|", "\\|")
    return text if len(text) <= REASON_CHARS else text[: REASON_CHARS - 1] + "…"


def table(target: int, rows: list[dict], seconds: float) -> list[str]:
    converted = [r for r in rows if r["converted"]]
    proved = [r for r in converted if r["status"] == "proved"]
    share = 100 * len(proved) / len(converted) if converted else 0.0
    median = statistics.median([r["seconds"] for r in converted]) if converted else 0.0
    lines = [
        f"### To opset {target}",
        "",
        f"- {len(rows)} models, {len(converted)} convert: **PROVED {len(proved)} of "
        f"{len(converted)} ({share:.1f}%)**, every site proved; median proof "
        f"{median:.2f} s; the batch {seconds:.0f} s on 2 jobs",
        "",
        f"- `prove A B` (the source against what conversion wrote): **PROVED "
        f"{sum(r.get('pair') == 'proved' for r in converted)} of {len(converted)}**; median "
        f"{statistics.median([r.get('pair_seconds', 0.0) for r in converted] or [0]):.1f} s "
        "a pair, start-up included",
        "",
        "| model | proof | sites | proved | methods | seconds | what stopped it "
        "| prove A B | seconds | what stopped it |",
        "|---|---|---:|---:|---|---:|---|---|---:|---|",
    ]
    for r in sorted(converted, key=lambda r: (r["status"] == "proved", r["model"])):
        lines.append(
            f"| {r['model']} | {r['status']} | {r['sites']} | {r['proved']} | {r['methods']} "
            f"| {r['seconds']:.2f} | {short(r['why'])} | {r.get('pair', '-')} "
            f"| {r.get('pair_seconds', 0.0):.1f} | {short(r.get('pair_why', ''))} |"
        )
    assumed = collections.Counter(a for r in converted for a in r.get("assumptions", []))
    if assumed:
        lines += ["", "What `prove A B` assumed (pairs listing it):", ""]
        lines += [f"- {n} × {short(a)}" for a, n in sorted(assumed.items())]
    refused = collections.Counter(short(r["why"]) for r in rows if not r["converted"])
    if refused:
        lines += ["", "Refused (not counted above):", ""]
        lines += [f"- {n} × {why}" for why, n in refused.most_common()]
    return [*lines, ""]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, required=True, help="a real_exports.py folder")
    parser.add_argument("--targets", type=int, nargs="+", default=[13, 11])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--results", type=Path, help="write the section into this file")
    args = parser.parse_args()
    sections = []
    with tempfile.TemporaryDirectory() as directory:
        for target in args.targets:
            work = Path(directory)
            records, seconds = batch([args.corpus], target, work, args.jobs, "--prove", "--force")
            rows = []
            for record in records:
                rows.append(row(record))
                if rows[-1]["converted"]:
                    rows[-1].update(prove_pair(record, work))
            sections += table(target, rows, seconds)
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    command = "python benchmarks/real_corpus_prove.py --corpus CORPUS"
    text = "\n".join(
        [
            START_MARKER,
            "## Real exports converted down with --prove",
            "",
            "Written by `benchmarks/real_corpus_prove.py`; rerun it rather than editing this "
            "section.",
            "",
            f"- Date: {now}",
            f"- Machine: {machine()}",
            f"- Versions: {versions_text()}, maxlower git {git_revision()}",
            f"- Command: `{command} --results benchmarks/RESULTS.md` (CORPUS from "
            "`benchmarks/real_exports.py`)",
            "",
            *sections,
            END_MARKER,
        ]
    )
    print(text)
    if args.results is not None:
        write_section(args.results, text, START_MARKER, END_MARKER)
    return 0


if __name__ == "__main__":
    sys.exit(main())
