"""Where and how the verifier runs models (issue 28's audit):
- both sides of a trial run in one runtime: when onnxruntime cannot run one model, both run
  in onnx.reference, since the two runtimes round a float op (a MatMul's sums) differently,
  and that is no difference between the models;
- a kernel that traps (int32 Div of INT_MIN by -1 raises SIGFPE in onnxruntime) kills a
  child process, never maxlower: a trap on the values of --inputs is a one-line error
  naming the node (exit 2, nothing written), and a generated trial that traps is skipped
  with the reason."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import numpy as np
import onnx
from click.testing import CliRunner

import maxlower
from maxlower.cli import cli
from maxlower.verify.report import DIFFERENT, EQUIVALENT

HEADER = '<ir_version: 8, opset_import: ["" : 13]>\nm '


def parse(text: str) -> onnx.ModelProto:
    return onnx.parser.parse_model(HEADER + text)


# --- one runtime per trial ----------------------------------------------------------------

# onnxruntime has no uint16 Max kernel: it refuses the reference, not the candidate (which
# computes it in int32); the MatMul rounds unlike numpy's in some trials
SIGNATURE = (
    "(float[n, 64] x, float[64, 8] w, uint16[3] a, uint16[3] b) => (float[n, 8] y, uint16[3] z) "
)
UINT16_MAX = SIGNATURE + "{ y = MatMul(x, w)\n z = Max(a, b) }"
THROUGH_INT32 = SIGNATURE + (
    "{ y = MatMul(x, w)\n a32 = Cast <to = 6> (a)\n b32 = Cast <to = 6> (b)\n"
    " m32 = Max(a32, b32)\n z = Cast <to = 4> (m32) }"
)


def test_the_runtimes_round_this_matmul_differently():
    """(The check below could fail: run in two runtimes, these models differ.)"""
    model = parse(THROUGH_INT32)
    sessions = maxlower.runtime.onnxruntime_session(model)
    evaluator = maxlower.runtime.reference_evaluator(model)
    rng = np.random.default_rng(0)
    feeds = {
        "x": (rng.standard_normal((64, 64)) * 1e3).astype(np.float32),
        "w": (rng.standard_normal((64, 8)) * 1e3).astype(np.float32),
        "a": np.zeros(3, np.uint16),
        "b": np.zeros(3, np.uint16),
    }
    ort_y = sessions.run(None, feeds)[0]
    ref_y = evaluator.run(None, feeds)[0]
    assert not np.array_equal(ort_y, ref_y)


def test_a_model_onnxruntime_refuses_runs_both_sides_in_onnx_reference(tmp_path):
    for reference, candidate in ((UINT16_MAX, THROUGH_INT32), (THROUGH_INT32, UINT16_MAX)):
        report = maxlower.verify(parse(reference), parse(candidate))
        assert report.status == EQUIVALENT, report.summary()
        assert report.runners("reference") == report.runners("candidate")
        assert set(report.runners("candidate")) == {"onnx.reference"}
        assert any("both models ran in onnx.reference" in n for n in report.notes)
    paths = []
    for name, text in (("a.onnx", UINT16_MAX), ("b.onnx", THROUGH_INT32)):
        onnx.save(parse(text), tmp_path / name)
        paths.append(str(tmp_path / name))
    result = CliRunner().invoke(cli, ["verify", *paths])
    assert result.exit_code == 0, result.output
    assert result.output.startswith(f"{paths[0]} vs {paths[1]}: EQUIVALENT")
    assert "both models ran in onnx.reference" in result.output


def test_a_real_difference_is_still_found_in_onnx_reference():
    broken = THROUGH_INT32.replace("m32 = Max(a32, b32)", "m32 = Min(a32, b32)")
    report = maxlower.verify(parse(UINT16_MAX), parse(broken))
    assert report.status == DIFFERENT
    assert set(report.runners("candidate")) == {"onnx.reference"}


# --- a kernel that traps --------------------------------------------------------------------

# onnxruntime's int32 Div computes INT_MIN / -1 with the machine's division: SIGFPE
IDIV = "(int32[n] p, int32[n] q) => (int32[n] y) { y = Div(p, q) }"
TRAPPING = {"p": np.array([np.iinfo(np.int32).min, 4], np.int32), "q": np.array([-1, 2], np.int32)}
# generated values: the specials trial has INT_MIN where q is the constant -1
BY_MINUS_ONE = (
    "(int32[n] p) => (int32[n] y) { q = Constant <value = int32[1] {-1}> ()\n y = Div(p, q) }"
)


def run_python(*args: str, cwd: pathlib.Path) -> subprocess.CompletedProcess:
    """In a process of its own: if the trap reached it, it would end the test's process."""
    root = pathlib.Path(__file__).resolve().parent.parent
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]),
    }
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


def test_a_trap_on_the_values_of_inputs_is_a_one_line_error(tmp_path):
    model = tmp_path / "idiv.onnx"
    onnx.save(parse(IDIV), model)
    np.savez(tmp_path / "in.npz", **TRAPPING)
    written = tmp_path / "out.onnx"
    for command in (
        ["convert", str(model), "--opset", "14", "--verify", "-o", str(written)],
        ["verify", str(model), str(model)],
    ):
        done = run_python(
            "-m", "maxlower", *command, "--inputs", str(tmp_path / "in.npz"), cwd=tmp_path
        )
        assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
        errors = [line for line in done.stderr.splitlines() if line.strip()]
        assert len(errors) == 1 and errors[0].startswith("maxlower: error: "), done.stderr
        assert "SIGFPE" in errors[0] and "Div node '<unnamed Div>'" in errors[0]
        assert "--inputs ('p', 'q')" in errors[0] and "-2147483648 by -1" in errors[0]
        assert not written.exists()
    script = (
        "import sys, numpy as np, maxlower\n"
        "from maxlower.errors import KernelTrapped, InvalidModelError\n"
        "try:\n"
        "    maxlower.verify('idiv.onnx', 'idiv.onnx', inputs='in.npz')\n"
        "except KernelTrapped as error:\n"
        "    assert isinstance(error, InvalidModelError)\n"
        "    print('raised:', error)\n"
    )
    done = run_python("-c", script, cwd=tmp_path)
    assert done.returncode == 0, (done.returncode, done.stderr)
    assert done.stdout.startswith("raised: onnxruntime's process died of SIGFPE")


def test_a_generated_trial_that_traps_is_skipped_with_the_reason():
    model = parse(BY_MINUS_ONE)
    report = maxlower.verify(model, model)
    assert report.status == EQUIVALENT, report.summary()
    skipped = [t for t in report.trials if t.status == "skipped"]
    assert skipped and all("SIGFPE" in t.note for t in skipped)
    assert any("onnxruntime's process died" in n and "Div node" in n for n in report.notes)
    # the values that did not trap were compared
    assert report.runs > 0 and report.outputs[0].elements > 0


def test_inputs_that_do_not_trap_are_verified():
    """(The checks above could fail: the same model runs on values that do not trap.)"""
    safe = {"p": np.array([7, 4], np.int32), "q": np.array([-1, 2], np.int32)}
    assert maxlower.verify(parse(IDIV), parse(IDIV), inputs=safe).status == EQUIVALENT
