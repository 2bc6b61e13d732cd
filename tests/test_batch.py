"""Batches (issue 30): `maxlower convert` and `lower` on several models, a directory or a
glob, each model in a process of its own, --jobs at a time, with budgets, --resume, JSON
lines, an index page and the worst model's exit code; and the same batch on a local Dask
cluster (slow tier).

Every batch's outputs are held to the single-model command's outputs byte for byte: a
batch is the same command, run many times."""

from __future__ import annotations

import faulthandler
import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import time
from typing import ClassVar

import click
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from maxlower.cli.batch import EXIT_BUDGET, plan, run_local
from maxlower.cli.main import cli
from maxlower.cli.model_run import ModelJob, ModelResult

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "models"


def run_module(*args, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "maxlower", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
    )


def bitwise_and_18() -> onnx.ModelProto:
    """Refused at 13 (no BitwiseAnd before 18, and no function body): exit 3."""
    node = helper.make_node("BitwiseAnd", ["a", "b"], ["c"])
    graph = helper.make_graph(
        [node],
        "and",
        [helper.make_tensor_value_info(n, TensorProto.INT32, [4]) for n in "ab"],
        [helper.make_tensor_value_info("c", TensorProto.INT32, [4])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


@pytest.fixture
def folder(tmp_path: pathlib.Path) -> pathlib.Path:
    """Three example models (one in a subfolder), a refused one and a garbled one."""
    models = tmp_path / "models"
    (models / "sub").mkdir(parents=True)
    shutil.copy(EXAMPLES / "reduce_max_opset18.onnx", models / "reduce_max.onnx")
    shutil.copy(EXAMPLES / "nested_opset18.onnx", models / "nested.onnx")
    shutil.copy(EXAMPLES / "max_bfloat16_opset13.onnx", models / "sub" / "bf16.onnx")
    onnx.save(bitwise_and_18(), models / "bitwise_and.onnx")
    (models / "garbled.onnx").write_bytes(b"not a model")
    (models / "notes.txt").write_text("not searched")
    return models


def json_lines(path: pathlib.Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_folder_converts_as_each_model_would_alone(folder, tmp_path):
    out, lines = tmp_path / "out", tmp_path / "batch.jsonl"
    done = run_module("convert", folder, "--opset", "13", "-o", out, "--jobs", "2", "--json", lines)
    assert done.returncode == 3, done.stderr  # worst: no exact form (3) beats invalid (2)
    records = {pathlib.Path(r["input"]).name: r for r in json_lines(lines)}
    assert len(records) == 5  # every *.onnx below the folder, once; notes.txt not
    assert {n: r["status"] for n, r in records.items()} == {
        "reduce_max.onnx": "ok",
        "nested.onnx": "ok",
        "bf16.onnx": "ok",
        "bitwise_and.onnx": "no exact form",
        "garbled.onnx": "invalid",
    }
    assert "BitwiseAnd" in records["bitwise_and.onnx"]["error"]
    assert records["reduce_max.onnx"]["result"]["target_opset"] == 13  # the model's --json
    # the same relative names under OUT, and nothing for the refused models
    written = sorted(p.relative_to(out).as_posix() for p in out.rglob("*.onnx"))
    assert written == ["nested.onnx", "reduce_max.onnx", "sub/bf16.onnx"]
    # each byte for byte what the single command writes
    for name in written:
        alone = tmp_path / "alone.onnx"
        single = run_module("convert", folder / name, "--opset", "13", "-o", alone)
        assert single.returncode == 0, single.stderr
        assert (out / name).read_bytes() == alone.read_bytes(), name
    # a line per model, then the summary with its reasons
    assert done.stdout.count("\n[") + done.stdout.startswith("[") == 5
    assert "batch: 5 models" in done.stdout
    assert "no exact form  1" in done.stdout and "refused or failed, by reason:" in done.stdout


def test_resume_does_no_work_twice(folder, tmp_path):
    out = tmp_path / "out"
    first = run_module("convert", folder, "--opset", "13", "-o", out)
    assert first.returncode == 3
    stamps = {p: p.stat().st_mtime_ns for p in out.rglob("*.onnx")}
    lines = tmp_path / "again.jsonl"
    again = run_module("convert", folder, "--opset", "13", "-o", out, "--resume", "--json", lines)
    assert again.returncode == 3  # the same verdicts, read from the record
    assert all(r["resumed"] for r in json_lines(lines))
    assert {p: p.stat().st_mtime_ns for p in out.rglob("*.onnx")} == stamps
    assert "5 of them done before" in again.stdout
    # a removed output, a changed model and other options are redone; the rest are not
    (out / "nested.onnx").unlink()
    onnx.save(bitwise_and_18(), folder / "sub" / "bf16.onnx")  # new bytes: a new key
    third = run_module("convert", folder, "--opset", "13", "-o", out, "--resume", "--json", lines)
    redone = {pathlib.Path(r["input"]).name for r in json_lines(lines) if not r["resumed"]}
    assert redone == {"nested.onnx", "bf16.onnx"}, third.stdout
    other = run_module(
        "convert", folder, "--opset", "14", "-o", out, "--resume", "--json", lines
    )  # another target: nothing is done before
    assert not any(r["resumed"] for r in json_lines(lines)), other.stdout


def test_a_timeout_stops_one_model_and_the_others_go_on(folder, tmp_path):
    lines = tmp_path / "t.jsonl"
    done = run_module(
        "convert", folder, "--opset", "13", "-o", tmp_path / "out",
        "--model-timeout", "0.001", "--json", lines,
    )  # fmt: skip
    assert done.returncode == EXIT_BUDGET, done.stderr
    statuses = {r["status"] for r in json_lines(lines)}
    assert statuses == {"timeout"} or statuses <= {"timeout", "invalid", "no exact form"}
    assert "timeout" in statuses


@pytest.mark.slow  # several batches in subprocesses: the default tier's 3 minutes
def test_a_memory_budget_stops_a_model(folder, tmp_path):
    lines = tmp_path / "m.jsonl"
    model = folder / "reduce_max.onnx"
    done = run_module(
        "convert", model, "--opset", "13", "-o", tmp_path / "out",
        "--model-memory", "0.001", "--jobs", "1", "--json", lines,
    )  # fmt: skip
    (record,) = json_lines(lines)
    assert (done.returncode, record["status"]) == (EXIT_BUDGET, "memory")
    assert "--model-memory" in record["error"]


@pytest.fixture
def crash_command():
    """A command that kills its own process (as a runtime's trap would), or succeeds."""

    @click.command("test-crash")
    @click.argument("how")
    @click.option("--json", "json_path")
    def crash(how: str, json_path: str | None) -> None:
        if how == "segv":
            faulthandler.disable()  # pytest's handler would print the child's stack as noise
            os.kill(os.getpid(), signal.SIGSEGV)
        click.echo("fine")

    cli.add_command(crash)
    yield "test-crash"
    del cli.commands["test-crash"]


def test_a_crash_ends_only_its_model(crash_command, tmp_path):
    jobs = [
        ModelJob(i, tmp_path / f"{how}.onnx", how, tmp_path / f"{how}.out", None, how)
        for i, how in enumerate(["segv", "ok", "segv", "ok"])
    ]
    results = dict(run_local(crash_command, jobs, lambda job: {"how": job.name}, 2, 60, None))
    assert {job.name: r.status for job, r in results.items()} == {"segv": "crashed", "ok": "ok"}
    crashed = next(r for job, r in results.items() if job.name == "segv")
    assert "SIGSEGV" in crashed.error and crashed.exit_code == 4
    assert next(r for job, r in results.items() if job.name == "ok").stdout == "fine\n"


def test_index_page_links_each_report_and_escapes_names(folder, tmp_path):
    hostile = folder / "<img src=x onerror=alert(1)>.onnx"
    shutil.copy(EXAMPLES / "reduce_max_opset18.onnx", hostile)
    out, index = tmp_path / "out", tmp_path / "index.html"
    done = run_module("convert", folder, "--opset", "13", "-o", out, "--report", index)
    assert done.returncode == 3, done.stderr
    page = index.read_text()
    assert "<img" not in page and "&lt;img src=x onerror=alert(1)&gt;.onnx" in page
    assert "<script" not in page
    for report in out.rglob("*.report.html"):
        href = os.path.relpath(report, tmp_path)
        assert f'href="{href}"' in page or "%3C" in page
    assert len(list(out.rglob("*.report.html"))) == 4  # the four models that converted
    assert page.count("<tr class=") == 6


@pytest.mark.slow  # several batches in subprocesses: the default tier's 3 minutes
def test_glob_and_lower(folder, tmp_path):
    out = tmp_path / "out"
    done = run_module("lower", str(folder / "*.onnx"), "--profile", "primitives", "-o", out)
    assert done.returncode == 2, done.stderr  # garbled.onnx: invalid; the others lower
    lowered = sorted(p.name for p in out.glob("*.onnx"))
    assert lowered == ["bitwise_and.onnx", "nested.onnx", "reduce_max.onnx"]
    alone = tmp_path / "alone.onnx"
    run_module("lower", folder / "nested.onnx", "--profile", "primitives", "-o", alone)
    assert (out / "nested.onnx").read_bytes() == alone.read_bytes()


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--resume"], "--resume needs -o DIR"),
        (["-o", "{file}"], "OUT is a directory"),
        (["-o", "{out}", "--in-place"], "--in-place writes over each IN"),
    ],
)
def test_batch_refusals(folder, tmp_path, extra, message):
    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    extra = [e.format(file=a_file, out=tmp_path / "out") for e in extra]
    done = run_module("convert", folder, "--opset", "13", *extra)
    assert done.returncode == 2 and message in done.stderr, done.stderr


@pytest.mark.slow  # several batches in subprocesses: the default tier's 3 minutes
def test_two_models_for_one_output_are_refused_before_any_work(folder, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    shutil.copy(EXAMPLES / "nested_opset18.onnx", other / "reduce_max.onnx")
    out = tmp_path / "out"
    done = run_module("convert", folder / "reduce_max.onnx", other, "--opset", "13", "-o", out)
    assert done.returncode == 2 and "would both write" in done.stderr
    assert not out.exists()


def test_no_model_found(tmp_path):
    done = run_module("convert", tmp_path, "--opset", "13", "-o", tmp_path / "out")
    assert done.returncode == 2 and "no .onnx file found" in done.stderr


def test_plan_keys_depend_on_bytes_and_options(folder, tmp_path):
    models = [(folder / "nested.onnx", pathlib.Path("nested.onnx"))]
    params = {"opset": 13, "model_paths": (folder,), "jobs": 2}
    key = plan("convert", params, models, tmp_path, lambda p: p, False)[0].key
    assert (
        key == plan("convert", {**params, "jobs": 1}, models, tmp_path, lambda p: p, False)[0].key
    )  # --jobs decides nothing
    assert (
        key != plan("convert", {**params, "opset": 14}, models, tmp_path, lambda p: p, False)[0].key
    )


@pytest.mark.slow
def test_a_local_dask_cluster_gives_the_same_results(folder, tmp_path):
    try:
        from distributed import LocalCluster
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail("distributed is missing; .ci/run installs maxlower[cluster]")
        pytest.skip("needs maxlower[cluster] (distributed)")
    here, there = tmp_path / "here", tmp_path / "there"
    local = run_module("convert", folder, "--opset", "13", "-o", here, "--json", tmp_path / "h")
    with LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster:
        remote = run_module(
            "convert", folder, "--opset", "13", "-o", there, "--json", tmp_path / "t",
            "--cluster", cluster.scheduler_address,
        )  # fmt: skip
    assert remote.returncode == local.returncode == 3, remote.stderr
    assert "on the cluster at tcp://" in remote.stdout
    written = sorted(p.relative_to(here) for p in here.rglob("*.onnx"))
    assert written == sorted(p.relative_to(there) for p in there.rglob("*.onnx"))
    for name in written:
        assert (here / name).read_bytes() == (there / name).read_bytes()

    def comparable(path):
        return [
            {k: v for k, v in r.items() if k not in ("seconds", "output", "key")}
            | {"output": pathlib.Path(r["output"]).name}
            for r in json_lines(path)
        ]

    local_records, remote_records = comparable(tmp_path / "h"), comparable(tmp_path / "t")
    for record in local_records + remote_records:
        if record["result"] is not None:
            record["result"].pop("output", None)
    assert local_records == remote_records


@pytest.mark.slow  # several batches in subprocesses: the default tier's 3 minutes
def test_check_takes_a_folder(folder, tmp_path):
    lines = tmp_path / "c.jsonl"
    done = run_module("check", folder, "--profile", "qnn-htp", "--strict", "--json", lines)
    records = {pathlib.Path(r["input"]).name: r for r in json_lines(lines)}
    assert records["garbled.onnx"]["status"] == "invalid"
    assert records["reduce_max.onnx"]["status"] == "would change"  # --strict's exit 1
    assert records["reduce_max.onnx"]["output"] is None
    assert records["reduce_max.onnx"]["result"]["profile"] == "qnn-htp"
    assert done.returncode == 2, done.stderr  # invalid (2) outranks --strict's 1 for check
    assert (
        not list(folder.rglob("*.report.html")) and not (folder / ".maxlower-batch.jsonl").exists()
    )


# --- what the red team found (each a class, each refused or handled) ---------------------


@pytest.mark.slow  # several batches in subprocesses: the default tier's 3 minutes
def test_json_and_index_never_replace_what_the_batch_reads_or_writes(folder, tmp_path):
    external = tmp_path / "ext"
    external.mkdir()
    model = helper.make_model(
        helper.make_graph(
            [helper.make_node("ReduceMax", ["x"], ["y"], keepdims=0)],
            "g",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [300])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [])],
        ),
        opset_imports=[helper.make_opsetid("", 13)],
    )
    onnx.save(model, external / "plain.onnx")
    weights = helper.make_model(
        helper.make_graph(
            [helper.make_node("Max", ["x", "w"], ["y"])],
            "g",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [300])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [300])],
            [numpy_helper.from_array(np.arange(300, dtype=np.float32), "w")],
        ),
        opset_imports=[helper.make_opsetid("", 13)],
    )
    onnx.save(weights, external / "w.onnx", save_as_external_data=True, location="w.bin",
              size_threshold=0)  # fmt: skip
    data = (external / "w.bin").read_bytes()
    profile = tmp_path / "mine.toml"
    shutil.copy(ROOT / "maxlower" / "profiles" / "primitives.toml", profile)
    out = tmp_path / "out"
    out.mkdir()
    cases = [
        ("convert", external, "--opset", "11", "-o", out, "--json", external / "w.bin"),
        ("lower", external, "-p", profile, "-o", out, "--report", profile),
        ("convert", external, "--opset", "11", "-o", out, "--json", out / "plain.onnx"),
        ("convert", external, "--opset", "11", "-o", out, "--json", out / "w.onnx.data"),
        ("convert", external, "--opset", "11", "-o", out, "--report", out / "plain.report.html"),
        ("convert", external, "--opset", "11", "-o", out, "--json", out / ".maxlower-batch.jsonl"),
    ]
    for case in cases:
        done = run_module(*case)
        assert done.returncode == 2, (case, done.stderr)
    assert (external / "w.bin").read_bytes() == data
    assert profile.read_text() == (ROOT / "maxlower" / "profiles" / "primitives.toml").read_text()


@pytest.mark.slow  # several batches in subprocesses: the default tier's 3 minutes
def test_the_record_is_never_written_through_a_symlink_or_a_fifo(folder, tmp_path):
    precious = tmp_path / "precious.txt"
    precious.write_text("keep")
    for kind in ("symlink", "fifo"):
        out = tmp_path / f"out-{kind}"
        out.mkdir()
        record = out / ".maxlower-batch.jsonl"
        if kind == "symlink":
            record.symlink_to(precious)
        else:
            os.mkfifo(record)
        done = run_module("convert", folder, "--opset", "13", "-o", out)
        assert done.returncode == 2 and "record" in done.stderr, done.stderr
    assert precious.read_text() == "keep"


@pytest.mark.slow  # several batches in subprocesses: the default tier's 3 minutes
def test_resume_redoes_a_model_whose_inputs_or_outputs_changed(tmp_path):
    models = tmp_path / "models"
    models.mkdir()
    weights = numpy_helper.from_array(np.arange(300, dtype=np.float32), "w")
    model = helper.make_model(
        helper.make_graph(
            [helper.make_node("Max", ["x", "w"], ["y"])],
            "g",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [300])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [300])],
            [weights],
        ),
        opset_imports=[helper.make_opsetid("", 13)],
    )
    onnx.save(model, models / "w.onnx", save_as_external_data=True, location="w.bin",
              size_threshold=0)  # fmt: skip
    out, lines = tmp_path / "out", tmp_path / "l.jsonl"

    def redone() -> bool:
        run_module("convert", models, "--opset", "11", "-o", out, "--resume", "--json", lines)
        return not json_lines(lines)[0]["resumed"]

    assert redone()  # the first run
    assert not redone()  # nothing changed
    blob = bytearray((models / "w.bin").read_bytes())
    blob[:8] = bytes(8)
    (models / "w.bin").write_bytes(bytes(blob))  # other weights: the model means another thing
    assert redone()
    (out / "w.onnx.data").unlink()  # its output's data removed
    assert redone()
    assert (out / "w.onnx.data").exists()


def test_a_broken_record_line_is_skipped(folder, tmp_path):
    out = tmp_path / "out"
    run_module("convert", folder, "--opset", "13", "-o", out)
    with open(out / ".maxlower-batch.jsonl", "a") as record:
        record.write('[]\n{"key": 1}\nnull\n"x"\n{"cut sho')
    lines = tmp_path / "l.jsonl"
    done = run_module("convert", folder, "--opset", "13", "-o", out, "--resume", "--json", lines)
    assert done.returncode == 3, done.stderr
    assert all(r["resumed"] for r in json_lines(lines))


def test_an_interrupted_model_never_leaves_a_batch_at_exit_0():
    from maxlower.cli.batch import BatchView
    from maxlower.cli.model_run import ModelResult

    view = BatchView(2, quiet=True)
    job = ModelJob(0, pathlib.Path("a.onnx"), "a", None, None, "k")
    view.results = [(job, ModelResult("ok", 0, 0.1)), (job, ModelResult("interrupted", 143, 0.1))]
    assert view.exit_code("convert") == 143
    view.results = [(job, ModelResult("ok", 0, 0.1)), (job, ModelResult("?", 9, 0.1))]
    assert view.exit_code("convert") == 4


@pytest.fixture
def slow_command(tmp_path):
    """Leaves a temporary file beside its output (as maxlower.files names them), then
    sleeps past any budget."""

    @click.command("test-slow")
    @click.option("--json", "json_path")
    def slow(json_path):
        (tmp_path / ".out.onnx.abcd1234").write_text("half")
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # deaf to SIGTERM: SIGKILL follows
        import time

        time.sleep(60)

    cli.add_command(slow)
    yield "test-slow"
    del cli.commands["test-slow"]


def test_a_model_stopped_past_its_budget_leaves_no_temporary_file(slow_command, tmp_path):
    from maxlower.cli.model_run import ModelRun

    run = ModelRun(slow_command, {}, 0.5, None, fork=True, output=tmp_path / "out.onnx")
    run.GRACE = 0.3
    while (result := run.poll()) is None:
        pass
    assert result.status == "timeout" and result.exit_code == EXIT_BUDGET
    assert not (tmp_path / ".out.onnx.abcd1234").exists()


@pytest.fixture
def nap_command():
    """Succeeds after a short nap."""

    @click.command("test-nap")
    @click.option("--json", "json_path")
    def nap(json_path):
        import time

        time.sleep(0.3)

    cli.add_command(nap)
    yield "test-nap"
    del cli.commands["test-nap"]


def test_a_model_past_its_timeout_is_a_timeout_even_if_polled_after_it_would_end(nap_command):
    """The batch polls every 20 ms: a child that would have finished between two polls,
    past its timeout, used to count as finished (CI saw 'ok' at --model-timeout 0.001)."""
    from maxlower.cli.model_run import ModelRun

    run = ModelRun(nap_command, {}, 0.05, None, fork=True)
    while run._returncode() is None:  # no poll until the child has ended
        time.sleep(0.01)
    result = run.poll()
    assert result is not None and (result.status, result.exit_code) == ("timeout", EXIT_BUDGET)


@pytest.fixture
def late_writer(tmp_path):
    """Writes its output at once, then runs past any budget."""

    @click.command("test-late-writer")
    @click.option("--json", "json_path")
    def late(json_path):
        import time

        (tmp_path / "out.onnx").write_bytes(b"written")
        time.sleep(5)

    cli.add_command(late)
    yield "test-late-writer"
    del cli.commands["test-late-writer"]


def test_a_model_stopped_past_its_budget_leaves_no_output_it_wrote(late_writer, tmp_path):
    """A child past its timeout whose write finished before SIGTERM took it (maxlower.files
    holds SIGTERM until the renames are done) is a 'timeout', so its output goes: nothing
    is left that the line says was not written (red team of 7de8564). An output older
    than the run is another run's and stays."""
    from maxlower.cli.model_run import ModelRun

    out = tmp_path / "out.onnx"
    run = ModelRun(late_writer, {}, 0.3, None, fork=True, output=out)
    while (result := run.poll()) is None:
        time.sleep(0.01)
    assert result.status == "timeout" and not out.exists()
    out.write_bytes(b"older")
    os.utime(out, (time.time() - 60, time.time() - 60))
    run = ModelRun("test-nap-never-registered", {}, 30.0, None, fork=True, output=out)
    while (result := run.poll()) is None:
        time.sleep(0.01)
    assert out.read_bytes() == b"older"


def test_a_model_within_its_timeout_is_not_stopped(nap_command):
    from maxlower.cli.model_run import ModelRun

    run = ModelRun(nap_command, {}, 30.0, None, fork=True)
    while (result := run.poll()) is None:
        time.sleep(0.01)
    assert (result.status, result.exit_code) == ("ok", 0)


@pytest.mark.slow  # several batches in subprocesses: the default tier's 3 minutes
def test_fifos_odd_names_symlinks_and_out_around_in(folder, tmp_path):
    fifo = tmp_path / "fifo.onnx"
    os.mkfifo(fifo)
    done = run_module(
        "convert", fifo, folder / "nested.onnx", "--opset", "13", "-o", tmp_path / "o"
    )
    assert done.returncode == 2 and "FIFO" in done.stderr  # at once, not a hang
    odd = tmp_path / "odd"
    odd.mkdir()
    shutil.copy(EXAMPLES / "nested_opset18.onnx", odd / os.fsdecode(b"bad\xff\x1b[2J.onnx"))
    (odd / "a_alias.onnx").symlink_to(odd / os.fsdecode(b"bad\xff\x1b[2J.onnx"))
    done = run_module("convert", odd, "--opset", "13", "-o", tmp_path / "odd-out")
    assert done.returncode == 0, done.stderr
    assert "\x1b" not in done.stdout and "bad\\xff\\x1b[2J.onnx" in done.stdout
    written = sorted(os.fsencode(p.name) for p in (tmp_path / "odd-out").glob("*.onnx"))
    assert written == [b"bad\xff\x1b[2J.onnx"]  # the file, not its alias
    # a directory argument inside OUT is searched
    work = tmp_path / "work"
    (work / "models").mkdir(parents=True)
    shutil.copy(EXAMPLES / "nested_opset18.onnx", work / "models" / "n.onnx")
    done = run_module("convert", "models", "--opset", "13", "-o", ".", cwd=work)
    assert done.returncode == 0 and (work / "n.onnx").exists(), done.stderr


def test_pages_that_would_collide_are_refused(tmp_path):
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
    shutil.copy(EXAMPLES / "nested_opset18.onnx", tmp_path / "a" / "x")
    shutil.copy(EXAMPLES / "nested_opset18.onnx", tmp_path / "b" / "x.onnx")
    done = run_module(
        "convert", tmp_path / "a" / "x", tmp_path / "b" / "x.onnx", "--opset", "13",
        "-o", tmp_path / "out", "--report", tmp_path / "index.html",
    )  # fmt: skip
    assert done.returncode == 2 and "would both write" in done.stderr, done.stderr


def test_a_budget_with_one_model_makes_it_a_batch(folder, tmp_path):
    done = run_module(
        "convert", folder / "nested.onnx", "--opset", "13", "-o", tmp_path / "o",
        "--model-timeout", "0.001",
    )  # fmt: skip
    assert done.returncode == EXIT_BUDGET, done.stderr


@pytest.mark.slow  # several batches in subprocesses: the default tier's 3 minutes
def test_cluster_address_refusals(folder, tmp_path):
    pytest.importorskip("distributed")
    done = run_module("convert", folder, "--opset", "13", "-o", tmp_path / "o", "--cluster", " ")
    assert done.returncode == 2 and "address" in done.stderr


class _FakeRun:
    """A model's run on a worker that ends only when stopped, except the first model's."""

    stopped: ClassVar[list[int]] = []

    def __init__(self, command, params, *args, **kwargs) -> None:
        self.which = params["which"]

    def poll(self):
        if self.which == 0:
            return ModelResult("converted", 0, 0.0)
        return None

    def stop(self) -> None:
        _FakeRun.stopped.append(self.which)


@pytest.mark.slow
def test_an_interrupted_cluster_batch_stops_its_running_tasks(monkeypatch):
    """Dask's cancel leaves a running task running: the batch's stop event ends it."""
    distributed = pytest.importorskip("distributed")
    from maxlower.cli import cluster as cluster_module

    monkeypatch.setattr(cluster_module, "ModelRun", _FakeRun)
    monkeypatch.setattr(cluster_module, "STOP_EVERY", 0.05)
    _FakeRun.stopped = []
    jobs = [
        ModelJob(i, pathlib.Path(f"m{i}.onnx"), f"m{i}", None, None, f"{i:032}") for i in range(3)
    ]
    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=3, processes=False, dashboard_address=None
    ) as local:
        batch = cluster_module.run_on_cluster(
            local.scheduler_address, "convert", jobs, lambda job: {"which": job.index}, 60.0, None
        )
        job, result = next(batch)
        assert (job.index, result.status) == (0, "converted")
        batch.close()  # what an interrupt does to the generator
        deadline = time.monotonic() + 20
        while sorted(_FakeRun.stopped) != [1, 2] and time.monotonic() < deadline:
            time.sleep(0.05)
    assert sorted(_FakeRun.stopped) == [1, 2]
