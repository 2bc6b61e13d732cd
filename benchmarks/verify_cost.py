#!/usr/bin/env python
"""What verification costs, and how well it judges.

Cost: a 100-node model (20 blocks of Mul, Max, ReduceMax, Sub, plus 19 ArgMax with
select_last_index=1 and a Concat) with one 1 MiB input (float32 [256, 1024]) at opset 18,
and its maxlower conversion to opset 11 (ReduceMax axes become attributes, every ArgMax
becomes reverse + ArgMax + index mapping). Measured side by side, round after round, in one
run (medians over the rounds):

    cli       `python -m maxlower verify A.onnx B.onnx` as a user runs it (interpreter
              start and imports included)
    library   `maxlower.verify(A, B)` in one process (sessions, trials, comparisons)
    run A/B   one `session.run` of each model, with the session made beforehand and the
              verifier's session options (CPU, ORT_DISABLE_ALL, one thread)

and the ratios of cli and library to run A + run B.

Judgement (skipped with --no-sweep): every conversion of the 41 conformance cases to every
opset maxlower converts them to, verified with seeds 0..N-1 (verdicts counted: all should be
equivalent), and every planted bug of tests/mutants.py with the same seeds (all should be
found). The sweep runs in --jobs worker processes.

    python benchmarks/verify_cost.py                 # refresh the section of RESULTS.md
    python benchmarks/verify_cost.py --quick --results /tmp/r.md   # seconds, for tests

The script rewrites only its own section of benchmarks/RESULTS.md, between the markers
`<!-- verify-cost:start -->` and `<!-- verify-cost:end -->`.
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import datetime
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tests.mutants and tests.conformance
import maxlower  # noqa: E402
from benchmarks.report import machine, versions_text, write_section  # noqa: E402
from maxlower.runtime import onnxruntime_session  # noqa: E402  (as the verifier runs models)

LOAD_AT_START = os.getloadavg()[0]
START_MARKER, END_MARKER = "<!-- verify-cost:start -->", "<!-- verify-cost:end -->"
ROWS, COLUMNS, BLOCKS = 256, 1024, 20


def build_model() -> onnx.ModelProto:
    """100 nodes; input x float32[256, 1024] (1 MiB)."""
    nodes, initializers, picks = [], [], []
    initializers.append(helper.make_tensor("axes", TensorProto.INT64, [1], [1]))
    h = "x"
    for i in range(BLOCKS):
        initializers.append(
            helper.make_tensor(f"c{i}", TensorProto.FLOAT, [], [(-1.0) ** i * (0.5 + i / 40)])
        )
        nodes += [
            helper.make_node("Mul", [h, f"c{i}"], [f"a{i}"]),
            helper.make_node("Max", [h, f"a{i}"], [f"m{i}"]),
            helper.make_node("ReduceMax", [f"m{i}", "axes"], [f"r{i}"], keepdims=1),
            helper.make_node("Sub", [f"m{i}", f"r{i}"], [f"h{i}"]),
        ]
        if i:
            nodes.append(
                helper.make_node(
                    "ArgMax", [f"h{i}"], [f"k{i}"], axis=1, keepdims=1, select_last_index=1
                )
            )
            picks.append(f"k{i}")
        h = f"h{i}"
    nodes.append(helper.make_node("Concat", picks, ["picks"], axis=1))
    graph = helper.make_graph(
        nodes,
        "verify_cost",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [ROWS, COLUMNS])],
        [
            helper.make_tensor_value_info(h, TensorProto.FLOAT, [ROWS, COLUMNS]),
            helper.make_tensor_value_info("picks", TensorProto.INT64, [ROWS, BLOCKS - 1]),
        ],
        initializer=initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    assert len(model.graph.node) == 100
    onnx.checker.check_model(model, full_check=True)
    return model


def measure_cost(rounds: int, directory: Path) -> dict:
    reference = build_model()
    candidate = maxlower.convert(reference, 11)
    paths = directory / "A.onnx", directory / "B.onnx"
    onnx.save(reference, paths[0])
    onnx.save(candidate, paths[1])
    feeds = {"x": np.random.default_rng(0).standard_normal((ROWS, COLUMNS), np.float32)}
    sessions = [onnxruntime_session(m) for m in (reference, candidate)]
    for session in sessions:
        session.run(None, feeds)  # warm-up
    times = collections.defaultdict(list)
    report = None
    for _ in range(rounds):
        for name, session in zip(("run_a", "run_b"), sessions):
            started = time.perf_counter()
            session.run(None, feeds)
            times[name].append(time.perf_counter() - started)
        started = time.perf_counter()
        report = maxlower.verify(reference, candidate)
        times["library"].append(time.perf_counter() - started)
        started = time.perf_counter()
        process = subprocess.run(
            [sys.executable, "-m", "maxlower", "verify", *map(str, paths)],
            capture_output=True,
            text=True,
            cwd=ROOT,
            check=False,
        )
        times["cli"].append(time.perf_counter() - started)
        if process.returncode != 0:
            raise SystemExit(
                f"maxlower verify failed ({process.returncode}):\n{process.stdout}{process.stderr}"
            )
    medians = {name: statistics.median(values) for name, values in times.items()}
    return {
        "medians": medians,
        "rounds": rounds,
        "status": report.status,
        "trials": len({t.index for t in report.trials}),
        "runs": report.runs,
        "localised": sum(t.status != "equal" for t in report.trials),
        "nodes": (len(reference.graph.node), len(candidate.graph.node)),
    }


def _sweep_case(job: tuple[str, list[int]]) -> collections.Counter:
    from passes import ConversionError
    from tests.conformance import family_cases

    name, seeds = job
    case = next(c for c in family_cases() if c.name == name)
    counts = collections.Counter()
    for opset in range(1, onnx.defs.onnx_opset_version() + 1):
        try:
            converted = maxlower.convert(case.model, opset)
        except ConversionError:
            continue
        counts["conversions"] += 1
        for seed in seeds:
            report = maxlower.verify(case.model, converted, seed=seed)
            counts[report.status] += 1
            counts["unspecified"] += any(o.status == "unspecified" for o in report.outputs)
    return counts


def _sweep_mutant(job: tuple[str, list[int]]) -> collections.Counter:
    from tests.mutants import MUTANTS

    name, seeds = job
    mutant = next(m for m in MUTANTS if m.name == name)
    broken = mutant.apply()
    counts = collections.Counter()
    for seed in seeds:
        report = maxlower.verify(mutant.source_model(), broken, seed=seed)
        counts[report.status] += 1
        counts["missed:" + name] += report.ok  # (a NaN-only difference passes too)
    return counts


def sweep(seeds: int, jobs: int, quick: bool) -> dict:
    from tests.conformance import family_cases
    from tests.mutants import MUTANTS

    cases = [c.name for c in family_cases()][: 4 if quick else None]
    seed_list = list(range(seeds))
    started = time.perf_counter()
    with concurrent.futures.ProcessPoolExecutor(jobs) as pool:
        conformance = sum(
            pool.map(_sweep_case, [(c, seed_list) for c in cases]), collections.Counter()
        )
        mutants = sum(
            pool.map(_sweep_mutant, [(m.name, seed_list) for m in MUTANTS]), collections.Counter()
        )
    return {
        "cases": len(cases),
        "seeds": seeds,
        "conformance": conformance,
        "mutants": mutants,
        "mutant_count": len(MUTANTS),
        "seconds": time.perf_counter() - started,
        "jobs": jobs,
    }


def render(cost: dict, judged: dict | None, command: str) -> str:
    m = cost["medians"]
    both = m["run_a"] + m["run_b"]
    nodes_a, nodes_b = cost["nodes"]
    lines = [
        START_MARKER,
        "## Verification: cost and judgement",
        "",
        "Written by `benchmarks/verify_cost.py`; rerun it rather than editing this section.",
        "",
        f"- Date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC",
        f"- Machine: {machine()}",
        f"- Versions: {versions_text()}",
        f"- Load average (1 min) when the run started: {LOAD_AT_START:.2f} (the machine is "
        "shared: timings vary between runs; ratios are measured within one run)",
        f"- Command: `{command}`",
        "",
        "### Cost of verifying a 100-node model with a 1 MiB input",
        "",
        f"A: {nodes_a} nodes at opset 18 (20 × Mul, Max, ReduceMax, Sub; 19 ArgMax with "
        f"select_last_index=1; Concat), input float32 [{ROWS}, {COLUMNS}]. B: its maxlower "
        f"conversion to opset 11 ({nodes_b} nodes). Default verification: {cost['trials']} "
        f"trials, {cost['runs']} runs per model, verdict {cost['status']}. Medians of "
        f"{cost['rounds']} rounds, all measured side by side in one run.",
        "",
        "| measurement | median | ratio to run A + run B |",
        "|---|---:|---:|",
        f"| `maxlower verify A.onnx B.onnx` (subprocess, start-up included) | "
        f"{_ms(m['cli'])} | {m['cli'] / both:.0f}× |",
        f"| `maxlower.verify(A, B)` (in process) | {_ms(m['library'])} | "
        f"{m['library'] / both:.0f}× |",
        f"| one onnxruntime `session.run` of A | {_ms(m['run_a'])} | |",
        f"| one onnxruntime `session.run` of B | {_ms(m['run_b'])} | |",
        "",
        f"Per trial the verifier runs each model once ({cost['runs']} runs each), so the floor "
        f"is {cost['runs']} × (run A + run B) = {_ms(cost['runs'] * both)}. The rest: making "
        "two sessions, generating 1 MiB of inputs per trial, comparing outputs, and in the "
        f"{cost['localised']} trial(s) where outputs differed (NaN reaching an ArgMax, which "
        "ONNX leaves unspecified) running both models again with every value exposed to find "
        "the first diverging node and classify the difference; for the command also starting "
        "Python and importing onnx, onnx_ir and onnxruntime.",
    ]
    if judged is not None:
        c, mut = judged["conformance"], judged["mutants"]
        for counts in (c, mut):  # "equivalent" counts every pass, NaN-only differences too
            counts["equivalent"] += counts.pop("equivalent_except_unspecified_nan", 0)
        missed = sorted(k.split(":", 1)[1] for k, v in mut.items() if k.startswith("missed:") and v)
        lines += [
            "",
            "### Judgement",
            "",
            f"Seeds 0–{judged['seeds'] - 1} on each pair ({judged['jobs']} worker processes, "
            f"{judged['seconds']:.0f} s).",
            "",
            "| pairs | verifications | equivalent | different | inconclusive | "
            "with NaN-only differences (unspecified) |",
            "|---|---:|---:|---:|---:|---:|",
            f"| {c['conversions']} correct conversions of {judged['cases']} conformance cases "
            f"| {c['equivalent'] + c['different'] + c['inconclusive']} | {c['equivalent']} | "
            f"{c['different']} | {c['inconclusive']} | {c['unspecified']} |",
            f"| {judged['mutant_count']} planted bugs (tests/mutants.py) | "
            f"{mut['equivalent'] + mut['different'] + mut['inconclusive']} | "
            f"{mut['equivalent']} | {mut['different']} | {mut['inconclusive']} | |",
            "",
            f"Planted bugs missed with some seed: {', '.join(missed) or 'none'}.",
        ]
    lines.append(END_MARKER)
    return "\n".join(lines) + "\n"


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms" if seconds < 1 else f"{seconds:.2f} s"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7, help="rounds of the cost measurement")
    parser.add_argument("--seeds", type=int, default=20, help="seeds of the judgement sweep")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--no-sweep", action="store_true", help="measure the cost only")
    parser.add_argument(
        "--quick", action="store_true", help="1 round; sweep 4 cases and the mutants with 1 seed"
    )
    parser.add_argument("--results", type=Path, default=ROOT / "benchmarks" / "RESULTS.md")
    args = parser.parse_args(argv)
    if args.quick:
        args.rounds, args.seeds = 1, 1
    with tempfile.TemporaryDirectory() as directory:
        cost = measure_cost(args.rounds, Path(directory))
    judged = None if args.no_sweep else sweep(args.seeds, args.jobs, args.quick)
    shown = [
        a
        for a in (argv if argv is not None else sys.argv[1:])
        if a != "--results" and not a.endswith(".md")
    ]  # where it wrote is not how
    command = " ".join(["python benchmarks/verify_cost.py", *shown])
    text = render(cost, judged, command)
    write_section(args.results, text, START_MARKER, END_MARKER)
    print(text)


if __name__ == "__main__":
    main()
