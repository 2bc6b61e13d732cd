#!/usr/bin/env python
"""Scale benchmark: maxlower against onnx.version_converter on large models.

The script makes its own inputs (under `benchmarks/.work/`, which it keeps out of git), then
runs every candidate as a whole process, interleaved round by round, and records each run's
wall time and peak RSS (`os.wait4`); then it times the two libraries' calls in its own
process. It reports medians, spreads, ratios of medians measured in the same run, and whether
each output passes `onnx.checker` (full check, by path) and gives bit-identical outputs in
onnxruntime. It rewrites its section of `benchmarks/RESULTS.md`; with `--only`, the parts
of the scenarios it skips are kept from the section already there, dated.

Inputs

    wide      20,000 Max / ReduceMax / ArgMax nodes on small tensors, at opset 20 and the
              same graph at opset 13 (ReduceMax's axes as initializers at 20, as attributes
              at 13)
    heavy     a few hundred family nodes over 1 GiB of float32 initializers in one external
              data file, at opset 20; the small int64 axes are stored in the model
    over-2GB  the same graph and weights, but every initializer is in the data file, the
              axes last (past 2 GiB): converting needs values that live in the data, so a
              converter that works on one protobuf must load more than 2 GB into it
    start-up  a model of one ReduceMax node (under 1 KB), at opset 20

Candidates

    maxlower                  `python -m maxlower convert IN --opset N -o OUT`
    onnx.version_converter    `onnx.load` + `convert_version` + `onnx.save`, in one process;
                              on heavy and over-2GB also with `load_external_data=False`
                              (the output then points at the input's data file)
    I/O floor                 wide: `onnx.load` + `onnx.save`; heavy: `cp` of the model and
                              its data file; start-up: `python -c "import onnx"`

Library in-process (scenario `library`)

    `maxlower.convert(model, N)` against `onnx.version_converter.convert_version(model, N)`,
    N = 18 and 13, on one wide opset-20 ModelProto built in memory, in this process: each
    call warmed up once, then per round the two calls of a target in alternating order
    (A B, B A, ...), `gc.collect()` before each call, outside its time.

Usage (from the repository root):

    python benchmarks/bench.py                       # full run (~15 min), refresh RESULTS.md
    python benchmarks/bench.py --quick --results /tmp/r.md   # small inputs, 1 round, < 2 min
    python benchmarks/bench.py --only wide --only library --rounds 9   # keeps heavy's figures

`--quick` scales every input down (the over-2GB input is then not over 2 GB, and the
section says so); CI runs it as a smoke test and asserts no times.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import gc
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import onnx
import onnxruntime
from onnx import TensorProto, helper, numpy_helper, version_converter

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

import maxlower  # noqa: E402
from benchmarks.report import machine, versions, write_section  # noqa: E402
from maxlower.runtime import bit_equal, onnxruntime_session  # noqa: E402
from passes.errors import concise  # noqa: E402

START_MARKER = "<!-- bench:start -->"
END_MARKER = "<!-- bench:end -->"
DEFAULT_RESULTS = REPO_ROOT / "benchmarks" / "RESULTS.md"
DEFAULT_WORKDIR = REPO_ROOT / "benchmarks" / ".work"
GENERATOR_VERSION = 2  # bump when the generated models change, so cached inputs are remade
GIB = 1 << 30


@dataclasses.dataclass(frozen=True)
class Scale:
    """Sizes of the generated inputs."""

    wide_nodes: int  # family nodes in the wide graph (a multiple of 4)
    weights: int  # float32 initializers of heavy / over-2GB
    rows: int
    cols: int
    big_rows: int  # rows of over-2GB's extra [big_rows, cols] tensor
    argmax_every: int = 8  # an ArgMax (and an int64 Max) after every n-th weight
    rounds: int = 5

    @property
    def weight_bytes(self) -> int:
        return self.weights * self.rows * self.cols * 4


# heavy: 103 x 10 MiB = 1.08 GB (just over 1 GiB); over-2GB adds one 2.25 GB tensor (past
# 2 GiB).
FULL = Scale(wide_nodes=20_000, weights=103, rows=1024, cols=2560, big_rows=220_000)
QUICK = Scale(wide_nodes=2_000, weights=16, rows=256, cols=512, big_rows=4096, rounds=1)


# --- inputs -------------------------------------------------------------------------------


def wide_model(nodes: int, opset: int) -> onnx.ModelProto:
    """`nodes` family nodes in blocks of four, on [2, 3, 4] tensors:

        r   = ReduceMax(h, axes)              axes cycle [1], [-1], [0, 2], [2]; keepdims=1
        h'  = Max(h, r) or Max(h, r, x)       broadcasting; three inputs every third block
        a   = ArgMax(h', axis=k % 3, keepdims=1, select_last_index=k % 2)
        acc'= Max(acc, a)                     int64

    At opset 18 and later each ReduceMax reads its own int64 axes initializer; before, the
    axes are an attribute. Nothing else differs between opsets.
    """
    if nodes % 4:
        raise ValueError("the wide graph is made of blocks of 4 family nodes")
    axes_cycle = ([1], [-1], [0, 2], [2])
    nodes_out, initializers = [], []
    h, acc = "x", "idx"
    for k in range(nodes // 4):
        axes = axes_cycle[k % 4]
        if opset >= 18:
            initializers.append(numpy_helper.from_array(np.array(axes, np.int64), f"axes{k}"))
            reduce = helper.make_node(
                "ReduceMax", [h, f"axes{k}"], [f"r{k}"], f"reduce{k}", keepdims=1
            )
        else:
            reduce = helper.make_node(
                "ReduceMax", [h], [f"r{k}"], f"reduce{k}", axes=axes, keepdims=1
            )
        nodes_out += [
            reduce,
            helper.make_node(
                "Max", [h, f"r{k}", *(["x"] if k % 3 == 0 else [])], [f"h{k}"], f"max{k}"
            ),
            helper.make_node(
                "ArgMax",
                [f"h{k}"],
                [f"a{k}"],
                f"argmax{k}",
                axis=k % 3,
                keepdims=1,
                select_last_index=k % 2,
            ),
            helper.make_node("Max", [acc, f"a{k}"], [f"acc{k}"], f"max_index{k}"),
        ]
        h, acc = f"h{k}", f"acc{k}"
    graph = helper.make_graph(
        nodes_out,
        "wide",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4]),
            helper.make_tensor_value_info("idx", TensorProto.INT64, [2, 3, 4]),
        ],
        [
            helper.make_tensor_value_info(h, TensorProto.FLOAT, [2, 3, 4]),
            helper.make_tensor_value_info(acc, TensorProto.INT64, [2, 3, 4]),
        ],
        initializer=initializers,
    )
    return helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", opset)],
        ir_version=onnx.helper.find_min_ir_version_for([helper.make_opsetid("", opset)]),
    )


def tiny_model() -> onnx.ModelProto:
    """One ReduceMax at opset 20 (axes an input): what start-up is measured on."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    axes = numpy_helper.from_array(np.array([1], dtype=np.int64), "axes")
    node = helper.make_node("ReduceMax", ["x", "axes"], ["y"], keepdims=0)
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
    graph = helper.make_graph([node], "tiny", [x], [y], initializer=[axes])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
    model.ir_version = 10
    onnx.checker.check_model(model, full_check=True)
    return model


def heavy_graph(
    scale: Scale, weights: list[TensorProto], big: TensorProto | None
) -> onnx.GraphProto:
    """Per weight w_i [rows, cols]: r_i = ReduceMax(w_i, axes_i) (axes [0] or [-2], keepdims=1),
    h_{i+1} = Max(h_i, r_i); every `argmax_every` weights, ArgMax(h) into a running int64
    Max. With `big` ([n, cols], over 2 GiB), one more ReduceMax + Max on it. Outputs: h
    [1, cols] and the index [1, 1]. The axes are small int64 initializers in the model."""
    nodes, axes = [], []
    h, acc = "x", "idx"
    names = [w.name for w in weights] + ([big.name] if big is not None else [])
    for i, name in enumerate(names):
        axes.append(
            numpy_helper.from_array(np.array([0] if i % 2 == 0 else [-2], np.int64), f"axes{i}")
        )
        nodes += [
            helper.make_node("ReduceMax", [name, f"axes{i}"], [f"r{i}"], f"reduce{i}", keepdims=1),
            helper.make_node("Max", [h, f"r{i}"], [f"h{i}"], f"max{i}"),
        ]
        h = f"h{i}"
        if (i + 1) % scale.argmax_every == 0:
            nodes += [
                helper.make_node(
                    "ArgMax",
                    [h],
                    [f"a{i}"],
                    f"argmax{i}",
                    axis=1,
                    keepdims=1,
                    select_last_index=i % 2,
                ),
                helper.make_node("Max", [acc, f"a{i}"], [f"acc{i}"], f"max_index{i}"),
            ]
            acc = f"acc{i}"
    initializers = [*weights, *([big] if big is not None else []), *axes]
    return helper.make_graph(
        nodes,
        "heavy",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, scale.cols]),
            helper.make_tensor_value_info("idx", TensorProto.INT64, [1, 1]),
        ],
        [
            helper.make_tensor_value_info(h, TensorProto.FLOAT, [1, scale.cols]),
            helper.make_tensor_value_info(acc, TensorProto.INT64, [1, 1]),
        ],
        initializer=initializers,
    )


def _external(
    name: str, dims: Sequence[int], location: str, offset: int, length: int
) -> TensorProto:
    tensor = TensorProto(
        name=name, dims=list(dims), data_type=TensorProto.FLOAT, data_location=TensorProto.EXTERNAL
    )
    for key, value in (("location", location), ("offset", str(offset)), ("length", str(length))):
        entry = tensor.external_data.add()
        entry.key, entry.value = key, value
    return tensor


def _write_floats(f, rng: np.random.Generator, count: int) -> None:
    """`count` float32 small integers (many ties), 16 Mi values at a time."""
    chunk = 1 << 24
    for start in range(0, count, chunk):
        n = min(chunk, count - start)
        rng.integers(-50, 50, size=n, dtype=np.int8).astype(np.float32).tofile(f)


def write_heavy(directory: Path, scale: Scale, over_2gb: bool) -> Path:
    """Write heavy.onnx + heavy.onnx.data, or over2gb.onnx + over2gb.onnx.data.

    over-2GB has the heavy weights and, at the end of the same data file, one more tensor
    of `big_rows` x cols floats (over 2 GiB, so no protobuf can hold it, and it lies past
    offset 2^31). Weights are written a chunk at a time; the over-2GB data file starts as
    an in-kernel copy of the heavy one.
    """
    name = "over2gb.onnx" if over_2gb else "heavy.onnx"
    path, data = directory / name, directory / f"{name}.data"
    nbytes = scale.rows * scale.cols * 4
    if over_2gb:
        _copy_file(directory / "heavy.onnx.data", data)
    else:
        with open(data, "wb") as f:
            _write_floats(f, np.random.default_rng(20), scale.weights * scale.rows * scale.cols)
    weights = [
        _external(f"w{i}", [scale.rows, scale.cols], data.name, i * nbytes, nbytes)
        for i in range(scale.weights)
    ]
    big = None
    if over_2gb:
        count = scale.big_rows * scale.cols
        with open(data, "ab") as f:
            offset = f.tell()
            _write_floats(f, np.random.default_rng(21), count)
        big = _external("w_big", [scale.big_rows, scale.cols], data.name, offset, count * 4)
    model = helper.make_model(
        heavy_graph(scale, weights, big), opset_imports=[helper.make_opsetid("", 20)], ir_version=9
    )
    onnx.save(model, path)
    onnx.checker.check_model(str(path), full_check=True)
    return path


def _copy_file(source: Path, destination: Path) -> None:
    with open(source, "rb") as src, open(destination, "wb") as dst:
        size = os.fstat(src.fileno()).st_size
        copied = 0
        while copied < size:
            n = os.copy_file_range(src.fileno(), dst.fileno(), min(GIB, size - copied))
            if n == 0:
                break
            copied += n
        if copied < size:
            shutil.copyfileobj(src, dst)


def prepare_inputs(
    workdir: Path, scale: Scale, scenarios: Sequence[str], log: Callable[[str], None]
) -> dict[str, Path]:
    """Make (or reuse, when the stamp matches) the input models; returns name -> path."""
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / ".gitignore").write_text("# generated by benchmarks/bench.py\n*\n")
    stamp_path = workdir / "inputs.json"
    sizes = dataclasses.asdict(dataclasses.replace(scale, rounds=0))  # rounds make no input
    stamp = {"generator": GENERATOR_VERSION, "scale": sizes}
    old = json.loads(stamp_path.read_text()) if stamp_path.exists() else None
    inputs = {
        "wide20": workdir / "wide_opset20.onnx",
        "wide13": workdir / "wide_opset13.onnx",
        "heavy": workdir / "heavy.onnx",
        "over2gb": workdir / "over2gb.onnx",
        "tiny": workdir / "tiny_opset20.onnx",
    }
    wanted = {
        "wide": ["wide20", "wide13"],
        "library": [],  # built in memory
        "heavy": ["heavy"],
        "over2gb": ["heavy", "over2gb"],
        "startup": ["tiny"],
    }
    needed = sorted({key for scenario in scenarios for key in wanted[scenario]})
    if old != stamp:
        for path in workdir.glob("*.onnx*"):
            path.unlink()
    for key in needed:
        path = inputs[key]
        if path.exists() and (key in ("wide20", "wide13", "tiny") or Path(f"{path}.data").exists()):
            continue
        started = time.monotonic()
        if key == "tiny":
            onnx.save(tiny_model(), path)
        elif key.startswith("wide"):
            model = wide_model(scale.wide_nodes, 20 if key == "wide20" else 13)
            onnx.checker.check_model(model, full_check=True)
            onnx.save(model, path)
        else:
            write_heavy(workdir, scale, over_2gb=key == "over2gb")
        log(
            f"generated {path.name} ({_size_text(_model_bytes(path))}) in "
            f"{time.monotonic() - started:.1f} s"
        )
    stamp_path.write_text(json.dumps(stamp))
    return {key: inputs[key] for key in needed}


def _model_bytes(path: Path) -> int:
    data = Path(f"{path}.data")
    return path.stat().st_size + (data.stat().st_size if data.exists() else 0)


def _size_text(nbytes: float) -> str:
    return f"{nbytes / 1e9:.2f} GB" if nbytes >= 1e8 else f"{nbytes / 1e6:.1f} MB"


# --- candidates ---------------------------------------------------------------------------

VERSION_CONVERTER = """\
import sys
import onnx, onnx.version_converter
source, target, out, external = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
model = onnx.load(source, load_external_data=external == "load")
converted = onnx.version_converter.convert_version(model, target)
onnx.save(converted, out)
"""

IO_FLOOR = """\
import sys
import onnx
onnx.save(onnx.load(sys.argv[1]), sys.argv[2])
"""


@dataclasses.dataclass(frozen=True)
class Candidate:
    scenario: str  # wide / heavy / over2gb
    name: str  # maxlower / onnx.version_converter / ...
    conversion: str  # "20→18", or "copy"
    argv: tuple[str, ...]
    output: Path | None  # the model it writes
    role: str  # "maxlower", "baseline" (ratios are to it), "floor", "other"
    source: Path | None = None  # the input its output is checked against (None: not checked)

    @property
    def key(self) -> str:
        return f"{self.scenario} {self.conversion} {self.name}"


def candidates(inputs: dict[str, Path], outdir: Path, scenarios: Sequence[str]) -> list[Candidate]:
    python = sys.executable
    result = []

    def maxlower_run(scenario: str, source: Path, target: int, label: str) -> Candidate:
        out = outdir / f"{source.stem}.maxlower.opset{target}.onnx"
        return Candidate(
            scenario,
            "maxlower",
            label,
            (
                python,
                "-m",
                "maxlower",
                "convert",
                str(source),
                "--opset",
                str(target),
                "-o",
                str(out),
            ),
            out,
            "maxlower",
            source,
        )

    def converter_run(
        scenario: str,
        source: Path,
        target: int,
        label: str,
        external: str = "load",
        *,
        name: str = "onnx.version_converter",
        directory: Path = outdir,
        role: str = "baseline",
    ) -> Candidate:
        out = directory / f"{source.stem}.vc-{external}.opset{target}.onnx"
        return Candidate(
            scenario,
            name,
            label,
            (python, "-c", VERSION_CONVERTER, str(source), str(target), str(out), external),
            out,
            role,
            source,
        )

    if "wide" in scenarios:
        for source_key, target in (("wide20", 18), ("wide20", 17), ("wide20", 13), ("wide13", 18)):
            source = inputs[source_key]
            label = f"{source_key[4:]}→{target}"
            result.append(maxlower_run("wide", source, target, label))
            result.append(converter_run("wide", source, target, label))
        for source_key in ("wide20", "wide13"):
            source = inputs[source_key]
            out = outdir / f"{source.stem}.io-floor.onnx"
            result.append(
                Candidate(
                    "wide",
                    "onnx.load + onnx.save",
                    f"{source_key[4:]} (I/O)",
                    (python, "-c", IO_FLOOR, str(source), str(out)),
                    out,
                    "floor",
                )
            )
    if "startup" in scenarios:
        result.append(maxlower_run("startup", inputs["tiny"], 13, "20→13"))
        result.append(
            Candidate(
                "startup",
                "python -c 'import onnx'",
                "–",
                (python, "-c", "import onnx"),
                None,
                "floor",
            )
        )
    for scenario in ("heavy", "over2gb"):
        if scenario not in scenarios:
            continue
        source = inputs[scenario]
        result.append(maxlower_run(scenario, source, 13, "20→13"))
        result.append(converter_run(scenario, source, 13, "20→13"))
        # Weights left on disk; the output must sit beside the input to find them.
        result.append(
            converter_run(
                scenario,
                source,
                13,
                "20→13",
                "keep",
                directory=source.parent,
                name="onnx.version_converter, load_external_data=False",
                role="other",
            )
        )
        copy_dir = outdir / f"{scenario}-copy"
        copy_dir.mkdir(parents=True, exist_ok=True)
        result.append(
            Candidate(
                scenario,
                "cp (model + data)",
                "copy",
                ("cp", "--reflink=never", str(source), f"{source}.data", str(copy_dir)),
                copy_dir / source.name,
                "floor",
            )
        )
    return result


# --- running ------------------------------------------------------------------------------


@dataclasses.dataclass
class Run:
    seconds: float
    peak_rss: int  # bytes; 0 for an in-process call (not measured)
    returncode: int  # for an in-process call, 1 if it raised
    error: str = ""


# The candidates are started by this small process, not by the benchmark: a child's peak
# RSS counts the memory of the process it was forked from, which for this script (numpy,
# onnx, onnxruntime) is over 100 MB. The launcher's own ~10 MB is the floor of every figure.
LAUNCHER = """\
import json, os, sys, time
started = time.perf_counter()
pid = os.fork()
if pid == 0:
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    try:
        os.execvp(sys.argv[1], sys.argv[1:])
    finally:
        os._exit(127)
_, status, usage = os.wait4(pid, 0)
json.dump({"seconds": time.perf_counter() - started, "peak_rss": usage.ru_maxrss * 1024,
           "returncode": os.waitstatus_to_exitcode(status)}, sys.stdout)
"""


def run_once(candidate: Candidate, env: dict[str, str]) -> Run:
    """One whole process: wall time from fork to reaped, peak RSS from wait4 (Linux
    reports ru_maxrss in KiB)."""
    done = subprocess.run(
        [sys.executable, "-c", LAUNCHER, *candidate.argv],
        env=env,
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    figures = json.loads(done.stdout)
    error = ""
    if figures["returncode"] != 0:
        error = _last_error_line(done.stderr.strip().splitlines())
    return Run(figures["seconds"], figures["peak_rss"], figures["returncode"], error)


def _last_error_line(lines: list[str]) -> str:
    for line in reversed(lines):
        if line.strip() and not line.startswith(" "):
            return line.strip()[:400]
    return lines[-1].strip()[:400] if lines else "(no message)"


def child_env() -> dict[str, str]:
    """The candidates' environment: bytecode caching on (as for any installed program), one
    thread for onnxruntime-free libraries that might spawn pools."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


# --- checking the outputs -----------------------------------------------------------------


@dataclasses.dataclass
class Verdict:
    ok: bool
    text: str


def verify_output(source: Path, output: Path) -> Verdict:
    """onnx.checker (full, by path, so external data is checked where it lies) and the same
    outputs as the source in onnxruntime on two seeded inputs; the weights are read by
    onnxruntime, never by this process."""
    try:
        onnx.checker.check_model(str(output), full_check=True)
    except Exception as error:  # ValidationError, InferenceError
        return Verdict(False, f"fails onnx.checker: {_first_line(error)}")
    feeds_list = []
    expected = []
    try:
        session = onnxruntime_session(source)
        for seed in (0, 1):
            feeds = _feeds(session, seed)
            feeds_list.append(feeds)
            expected.append(session.run(None, feeds))
        del session
        session = onnxruntime_session(output)
        for feeds, want in zip(feeds_list, expected):
            got = session.run(None, feeds)
            if len(got) != len(want) or not all(map(bit_equal, want, got)):
                return Verdict(False, "outputs differ from the input model's")
    except Exception as error:
        return Verdict(False, f"does not run: {_first_line(error)}")
    return Verdict(True, "ok")


def _feeds(session: onnxruntime.InferenceSession, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    feeds = {}
    for arg in session.get_inputs():
        shape = [d if isinstance(d, int) else 1 for d in arg.shape]
        if arg.type == "tensor(int64)":
            feeds[arg.name] = rng.integers(0, 4, size=shape, dtype=np.int64)
        else:
            values = rng.integers(-4, 4, size=shape).astype(np.float32)  # ties
            feeds[arg.name] = values
    return feeds


def _first_line(error: BaseException) -> str:
    return concise(error)[:300]


# --- the report ---------------------------------------------------------------------------


@dataclasses.dataclass
class Measured:
    candidate: Candidate
    runs: list[Run]
    verdict: Verdict | None = None

    @property
    def ok_runs(self) -> list[Run]:
        return [r for r in self.runs if r.returncode == 0]

    @property
    def failed(self) -> bool:
        return not self.ok_runs

    @property
    def seconds(self) -> float:
        return statistics.median(r.seconds for r in (self.ok_runs or self.runs))

    @property
    def peak_rss(self) -> int:
        return int(statistics.median(r.peak_rss for r in (self.ok_runs or self.runs)))

    def status(self) -> str:
        if self.failed:
            return f"**fails**: `{self.runs[0].error}`"
        if len(self.ok_runs) < len(self.runs):
            return f"fails in {len(self.runs) - len(self.ok_runs)} of {len(self.runs)} runs"
        if self.verdict is None:
            return "written (not checked)"
        return "ok: checker + bit-exact" if self.verdict.ok else f"**{self.verdict.text}**"


def measure(
    cands: Sequence[Candidate], rounds: int, env: dict[str, str], log: Callable[[str], None]
) -> list[Measured]:
    """Round-robin: every candidate once per round, in a rotated order, so that drifts in
    the machine's load spread over all of them. A candidate that fails in round 1 is not
    run again (a failure is an outcome, not a time)."""
    results = [Measured(c, []) for c in cands]
    for round_index in range(rounds):
        shift = round_index % len(results)
        for measured in results[shift:] + results[:shift]:
            if round_index and measured.failed:
                continue
            run = run_once(measured.candidate, env)
            measured.runs.append(run)
            log(
                f"round {round_index + 1}/{rounds}: {measured.candidate.key}: "
                f"{run.seconds:.2f} s, {run.peak_rss / 1e6:.0f} MB"
                + (f", exit {run.returncode}: {run.error}" if run.returncode else "")
            )
    return results


# --- the library, in-process --------------------------------------------------------------

LIBRARY_TARGETS = (18, 13)
# (name, role, call): the two library calls timed side by side on one in-memory ModelProto.
LIBRARY_CALLS = (
    ("maxlower.convert", "maxlower", maxlower.convert),
    ("onnx.version_converter.convert_version", "baseline", version_converter.convert_version),
)


def library_candidates(source: Path, outdir: Path) -> list[Candidate]:
    """Both calls on wide 20→N for each target; no process, so no argv. Their last results
    are saved to `output` and checked against `source` like the whole-process rows."""
    return [
        Candidate(
            "library",
            name,
            f"20→{target}",
            (),
            outdir / f"library.{role}.opset{target}.onnx",
            role,
            source,
        )
        for target in LIBRARY_TARGETS
        for name, role, _ in LIBRARY_CALLS
    ]


def run_library(
    scale: Scale, outdir: Path, log: Callable[[str], None]
) -> tuple[list[Measured], list[str]]:
    """Build the wide model once (opset 20), time both calls on it in this process, save
    the model and the last results for verify_output. Returns the results and the calls
    that modified the input (none should)."""
    model = wide_model(scale.wide_nodes, 20)
    source = outdir / "library_input.onnx"
    onnx.save(model, source)
    results = [Measured(c, []) for c in library_candidates(source, outdir)]
    last, modifiers = measure_library(model, results, scale.rounds, log)
    for measured in results:
        if measured.candidate.key in last:
            onnx.save(last[measured.candidate.key], measured.candidate.output)
    return results, modifiers


def measure_library(
    model: onnx.ModelProto, results: list[Measured], rounds: int, log: Callable[[str], None]
) -> tuple[dict[str, onnx.ModelProto], list[str]]:
    """Each call once to warm up (imports, caches), then `rounds` rounds. In a round, the
    two calls of each conversion run in alternating order (A B, then B A), so that neither
    always inherits the other's garbage and allocator state. A call that fails when warming
    up is not timed (a failure is an outcome, not a time). Returns each call's last result
    and the calls after which `model` had changed (it is restored each time, so that the
    other calls still see the same input)."""
    calls = {name: call for name, _, call in LIBRARY_CALLS}
    original = model.SerializeToString(deterministic=True)
    last: dict[str, onnx.ModelProto] = {}
    modifiers: list[str] = []

    def timed(measured: Measured, label: str) -> Run:
        c = measured.candidate
        last.pop(c.key, None)  # the previous result is freed here, outside the timing
        run, result = _timed_call(calls[c.name], model, int(c.conversion.split("→")[1]))
        if result is not None:
            last[c.key] = result
        if model.SerializeToString(deterministic=True) != original:
            model.ParseFromString(original)
            modifiers.append(c.key)
        log(
            f"{label}: {c.key}: {run.seconds:.3f} s"
            + (f", fails: {run.error}" if run.returncode else "")
        )
        return run

    for measured in results:
        run = timed(measured, "warm-up")
        if run.returncode:
            measured.runs.append(run)
    pairs: dict[str, list[Measured]] = {}
    for measured in results:
        pairs.setdefault(measured.candidate.conversion, []).append(measured)
    for round_index in range(rounds):
        for pair in pairs.values():
            for measured in pair[:: -1 if round_index % 2 else 1]:
                if measured.runs and measured.failed:  # failed when warming up
                    continue
                measured.runs.append(timed(measured, f"round {round_index + 1}/{rounds}"))
    return last, sorted(set(modifiers))


def _timed_call(
    call: Callable[[onnx.ModelProto, int], onnx.ModelProto], model: onnx.ModelProto, target: int
) -> tuple[Run, onnx.ModelProto | None]:
    """One call's wall time (time.perf_counter), and its result (None if it raised)."""
    gc.collect()  # what earlier calls left is collected now, not during this one
    started = time.perf_counter()
    try:
        result = call(model, target)
    except Exception as error:  # the converter's refusals and crashes are outcomes
        return Run(time.perf_counter() - started, 0, 1, _first_line(error)), None
    return Run(time.perf_counter() - started, 0, 0), result


# Packages whose import time the profile shows on its own line: (label, module, part of it).
IMPORT_PARTS = (
    ("onnx (with numpy, protobuf)", "onnx", None),
    ("onnx_ir (sympy deferred by maxlower.launch)", "onnx_ir", None),
    ("maxlower.verify (of which onnxruntime deferred)", "maxlower.verify", None),
)
# What `python -m maxlower` imports before it parses its arguments; onnx first, so that
# importtime charges it to onnx rather than to onnx_ir, which imports it (same total).
COMMAND_IMPORTS = (
    "import maxlower.launch; maxlower.launch.prepare(); import onnx; import maxlower.cli"
)


def stage_profile(
    source: Path, target: int, output: Path, env: dict[str, str]
) -> list[tuple[str, float]]:
    """Where maxlower's time goes: interpreter start, imports (a process that only imports
    maxlower's CLI, minus an empty one; split by `python -X importtime`), then the stages
    of `maxlower convert --timings`; medians of 3 runs each."""
    python = sys.executable

    def wall(argv: Sequence[str]) -> float:
        started = time.perf_counter()
        subprocess.run(argv, env=env, cwd=REPO_ROOT, check=True, capture_output=True)
        return time.perf_counter() - started

    bare = statistics.median(wall([python, "-c", "pass"]) for _ in range(3))
    imports = statistics.median(wall([python, "-c", COMMAND_IMPORTS]) for _ in range(3))
    parts = [_import_times(env) for _ in range(3)]
    rows = [("Python start", bare)]
    named = 0.0
    for label, module, inner in IMPORT_PARTS:
        seconds = statistics.median(p.get(module, 0.0) for p in parts)
        named += seconds
        if inner:
            inner_seconds = statistics.median(p.get(inner, 0.0) for p in parts)
            label = f"{label} (of which {inner} {inner_seconds:.3f} s)"
        rows.append((f"import {label}", seconds))
    rest = max(imports - bare - named, 0)
    rows.append(("import everything else (maxlower, passes, click, …), interpreter exit", rest))
    stages: dict[str, list[float]] = {}
    for _ in range(3):
        done = subprocess.run(
            [
                python,
                "-m",
                "maxlower",
                "convert",
                str(source),
                "--opset",
                str(target),
                "-o",
                str(output),
                "--timings",
            ],
            env=env,
            cwd=REPO_ROOT,
            check=True,
            capture_output=True,
            text=True,
        )
        for line in done.stderr.strip().splitlines():
            label, _, seconds = line.rpartition("  ")
            label = (
                label.strip().replace(str(source), source.name).replace(str(output), output.name)
            )
            stages.setdefault(label, []).append(float(seconds.split()[0]))
    return rows + [(label, statistics.median(values)) for label, values in stages.items()]


def _import_times(env: dict[str, str]) -> dict[str, float]:
    """Cumulative import seconds of each module, as `python -X importtime` reports them
    (a module's first import, which includes what it imports first)."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", COMMAND_IMPORTS],
        env=env,
        cwd=REPO_ROOT,
        check=True,
        capture_output=True,
        text=True,
    )
    times: dict[str, float] = {}
    for line in done.stderr.splitlines():
        fields = line.split("|")
        if len(fields) == 3 and fields[1].strip().isdigit():
            times.setdefault(fields[2].strip(), int(fields[1]) / 1e6)
    return times


def _ratio(value: float, base: float | None) -> str:
    return f"{value / base:.2f}×" if base else "–"


def _seconds(value: float) -> str:
    """Milliseconds below a second: in-process calls can take hundredths of one."""
    return f"{value:.3f} s" if value < 1 else f"{value:.2f} s"


def _spread(measured: Measured) -> str:
    times = [r.seconds for r in measured.ok_runs]
    return f"{_seconds(min(times))[:-2]}–{_seconds(max(times))}" if times else "–"


def scenario_table(results: Sequence[Measured], scenario: str, ratio_role: str) -> list[str]:
    rows = [m for m in results if m.candidate.scenario == scenario]
    lines = [
        "| conversion | candidate | median wall | spread (min–max) | ratio | median peak RSS "
        "| output |",
        "|---|---|---:|---:|---:|---:|---|",
    ]
    for measured in rows:
        c = measured.candidate
        base = next(
            (
                m
                for m in rows
                if m.candidate.role == ratio_role
                and not m.failed
                and (ratio_role == "floor" or m.candidate.conversion == c.conversion)
            ),
            None,
        )
        ratio = "–" if measured.failed or base is None else _ratio(measured.seconds, base.seconds)
        rss = f"{measured.peak_rss / 1e6:.0f} MB" if measured.peak_rss else "–"
        lines.append(
            f"| {c.conversion} | {c.name} | {_seconds(measured.seconds)} | {_spread(measured)} | "
            f"{ratio} | {rss} | {measured.status()} |"
        )
    return lines


def find(
    results: Sequence[Measured], scenario: str, conversion: str | None, role: str
) -> Measured | None:
    return next(
        (
            m
            for m in results
            if m.candidate.scenario == scenario
            and m.candidate.role == role
            and (conversion is None or m.candidate.conversion == conversion)
        ),
        None,
    )


def _verdict(ok: bool) -> str:
    return "met" if ok else "**MISSED**"


def _versus(
    results: Sequence[Measured],
    scenario: str,
    conversion: str,
    how: str,
    target: float,
    limit: float | None = None,
) -> list[str]:
    """`- wide: command line 20→18: maxlower 0.77 s vs ... = 1.02× (target ≤ 1.0×: met)`."""
    ours = find(results, scenario, conversion, "maxlower")
    theirs = find(results, scenario, conversion, "baseline")
    if ours is None or theirs is None:
        return []
    head = f"- {TITLES[scenario]}: {how} {conversion}: "
    if ours.failed or theirs.failed:
        return [
            f"{head}{ours.candidate.name} {ours.status()}; {theirs.candidate.name} "
            f"{theirs.status()} (target ≤ {target}×: no ratio)"
        ]
    ratio = ours.seconds / theirs.seconds
    met = _verdict(ratio <= target)
    text = (
        f"{head}{ours.candidate.name} {_seconds(ours.seconds)} vs {theirs.candidate.name} "
        f"{_seconds(theirs.seconds)} = {ratio:.2f}× (target ≤ {target}×: {met}"
    )
    if limit is not None:
        text += f"; limit {limit}×: {_verdict(ratio <= limit)}"
    if ours.verdict is None or not ours.verdict.ok:
        text += f"; maxlower's output: {ours.status()}"
    return [text + ")"]


def acceptance(results: Sequence[Measured], scenario: str) -> list[str]:
    """The acceptance lines of one scenario, each `- <title>: ...` (earlier_parts finds
    them by that prefix)."""
    if scenario == "library":
        return [
            line
            for conversion in ("20→18", "20→13")
            for line in _versus(results, "library", conversion, "wide", 1.0)
        ]
    if scenario == "wide":
        return [
            *_versus(results, "wide", "20→18", "command line, whole process,", 1.0, 1.5),
            *_versus(results, "wide", "20→13", "command line, whole process,", 0.5),
            *_versus(results, "wide", "13→18", "command line, whole process,", 1.0, 1.5),
        ]
    ours = find(results, scenario, "20→13", "maxlower")
    if scenario == "startup":
        floor = find(results, "startup", None, "floor")
        if ours is None or floor is None or ours.failed:
            return []
        ratio = ours.seconds / floor.seconds
        return [
            f"- start-up: `maxlower convert` of a {_model_bytes(ours.candidate.source)}-byte "
            f'model {ours.seconds:.2f} s vs `python -c "import onnx"` {floor.seconds:.2f} s '
            f"= {ratio:.2f}× (≤ 1.5×: {_verdict(ratio <= 1.5)})"
        ]
    if scenario == "heavy":
        copy = find(results, "heavy", None, "floor")
        if ours is None or copy is None or ours.failed:
            return []
        ratio = ours.seconds / copy.seconds
        # With the start-up scenario in the same run: how much of the wall is the interpreter
        # and `import onnx`, which any converter in Python pays before it reads a byte.
        floor = find(results, "startup", None, "floor")
        beyond = (
            f'; less the start-up floor (`python -c "import onnx"` {floor.seconds:.2f} s '
            f"in this run): {(ours.seconds - floor.seconds) / copy.seconds:.2f}×"
            if floor is not None and not floor.failed
            else ""
        )
        return [
            f"- heavy: maxlower peak RSS {ours.peak_rss / 1e6:.0f} MB "
            f"(≤ 300 MB: {_verdict(ours.peak_rss <= 300e6)}); wall {ours.seconds:.1f} s vs "
            f"file copy {copy.seconds:.1f} s = {ratio:.2f}× (≤ 2×: {_verdict(ratio <= 2)})" + beyond
        ]
    theirs = find(results, "over2gb", "20→13", "baseline")
    if ours is None or theirs is None:
        return []
    ok = not ours.failed and ours.verdict is not None and ours.verdict.ok
    return [
        f"- over-2GB: maxlower {ours.status()} ({_verdict(ok)}); "
        f"onnx.version_converter: {theirs.status()}"
    ]


def earlier_parts(path: Path) -> dict[str, tuple[list[str], list[str]]]:
    """From the section already in `path`, each scenario's acceptance lines and subsection,
    stamped with the run that measured them: a run of some scenarios (--only) keeps the
    figures of the others and says how old they are. A part stamped before keeps its stamp."""
    old = path.read_text() if path.exists() else ""
    start, end = old.find(START_MARKER), old.find(END_MARKER)
    if start == -1 or end < start:
        return {}
    lines = old[start:end].splitlines()
    text = "\n".join(lines)
    date = re.search(r"^- Date: (.*)$", text, re.MULTILINE)
    command = re.search(r"^- Command: (`[^`]*`)", text, re.MULTILINE)
    revision = re.search(r"\(git ([^)]*)\)", text)
    when = date.group(1) if date else "an earlier run"
    stamp = (
        f"Carried over, not rerun: measured {when}"
        + (f" by {command.group(1)}" if command else "")
        + (f" (git {revision.group(1)})" if revision else "")
        + "."
    )
    parts = {}
    for scenario, title in TITLES.items():
        accepted = [
            line if "(carried over from " in line else f"{line} (carried over from {when})"
            for line in lines
            if line.startswith(f"- {title}: ")
        ]
        heading = next(
            (i for i, line in enumerate(lines) if line.startswith(f"### {title}:")), None
        )
        if heading is None:
            continue
        stop = next(
            (i for i in range(heading + 1, len(lines)) if lines[i].startswith("### ")), len(lines)
        )
        body = "\n".join(lines[heading + 1 : stop]).strip("\n").splitlines()
        if not (body and body[0].startswith("Carried over")):
            body = [stamp, "", *body]
        parts[scenario] = (accepted, [lines[heading], "", *body])
    return parts


def section(
    meta: dict,
    results: Sequence[Measured],
    scenarios: Sequence[str],
    profile: list[tuple[str, float]] | None,
    quick: bool,
    earlier: dict[str, tuple[list[str], list[str]]],
) -> str:
    """The whole section: this run's scenarios, and the others' parts from `earlier`."""
    carried = [s for s in SCENARIOS if s not in scenarios and s in earlier]
    lines = [
        START_MARKER,
        "## Scale: large models, external data, and onnx.version_converter",
        "",
        "Written by `benchmarks/bench.py`; rerun it rather than editing this section.",
        "",
        f"- Date: {meta['date']}",
        f"- Machine: {meta['machine']}; 1-minute load average {meta['load'][0]:.2f} at "
        f"the start, {meta['load'][1]:.2f} at the end",
        "- Versions: " + ", ".join(f"{k} {v}" for k, v in meta["versions"].items()),
        f"- Command: `{meta['command']}` ({meta['seconds']:.0f} s wall clock)",
        f"- Method: every candidate is a whole process (interpreter start and imports "
        f"included), run {meta['rounds']} time(s), round-robin in rotated order; medians; "
        "ratios are of medians from this run. Peak RSS is the process's `ru_maxrss` "
        "(`os.wait4`). Outputs are then checked with `onnx.checker.check_model(path, "
        "full_check=True)` and run in onnxruntime (CPU, optimisations off) next to their "
        "input on two seeded inputs; all outputs must be bit-identical. Page cache warm; "
        "other jobs shared the 2 cores, so absolute times are noisy. The library rows are "
        "calls in one process instead (see their subsection).",
    ]
    if carried:
        lines.append(
            "- Rerun here: "
            + ", ".join(TITLES[s] for s in scenarios)
            + "; carried over from earlier runs (dated in each part): "
            + ", ".join(TITLES[s] for s in carried)
        )
    if quick:
        lines.append(
            "- **--quick**: inputs scaled down (the over-2GB input is then not over "
            "2 GB); a smoke test, not a measurement."
        )
    lines += ["", "### Acceptance", ""]
    for scenario in SCENARIOS:
        lines += acceptance(results, scenario) if scenario in scenarios else []
        lines += earlier[scenario][0] if scenario in carried else []
    for scenario in SCENARIOS:
        if scenario in scenarios:
            lines += ["", *subsection(meta, results, scenario, profile)]
        elif scenario in carried:
            lines += ["", *earlier[scenario][1]]
    lines.append(END_MARKER)
    return "\n".join(lines) + "\n"


def subsection(
    meta: dict,
    results: Sequence[Measured],
    scenario: str,
    profile: list[tuple[str, float]] | None,
) -> list[str]:
    if scenario == "wide":
        return wide_subsection(meta, results, profile)
    if scenario == "library":
        return library_subsection(meta, results)
    if scenario == "startup":
        return [
            "### start-up: a one-node model against importing onnx",
            "",
            f"`tiny_opset20.onnx` ({meta['sizes']['tiny']}): one ReduceMax, opset 20 → 13, "
            "as a whole process, next to a process that only imports onnx (which maxlower "
            "needs too), run round-robin with the other candidates.",
            "",
            *scenario_table(results, "startup", "floor"),
        ]
    return external_subsection(meta, results, scenario)


def library_subsection(meta: dict, results: Sequence[Measured]) -> list[str]:
    scale: Scale = meta["scale"]
    modifiers = meta["library_modifiers"]
    unchanged = (
        "Neither call modified the input ModelProto (its serialisation compared after every call)."
        if not modifiers
        else f"**These calls modified the input ModelProto** (restored after each): "
        f"{', '.join(modifiers)}."
    )
    return [
        f"### library in-process: `maxlower.convert` and `convert_version` on wide "
        f"({scale.wide_nodes:,} nodes)",
        "",
        f"One process (this script's): `wide_model({scale.wide_nodes}, 20)` is built once "
        "in memory and every call converts that same ModelProto (no file I/O, no "
        "interpreter start or imports in the times). Each call runs once to warm up, then "
        f"{meta['rounds']} round(s): 20→18 then 20→13, the two calls of each in alternating "
        "order (A B, then B A), `gc.collect()` before each call and outside its time "
        "(`time.perf_counter`). Medians, spread (min–max) and ratios of medians. "
        f"{unchanged} The last result of each call is saved and checked as the "
        "whole-process outputs are (full checker, bit-exact against the input in "
        "onnxruntime).",
        "",
        *scenario_table(results, "library", "baseline"),
    ]


def wide_subsection(
    meta: dict, results: Sequence[Measured], profile: list[tuple[str, float]] | None
) -> list[str]:
    scale: Scale = meta["scale"]
    lines = [
        f"### wide: {scale.wide_nodes:,} family nodes on [2, 3, 4] tensors",
        "",
        f"`wide_opset20.onnx` and `wide_opset13.onnx` ({meta['sizes']['wide20']} and "
        f"{meta['sizes']['wide13']}): blocks of ReduceMax (axes [1], [-1], [0, 2], [2]), "
        "Max (two or three inputs, broadcasting), ArgMax (axis 0-2, select_last_index "
        "0/1) and an int64 Max. Ratios are to onnx.version_converter on the same "
        "conversion; the I/O rows are the floor.",
        "",
        *scenario_table(results, "wide", "baseline"),
    ]
    if not profile:
        return lines
    total = sum(seconds for _, seconds in profile)
    lines += [
        "",
        "Where maxlower's time goes on wide 13→18, the conversion both tools do "
        "that changes the most nodes (medians of 3 runs; "
        "stages from `maxlower convert --timings`):",
        "",
        "| stage | seconds | share |",
        "|---|---:|---:|",
    ]
    lines += [f"| {label} | {seconds:.3f} | {seconds / total:.0%} |" for label, seconds in profile]
    converting = sum(sec for label, sec in profile if label.startswith("converting"))
    theirs = find(results, "wide", "13→18", "baseline")
    if theirs is not None and not theirs.failed:
        fixed = total - converting
        lines += [
            "",
            f"Everything but the conversion itself (Python start, imports, the input's "
            f"data checks, the two full checks, writing) takes {fixed:.2f} s, "
            f"{fixed / theirs.seconds:.2f}× onnx.version_converter's whole 13→18 run "
            f"({theirs.seconds:.2f} s, a process that imports only onnx). Converting "
            f"takes {converting:.2f} s: only the nodes whose conversion changes them "
            "are converted (`maxlower.sparse`), here the "
            f"{scale.wide_nodes // 4:,} ReduceMax nodes whose `axes` attribute "
            "becomes an input, and of those only the first of each signature goes "
            "through onnx_ir, the others copying its result (`maxlower.replay`); "
            "for 20→18, where ReduceMax-18 admits the type of every ReduceMax's "
            "data, no node changes.",
        ]
    return lines


def external_subsection(meta: dict, results: Sequence[Measured], scenario: str) -> list[str]:
    """heavy or over-2GB."""
    scale: Scale = meta["scale"]
    size = meta["sizes"][scenario]
    lines = [f"### {TITLES[scenario]}: {size} of float32 weights in one external data file", ""]
    if scenario == "heavy":
        lines.append(
            f"`heavy.onnx`: {scale.weights} weights of [{scale.rows}, {scale.cols}] "
            f"float32, each read by a ReduceMax (int64 axes in the model) feeding a Max "
            f"chain, an ArgMax + int64 Max every {scale.argmax_every}; opset 20 → 13 (the "
            "axes become attributes). Ratios are to the copy of the model and its data."
        )
    else:
        lines.append(
            f"`over2gb.onnx`: the heavy weights plus one [{scale.big_rows}, {scale.cols}] "
            f"float32 tensor ({scale.big_rows * scale.cols * 4 / 2**30:.2f} GiB, past "
            "offset 2 GiB), in one data file; opset 20 → 13. A ModelProto with the "
            "weights loaded exceeds protobuf's 2 GB limit."
        )
    return [
        *lines,
        "",
        *scenario_table(results, scenario, "floor"),
        "",
        "`load_external_data=False` writes a model that points at the input's "
        "data file (it must sit beside it) and copies no weights.",
    ]


# --- command line -------------------------------------------------------------------------

SCENARIOS = ("wide", "library", "heavy", "over2gb", "startup")
# How the section names each scenario (its acceptance lines and subsection start with it).
TITLES = {
    "wide": "wide",
    "library": "library in-process",
    "heavy": "heavy",
    "over2gb": "over-2GB",
    "startup": "start-up",
}


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--quick", action="store_true", help="small inputs, one round: a smoke test (< 2 minutes)"
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=None,
        help=f"runs per candidate, and rounds of library calls (default {FULL.rounds}; 1 with "
        "--quick)",
    )
    parser.add_argument(
        "--only",
        action="append",
        choices=SCENARIOS,
        help="run only this scenario (repeatable; default: all); the others' parts of the "
        "section already in --results are kept, dated",
    )
    parser.add_argument(
        "--workdir",
        type=Path,
        default=DEFAULT_WORKDIR,
        help="where inputs and outputs go (default benchmarks/.work, which "
        "git ignores); inputs are kept for the next run",
    )
    parser.add_argument("--results", type=Path, default=DEFAULT_RESULTS)
    parser.add_argument("--no-results", action="store_true", help="write no RESULTS.md")
    parser.add_argument("--json", type=Path, help="also write every run here")
    parser.add_argument(
        "--clean", action="store_true", help="delete the inputs too at the end (outputs always are)"
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    scale = QUICK if args.quick else FULL
    if args.rounds is not None:
        scale = dataclasses.replace(scale, rounds=args.rounds)
    scenarios = [s for s in SCENARIOS if not args.only or s in args.only]
    started = time.monotonic()
    load = os.getloadavg()[0]  # before this script adds to it

    def log(message: str) -> None:
        print(f"[{time.monotonic() - started:6.1f} s] {message}", file=sys.stderr, flush=True)

    workdir = args.workdir.resolve()
    needed = (
        4 * scale.weight_bytes + 2 * scale.big_rows * scale.cols * 4
        if set(scenarios) & {"heavy", "over2gb"}
        else 0
    )
    free = shutil.disk_usage(workdir.parent if not workdir.exists() else workdir).free
    if needed > free:
        log(f"needs about {needed / 1e9:.0f} GB of disk, {free / 1e9:.0f} GB free")
        return 2
    inputs = prepare_inputs(workdir, scale, scenarios, log)
    outdir = workdir / "out"
    outdir.mkdir(exist_ok=True)
    env = child_env()
    cands = candidates(inputs, outdir, scenarios)
    modifiers: list[str] = []
    try:
        results = measure(cands, scale.rounds, env, log)
        if "library" in scenarios:  # after the processes, so that none runs beside it
            library, modifiers = run_library(scale, outdir, log)
            results += library
        for measured in results:
            c = measured.candidate
            if c.source is not None and not measured.failed:
                log(f"checking {c.key}")
                measured.verdict = verify_output(c.source, c.output)
        profile = None
        if "wide" in scenarios:
            log("profiling maxlower on wide 13→18")
            profile = stage_profile(inputs["wide13"], 18, outdir / "profile.onnx", env)
    finally:
        shutil.rmtree(outdir, ignore_errors=True)
        for c in cands:  # version_converter's external-data-free outputs sit by the inputs
            if c.output is not None and c.output.parent == workdir:
                c.output.unlink(missing_ok=True)
        if args.clean:
            for path in workdir.glob("*.onnx*"):
                path.unlink()
    meta = {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": machine(),
        "load": (load, os.getloadavg()[0]),
        "versions": versions(),
        "command": shlex.join(
            ["python", "benchmarks/bench.py", *(argv if argv is not None else sys.argv[1:])]
        ),
        "seconds": time.monotonic() - started,
        "rounds": scale.rounds,
        "scale": scale,
        "sizes": {key: _size_text(_model_bytes(path)) for key, path in inputs.items()},
        "library_modifiers": modifiers,
    }
    text = section(meta, results, scenarios, profile, args.quick, earlier_parts(args.results))
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "meta": {k: v for k, v in meta.items() if k != "scale"},
                    "scale": dataclasses.asdict(scale),
                    "results": [
                        {
                            "key": m.candidate.key,
                            "argv": list(m.candidate.argv),
                            "runs": [dataclasses.asdict(r) for r in m.runs],
                            "verdict": dataclasses.asdict(m.verdict) if m.verdict else None,
                        }
                        for m in results
                    ],
                    "profile": profile,
                },
                indent=1,
            )
        )
    if not args.no_results:
        write_section(args.results, text, START_MARKER, END_MARKER)
        log(f"wrote {args.results}")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
