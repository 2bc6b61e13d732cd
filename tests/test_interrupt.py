"""Interrupting `maxlower convert` while it writes: no partial output, an intact input, and
an earlier output at the same path left as it was (or, between the two renames, replaced
as a pair).

Each test runs `maxlower convert` in a child process whose writer pauses at a chosen point
after the write has started (so that the test is deterministic, not a race), sends it
SIGINT there, and then looks at the files. Exceptions mid-write are tested in-process.
"""

from __future__ import annotations

import errno
import os
import pathlib
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import onnx
import onnx_ir as ir
import pytest
from click.testing import CliRunner
from onnx import TensorProto, helper, numpy_helper

from maxlower.cli import cli
from maxlower.errors import InvalidModelError
from maxlower.files import atomic_write_text
from tests import tiers

WEIGHTS = 6  # external tensors of 64 KiB: the writer pauses after two of them
SIZE = 16384

# The child: `maxlower convert ...` with the writer made to pause at STAGE, after touching
# MARKER, so that the parent knows the write has started.
CHILD = textwrap.dedent(
    """
    import os, pathlib, sys, time
    import onnx, onnx_ir as ir
    from maxlower.cli import main

    marker, stage, argv = pathlib.Path(sys.argv[1]), sys.argv[2], sys.argv[3:]

    def pause(seconds=120):
        marker.write_text(stage)
        time.sleep(seconds)

    if stage == "data":  # inside the external-data file, two tensors written
        original = ir.external_data.convert_tensors_to_external
        def convert(*args, callback=None, **kwargs):
            def each(tensor, info):
                if callback is not None:
                    callback(tensor, info)
                if info.index == 2:
                    pause()
            return original(*args, callback=each, **kwargs)
        ir.external_data.convert_tensors_to_external = convert
    elif stage == "model":  # half of the model file written
        import maxlower.io
        def save(proto, path, *args, **kwargs):
            data = proto.SerializeToString()
            with open(path, "wb") as handle:
                handle.write(data[: len(data) // 2])
            pause()
        maxlower.io.save_model_file = save
    elif stage == "rename":  # the data file renamed into place, the model not yet
        real_replace = os.replace
        def replace(source, target):
            real_replace(source, target)
            if str(target).endswith(".onnx.data"):
                pause(2)
        os.replace = replace
    main(argv)
    """
)


def weighted_model(directory: pathlib.Path, value: float) -> pathlib.Path:
    """A model whose six weights are external, in model.onnx.data."""
    weights = [
        numpy_helper.from_array(np.full(SIZE, value + i, np.float32), f"w{i}")
        for i in range(WEIGHTS)
    ]
    nodes = [helper.make_node("Max", ["x", *[w.name for w in weights]], ["m"], name="max")]
    nodes.append(helper.make_node("ReduceMax", ["m"], ["y"], name="reduce", keepdims=0))
    graph = helper.make_graph(
        nodes,
        "weighted",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [SIZE])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [])],
        weights,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    path = directory / "model.onnx"
    onnx.save(model, path, save_as_external_data=True, location="model.onnx.data", size_threshold=0)
    return path


def snapshot(directory: pathlib.Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


def first_weight(path: pathlib.Path) -> float:
    """The first element of w0 as the model at `path` reads it (model and data together)."""
    model = ir.load(path)
    return float(model.graph.initializers["w0"].const_value.numpy()[0])


def interrupt(stage: str, source: pathlib.Path, out: pathlib.Path, marker: pathlib.Path):
    process = subprocess.Popen(
        [
            sys.executable,
            "-c",
            CHILD,
            str(marker),
            stage,
            "convert",
            str(source),
            "--opset",
            "12",
            "-o",
            str(out),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120
    while not marker.exists():
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            stdout, stderr = process.communicate()
            pytest.fail(f"the child never reached the write:\n{stdout}\n{stderr}")
        time.sleep(0.01)
    leftovers = [p.name for p in out.parent.iterdir() if p.name.startswith(".")]
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=120)
    return process.returncode, stdout, stderr, leftovers


# every (stage, earlier output); the default tier: each stage, and each of new and replacing
@pytest.mark.parametrize(
    ("stage", "earlier_output"),
    tiers.split(
        [
            pytest.param(stage, earlier, id=f"{stage}-{'replacing' if earlier else 'new'}")
            for earlier in (False, True)
            for stage in ("data", "model")
        ],
        keep=lambda case: case in (("data", False), ("model", True)),
    ),
)
def test_sigint_mid_write_leaves_no_partial_output(tmp_path, stage, earlier_output):
    source_dir, out_dir = tmp_path / "in", tmp_path / "out"
    source_dir.mkdir()
    out_dir.mkdir()
    source = weighted_model(source_dir, 1.0)
    out = out_dir / "model.onnx"
    if earlier_output:  # an earlier result at OUT, with other weights
        weighted_model(out_dir, 50.0)
    inputs, outputs = snapshot(source_dir), snapshot(out_dir)

    code, stdout, stderr, leftovers = interrupt(stage, source, out, tmp_path / "marker")

    assert leftovers, "the write had not started: no temporary file in the output directory"
    assert code == 130, stderr
    assert stderr.startswith("maxlower: error: interrupted"), stderr
    assert "Traceback" not in stderr
    assert "wrote" not in stdout
    assert snapshot(source_dir) == inputs
    assert snapshot(out_dir) == outputs  # nothing new, no temporary file, the old pair intact
    if earlier_output:
        assert first_weight(out) == 50.0


def test_sigint_between_the_two_renames_waits_for_the_second(tmp_path):
    """The data file and the model are renamed into place one after the other; SIGINT
    between them is held until both are done, so OUT never pairs an old model with new
    data (the earlier result's offsets would then read the new bytes)."""
    source_dir, out_dir = tmp_path / "in", tmp_path / "out"
    source_dir.mkdir()
    out_dir.mkdir()
    source = weighted_model(source_dir, 1.0)
    out = out_dir / "model.onnx"
    weighted_model(out_dir, 50.0)
    inputs = snapshot(source_dir)

    code, _, stderr, _ = interrupt("rename", source, out, tmp_path / "marker")

    assert code == 130, stderr
    assert snapshot(source_dir) == inputs
    assert sorted(p.name for p in out_dir.iterdir()) == ["model.onnx", "model.onnx.data"]
    converted = onnx.load(out)
    assert converted.opset_import[0].version == 12
    assert first_weight(out) == 1.0
    onnx.checker.check_model(str(out), full_check=True)


# --- exceptions mid-write (in-process) ----------------------------------------------------


def invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def test_disk_full_mid_write_keeps_the_earlier_output(tmp_path, monkeypatch):
    source_dir, out_dir = tmp_path / "in", tmp_path / "out"
    source_dir.mkdir()
    out_dir.mkdir()
    source = weighted_model(source_dir, 1.0)
    weighted_model(out_dir, 50.0)
    inputs, outputs = snapshot(source_dir), snapshot(out_dir)
    original = ir.external_data.convert_tensors_to_external

    def full_after_two(*args, callback=None, **kwargs):
        def each(tensor, info):
            if info.index == 2:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        return original(*args, callback=each, **kwargs)

    monkeypatch.setattr(ir.external_data, "convert_tensors_to_external", full_after_two)
    result = invoke("convert", source, "--opset", "12", "-o", out_dir / "model.onnx")
    assert result.exit_code == 2
    assert result.stderr.startswith("maxlower: error: ")
    assert "No space left on device" in result.stderr
    assert snapshot(source_dir) == inputs
    assert snapshot(out_dir) == outputs
    assert first_weight(out_dir / "model.onnx") == 50.0


def test_json_report_is_written_atomically(tmp_path, monkeypatch):
    path = tmp_path / "report.json"
    atomic_write_text(path, "old\n")

    def fail(*args):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(InvalidModelError, match="No space left on device"):
        atomic_write_text(path, "new\n")
    monkeypatch.undo()
    assert path.read_text() == "old\n"
    assert os.listdir(tmp_path) == ["report.json"]
    atomic_write_text(path, "new\n")
    assert path.read_text() == "new\n"
    assert oct(path.stat().st_mode & 0o777) == oct(0o666 & ~_umask())


def test_verify_json_report_goes_through_a_temporary_file(tmp_path, monkeypatch):
    """`maxlower verify --json` writes the report with atomic_write_text: a failing rename
    leaves the earlier report."""
    model = onnx.parser.parse_model(
        '<ir_version: 8, opset_import: ["" : 13]> g (float[3] x) => (float[3] y) { y = Max (x, x) }'
    )
    onnx.save(model, tmp_path / "m.onnx")
    report = tmp_path / "report.json"
    report.write_text("earlier\n")
    real_replace = os.replace
    replaced = []

    def replace(source, target):
        replaced.append(pathlib.Path(target).name)
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    monkeypatch.setattr(os, "replace", replace)
    result = invoke("verify", tmp_path / "m.onnx", tmp_path / "m.onnx", "--json", report)
    monkeypatch.setattr(os, "replace", real_replace)
    assert replaced == ["report.json"]
    assert result.exit_code == 2, result.output
    assert report.read_text() == "earlier\n"
    assert sorted(os.listdir(tmp_path)) == ["m.onnx", "report.json"]


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
