"""Every real export of the corpus converted down, with --verify, as one batch per target
(issue 29's acceptance: function ops expanded by default, and verified).

    python benchmarks/real_corpus_verify.py --corpus CORPUS --field --results benchmarks/RESULTS.md

`--field` adds the suite's skl2onnx, tf2onnx and third-party pattern fixtures, and two
models in the field's shapes (a paddle2onnx -1 dim; silero-vad's If branches on its
sample rate beside a state input), as one batch with the corpus.

CORPUS is what `benchmarks/real_exports.py --out DIR` makes (torchvision and transformers
models from small configs, both torch exporters). For each target (13 and 11 by default)
it runs `maxlower convert CORPUS --opset T -o OUT --verify --jobs 2 --json LINES` and
tabulates each model's outcome: converted (and which ops were expanded) or refused (with
the reason), the verification's status, and its trials (run in onnxruntime, in
onnx.reference, skipped and why: issue 28). The exit code is 1 when any conversion is
DIFFERENT, crashes, exits 4 or is killed by a signal: a conversion that changes meaning
must never be written.
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


def batch(
    corpora: list[Path], target: int, work: Path, jobs: int, check: str = "--verify", *more: str
) -> tuple[list[dict], float]:
    """(the batch's JSON lines, its seconds): `maxlower convert CORPORA --opset T` with
    `check` (--verify, or --prove for real_corpus_prove.py) and `more` options."""
    lines = work / f"opset{target}.jsonl"
    command = [sys.executable, "-m", "maxlower", "convert", *map(str, corpora)]
    command += ["--opset", str(target)]
    command += ["-o", str(work / f"opset{target}"), check, *more, "--jobs", str(jobs), "-q"]
    command += ["--json", str(lines)]
    started = time.perf_counter()
    subprocess.run(command, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    return [json.loads(line) for line in lines.read_text().splitlines()], seconds


def field_corpora(made: Path) -> list[Path]:
    """The suite's fixtures of other exporters, and a folder of the two field shapes (made
    by the verify tests' own builders, so that they are the models those tests hold)."""
    import onnx

    from tests.test_verify_accepted_inputs import paddle_model, silero_model

    made.mkdir(parents=True)
    onnx.save(paddle_model(), made / "paddle_minus_one.onnx")
    onnx.save(silero_model(), made / "silero_like.onnx")
    fixtures = REPO_ROOT / "tests" / "fixtures"
    return [fixtures / "sklearn", fixtures / "tf2onnx", fixtures / "patterns", made]


def outcome(record: dict) -> tuple[str, str, str]:
    """(conversion, expanded ops, verification status) of one model."""
    result = record["result"] or {}
    verification = (result.get("verification") or {}).get("status", "")
    if record["status"] in ("ok", "different"):
        expanded = sorted({c["op_type"] for c in result.get("changes", {}).get("expanded", [])})
        return "converted", ", ".join(expanded), verification or record["status"]
    reason = (record["error"] or record["status"]).split(": ", 1)[-1]
    return f"{record['status']}: {reason[:90]}", "", ""


def trials(record: dict) -> tuple[int, int, int, int, int, str] | None:
    """(trials the model accepts, run in onnxruntime on both sides, run in onnx.reference,
    skipped, not accepted (an edge the original runs on in no runtime), why the first
    skipped one was) of a converted model's verification, or None."""
    verification = (record["result"] or {}).get("verification")
    if not verification:
        return None
    runs = verification["trials"]
    outside = sum(1 for t in runs if t["status"] == "not accepted")
    skipped = [t for t in runs if t["status"] == "skipped"]
    both = sum(
        1
        for t in runs
        if t["status"] not in ("skipped", "not accepted")
        and t["reference_runner"] == t["candidate_runner"] == "onnxruntime"
    )
    accepted = len(runs) - outside
    reference = accepted - both - len(skipped)
    why = (skipped[0]["note"] or "").split("does not run on it: ", 1)[-1][:80] if skipped else ""
    return accepted, both, reference, len(skipped), outside, why


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, nargs="+", required=True)
    parser.add_argument(
        "--field",
        action="store_true",
        help="add the suite's other exporters (tests/fixtures: skl2onnx, tf2onnx, third-party "
        "patterns) and two models made here in the shapes of the field: a paddle2onnx input "
        "declaring -1, and silero-vad's sample rate choosing If branches beside a state",
    )
    parser.add_argument("--targets", type=int, nargs="+", default=[13, 11])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--results", type=Path, default=None)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="maxlower-corpus-verify-"))
    corpora = list(args.corpus) + (field_corpora(work / "field") if args.field else [])
    rows: dict[str, dict[int, tuple[str, str, str]]] = collections.defaultdict(dict)
    totals, bad = {}, []
    trial_rows: list[tuple] = []  # (model, target, *trials(record))
    for target in args.targets:
        records, seconds = batch(corpora, target, work, args.jobs)
        totals[target] = (len(records), seconds)
        for record in records:
            name = Path(record["input"]).name
            rows[name][target] = outcome(record)
            if record["status"] in ("different", "crashed", "internal error") or (
                record["exit_code"] == 4 or record["exit_code"] >= 128
            ):
                bad.append(f"{name} → {target}: {record['status']} {record['error'] or ''}")
            if (counted := trials(record)) is not None:
                trial_rows.append((name, target, *counted))
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
    every_trial = sum(1 for row in trial_rows if row[3] == row[2])
    share = every_trial / len(trial_rows) if trial_rows else 0.0
    summary.append(
        f"- every trial run in onnxruntime (both models, none skipped): {every_trial} of "
        f"{len(trial_rows)} verified conversions ({share:.1%}; issue 28's bar is 95%)"
    )
    trial_table = [
        "| model | → | trials | onnxruntime | onnx.reference | skipped | first skipped because "
        "| not accepted (an edge) |",
        "|---|---:|---:|---:|---:|---:|---|---:|",
        *(
            f"| {n} | {t} | {k} | {o} | {r} | {sk} | {why.replace('|', '/')} | {out} |"
            for n, t, k, o, r, sk, out, why in sorted(trial_rows)
        ),
    ]
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
            f"{'--field ' if args.field else ''}--results benchmarks/RESULTS.md` (CORPUS "
            "from `benchmarks/real_exports.py`)",
            *summary,
            "",
            "Each cell: the verification's status where the model converted (`equivalent`, "
            "or `equivalent_except_expanded_function_rounding` where an expanded function's "
            "body rounds unlike onnxruntime's fused kernel, the body itself matched bit for "
            "bit), else the refusal's reason.",
            "",
            *table,
            "",
            "The trials of each verification (`--verify` with no other flag): how many ran "
            "in onnxruntime on both models, how many in onnx.reference (both models: "
            "onnxruntime refused one of them), and how many were skipped, with the first "
            "skipped trial's reason; apart, the trials at an edge (a dim at 0, a control "
            "input at a value equal to none of the constants the model compares it with) "
            "that the original model runs on in no runtime: nothing to compare, and no "
            "flag would change that.",
            "",
            *trial_table,
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
