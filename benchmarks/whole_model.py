"""Whole exported models through onnx.version_converter alone and through maxlower.

    python benchmarks/whole_model.py                      # all fixtures, writes RESULTS.md
    python benchmarks/whole_model.py --fixture encoder --no-results

Every model of the dominance corpus (tests/fixtures/corpus.py: PyTorch exports and onnx's
light models with Max-family heads, their shape-less copies, skl2onnx / onnxmltools,
tf2onnx, and third-party patterns on values of unknown rank) goes to opsets 9, 11, 13, 15,
17, 18, 21 and the latest, through each converter.
A pair is **ok** when the result passes `onnx.checker.check_model(full_check=True)`, imports
the target opset, keeps the model-local functions, runs in onnxruntime (CPU,
`ORT_DISABLE_ALL`) and reproduces the original's outputs bit for bit on seeded inputs;
**ok (spec)** when it does so against the original with LayerNormalization expanded into
its ONNX function body (the target has no LayerNormalization, and onnxruntime's fused
kernel rounds differently from the body); otherwise **refused** (the converter raised),
**invalid** (checker, or wrong opset import), **lost functions**, **no run** (onnxruntime
cannot run it) or **wrong** (outputs differ). Conversion times are medians over the pairs
both converters get ok, measured side by side in one process.

**Dominance**: the pairs where onnx.version_converter's result is ok (or ok (spec)) and
maxlower's is not; it must be 0. Every maxlower refusal must also name a remedy
("To make it possible: ...") that does not name the target that failed (`remedy_problem`).
The exit code is 1 when either fails, or maxlower gives an invalid, wrong, unrunnable or
function-losing model.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import datetime
import functools
import json
import re
import statistics
import sys
import time
from pathlib import Path

import onnx
import onnx.version_converter

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))  # tests.fixtures, benchmarks.report
import maxlower  # noqa: E402
from benchmarks.report import machine, versions, write_section  # noqa: E402
from tests.fixtures.catalog import differences, outputs_of, spec_reference  # noqa: E402
from tests.fixtures.corpus import CONVERTER_VERDICTS, GROUPS, TARGETS, entries  # noqa: E402

START_MARKER = "<!-- whole-model:start -->"
END_MARKER = "<!-- whole-model:end -->"
CONVERTERS = {
    "onnx.version_converter": onnx.version_converter.convert_version,
    # Function bodies for ops missing at the target, by default (exact to the spec's body,
    # which onnxruntime's fused LayerNormalization kernel rounds differently: "ok (spec)").
    "maxlower": maxlower.convert,
    # ... and with that turned off: such an op is refused.
    "maxlower --no-expand-functions": functools.partial(maxlower.convert, expand_functions=False),
}
SPEC_NOT_KERNEL = {"LayerNormalization": 17}  # op → first opset that has it
CORRECT = ("ok", "ok (spec)")
SYMBOL = {
    "ok": "✓",
    "ok (spec)": "✓ˢ",
    "refused": "✗",
    "invalid": "invalid",
    "lost functions": "lost fn",
    "no run": "no run",
    "wrong": "wrong",
}


@dataclasses.dataclass
class Pair:
    fixture: str
    converter: str
    target: int
    category: str
    message: str = ""
    seconds: float = 0.0
    remedy_problem: str | None = None  # for a maxlower refusal: what is wrong with its remedy


def evaluate(fixture, model, feeds, expected, converter: str, target: int) -> Pair:
    start = time.perf_counter()
    try:
        converted = CONVERTERS[converter](model, target)
    except Exception as error:  # each converter raises its own kinds
        pair = Pair(fixture.name, converter, target, "refused", one_line(error))
        if converter.startswith("maxlower"):
            pair.remedy_problem = remedy_problem(str(error), target)
        return pair
    seconds = time.perf_counter() - start
    pair = Pair(fixture.name, converter, target, "ok", seconds=seconds)
    try:
        onnx.checker.check_model(converted, full_check=True)
        opset = {o.domain or "": o.version for o in converted.opset_import}.get("")
        if opset != target:
            raise ValueError(f"imports opset {opset}, not {target}")
    except Exception as error:
        pair.category, pair.message = "invalid", one_line(error)
        return pair
    if len(converted.functions) < len(model.functions):
        pair.category = "lost functions"
        pair.message = f"{len(model.functions)} model-local functions before, "
        pair.message += f"{len(converted.functions)} after"
        return pair
    try:
        actual, runtime = outputs_of(converted, feeds)
        if runtime != "onnxruntime":
            raise RuntimeError("onnxruntime cannot run it")
    except Exception as error:
        pair.category, pair.message = "no run", one_line(error)
        return pair
    ops = {n.op_type for n in model.graph.node} | {
        n.op_type for f in model.functions for n in f.node
    }
    expanded = frozenset(
        op for op, since in SPEC_NOT_KERNEL.items() if op in ops and target < since
    )
    problems = differences(expected, actual)
    if problems and expanded:
        spec, _ = outputs_of(spec_reference(model, expanded), feeds)
        if not differences(spec, actual):
            pair.category = "ok (spec)"
            pair.message = "vs the fused kernel: " + "; ".join(problems)
            return pair
    if problems:
        pair.category, pair.message = "wrong", "; ".join(problems)
    return pair


_RANGE = re.compile(r"opsets? (?:in )?(\d+)\.\.(\d+)")
_FROM = re.compile(r"opset (\d+) or later")
_UP_TO = re.compile(r"opset (\d+) or (?:earlier|below)")


def remedy_problem(message: str, target: int) -> str | None:
    """Why a refusal's message fails the rule (an exact reason, then a remedy that does
    not name the failed target), or None."""
    if "To make it possible:" not in message:
        return "no remedy"
    remedy = message.split("To make it possible:", 1)[1]
    for low, high in _RANGE.findall(remedy):
        if int(low) <= target <= int(high):
            return f"the remedy's range {low}..{high} holds the target {target}"
    for low in _FROM.findall(remedy):
        if int(low) <= target:
            return f"the remedy's 'opset {low} or later' holds the target {target}"
    for high in _UP_TO.findall(remedy):
        if target <= int(high):
            return f"the remedy's 'opset {high} or earlier' holds the target {target}"
    return None


def one_line(error: BaseException) -> str:
    text = " ".join(str(error).split()) or type(error).__name__
    return f"{type(error).__name__}: {text[:300]}"


def run(fixture_filter: str) -> list[Pair]:
    pairs = []
    for entry in entries():
        if fixture_filter not in entry.name:
            continue
        model = entry.load()
        feeds = entry.feeds(model)
        expected, _ = outputs_of(model, feeds)
        for target in TARGETS:
            for converter in CONVERTERS:
                pair = evaluate(entry, model, feeds, expected, converter, target)
                pairs.append(pair)
                print(f"{entry.name} {target} {converter}: {pair.category}", flush=True)
    return pairs


def misses(pairs: list[Pair], converter: str = "maxlower") -> list[Pair]:
    """The pairs where onnx.version_converter's result is correct and `converter`'s is not."""
    by_key = {(p.fixture, p.converter, p.target): p for p in pairs}
    return [
        p
        for p in pairs
        if p.converter == converter
        and p.category not in CORRECT
        and by_key[p.fixture, "onnx.version_converter", p.target].category in CORRECT
    ]


def failures(pairs: list[Pair]) -> list[Pair]:
    """What the acceptance forbids of maxlower: a miss, an invalid, wrong, unrunnable or
    function-losing model, or a refusal whose remedy breaks the rule."""
    broken = [
        p
        for p in pairs
        if p.converter == "maxlower"
        and (p.category not in (*CORRECT, "refused") or p.remedy_problem is not None)
    ]
    return misses(pairs) + broken


def section(pairs: list[Pair], command: str, seconds: float) -> str:
    names = list(dict.fromkeys(p.fixture for p in pairs))
    by_key = {(p.fixture, p.converter, p.target): p for p in pairs}
    lines = [
        START_MARKER,
        "## Whole models: onnx.version_converter alone and maxlower",
        "",
        "Written by `benchmarks/whole_model.py`; rerun it rather than editing this section.",
        "",
        f"- Date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC",
        f"- Machine: {machine()}",
        "- Versions: " + ", ".join(f"{k} {v}" for k, v in versions().items()),
        f"- Command: `{command}` ({seconds:.0f} s wall clock)",
        f"- Pairs: {len(names)} models × {len(TARGETS)} targets "
        f"({', '.join(map(str, TARGETS))}) per converter",
        "",
        "Categories: **✓** passes the full checker, imports the target opset, keeps the "
        "model-local functions, runs in onnxruntime (CPU, `ORT_DISABLE_ALL`) and gives the "
        "original's outputs bit for bit on seeded inputs; **✓ˢ** the same against the "
        "original with LayerNormalization expanded into its ONNX function body (the target "
        "has no LayerNormalization; onnxruntime's fused kernel differs from the body by a "
        "few ulp, listed below); **✗** the converter raised; **invalid** checker failure; "
        "**lost fn** model-local functions dropped; **no run**; **wrong** outputs differ.",
        "",
        "The last two columns: **converter ✓, this not** counts the pairs where "
        "onnx.version_converter's result is ✓ or ✓ˢ and this converter's is not (it must "
        "be 0 for maxlower); **bad remedy** the refusals whose message has no remedy or "
        "names a range holding the target that failed.",
        "",
        "| converter | "
        + " | ".join(["✓", "✓ˢ", "✗", "invalid", "lost fn", "no run", "wrong"])
        + " | converter ✓, this not | bad remedy |",
        "|---|" + "---:|" * 9,
    ]
    for converter in CONVERTERS:
        counts = collections.Counter(p.category for p in pairs if p.converter == converter)
        cells = [str(counts.get(c, 0)) for c in SYMBOL]
        if converter == "onnx.version_converter":
            cells += ["—", "—"]
        else:
            bad = sum(p.remedy_problem is not None for p in pairs if p.converter == converter)
            cells += [str(len(misses(pairs, converter))), str(bad)]
        lines.append(f"| {converter} | " + " | ".join(cells) + " |")
    lines += ["", "By exporter (✓ counts ✓ and ✓ˢ):", ""]
    lines += [
        "| corpus | models | onnx.version_converter ✓ | maxlower ✓ | converter ✓, maxlower not |",
        "|---|---:|---:|---:|---:|",
    ]
    for group in GROUPS:
        mine = [p for p in pairs if p.fixture.startswith(group + "/")]
        if not mine:
            continue
        models = len({p.fixture for p in mine})
        correct = {
            c: sum(p.category in CORRECT for p in mine if p.converter == c)
            for c in ("onnx.version_converter", "maxlower")
        }
        lines.append(
            f"| {group} | {models} | {correct['onnx.version_converter']} | "
            f"{correct['maxlower']} | {len(misses(mine))} |"
        )
    lines += [
        "",
        "Each cell: onnx.version_converter alone / maxlower.",
        "",
        "| fixture | " + " | ".join(map(str, TARGETS)) + " |",
        "|---|" + "---|" * len(TARGETS),
    ]
    for name in names:
        cells = [
            f"{SYMBOL[by_key[name, 'onnx.version_converter', t].category]} / "
            f"{SYMBOL[by_key[name, 'maxlower', t].category]}"
            for t in TARGETS
        ]
        lines.append(f"| `{name}` | " + " | ".join(cells) + " |")
    both = [
        (by_key[p.fixture, "onnx.version_converter", p.target].seconds, p.seconds)
        for p in pairs
        if p.converter == "maxlower"
        and p.category == "ok"
        and by_key[p.fixture, "onnx.version_converter", p.target].category == "ok"
    ]
    if both:
        vc, ml = statistics.median(b[0] for b in both), statistics.median(b[1] for b in both)
        lines += [
            "",
            f"Conversion time, median over the {len(both)} pairs both get ✓: "
            f"onnx.version_converter {vc * 1000:.1f} ms, maxlower {ml * 1000:.1f} ms "
            f"(maxlower / converter = {ml / vc:.1f}×; maxlower also checks the model "
            "before and after, and infers shapes).",
        ]
    for converter in CONVERTERS:
        bad = [p for p in pairs if p.converter == converter and p.category != "ok"]
        lines += ["", f"### {converter}: pairs that are not ✓", ""]
        if not bad:
            lines.append("None.")
        groups = collections.defaultdict(list)
        for p in bad:
            groups[p.category, p.message].append(f"`{p.fixture}`→{p.target}")
        for (category, message), where in sorted(groups.items(), key=lambda g: -len(g[1])):
            message = message.replace("`", "'")
            lines.append(f"- **{category}** ({len(where)}): `{message}` — {', '.join(where)}")
    problems = [p for p in pairs if p.remedy_problem is not None]
    if problems:
        lines += ["", "### maxlower refusals whose remedy breaks the rule", ""]
        lines += [
            f"- `{p.fixture}`→{p.target} ({p.converter}): {p.remedy_problem}" for p in problems
        ]
    lines.append(END_MARKER)
    return "\n".join(lines) + "\n"


def write_converter_verdicts(pairs: list[Pair], path: Path) -> None:
    """onnx.version_converter's category for every pair, which tests/test_dominance.py
    reads instead of running the converter and its outputs again (for this onnx only)."""
    verdicts = {
        f"{p.fixture}@{p.target}": p.category
        for p in pairs
        if p.converter == "onnx.version_converter"
    }
    data = {"onnx": onnx.__version__, "targets": list(TARGETS), "verdicts": verdicts}
    path.write_text(json.dumps(data, indent=0, sort_keys=True) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fixture", default="", help="only fixtures whose name has this")
    parser.add_argument("--results", type=Path, default=REPO_ROOT / "benchmarks" / "RESULTS.md")
    parser.add_argument("--no-results", action="store_true", help="print, write nothing")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    pairs = run(args.fixture)
    command = "python benchmarks/whole_model.py" + (
        f" --fixture {args.fixture}" if args.fixture else ""
    )
    text = section(pairs, command, time.perf_counter() - start)
    if args.no_results:
        print(text)
    else:
        write_section(args.results, text, START_MARKER, END_MARKER)
        print(f"wrote the whole-model section of {args.results}")
        if not args.fixture:
            write_converter_verdicts(pairs, CONVERTER_VERDICTS)
            print(f"wrote {CONVERTER_VERDICTS}")
    for p in failures(pairs):
        print(
            f"FAILED: {p.fixture} → {p.target}: {p.category} {p.remedy_problem or ''} {p.message}"
        )
    return 1 if failures(pairs) else 0


if __name__ == "__main__":
    sys.exit(main())
