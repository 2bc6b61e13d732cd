"""Whole exported models through onnx.version_converter alone and through maxlower.

    python benchmarks/whole_model.py                      # all fixtures, writes RESULTS.md
    python benchmarks/whole_model.py --fixture encoder --no-results

Every fixture of `tests/fixtures` (real PyTorch exports and onnx's light models, with
Max-family heads) goes to opsets 11, 13, 17, 18 and the latest, through each converter.
A pair is **ok** when the result passes `onnx.checker.check_model(full_check=True)`, imports
the target opset, keeps the model-local functions, runs in onnxruntime (CPU,
`ORT_DISABLE_ALL`) and reproduces the original's outputs bit for bit on seeded inputs;
**ok (spec)** when it does so against the original with LayerNormalization expanded into
its ONNX function body (the target has no LayerNormalization, and onnxruntime's fused
kernel rounds differently from the body); otherwise **refused** (the converter raised),
**invalid** (checker, or wrong opset import), **lost functions**, **no run** (onnxruntime
cannot run it) or **wrong** (outputs differ). Conversion times are medians over the pairs
both converters get ok, measured side by side in one process.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import datetime
import functools
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
from tests.fixtures.catalog import (  # noqa: E402
    TARGETS,
    differences,
    fixtures,
    outputs_of,
    spec_reference,
)

START_MARKER = "<!-- whole-model:start -->"
END_MARKER = "<!-- whole-model:end -->"
CONVERTERS = {
    "onnx.version_converter": onnx.version_converter.convert_version,
    "maxlower": maxlower.convert,
    # Function bodies for ops missing at the target (opt-in: exact to the spec's body, which
    # onnxruntime's fused LayerNormalization kernel rounds differently).
    "maxlower --expand-functions": functools.partial(maxlower.convert, expand_functions=True),
}
SPEC_NOT_KERNEL = {"LayerNormalization": 17}  # op → first opset that has it
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


def evaluate(fixture, model, feeds, expected, converter: str, target: int) -> Pair:
    start = time.perf_counter()
    try:
        converted = CONVERTERS[converter](model, target)
    except Exception as error:  # each converter raises its own kinds
        return Pair(fixture.name, converter, target, "refused", one_line(error))
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


def one_line(error: BaseException) -> str:
    text = " ".join(str(error).split()) or type(error).__name__
    return f"{type(error).__name__}: {text[:300]}"


def run(fixture_filter: str) -> list[Pair]:
    pairs = []
    for fixture in fixtures():
        if fixture_filter not in fixture.name:
            continue
        model = fixture.load()
        feeds = fixture.feeds(model)
        expected, _ = outputs_of(model, feeds)
        for target in TARGETS:
            for converter in CONVERTERS:
                pair = evaluate(fixture, model, feeds, expected, converter, target)
                pairs.append(pair)
                print(f"{fixture.name} {target} {converter}: {pair.category}", flush=True)
    return pairs


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
        f"- Pairs: {len(names)} fixtures × {len(TARGETS)} targets "
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
        "| converter | "
        + " | ".join(["✓", "✓ˢ", "✗", "invalid", "lost fn", "no run", "wrong"])
        + " |",
        "|---|" + "---:|" * 7,
    ]
    for converter in CONVERTERS:
        counts = collections.Counter(p.category for p in pairs if p.converter == converter)
        cells = [str(counts.get(c, 0)) for c in SYMBOL]
        lines.append(f"| {converter} | " + " | ".join(cells) + " |")
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
    lines.append(END_MARKER)
    return "\n".join(lines) + "\n"


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
    failed = [p for p in pairs if p.converter == "maxlower" and not p.category.startswith("ok")]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
