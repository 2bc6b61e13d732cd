"""onnx's own version-converter tests (tests/onnx_converter_suite, copied from onnx/onnx)
run twice: with onnx's converter, and with `maxlower.convert_version` swapped in by the
suite's one-line conftest. Tabulates the outcomes of both and every test whose outcome
differs, with the first line of its failure.

    python benchmarks/onnx_converter_suite.py
    python benchmarks/onnx_converter_suite.py --results benchmarks/RESULTS.md

The maxlower run ignores the suite's xfail marks (--runxfail), so that the table shows raw
outcomes; the slow tier runs the suite with them, strict.
"""

from __future__ import annotations

import argparse
import collections
import pathlib
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.report import versions_text, write_section  # noqa: E402

SUITE = "tests/onnx_converter_suite"
START, END = "<!-- onnx_converter_suite:start -->", "<!-- onnx_converter_suite:end -->"


def run(converter: str, xml: pathlib.Path) -> tuple[dict[str, tuple[str, str]], float]:
    """Each test's (outcome, first line of its failure), and the run's seconds."""
    common = [sys.executable, "-m", "pytest", SUITE, "-q", "-p", "no:cacheprovider"]
    common += ["-o", "addopts=", f"--junitxml={xml}", "-n", "0"]
    # onnx's run: no conftest, so no swap (and no marks); maxlower's: the conftest swaps,
    # and its xfail marks are ignored so that outcomes are raw
    extra = ["--noconftest"] if converter == "onnx" else ["--runxfail"]
    start = time.perf_counter()
    subprocess.run(common + extra, cwd=ROOT, capture_output=True, text=True, check=False)
    return outcomes(xml), time.perf_counter() - start


def outcomes(xml: pathlib.Path) -> dict[str, tuple[str, str]]:
    found = {}
    for case in ET.parse(xml).getroot().iter("testcase"):
        name = f"{case.get('classname', '').rsplit('.', 1)[-1]}::{case.get('name')}"
        outcome, text = "passed", ""
        for kind in ("failure", "error", "skipped"):
            element = case.find(kind)
            if element is not None:
                outcome = {"failure": "failed", "error": "error"}.get(kind, kind)
                text = (element.get("message") or element.text or "").strip()
                break
        found[name] = (outcome, text.splitlines()[0][:160] if text else "")
    return found


def _classes() -> dict[str, tuple[str, str]]:
    """class::test -> (class of difference, its reason), from the suite's conftest."""
    from tests.onnx_converter_suite import conftest

    found = {}
    for name in dir(conftest):
        value = getattr(conftest, name)
        if name.isupper() and isinstance(value, tuple) and len(value) == 2:
            reason, tests = value
            for test in tests:
                found[test.split("::", 1)[1]] = (name, reason)
    return found


def table(onnx_runs, maxlower_runs, seconds) -> str:
    counts = {
        k: collections.Counter(o for o, _ in runs.values())
        for k, runs in (("onnx", onnx_runs), ("maxlower", maxlower_runs))
    }
    kinds = ["passed", "failed", "error", "skipped"]
    lines = [
        START,
        "## onnx's own version-converter tests, with maxlower swapped in",
        "",
        f"`python benchmarks/onnx_converter_suite.py --results benchmarks/RESULTS.md` "
        f"({versions_text()}). The {len(onnx_runs)} tests of onnx/onnx's "
        "`tests/python/version_converter*` (commit f75469120, in `tests/onnx_converter_suite/`), "
        "run with onnx's converter and with `maxlower.convert_version` swapped in by one line.",
        "",
        "| converter | " + " | ".join(kinds) + " | seconds |",
        "|---|" + "---:|" * (len(kinds) + 1),
    ]
    for name in ("onnx", "maxlower"):
        row = " | ".join(str(counts[name][k]) for k in kinds)
        lines.append(f"| {name} | {row} | {seconds[name]:.1f} |")
    absent = ("absent", "")
    differ = sorted(n for n in onnx_runs if maxlower_runs.get(n, absent)[0] != onnx_runs[n][0])
    lines += ["", f"Tests whose outcome differs: {len(differ)}, by class of difference "]
    lines[-1] += "(the suite's conftest marks each xfail, strict, with its class's reason):"
    classes = _classes()
    by_class = collections.Counter(classes.get(n, ("unexplained", ""))[0] for n in differ)
    lines += ["", "| class | tests | why |", "|---|---:|---|"]
    reasons = {name: reason for name, reason in classes.values()}
    for name, count in by_class.most_common():
        lines.append(f"| {name} | {count} | {reasons.get(name, 'not in the conftest')} |")
    if differ:
        lines += ["", "| test | onnx | maxlower | class | maxlower's failure, first line |"]
        lines += ["|---|---|---|---|---|"]
        for name in differ:
            outcome, text = maxlower_runs.get(name, absent)
            text = text.replace("|", "\\|")
            kind = classes.get(name, ("unexplained", ""))[0]
            lines.append(f"| `{name}` | {onnx_runs[name][0]} | {outcome} | {kind} | {text} |")
    lines.append(END)
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", type=pathlib.Path, help="write the table into this file")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        runs, seconds = {}, {}
        for converter in ("onnx", "maxlower"):
            runs[converter], seconds[converter] = run(
                converter, pathlib.Path(scratch) / f"{converter}.xml"
            )
    text = table(runs["onnx"], runs["maxlower"], seconds)
    print(text)
    if args.results:
        write_section(args.results, text, START, END)
    return 0


if __name__ == "__main__":
    sys.exit(main())
