#!/usr/bin/env python
"""The conformance cases of each family lowered by profile: the figures of issue 17's
acceptance, the Max family's beside the Min family's.

    onnxruntime   every case converted to every opset 7..latest and lowered with the
                  `onnxruntime` profile: loads and runs in onnxruntime's CPU EP (optimisations
                  off, no fallback) and reproduces the expected outputs bit-exactly
    primitives    every case at its own opset and at 11 and 13, lowered with `primitives`:
                  no op of either family anywhere, full checker, expected outputs

Usage (from the repository root):

    python benchmarks/lower_conformance.py            # refresh its RESULTS.md section
    python benchmarks/lower_conformance.py --no-results

It rewrites only its section of benchmarks/RESULTS.md, between `<!-- lower-conformance:start -->`
and `<!-- lower-conformance:end -->`. tests/test_lower_conformance.py asserts the same on
every pair; this script counts them and times each family.
"""

from __future__ import annotations

import argparse
import datetime
import sys
import time
import warnings
from pathlib import Path

import onnx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tests.conformance, tests.test_lower_conformance

import maxlower  # noqa: E402
from benchmarks.report import machine, versions_text, write_section  # noqa: E402
from maxlower.api import convert_and_lower, lower  # noqa: E402
from maxlower.runtime import bit_equal, onnxruntime_session, run_model  # noqa: E402
from passes.extremum import FAMILIES, FAMILY_OPS  # noqa: E402
from tests.conformance import family_cases  # noqa: E402
from tests.test_lower_conformance import all_op_types, default_opset, feeds_and_expected  # noqa: E402

START, END = "<!-- lower-conformance:start -->", "<!-- lower-conformance:end -->"
LATEST = onnx.defs.onnx_opset_version()


def onnxruntime_pair(case, opset: int) -> bool:
    lowered, _ = convert_and_lower(case.model, opset, "onnxruntime")
    onnx.checker.check_model(lowered, full_check=True)
    feeds, expected = feeds_and_expected(case, lowered)
    outputs = onnxruntime_session(lowered).run(None, feeds)
    return all(bit_equal(e, a) for e, a in zip(expected, outputs, strict=True))


def primitives_pair(case, opset: int) -> bool:
    own = default_opset(case.model)
    source = case.model if opset == own else maxlower.convert(case.model, opset)
    lowered = lower(source, "primitives")
    onnx.checker.check_model(lowered, full_check=True)
    feeds, expected = feeds_and_expected(case, lowered)
    outputs, _ = run_model(lowered, feeds)
    clean = not set(FAMILY_OPS) & all_op_types(lowered)
    return clean and all(bit_equal(e, a) for e, a in zip(expected, outputs, strict=True))


def count(family, profile: str) -> tuple[int, int, float, list[str]]:
    """(pairs, ok pairs, seconds, the pairs that are not ok) of one family and profile."""
    started, pairs, ok, failed = time.perf_counter(), 0, 0, []
    for case in family_cases(family):
        if profile == "onnxruntime":
            opsets, check = range(7, LATEST + 1), onnxruntime_pair
        else:
            opsets, check = sorted({default_opset(case.model), 11, 13}), primitives_pair
        for opset in opsets:
            pairs += 1
            try:
                good = check(case, opset)
            except Exception as error:  # counted, and named below
                good, why = False, f"{type(error).__name__}: {str(error)[:120]}"
            else:
                why = "outputs differ or a family op is left"
            ok += good
            if not good:
                failed.append(f"{case.name}@{opset}: {why}")
    return pairs, ok, time.perf_counter() - started, failed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--no-results", action="store_true", help="do not write RESULTS.md")
    parser.add_argument("--results", type=Path, default=ROOT / "benchmarks" / "RESULTS.md")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    rows, failures = [], []
    for profile, pairs_are in (
        ("onnxruntime", f"cases × opsets 7–{LATEST}"),
        ("primitives", "cases × {own opset, 11, 13}"),
    ):
        for family in FAMILIES:
            pairs, ok, seconds, failed = count(family, profile)
            cases = len(family_cases(family))
            rows.append(
                f"| `{profile}` | {family.name.capitalize()} | {cases} {pairs_are} | {pairs} "
                f"| {ok} | {pairs - ok} | {seconds:.0f} |"
            )
            failures += failed
    text = "\n".join(
        [
            START,
            "## Lowering the conformance cases: the Max and Min families by profile",
            "",
            "Written by `benchmarks/lower_conformance.py`; rerun it rather than editing this "
            "section.",
            "",
            f"- Date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M UTC}",
            f"- Machine: {machine()} (shared; seconds are one process, for proportion only)",
            f"- Versions: {versions_text()}",
            "",
            "**ok**: `onnxruntime` — converted, lowered, full checker, runs in onnxruntime's CPU "
            "EP (optimisations off, no fallback) with the expected outputs bit-exactly; "
            "`primitives` — lowered, no Max, ReduceMax, ArgMax, Min, ReduceMin or ArgMin "
            "anywhere, full checker, expected outputs bit-exactly.",
            "",
            "| profile | family | pairs are | pairs | ok | not ok | seconds |",
            "|---|---|---|---:|---:|---:|---:|",
            *rows,
            "",
            "Not ok: " + ("; ".join(failures) if failures else "none."),
            END,
        ]
    )
    print(text)
    if not args.no_results:
        write_section(args.results, text + "\n", START, END)
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
