#!/usr/bin/env python
"""The ONNX backend conformance matrix of the Max family (or, with `--family min`, of the Min
family), through three converters.

Every Max / ReduceMax / ArgMax case of `onnx.backend.test` (41 on onnx 1.23; 40 Min / ReduceMin
/ ArgMin cases with `--family min`) is converted to
every target opset (7 to the newest onnx knows, by default) by

    maxlower                 maxlower.convert(model, opset)
    onnx.version_converter   onnx.version_converter.convert_version(model, opset)
    onnxscript               onnxscript.version_converter.convert_version(
                                 ir_model, target_version=opset, fallback=False)

and each (case, opset) pair is put, for each converter, in exactly one category:

    ok         passes onnx.checker.check_model(full_check=True), imports the target
               default-domain opset, and reproduces the case's expected outputs bit-exactly
               (onnxruntime CPU with graph optimisations off, else onnx.reference)
    refused    the converter raised (or timed out, or crashed its process)
    invalid    the checker fails, or the default-domain opset import is not the target
    wrong      the model runs, but its outputs (or its inputs) differ from the case's
    no_kernel  valid, but neither onnxruntime nor onnx.reference could run it

Usage (from the repository root):

    python benchmarks/conformance_matrix.py                  # full matrix, refresh RESULTS.md
    python benchmarks/conformance_matrix.py --quick --results /tmp/r.md --json /tmp/r.json

The script rewrites only its own section of benchmarks/RESULTS.md, between the markers
`<!-- conformance-matrix:start -->` and `<!-- conformance-matrix:end -->` (the Min family's:
`<!-- conformance-matrix-min:start -->` and `<!-- conformance-matrix-min:end -->`).

Converters run in a process pool (`--jobs`), each pair under an alarm (`--timeout`). No
converter crashed the interpreter when this was written (onnx 1.23.2, onnxscript 0.7.2), but
if a worker dies, its pairs are re-run one process at a time to find the pair and the stage
(conversion, checking, running) that killed it, and the pair is classified by that stage.
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import contextlib
import copy
import dataclasses
import datetime
import json
import logging
import multiprocessing
import os
import re
import shlex
import signal
import sys
import time
import warnings
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

import numpy as np
import onnx
import onnx.version_converter
import onnx_ir as ir
import onnxruntime
import onnxscript
import onnxscript.version_converter

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))
import maxlower  # noqa: E402
from benchmarks.report import machine, versions, write_section  # noqa: E402
from maxlower.runtime import bit_equal, run_model  # noqa: E402
from passes.extremum import MAX, MIN  # noqa: E402
from tests.conformance import both_families_cases, family_cases  # noqa: E402

START_MARKER = "<!-- conformance-matrix:start -->"
END_MARKER = "<!-- conformance-matrix:end -->"
FAMILIES = {"max": MAX, "min": MIN}


def markers(family: str) -> tuple[str, str]:
    """The RESULTS.md markers of one family's section (Max's keep their first spelling)."""
    if family == "max":
        return START_MARKER, END_MARKER
    return (
        f"<!-- conformance-matrix-{family}:start -->",
        f"<!-- conformance-matrix-{family}:end -->",
    )


DEFAULT_RESULTS = REPO_ROOT / "benchmarks" / "RESULTS.md"

CATEGORIES = ("ok", "refused", "invalid", "wrong", "no_kernel")
LATEST_OPSET = onnx.defs.onnx_opset_version()
MIN_OPSET = 7
# The figures in the issue (onnx 1.23.2, onnxruntime 1.32): "opsets 7–23 (656 pairs)", though
# 7–23 is 17 opsets, 697 pairs for 41 cases.
ISSUE_RANGE = (7, 23)
ISSUE_OK = {"onnx.version_converter": 346, "onnxscript": 252}
ISSUE_PAIRS_PER_CONVERTER = 656

# One case per adapter family that matters (broadcast Max, small ints, select_last_index,
# axes as input, bool and the empty set) at the opsets where the schemas change.
QUICK_CASES = (
    "test_max_example",
    "test_max_int8",
    "test_argmax_keepdims_example_select_last_index",
    "test_reduce_max_keepdims_example",
    "test_reduce_max_empty_set_bool",
)
QUICK_OPSETS = (7, 11, 13, 18, LATEST_OPSET)


# --- the three converters -------------------------------------------------------------------


def _convert_maxlower(model: onnx.ModelProto, opset: int):
    return maxlower.convert(model, opset)


def _convert_onnx(model: onnx.ModelProto, opset: int):
    return onnx.version_converter.convert_version(model, opset)


def _convert_onnxscript(model: onnx.ModelProto, opset: int):
    ir_model = ir.serde.deserialize_model(model)
    onnxscript.version_converter.convert_version(ir_model, target_version=opset, fallback=False)
    return ir_model  # converted in place; serialised by the caller (a failure there is invalid)


CONVERTERS: dict[str, Callable] = {
    "maxlower": _convert_maxlower,
    "onnx.version_converter": _convert_onnx,
    "onnxscript": _convert_onnxscript,
}


# --- one pair ---------------------------------------------------------------------------------


@dataclasses.dataclass
class PairResult:
    case: str
    opset: int
    converter: str
    category: str
    runner: str | None = None  # onnxruntime / reference, for pairs that ran
    message: str = ""
    seconds: float = 0.0


class PairTimeout(BaseException):
    """Raised by the alarm; a BaseException so that converters' `except Exception` let it by."""


@contextlib.contextmanager
def alarm(seconds: float):
    def on_alarm(signum, frame):
        raise PairTimeout(f"timed out after {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def describe(error: BaseException) -> str:
    text = " ".join(str(error).split())
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def default_opset(model: onnx.ModelProto) -> int | None:
    for opset_id in model.opset_import:
        if opset_id.domain in ("", "ai.onnx"):
            return opset_id.version
    return None


def graph_inputs(model: onnx.ModelProto) -> list[str]:
    initializers = {init.name for init in model.graph.initializer}
    return [value.name for value in model.graph.input if value.name not in initializers]


def case_feeds(case) -> tuple[dict[str, np.ndarray], list[np.ndarray]]:
    inputs, outputs = case.data_sets[0]
    return dict(zip(graph_inputs(case.model), inputs, strict=True)), list(outputs)


def compare(expected: Sequence[np.ndarray], actual: Sequence) -> str | None:
    """None when the outputs are bit-equal; otherwise what differs first."""
    if len(expected) != len(actual):
        return f"{len(actual)} outputs, expected {len(expected)}"
    for index, (want, got) in enumerate(zip(expected, actual, strict=True)):
        want, got = np.asarray(want), np.asarray(got)
        if bit_equal(want, got):
            continue
        if want.dtype != got.dtype or want.shape != got.shape:
            return (
                f"output {index}: {got.dtype}{list(got.shape)}, "
                f"expected {want.dtype}{list(want.shape)}"
            )
        flat_want, flat_got = want.reshape(-1), got.reshape(-1)
        differ = [i for i in range(flat_want.size) if not bit_equal(flat_want[i], flat_got[i])]
        i = differ[0]
        return (
            f"output {index}: {len(differ)} of {flat_want.size} values differ, "
            f"first at flat index {i}: {flat_got[i]!r}, expected {flat_want[i]!r}"
        )
    return None


def evaluate_pair(
    case, converter: str, opset: int, timeout: float, stop_after: str | None = None
) -> PairResult:
    """Convert, check and run one pair. `stop_after` ("convert" or "check") ends early; it is
    used only to find which stage crashed a worker."""
    result = PairResult(case.name, opset, converter, "ok")
    start = time.perf_counter()
    try:
        _evaluate_into(result, case, converter, opset, timeout, stop_after)
    finally:
        result.seconds = round(time.perf_counter() - start, 4)
    return result


def _evaluate_into(
    result: PairResult, case, converter: str, opset: int, timeout: float, stop_after: str | None
) -> None:
    try:
        with alarm(timeout):
            converted = CONVERTERS[converter](copy.deepcopy(case.model), opset)
    except (Exception, PairTimeout) as error:
        result.category, result.message = "refused", describe(error)
        return
    if stop_after == "convert":
        return

    problems = []
    try:
        if isinstance(converted, ir.Model):
            converted = ir.serde.serialize_model(converted)
        found = default_opset(converted)
        if found != opset:
            problems.append(f"default-domain opset import is {found}, not {opset}")
        with alarm(timeout):
            onnx.checker.check_model(converted, full_check=True)
    except (Exception, PairTimeout) as error:
        problems.append(f"checker: {describe(error)}")
    if problems:
        result.category, result.message = "invalid", "; ".join(problems)
        return
    if stop_after == "check":
        return

    feeds, expected = case_feeds(case)
    if graph_inputs(converted) != list(feeds):
        result.category = "wrong"
        result.message = f"graph inputs {graph_inputs(converted)}, expected {list(feeds)}"
        return
    try:
        with alarm(timeout):
            actual, result.runner = run_model(converted, feeds)
    except (Exception, PairTimeout) as error:
        result.category, result.message = "no_kernel", describe(error)
        return
    difference = compare(expected, actual)
    if difference is not None:
        result.category, result.message = "wrong", difference


def baseline(case, timeout: float) -> PairResult:
    """The unconverted case model against its own expected outputs: the ground truth's check."""
    result = PairResult(case.name, default_opset(case.model) or 0, "(unconverted)", "ok")
    feeds, expected = case_feeds(case)
    try:
        with alarm(timeout):
            actual, result.runner = run_model(case.model, feeds)
    except (Exception, PairTimeout) as error:
        result.category, result.message = "no_kernel", describe(error)
        return result
    difference = compare(expected, actual)
    if difference is not None:
        result.category, result.message = "wrong", difference
    return result


# --- the pool -----------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Task:
    case: str
    converter: str  # "" for the unconverted baseline
    opsets: tuple[int, ...]
    stop_after: str | None = None


_CASES: dict[str, object] = {}


def _cases_by_name() -> dict[str, object]:
    if not _CASES:
        _CASES.update((case.name, case) for case in both_families_cases())
    return _CASES


def _worker_init() -> None:
    warnings.simplefilter("ignore")
    logging.disable(logging.CRITICAL)  # onnxscript's converter logs every skipped node
    onnxruntime.set_default_logger_severity(4)


def run_task(task: Task, timeout: float) -> list[PairResult]:
    case = _cases_by_name()[task.case]
    if not task.converter:
        return [baseline(case, timeout)]
    return [
        evaluate_pair(case, task.converter, opset, timeout, task.stop_after)
        for opset in task.opsets
    ]


def _pool(jobs: int) -> concurrent.futures.ProcessPoolExecutor:
    # fork: workers inherit the collected cases (collecting takes ~5 s) and the imports.
    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    return concurrent.futures.ProcessPoolExecutor(
        max_workers=jobs, mp_context=multiprocessing.get_context(method), initializer=_worker_init
    )


def run_tasks(
    tasks: Sequence[Task],
    jobs: int,
    timeout: float,
    on_done: Callable[[Task, list[PairResult]], None],
) -> dict[Task, list[PairResult]]:
    done: dict[Task, list[PairResult]] = {}
    try:
        with _pool(jobs) as pool:
            futures = {pool.submit(run_task, task, timeout): task for task in tasks}
            for future in concurrent.futures.as_completed(futures):
                task = futures[future]
                done[task] = future.result()
                on_done(task, done[task])
    except BrokenProcessPool:
        print(
            "a worker died; re-running the unfinished tasks one process at a time", file=sys.stderr
        )
    for task in tasks:
        if task not in done:
            done[task] = _run_isolated(task, timeout)
            on_done(task, done[task])
    return done


def _run_in_fresh_process(task: Task, timeout: float) -> list[PairResult] | None:
    try:
        with _pool(1) as pool:
            return pool.submit(run_task, task, timeout).result()
    except BrokenProcessPool:
        return None


def _run_isolated(task: Task, timeout: float) -> list[PairResult]:
    results = _run_in_fresh_process(task, timeout)
    if results is not None:
        return results
    if len(task.opsets) > 1:
        return [
            result
            for opset in task.opsets
            for result in _run_isolated(dataclasses.replace(task, opsets=(opset,)), timeout)
        ]
    # One pair kills its process: find the stage.
    (opset,) = task.opsets
    stages = (
        ("convert", "refused", "conversion"),
        ("check", "invalid", "checking"),
        (None, "no_kernel", "running"),
    )
    category, stage = next(
        (category, stage)
        for stop_after, category, stage in stages
        if stop_after is None
        or _run_in_fresh_process(dataclasses.replace(task, stop_after=stop_after), timeout) is None
    )
    return [
        PairResult(
            task.case,
            opset,
            task.converter or "(unconverted)",
            category,
            message=f"the process crashed during {stage}",
        )
    ]


# --- counting and reporting -----------------------------------------------------------------


def count(
    results: Iterable[PairResult], converters: Sequence[str], opsets: range | None = None
) -> dict[str, dict[str, int]]:
    counts = {
        name: dict.fromkeys((*CATEGORIES, "ok_onnxruntime", "ok_reference", "pairs"), 0)
        for name in converters
    }
    for result in results:
        if opsets is not None and result.opset not in opsets:
            continue
        row = counts[result.converter]
        row["pairs"] += 1
        row[result.category] += 1
        if result.category == "ok":
            row[f"ok_{result.runner}"] += 1
    return counts


def table(counts: dict[str, dict[str, int]]) -> str:
    lines = [
        "| converter | pairs | ok (onnxruntime / reference) | refused | invalid | wrong "
        "| no_kernel |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, row in counts.items():
        lines.append(
            f"| {name} | {row['pairs']} | {row['ok']} ({row['ok_onnxruntime']} / "
            f"{row['ok_reference']}) | {row['refused']} | {row['invalid']} | {row['wrong']} "
            f"| {row['no_kernel']} |"
        )
    return "\n".join(lines)


def opset_ranges(opsets: Iterable[int]) -> str:
    opsets = sorted(set(opsets))
    spans: list[list[int]] = []
    for opset in opsets:
        if spans and opset == spans[-1][1] + 1:
            spans[-1][1] = opset
        else:
            spans.append([opset, opset])
    return ", ".join(str(a) if a == b else f"{a}–{b}" for a, b in spans)


def code(text: str, limit: int | None = None) -> str:
    if limit is not None and len(text) > limit:
        text = text[:limit] + " …"
    return "`" + text.replace("`", "'") + "`"


def non_ok_listing(results: Iterable[PairResult], converter: str, limit: int | None) -> list[str]:
    """Non-ok pairs grouped by (category, message), each with its cases and their opsets."""
    groups: dict[tuple[str, str], dict[str, list[int]]] = collections.defaultdict(
        lambda: collections.defaultdict(list)
    )
    for result in results:
        if result.converter == converter and result.category != "ok":
            # The target opset in a message ("version 11 is not supported") would otherwise
            # split one reason into a group per opset.
            message = re.sub(
                rf"\b(version|opset:?) {result.opset}\b", r"\1 <target>", result.message
            )
            groups[result.category, message][result.case].append(result.opset)
    lines = []
    for (category, message), cases in sorted(
        groups.items(), key=lambda item: (CATEGORIES.index(item[0][0]), item[0][1])
    ):
        pairs = sum(len(opsets) for opsets in cases.values())
        by_opsets: dict[str, list[str]] = collections.defaultdict(list)
        for case, opsets in cases.items():
            by_opsets[opset_ranges(opsets)].append(case)
        lines.append(f"- **{category}** ({pairs} pairs): {code(message, limit)}")
        lines += [f"  - opsets {where}: {', '.join(names)}" for where, names in by_opsets.items()]
    return lines


def section(
    meta: dict,
    results: list[PairResult],
    baselines: list[PairResult],
    converters: Sequence[str],
    opsets: Sequence[int],
) -> str:
    cases = sorted({result.case for result in results})
    full = count(results, converters)
    family = meta.get("family", "max")
    start, end = markers(family)
    lines = [
        start,
        f"## Conformance matrix: the {family.capitalize()} family through three converters",
        "",
        "Written by `benchmarks/conformance_matrix.py`; rerun it rather than editing this section.",
        "",
        f"- Date: {meta['date']}",
        f"- Machine: {meta['machine']}",
        "- Versions: "
        + ", ".join(f"{name} {version}" for name, version in meta["versions"].items()),
        f"- Command: `{meta['command']}` ({meta['seconds']:.0f} s wall clock, "
        f"{meta['jobs']} worker processes)",
        f"- Pairs: {len(cases)} conformance cases × {len(opsets)} target opsets "
        f"({opset_ranges(opsets)}) = {len(cases) * len(opsets)} per converter",
    ]
    base_ok = [b for b in baselines if b.category == "ok"]
    runners = collections.Counter(b.runner for b in base_ok)
    lines.append(
        f"- Baseline: {len(base_ok)} of {len(baselines)} unconverted case models reproduce "
        f"their expected outputs ({runners['onnxruntime']} in onnxruntime, "
        f"{runners['reference']} in onnx.reference)"
    )
    for b in baselines:
        if b.category != "ok":
            lines.append(f"  - {b.case}: {b.category}: {code(b.message, 300)}")
    lines += [
        "",
        "Categories (each pair is in exactly one): **ok** passes "
        "`onnx.checker.check_model(full_check=True)`, imports the target default-domain opset "
        "and reproduces the case's expected outputs bit-exactly (onnxruntime CPU with "
        "`ORT_DISABLE_ALL`, else `onnx.reference`; the split is in brackets); **refused** the "
        "converter raised; **invalid** checker failure or wrong opset import; **wrong** runs, "
        "but outputs differ; **no_kernel** valid, but neither runtime could run it.",
        "",
        f"### Opsets {opset_ranges(opsets)}",
        "",
        table(full),
    ]
    lo, hi = ISSUE_RANGE
    subset = [opset for opset in opsets if lo <= opset <= hi]
    if subset and len(subset) != len(opsets):
        lines += [
            "",
            f"### Opsets {opset_ranges(subset)} (the issue's range)",
            "",
            table(count(results, converters, range(lo, hi + 1))),
        ]
    if subset and family == "max":  # the issue's figures are of the Max family
        issue_pairs = ISSUE_PAIRS_PER_CONVERTER
        here = len(cases) * len(subset)
        lines += [
            "",
            f"The issue measured, over opsets {lo}–{hi} ({issue_pairs} pairs): "
            + ", ".join(f"{name} {ok} ok" for name, ok in ISSUE_OK.items())
            + ".",
        ]
        if here != issue_pairs:
            lines[-1] += (
                f" Here opsets {opset_ranges(subset)} give {here} pairs per "
                f"converter ({len(cases)} × {len(subset)}), not {issue_pairs}, so the "
                "figures are not strictly comparable."
            )
    for converter in converters:
        limit = None if converter == "maxlower" else 300
        listing = non_ok_listing(results, converter, limit)
        lines += [
            "",
            f"### {converter}: pairs that are not ok",
            "",
            "`<target>` in a message stands for the pair's target opset.",
            "",
        ]
        if not listing:
            lines.append("None.")
        elif converter == "maxlower":
            lines += listing
        else:
            lines += [
                f"<details><summary>{sum(full[converter][c] for c in CATEGORIES[1:])} "
                "pairs, grouped by message</summary>",
                "",
                *listing,
                "",
                "</details>",
            ]
    lines.append(end)
    return "\n".join(lines) + "\n"


# --- command line -------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--family",
        choices=list(FAMILIES),
        default="max",
        help="the Max family's cases (default) or the Min family's, in its own section",
    )
    parser.add_argument("--min-opset", type=int, default=MIN_OPSET)
    parser.add_argument("--max-opset", type=int, default=LATEST_OPSET)
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"only cases {', '.join(QUICK_CASES)} at opsets "
        f"{', '.join(map(str, QUICK_OPSETS))} (within the opset range)",
    )
    parser.add_argument(
        "--case",
        action="append",
        default=[],
        metavar="SUBSTRING",
        help="only cases whose name contains SUBSTRING (repeatable)",
    )
    parser.add_argument(
        "--converter",
        action="append",
        choices=list(CONVERTERS),
        help="only this converter (repeatable; default: all three)",
    )
    parser.add_argument(
        "--results",
        type=Path,
        default=DEFAULT_RESULTS,
        help="markdown file whose conformance-matrix section is refreshed "
        "(default: benchmarks/RESULTS.md)",
    )
    parser.add_argument("--no-results", action="store_true", help="do not write markdown")
    parser.add_argument("--json", type=Path, metavar="PATH", help="dump per-pair results")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument(
        "--timeout",
        type=float,
        default=60.0,
        help="seconds per conversion, check or run (default 60)",
    )
    args = parser.parse_args(argv)
    if not 1 <= args.min_opset <= args.max_opset <= LATEST_OPSET:
        parser.error(f"need 1 <= --min-opset <= --max-opset <= {LATEST_OPSET}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.perf_counter()
    warnings.simplefilter("ignore")
    opsets = [
        o for o in range(args.min_opset, args.max_opset + 1) if not args.quick or o in QUICK_OPSETS
    ]
    converters = args.converter or list(CONVERTERS)
    family = FAMILIES[args.family]
    quick = {name.replace("max", family.name) for name in QUICK_CASES}  # the mirrored cases
    cases = [
        case.name
        for case in family_cases(family)
        if (not args.quick or case.name in quick)
        and (not args.case or any(part in case.name for part in args.case))
    ]
    if not opsets or not cases:
        print("nothing to run: no case or no opset selected", file=sys.stderr)
        return 2

    tasks = [Task(case, "", ()) for case in cases]
    tasks += [Task(case, converter, tuple(opsets)) for converter in converters for case in cases]
    total, finished = len(tasks), 0
    print(
        f"{len(cases)} cases × {len(opsets)} opsets × {len(converters)} converters "
        f"= {len(cases) * len(opsets) * len(converters)} pairs, {args.jobs} workers",
        file=sys.stderr,
    )

    def progress(task: Task, results: list[PairResult]) -> None:
        nonlocal finished
        finished += 1
        ok = sum(result.category == "ok" for result in results)
        print(
            f"[{finished:3d}/{total}] {time.perf_counter() - started:6.1f} s  "
            f"{task.converter or '(unconverted)':<24} {task.case}: {ok}/{len(results)} ok",
            file=sys.stderr,
            flush=True,
        )

    done = run_tasks(tasks, args.jobs, args.timeout, progress)
    baselines = [result for task in tasks if not task.converter for result in done[task]]
    results = [result for task in tasks if task.converter for result in done[task]]
    seconds = time.perf_counter() - started

    meta = {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": machine(),
        "versions": versions(),
        "command": shlex.join(
            [
                "python",
                "benchmarks/conformance_matrix.py",
                *(argv if argv is not None else sys.argv[1:]),
            ]
        ),
        "seconds": seconds,
        "jobs": args.jobs,
        "opsets": opsets,
        "cases": cases,
        "family": args.family,
    }
    text = section(meta, results, baselines, converters, opsets)
    start, end = markers(args.family)
    print(text.split("\n### ", 1)[0].split(start + "\n", 1)[1])
    for block in text.split("\n### ")[1:]:
        if block.startswith(("Opsets", "maxlower")):
            print("### " + block.replace(end, "").rstrip() + "\n")
    if not args.no_results:
        write_section(args.results, text, start, end)
        print(f"wrote {args.results}", file=sys.stderr)
    if args.json:
        lo, hi = ISSUE_RANGE
        args.json.write_text(
            json.dumps(
                {
                    "meta": meta,
                    "counts": count(results, converters),
                    "counts_issue_range": count(results, converters, range(lo, hi + 1)),
                    "baseline": [dataclasses.asdict(result) for result in baselines],
                    "results": [dataclasses.asdict(result) for result in results],
                },
                indent=1,
            )
            + "\n"
        )
        print(f"wrote {args.json}", file=sys.stderr)
    print(f"done in {seconds:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
