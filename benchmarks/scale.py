"""Scale traps, timed: steps that were quadratic in the model's size, before and after.

    python benchmarks/scale.py                          # this checkout, full sizes
    python benchmarks/scale.py --before REV             # ...and REV's code, side by side
    python benchmarks/scale.py --quick --no-results     # small sizes, nothing written

Cases (each in a child process, `maxlower` on the command line, stopped at --limit s):

- `invalid-chain`: `maxlower inspect` of a chain of N Max nodes whose last input is made by
  no node: the refusal path (maxlower.safety.describe_invalid) names the dangling input.
- `shared-input-lowering`: `maxlower lower --profile no-argmax --dry-run` of N ArgMax
  nodes reading one input, concatenated: each lowered node dropped its orphaned inputs by
  asking onnx_ir for all uses of the shared one.
- `function-dag`: `maxlower inspect` of 40 levels of local functions, each calling the one
  below twice (2^40 nodes expanded): refused by the expansion budget.

`--before REV` checks REV out into a temporary git worktree and runs the same cases with
its code (PYTHONPATH). The section between the markers in benchmarks/RESULTS.md is
rewritten; tests/test_scale.py asserts the linear behaviour by counting, not timing.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import onnx
from onnx import TensorProto, helper

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.report import REPO_ROOT, machine, versions, write_section

START_MARKER, END_MARKER = "<!-- scale:start -->", "<!-- scale:end -->"


def invalid_chain(n: int) -> onnx.ModelProto:
    """n Max nodes in a chain whose last node reads a value nothing makes."""
    nodes = [
        helper.make_node("Max", ["x" if i == 0 else f"v{i - 1}", "x"], [f"v{i}"], name=f"n{i}")
        for i in range(n)
    ]
    nodes[-1].input[1] = "nothing"
    graph = helper.make_graph(
        nodes,
        "chain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info(f"v{n - 1}", TensorProto.FLOAT, [2])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)


# op → (inputs, attributes, output type, opset, initializers) of shared_input's nodes
_SHARED = {
    "ArgMax": (["x"], {"axis": 1}, TensorProto.INT64, 13, []),
    "ReduceMax": (
        ["x", "axes"],
        {},
        TensorProto.FLOAT,
        18,
        [helper.make_tensor("axes", TensorProto.INT64, [1], [1])],
    ),
}


def shared_input(n: int, op: str = "ArgMax") -> onnx.ModelProto:
    """n `op` nodes of one input (ArgMax-13 over axis 1, or ReduceMax-18 over one shared
    axes initializer [1]), keepdims=0, their outputs concatenated."""
    inputs, attributes, out_type, opset, initializers = _SHARED[op]
    nodes = [
        helper.make_node(op, inputs, [f"y{i}"], keepdims=0, name=f"n{i}", **attributes)
        for i in range(n)
    ]
    nodes.append(helper.make_node("Concat", [f"y{i}" for i in range(n)], ["y"], axis=0))
    graph = helper.make_graph(
        nodes,
        "shared",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", out_type, [2 * n])],
        initializers,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def function_dag(levels: int) -> onnx.ModelProto:
    """f0 = Max; f(k) calls f(k-1) twice: f(levels) is 2^levels Max nodes expanded."""
    opsets = [helper.make_opsetid("", 13), helper.make_opsetid("local", 1)]
    body = [helper.make_node("Max", ["a", "a"], ["b"])]
    functions = [helper.make_function("local", "f0", ["a"], ["b"], body, opsets)]
    for k in range(1, levels + 1):
        calls = [
            helper.make_node(f"f{k - 1}", ["a"], ["t"], domain="local"),
            helper.make_node(f"f{k - 1}", ["t"], ["b"], domain="local"),
        ]
        functions.append(helper.make_function("local", f"f{k}", ["a"], ["b"], calls, opsets))
    graph = helper.make_graph(
        [helper.make_node(f"f{levels}", ["x"], ["y"], domain="local")],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
    )
    return helper.make_model(graph, opset_imports=opsets, functions=functions, ir_version=8)


# name -> (model of size n, command after `maxlower`, full sizes, quick sizes, limit factor)
CASES = {
    "invalid-chain": (invalid_chain, ["inspect"], [100_000], [5_000], 0.4),
    "shared-input-lowering": (
        shared_input,
        ["lower", "--profile", "no-argmax", "--dry-run", "--quiet"],
        [20_000, 40_000],
        [1_000],
        1.0,
    ),
    "function-dag": (function_dag, ["inspect"], [40], [40], 0.4),
}


def run_case(source: Path, name: str, n: int, limit: float, directory: Path) -> tuple[str, str]:
    """(seconds or '> limit', exit code) of one case with the code in `source`."""
    build, command, *_ = CASES[name]
    path = directory / f"{name}-{n}.onnx"
    if not path.exists():
        onnx.save(build(n), path)
    launch = "import sys; from maxlower.cli import main; sys.argv[0] = 'maxlower'; main()"
    environment = {**os.environ, "PYTHONPATH": str(source)}
    started = time.perf_counter()
    try:
        done = subprocess.run(
            [sys.executable, "-c", launch, command[0], str(path), *command[1:]],
            capture_output=True,
            text=True,
            timeout=limit,
            env=environment,
            cwd=source,
        )
    except subprocess.TimeoutExpired:
        return f"> {limit:g} (stopped)", "-"
    return f"{time.perf_counter() - started:.1f}", str(done.returncode)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--before", metavar="REV", help="also time REV's code")
    parser.add_argument("--quick", action="store_true", help="small sizes")
    parser.add_argument(
        "--limit", type=float, default=300.0, help="seconds per run (refusals: 0.4 of it)"
    )
    parser.add_argument("--results", type=Path, default=REPO_ROOT / "benchmarks" / "RESULTS.md")
    parser.add_argument("--no-results", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as temporary:
        directory = Path(temporary)
        sources = [("this checkout", REPO_ROOT)]
        if args.before:
            before = directory / "before"
            subprocess.run(
                ["git", "worktree", "add", "--detach", str(before), args.before],
                cwd=REPO_ROOT,
                check=True,
                capture_output=True,
            )
            sources.insert(0, (f"before ({args.before})", before))
        try:
            rows = []
            for name, (_, command, full, quick, factor) in CASES.items():
                for n in quick if args.quick else full:
                    limit = args.limit * factor  # refusals: seconds, or never
                    cells = [run_case(source, name, n, limit, directory) for _, source in sources]
                    shown = " ".join(["maxlower", command[0], "...", *command[1:]])
                    rows.append((name, n, shown, cells))
                    print(name, n, cells, flush=True)
        finally:
            if args.before:
                subprocess.run(
                    ["git", "worktree", "remove", "--force", str(before)],
                    cwd=REPO_ROOT,
                    capture_output=True,
                )
    text = section(rows, [label for label, _ in sources], args)
    print(text)
    if not args.no_results:
        write_section(args.results, text, START_MARKER, END_MARKER)


def section(rows, labels: list[str], args) -> str:
    header = " | ".join(f"{label}: s (exit)" for label in labels)
    lines = [
        START_MARKER,
        "## Scale traps: steps that were quadratic",
        "",
        "Written by `benchmarks/scale.py`; rerun it rather than editing this section.",
        "",
        f"- Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}",
        f"- Machine: {machine()} (shared with other jobs: wall-clock times are noisy)",
        f"- Versions: {', '.join(f'{k} {v}' for k, v in versions().items())}",
        f"- Command: `python benchmarks/scale.py{' --before ' + args.before if args.before else ''}"
        f"{' --quick' if args.quick else ''}` (each run a `maxlower` process, stopped at "
        f"{args.limit:g} s, the refusals at {0.4 * args.limit:g} s)",
        "",
        f"| case | nodes | command | {header} |",
        "|---|---:|---|" + "---:|" * len(labels),
    ]
    for name, n, command, cells in rows:
        shown = " | ".join(f"{seconds} ({code})" for seconds, code in cells)
        lines.append(f"| {name} | {n:,} | `{command}` | {shown} |")
    lines += [
        "",
        "`invalid-chain` and `function-dag` are refusals (exit 2); `function-dag` has 40 "
        "levels of functions, 2^40 nodes once expanded. `shared-input-lowering` is given at "
        "several sizes. Its ArgMax outputs meet in one Concat of 40,000 inputs, and onnx_ir "
        "rebuilds a node's input tuple on every `replace_input_with`, so replacing each of "
        "those inputs is still O(n) per node: that, not `Value.uses()`, is the growth left in "
        "the right-hand column. tests/test_scale.py checks the same steps by counting their "
        "work.",
        END_MARKER,
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
