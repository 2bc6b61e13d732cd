"""In-process and command-line speed on real exports: maxlower against
onnx.version_converter, model by model (issue 30).

    python benchmarks/real_speed.py --corpus CORPUS --results benchmarks/RESULTS.md

CORPUS is what `benchmarks/real_exports.py --out DIR` makes (torchvision and transformers
models from small configs, both torch exporters; it needs torch, so CI never runs this on
it). For each model and each target in --targets (11, 13 and 17) other than its own opset:

- library: the model loaded once with `onnx.load` (external data included), as a user
  would; then `onnx.version_converter.convert_version(model, T)` against
  `maxlower.convert_version(model, T)`, in this process, one warm-up call each, then
  --repeats rounds in alternating order (A B, then B A), `gc.collect()` before each call,
  outside its time. `maxlower.convert` on a ModelProto runs the same code as
  `maxlower.convert_version` (the drop-in only checks its arguments' types first), so it is
  not timed apart. Medians per pair; the ratio is maxlower's median over onnx's.
- command line (--cli-repeats, default 3, 0 skips it): `python -m maxlower convert M
  --opset T -o OUT -q` against `python -c "import onnx, onnx.version_converter as v;
  onnx.save(v.convert_version(onnx.load(M), T), OUT)"`, alternating, medians; for each
  source model (the name before the first dot) its first file in sorted order with a pair
  both convert, so that 20 models cost minutes, not an hour.

Only pairs that both converters convert (the warm-up's result passes
`onnx.checker.check_model(full_check=True)`) count in the ratios; the others are listed apart,
with each side's outcome (onnx's converter refuses most downgrades of these exports). The
summary gives the median and the worst ratio, against issue 30's targets: library at most
1.0x on the median model and 2x on the worst, command line at most 1.0x on the median.
"""

from __future__ import annotations

import argparse
import collections
import datetime
import gc
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))
from benchmarks.report import git_revision, machine, versions_text, write_section  # noqa: E402

START_MARKER = "<!-- real-speed:start -->"
END_MARKER = "<!-- real-speed:end -->"
ONNX_CLI = "import onnx, onnx.version_converter as v, sys; m, t, o = sys.argv[1:]; " + (
    "onnx.save(v.convert_version(onnx.load(m), int(t)), o)"
)


def own_opset(model) -> int:
    return next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))


def timed(call: Callable[[], object]) -> float:
    gc.collect()
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


def outcome(call: Callable[[], object]) -> str:
    """'ok', or the error's type and first line (the warm-up call): a refusal, or a model
    that fails onnx's full check (onnx's converter returns some), which is no conversion."""
    import onnx

    try:
        onnx.checker.check_model(call(), full_check=True)
    except Exception as error:  # every refusal is a row of the table
        first = (str(error).strip().splitlines() or [""])[0]
        return f"{type(error).__name__}: {first[:100]}"
    return "ok"


def library_pairs(models: list[Path], targets: list[int], repeats: int) -> list[dict]:
    import onnx
    import onnx.version_converter

    import maxlower

    rows = []
    for path in models:
        model = onnx.load(str(path))
        own = own_opset(model)
        for target in (t for t in targets if t != own):
            calls = {
                "onnx": lambda m=model, t=target: onnx.version_converter.convert_version(m, t),
                "maxlower": lambda m=model, t=target: maxlower.convert_version(m, t),
            }
            row = {"model": path.name, "from": own, "to": target, "seconds": {}}
            row["outcome"] = {name: outcome(call) for name, call in calls.items()}
            if all(o == "ok" for o in row["outcome"].values()):
                times: dict[str, list[float]] = {"onnx": [], "maxlower": []}
                for repeat in range(repeats):
                    for name in ("onnx", "maxlower") if repeat % 2 == 0 else ("maxlower", "onnx"):
                        times[name].append(timed(calls[name]))
                row["seconds"] = {name: statistics.median(t) for name, t in times.items()}
            rows.append(row)
            print(_row_line(row), flush=True)
    return rows


def cli_pairs(rows: list[dict], corpus: Path, repeats: int) -> list[dict]:
    """One comparable pair per source model, each side as a whole process."""
    chosen: dict[str, dict] = {}
    for row in sorted(rows, key=lambda r: (r["model"], r["to"])):
        if row["seconds"]:
            chosen.setdefault(row["model"].split(".")[0], row)
    out = Path(tempfile.mkdtemp(prefix="maxlower-real-speed-"))
    cli = []
    for row in chosen.values():
        model, target = str(corpus / row["model"]), str(row["to"])
        commands = {
            "maxlower": [sys.executable, "-m", "maxlower", "convert", model, "--opset", target],
            "onnx": [sys.executable, "-c", ONNX_CLI, model, target, str(out / "onnx.onnx")],
        }
        commands["maxlower"] += ["-o", str(out / "maxlower.onnx"), "-q"]
        times: dict[str, list[float]] = {"onnx": [], "maxlower": []}
        for repeat in range(repeats):
            for name in ("onnx", "maxlower") if repeat % 2 == 0 else ("maxlower", "onnx"):
                started = time.perf_counter()
                done = subprocess.run(commands[name], capture_output=True, text=True)
                times[name].append(time.perf_counter() - started)
                if done.returncode != 0:
                    raise SystemExit(f"{name} on {row['model']} → {target}: {done.stderr}")
        medians = {name: statistics.median(t) for name, t in times.items()}
        cli.append({"model": row["model"], "from": row["from"], "to": row["to"], **medians})
        print(
            f"cli {row['model']} → {target}: maxlower {medians['maxlower']:.2f} s, "
            f"onnx {medians['onnx']:.2f} s",
            flush=True,
        )
    return cli


def _row_line(row: dict) -> str:
    if row["seconds"]:
        s = row["seconds"]
        return (
            f"{row['model']} → {row['to']}: maxlower {s['maxlower'] * 1000:.1f} ms, "
            f"onnx {s['onnx'] * 1000:.1f} ms, {s['maxlower'] / s['onnx']:.2f}x"
        )
    return f"{row['model']} → {row['to']}: " + "; ".join(
        f"{k} {v}" for k, v in row["outcome"].items()
    )


def summary(ratios: list[float]) -> tuple[float, float]:
    return statistics.median(ratios), max(ratios)


def section(args: argparse.Namespace, models: list[Path], rows: list[dict], cli: list[dict]):
    both = [r for r in rows if r["seconds"]]
    ratios = [r["seconds"]["maxlower"] / r["seconds"]["onnx"] for r in both]
    lines = [
        START_MARKER,
        "## Real exports: maxlower against onnx.version_converter, in process and as commands",
        "",
        "Written by `benchmarks/real_speed.py`; rerun it rather than editing this section.",
        "",
        f"- Date: {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC",
        f"- Machine: {machine()}",
        f"- Versions: {versions_text()}, maxlower git {git_revision()}",
        f"- Command: `python benchmarks/real_speed.py --corpus CORPUS --repeats {args.repeats} "
        f"--cli-repeats {args.cli_repeats} --targets {' '.join(map(str, args.targets))} "
        "--results benchmarks/RESULTS.md` (CORPUS from `benchmarks/real_exports.py`)",
        f"- Corpus: {len(models)} models; {len(rows)} (model, target) pairs, of which "
        f"{len(both)} both converters convert (the ratios below are over those)",
        "",
    ]
    if ratios:
        median, worst = summary(ratios)
        worst_row = both[ratios.index(worst)]
        lines += [
            f"- Library (`maxlower.convert_version` / `onnx.version_converter.convert_version`, "
            f"medians of {args.repeats} alternating calls after a warm-up): median ratio "
            f"**{median:.2f}x** (target ≤ 1.0x: {'met' if median <= 1.0 else 'MISSED'}), "
            f"worst **{worst:.2f}x** on {worst_row['model']} → {worst_row['to']} "
            f"(target ≤ 2x: {'met' if worst <= 2.0 else 'MISSED'})",
        ]
    if cli:
        cli_ratios = [c["maxlower"] / c["onnx"] for c in cli]
        median, worst = summary(cli_ratios)
        lines += [
            f"- Command line (`python -m maxlower convert` / a `python -c` converter process, "
            f"medians of {args.cli_repeats}, one pair per source model, {len(cli)} pairs): "
            f"median ratio **{median:.2f}x** (target ≤ 1.0x: "
            f"{'met' if median <= 1.0 else 'MISSED'}), worst {worst:.2f}x",
        ]
    lines += ["", "### In process", "", "| model | from → to | maxlower | onnx | ratio |"]
    lines += ["|---|---|---:|---:|---:|"]
    for r in sorted(both, key=lambda r: r["seconds"]["maxlower"] / r["seconds"]["onnx"]):
        s = r["seconds"]
        lines.append(
            f"| {r['model']} | {r['from']} → {r['to']} | {s['maxlower'] * 1000:.1f} ms | "
            f"{s['onnx'] * 1000:.1f} ms | {s['maxlower'] / s['onnx']:.2f}x |"
        )
    if cli:
        lines += ["", "### Command line", "", "| model | from → to | maxlower | onnx | ratio |"]
        lines += ["|---|---|---:|---:|---:|"]
        for c in sorted(cli, key=lambda c: c["maxlower"] / c["onnx"]):
            lines.append(
                f"| {c['model']} | {c['from']} → {c['to']} | {c['maxlower']:.2f} s | "
                f"{c['onnx']:.2f} s | {c['maxlower'] / c['onnx']:.2f}x |"
            )
    apart = [r for r in rows if not r["seconds"]]
    counts = collections.Counter(
        "both refuse"
        if all(o != "ok" for o in r["outcome"].values())
        else f"only {'maxlower' if r['outcome']['maxlower'] == 'ok' else 'onnx'} converts"
        for r in apart
    )
    lines += [
        "",
        "### Pairs not in the ratios",
        "",
        ", ".join(f"{k}: {v}" for k, v in counts.most_common()) or "none",
        "",
        "| model | from → to | maxlower | onnx |",
        "|---|---|---|---|",
    ]
    for r in apart:
        cells = [r["outcome"][k].replace("|", "\\|") for k in ("maxlower", "onnx")]
        lines.append(f"| {r['model']} | {r['from']} → {r['to']} | {cells[0]} | {cells[1]} |")
    lines.append(END_MARKER)
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--targets", type=int, nargs="+", default=[11, 13, 17])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--cli-repeats", type=int, default=3)
    parser.add_argument("--only", default="", help="only models whose file name has this")
    parser.add_argument("--results", type=Path, default=None)
    args = parser.parse_args()
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    models = sorted(p for p in args.corpus.glob("*.onnx") if args.only in p.name)
    if not models:
        parser.error(f"no .onnx file in {args.corpus} (benchmarks/real_exports.py makes one)")
    warnings.simplefilter("ignore")  # onnx's converter warns per node; the table says more
    rows = library_pairs(models, args.targets, args.repeats)
    cli = cli_pairs(rows, args.corpus, args.cli_repeats) if args.cli_repeats else []
    text = section(args, models, rows, cli)
    print(text)
    if args.results is not None:
        write_section(args.results, text + "\n", START_MARKER, END_MARKER)
    return 0


if __name__ == "__main__":
    sys.exit(main())
