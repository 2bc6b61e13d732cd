"""External data in the prover (issue 26, class 8, the CVE-2022-25882 class): every
tensor comes from its own model's directory, read by maxlower's reader after the safety
check, and a file of the same name in the working directory changes nothing, through
`maxlower prove A B`, `convert --prove` and the library (maxlower.prove.prove,
maxlower.convert(prove=)). The strace test watches every file the command opens."""

from __future__ import annotations

import os
import pathlib
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile

import numpy as np
import onnx
import pytest
from click.testing import CliRunner
from onnx import TensorProto as TP
from onnx import helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import maxlower
from maxlower.cli import cli
from maxlower.errors import InvalidModelError
from tests import tiers

pytest.importorskip("z3", reason="the prover needs z3-solver: pip install -e '.[prove]'")

ROOT = pathlib.Path(__file__).resolve().parents[1]
DECOY = 5.0  # what every decoy file holds: models reading it would be equal


def _add_weight(directory: pathlib.Path, name: str, weight: float, location: str) -> str:
    """y = x + w, w = [weight] kept in `location` beside the model."""
    w = numpy_helper.from_array(np.array([weight], np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "w"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TP.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TP.FLOAT, [1])],
        [w],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    onnx.save(model, path, save_as_external_data=True, location=location, size_threshold=0)
    return str(path)


def _pair(tmp_path: pathlib.Path, layout: str) -> tuple[str, str, pathlib.Path]:
    """Two models with weights 1 and 2; a decoy directory with files of the same names
    holding equal values. `layout`: both models in one directory (a.bin, b.bin), or each
    in its own, under one file name (each must be read from its own directory)."""
    decoy = tmp_path / "decoy"
    if layout == "one directory":
        models = tmp_path / "models"
        a = _add_weight(models, "a.onnx", 1.0, "a.bin")
        b = _add_weight(models, "b.onnx", 2.0, "b.bin")
        _add_weight(decoy, "a.onnx", DECOY, "a.bin")
        _add_weight(decoy, "b.onnx", DECOY, "b.bin")
    else:
        a = _add_weight(tmp_path / "ref", "m.onnx", 1.0, "weights.bin")
        b = _add_weight(tmp_path / "cand", "m.onnx", 2.0, "weights.bin")
        _add_weight(decoy, "m.onnx", DECOY, "weights.bin")
    return a, b, decoy


def _prove_in(cwd, *args: str) -> subprocess.CompletedProcess:
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    )
    return subprocess.run(
        [sys.executable, "-m", "maxlower", "prove", *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
        env=env,
    )


WHERES = ["decoy", "the reference's directory", "elsewhere"]
LAYOUTS = ["one directory", "two directories"]


# the default tier: each working directory once, the layouts in turn; the slow tier the rest
@pytest.mark.parametrize(
    ("where", "layout"),
    tiers.split(
        [(w, layout) for layout in LAYOUTS for w in WHERES],
        keep=lambda pair: WHERES.index(pair[0]) % 2 == LAYOUTS.index(pair[1]) or pair[0] == "decoy",
    ),
)
def test_prove_reads_each_model_s_tensors_from_its_own_directory(tmp_path, layout, where):
    reference, candidate, decoy = _pair(tmp_path, layout)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    cwd = {
        "decoy": decoy,
        "the reference's directory": pathlib.Path(reference).parent,
        "elsewhere": elsewhere,
    }[where]
    result = _prove_in(cwd, reference, candidate, "--counterexample", str(tmp_path / "c.npz"))
    assert result.returncode == 1, result.stdout + result.stderr
    assert "COUNTEREXAMPLE" in result.stdout and "the difference is reproduced" in result.stdout
    # the counterexample is one of the real models, read with their own data
    inputs = dict(np.load(tmp_path / "c.npz"))
    (expected,) = ReferenceEvaluator(onnx.load(reference)).run(None, inputs)
    (actual,) = ReferenceEvaluator(onnx.load(candidate)).run(None, inputs)
    assert not np.array_equal(expected, actual, equal_nan=True)


def test_prove_of_a_model_with_external_data_in_its_directory_proves(tmp_path):
    """The same model against itself proves from a directory without its files (it was
    refused as invalid: the checker looked for them in the working directory)."""
    reference, _, _ = _pair(tmp_path, "one directory")
    copy = tmp_path / "models" / "a2.onnx"
    shutil.copy(reference, copy)
    (tmp_path / "empty").mkdir()
    result = _prove_in(tmp_path / "empty", reference, str(copy))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "PROVED" in result.stdout


def test_library_prove_refuses_unread_external_data_and_proves_what_was_read_in(
    tmp_path, monkeypatch
):
    reference, candidate, decoy = _pair(tmp_path, "one directory")
    monkeypatch.chdir(decoy)
    unread = [onnx.load(p, load_external_data=False) for p in (reference, candidate)]
    with pytest.raises(InvalidModelError, match="nothing says which directory"):
        maxlower.prove.prove(*unread)
    read = [onnx.load(p) for p in (reference, candidate)]
    assert maxlower.prove.prove(*read).status == "counterexample"


def _constant_from_file(directory: pathlib.Path, value: float) -> pathlib.Path:
    """y = x + ReduceMax(b), b a Constant whose value lies in k.bin beside the model (a
    ReduceMax-13 that conversion to opset 18 rewrites: its site reads the Constant)."""
    b = numpy_helper.from_array(np.array([value, value], np.float32), "b_value")
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "k.bin").write_bytes(b.raw_data)
    b.ClearField("raw_data")
    b.data_location = TP.EXTERNAL
    b.external_data.add(key="location", value="k.bin")
    nodes = [
        helper.make_node("Constant", [], ["b"], value=b),
        helper.make_node("ReduceMax", ["b"], ["r"], keepdims=1, axes=[0]),
        helper.make_node("Add", ["x", "r"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TP.FLOAT, [1, 2])],
        [helper.make_tensor_value_info("y", TP.FLOAT, [1, 2])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    onnx.save(model, directory / "k.onnx")
    return directory / "k.onnx"


@pytest.mark.parametrize("where", ["decoy", "the model's directory", "elsewhere"])
def test_convert_prove_reads_a_site_s_constant_from_the_model_s_directory(
    tmp_path, monkeypatch, where
):
    """The site model of the ReduceMax reads the Constant: read from a decoy, the proof
    compared 7 (the decoy) with 1 (the rewrite, read right) and refuted; elsewhere exit 4."""
    source = _constant_from_file(tmp_path / "model", 1.0)
    _constant_from_file(tmp_path / "decoy", 7.0)
    cwd = {"decoy": tmp_path / "decoy", "the model's directory": source.parent}
    cwd["elsewhere"] = tmp_path / "elsewhere"
    cwd["elsewhere"].mkdir()
    monkeypatch.chdir(cwd[where])
    out = tmp_path / "out.onnx"
    result = CliRunner().invoke(
        cli, ["convert", str(source), "--opset", "18", "--prove", "-o", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert "PROVED: 1 site proved" in result.output
    proto = onnx.load(source, load_external_data=False)
    converted = maxlower.convert(proto, 18, base_dir=source.parent, prove=True)
    assert converted.opset_import[0].version == 18


def _reduce_then_add_weight(directory: pathlib.Path, weight: float) -> pathlib.Path:
    """y = ReduceMax-13(x){axes=[1], keepdims=0} + w, w = [weight, weight] in w.bin."""
    graph = helper.make_graph(
        [
            helper.make_node("ReduceMax", ["x"], ["m"], axes=[1], keepdims=0),
            helper.make_node("Add", ["m", "w"], ["y"]),
        ],
        "g",
        [helper.make_tensor_value_info("x", TP.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TP.FLOAT, [2])],
        [numpy_helper.from_array(np.full([2], weight, np.float32), "w")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "m.onnx"
    onnx.save(model, path, save_as_external_data=True, location="w.bin", size_threshold=0)
    return path


@pytest.mark.parametrize("where", ["decoy", "the model's directory"])
def test_convert_prove_compares_a_weight_left_external_by_its_bytes(tmp_path, monkeypatch, where):
    """The run leaves a weight external and the proof's copy of the model holds its small
    tensors read in: the two are compared by the bytes read from the model's directory
    (a decoy w.bin in the working directory holds other bytes, which read would make the
    weight 'changed'). Every dynamo export keeps its weights in a .data file, and each
    conversion of one was INCONCLUSIVE at its first weight ('initializer changed, but the
    run recorded no rewrite of it')."""
    source = _reduce_then_add_weight(tmp_path / "model", 1.0)
    _reduce_then_add_weight(tmp_path / "decoy", 7.0)
    monkeypatch.chdir(tmp_path / "decoy" if where == "decoy" else source.parent)
    out = tmp_path / "out.onnx"
    result = CliRunner().invoke(
        cli, ["convert", str(source), "--opset", "18", "--prove", "-o", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert "PROVED: 1 site proved" in result.output
    assert "changed" not in result.output


def _allowed_prefixes() -> list[str]:
    """Where a Python run may open files: its install, site-packages, system libraries,
    and the kernel's and the system's own trees."""
    prefixes = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    prefixes |= {p for p in sysconfig.get_paths().values() if p}
    prefixes |= {p for p in sys.path if p and os.path.isabs(p)}
    prefixes |= {"/usr", "/lib", "/lib64", "/proc", "/sys", "/dev", "/etc", str(ROOT)}
    prefixes.add(os.path.realpath(tempfile.gettempdir()) + "/pymp-")  # multiprocessing
    import onnx as onnx_module
    import z3

    for module in (onnx_module, np, z3):
        prefixes.add(str(pathlib.Path(module.__file__).resolve().parent.parent))
    return sorted({os.path.realpath(p) if not p.endswith("-") else p for p in prefixes})


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists("/usr/bin/strace"), reason="needs /usr/bin/strace")
def test_strace_prove_opens_no_file_outside_the_models_directories(tmp_path):
    reference, candidate, decoy = _pair(tmp_path, "two directories")
    model_dirs = [os.path.realpath(pathlib.Path(p).parent) for p in (reference, candidate)]
    trace = tmp_path / "trace.txt"
    out = tmp_path / "out"  # what prove writes (the counterexample)
    out.mkdir()
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONDONTWRITEBYTECODE="1")
    command = ["/usr/bin/strace", "-f", "-qq", "-e", "trace=open,openat", "-o", str(trace)]
    command += [sys.executable, *_MAXLOWER_OFF_CWD, "prove", reference, candidate]
    command += ["--counterexample", str(out / "c.npz")]
    result = subprocess.run(
        command, capture_output=True, text=True, timeout=600, cwd=decoy, env=env
    )
    assert result.returncode == 1, result.stdout + result.stderr
    opened = _opened(trace.read_text(), decoy)
    assert opened, "strace saw no open"
    decoys = {os.path.realpath(p) for p in decoy.iterdir()}
    assert not decoys & opened, sorted(decoys & opened)
    allowed = _allowed_prefixes() + model_dirs + [os.path.realpath(out)]
    outside = sorted(p for p in opened if not any(_under(p, a) for a in allowed))
    assert outside == []
    # and the models' own weights were read, each from its directory
    for directory in model_dirs:
        assert os.path.join(directory, "weights.bin") in opened


# `python -m maxlower` with the working directory kept off sys.path, so that imports do not
# list it (-P is Python 3.11's; before, the same by hand)
_MAXLOWER_OFF_CWD = (
    ["-P", "-m", "maxlower"]
    if sys.version_info >= (3, 11)
    else [
        "-c",
        "import sys, runpy; del sys.path[0]; "
        "runpy.run_module('maxlower', run_name='__main__', alter_sys=True)",
    ]
)


def _opened(text: str, cwd: pathlib.Path) -> set[str]:
    """The files strace shows opened, a relative one against the command's working
    directory (failed opens too: looking for a decoy is already wrong)."""
    found = set()
    for line in text.splitlines():
        match = re.search(r'open(?:at)?\((?:AT_FDCWD, )?"([^"]*)"', line)
        if match is not None:
            found.add(os.path.realpath(os.path.join(cwd, match.group(1))))
    return found


def _under(path: str, prefix: str) -> bool:
    return (
        path == prefix
        or path.startswith(prefix.rstrip("/") + "/")
        or (prefix.endswith("-") and path.startswith(prefix))
    )


LAYER_NORM = """<ir_version: 8, opset_import: ["" : 18]>
g (float[2, 4] x) => (float[2, 4] y) <float[4] scale = {1.0, 2.0, 0.5, -1.0}> {
    [norm] y = LayerNormalization <axis = -1> (x, scale)
}"""


def test_a_site_that_reads_an_external_weight_is_proved_with_it_free(tmp_path):
    """dynamo stores every weight as external data, a LayerNormalization's scale too: the
    site reads it as a free value of its type (proved for every scale, so for the one
    stored), where it used to stop ('the site reads ..., stored as external data')."""
    model = onnx.parser.parse_model(LAYER_NORM)
    source = tmp_path / "norm.onnx"
    onnx.save(model, source, save_as_external_data=True, location="w.bin", size_threshold=0)
    proto = onnx.load(source, load_external_data=False)
    _, report = maxlower.convert_with_report(proto, 13, base_dir=tmp_path, prove=True)
    assert report.proof is not None and report.proof.ok, report.proof
    (site,) = [s for s in report.proof.sites if s.node == "norm"]
    assert site.method == "expansion"


def test_an_external_weight_changed_by_the_run_is_not_proved(tmp_path, monkeypatch):
    """The same, with a run that writes another scale under the same name: the site holds
    it free, and the comparison of the stored tensors finds the change."""
    from passes.version import to_opset

    model = onnx.parser.parse_model(LAYER_NORM)
    source = tmp_path / "norm.onnx"
    onnx.save(model, source, save_as_external_data=True, location="w.bin", size_threshold=0)
    original = to_opset.ConvertToOpsetPass.call

    def change_the_scale(self, ir_model):
        result = original(self, ir_model)
        import onnx_ir as ir

        value = ir_model.graph.initializers["scale"]
        value.const_value = ir.tensor(np.array([1.0, 2.0, 0.5, 1.0], np.float32), name="scale")
        return result

    monkeypatch.setattr(to_opset.ConvertToOpsetPass, "call", change_the_scale)
    proto = onnx.load(source, load_external_data=False)
    with pytest.raises((maxlower.ProofInconclusive, maxlower.CounterexampleFound)) as caught:
        maxlower.convert(proto, 13, base_dir=tmp_path, prove=True)
    reasons = [s.reason or "" for s in caught.value.report.sites]
    assert any("initializer 'scale' changed" in r for r in reasons), reasons
