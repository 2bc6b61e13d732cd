"""External data wherever a tensor sits (a Constant's value, another tensor attribute, a
subgraph's initializer, a function's Constant, a sparse tensor, training_info), read from
the model's directory only, and written whole to another output directory.

The commands run in an unrelated working directory that holds a file named like the
model's relative location, with other values (tests/strategies_ext_data.py). Before the
fix, onnxruntime, onnx.reference and onnx's checker were handed those tensors as bytes with
a relative location and resolved it against the working directory: `maxlower verify`
printed that file's bytes as output values, and a subgraph's external initializer was
accepted or refused depending on where the command ran. Where strace exists, it also
proves the decoy is never opened or even stat'ed.
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnx_ir as ir
import pytest
from hypothesis import given
from onnx import TensorProto, helper, numpy_helper

import maxlower
from maxlower.external import inlined
from maxlower.runtime import onnxruntime_session
from tests import budget, tiers
from tests.strategies_ext_data import (
    ExternalCase,
    build,
    decoy_bytes,
    expected,
    external_cases,
    feeds,
    file_bytes,
    write_files,
)
from tests.test_bad_inputs import (
    ALL,
    assert_one_line_error,
    command_line,
    invoke,
    model_dir,
    save,
    secret_file,
    snapshot,
)


def _working_strace() -> str | None:
    """strace, if it is installed and may trace here (a sandbox can forbid ptrace)."""
    found = shutil.which("strace")
    if found is None:
        return None
    probe = subprocess.run([found, "-f", "-qq", "-o", os.devnull, "true"], capture_output=True)
    return found if probe.returncode == 0 else None


STRACE = _working_strace()
X = np.array([-3, 0, 7, 2])


def _case(place: str, location: str = ".env") -> ExternalCase:
    values = (3,) if place == "attribute" else (5, -2, 9, 1)
    return ExternalCase(place, location, "float32", values, 8, 13, 12)  # Constant 13 -> 12


def _lay_out(case: ExternalCase, root: pathlib.Path) -> dict[str, pathlib.Path]:
    """model/ (the model, its data, an inline reference), cwd/ (the decoy), out/."""
    places = {name: root / name for name in ("model", "cwd", "empty", "out")}
    for directory in places.values():
        directory.mkdir(parents=True, exist_ok=True)
    write_files(case, places["model"], file_bytes(case, case.weights()))
    write_files(case, places["cwd"], decoy_bytes(case))
    onnx.save(build(case), places["model"] / "m.onnx")
    onnx.save(build(case, external=False), places["model"] / "reference.onnx")
    return places


def _run(args: list, cwd: pathlib.Path, trace: pathlib.Path | None = None):
    """`maxlower ARGS` in `cwd` (under strace, writing `trace`, when asked)."""
    command = [sys.executable, "-m", "maxlower", *map(str, args)]
    if trace is not None:
        command = [STRACE, "-f", "-qq", "-o", str(trace), "-e", "trace=%file", *command]
    env = {**os.environ, "PYTHONPATH": str(pathlib.Path(__file__).resolve().parents[1])}
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, env=env)


def _touches(trace: pathlib.Path, case: ExternalCase, cwd: pathlib.Path) -> list[str]:
    """System calls that named the decoy: its relative location, or it under `cwd`."""
    relative = re.compile(rf'\("{re.escape(case.location)}"|, "{re.escape(case.location)}"')
    absolute = str(cwd / case.location)
    return [
        line for line in trace.read_text().splitlines() if relative.search(line) or absolute in line
    ]


def _read(path: pathlib.Path) -> onnx.ModelProto:
    """A written model with all its data read in from its own directory (onnx.load reads
    none in training_info, and numpy_helper would then look in the working directory)."""
    return inlined(onnx.load(path, load_external_data=False), path.parent)


def _x(case: ExternalCase) -> np.ndarray:
    return np.resize(X, case.size).astype(case.dtype)


def _outputs_of(path: pathlib.Path, case: ExternalCase) -> np.ndarray:
    """Run a written model from its own directory (onnxruntime resolves its locations
    against the model's path)."""
    return onnxruntime_session(path).run(None, feeds(case, _x(case)))[0]


PLACES_RUN = ("constant", "attribute", "subgraph", "function", "training_info")
DOORS = {
    "verify": lambda p: ["verify", p["model"] / "m.onnx", p["model"] / "reference.onnx"],
    "convert-verify": lambda p: [
        "convert", p["model"] / "m.onnx", "--opset", "12", "--verify", "-o", p["out"] / "o.onnx"
    ],
    "lower-verify": lambda p: [
        "lower", p["model"] / "m.onnx", "--profile", "primitives", "--verify",
        "-o", p["out"] / "o.onnx",
    ],
    "inspect": lambda p: ["inspect", p["model"] / "m.onnx", "--opset", "12"],
}  # fmt: skip


# every (place, door); the default tier runs each place through one door, and each door on at
# least one place (each takes seconds), the slow tier the rest
PLACE_DOORS = tiers.split(
    [pytest.param(place, door, id=f"{place}-{door}") for place in PLACES_RUN for door in DOORS],
    keep=lambda pair: PLACES_RUN.index(pair[0]) % len(DOORS) == list(DOORS).index(pair[1]),
)


@pytest.mark.parametrize(("place", "door"), PLACE_DOORS)
def test_external_data_comes_from_the_model_directory_only(tmp_path, place: str, door: str):
    """Run from a directory holding a decoy of the same name: the command succeeds, verify
    finds the model equal to its inline twin (so it read the model's values, not the
    decoy's), a written output carries the model's values from its own directory, and
    (with strace) no system call names the decoy."""
    case = _case(place)
    paths = _lay_out(case, tmp_path)
    trace = tmp_path / "trace.txt" if STRACE else None
    result = _run(DOORS[door](paths), paths["cwd"], trace)
    assert result.returncode == 0, result.stderr + result.stdout
    if door == "verify":
        assert "EQUIVALENT" in result.stdout, result.stdout
    if door in ("convert-verify", "lower-verify"):
        written = paths["out"] / "o.onnx"
        onnx.checker.check_model(str(written), full_check=True)
        assert np.array_equal(_outputs_of(written, case), expected(case, _x(case)))
        if place == "training_info":
            trained = _read(written).training_info[0].algorithm.initializer[0]
            assert numpy_helper.to_array(trained).tolist() == list(case.weights())
    if trace is not None:
        assert _touches(trace, case, paths["cwd"]) == []
        model_data = str(paths["model"] / case.location)
        assert model_data in trace.read_text()  # the check above can see a read


def test_verify_of_a_constant_reads_the_decoy_no_more(tmp_path: pathlib.Path):
    """The reported case: a Constant's `.env` and a verify run elsewhere. The decoy's
    values would make the model differ from its inline twin; the model's own do not, and
    against a twin that holds the decoy's values verify finds the difference."""
    case = _case("constant")
    paths = _lay_out(case, tmp_path)
    decoy_twin = ExternalCase(**{**case.__dict__, "values": tuple(case.decoy().tolist())})
    onnx.save(build(decoy_twin, external=False), paths["model"] / "decoy_twin.onnx")
    same = _run(DOORS["verify"](paths), paths["cwd"])
    assert same.returncode == 0, same.stdout + same.stderr
    differs = _run(
        ["verify", paths["model"] / "m.onnx", paths["model"] / "decoy_twin.onnx"], paths["cwd"]
    )
    assert differs.returncode == 1, differs.stdout + differs.stderr


@pytest.mark.parametrize("door", [*DOORS, "convert"])
@pytest.mark.parametrize("place", ("subgraph", "function", "sparse", "training_info"))
def test_result_does_not_depend_on_the_working_directory(tmp_path, monkeypatch, place, door):
    """A subgraph's external initializer was accepted or refused by onnx's checker depending
    on whether the working directory held a file of its name: now every command gives the
    same verdict and writes the same output from either, and the output runs from its own
    directory. (A sparse Constant is kept at its schema, 18 -> 13: onnx_ir, so lowering and
    verify, reads none, and refuses it the same from anywhere.)"""
    case = _case(place)
    if place == "sparse":
        case = dataclasses.replace(case, source=18, target=13)
    paths = _lay_out(case, tmp_path)
    seen = []
    for cwd in (paths["cwd"], paths["empty"]):
        monkeypatch.chdir(cwd)
        shutil.rmtree(paths["out"])
        paths["out"].mkdir()
        if door == "convert":
            args = ["convert", paths["model"] / "m.onnx", "--opset", case.target]
            args += ["-o", paths["out"] / "o.onnx"]
        else:
            args = [case.target if a == "12" else a for a in DOORS[door](paths)]
        result = invoke(*args)
        written = paths["out"] / "o.onnx"
        seen.append((result.exit_code, result.stdout, written.exists() and written.read_bytes()))
        if result.exit_code == 0 and written.exists():
            onnx.checker.check_model(str(written), full_check=True)
            if place != "sparse":  # (onnxruntime runs no sparse Constant)
                assert np.array_equal(_outputs_of(written, case), expected(case, _x(case)))
    assert seen[0] == seen[1]
    assert seen[0][0] == (2 if place == "sparse" and door != "convert" else 0), seen[0][1]


# --- bad inputs ---------------------------------------------------------------------------


def _weighted(directory: pathlib.Path, **entries: str) -> pathlib.Path:
    """Max(x, w), w external in weights.bin with `entries` overriding its keys."""
    (directory / "weights.bin").write_bytes(np.ones(4, np.float32).tobytes())
    w = numpy_helper.from_array(np.ones(4, np.float32), "w")
    w.ClearField("raw_data")
    w.data_location = TensorProto.EXTERNAL
    for key, value in {"location": "weights.bin", "offset": "0", "length": "16", **entries}.items():
        entry = w.external_data.add()
        entry.key, entry.value = key, value
    graph = helper.make_graph(
        [helper.make_node("Max", ["x", "w"], ["y"], name="max_w")],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])],
        [w],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    return save(model, directory)


def _refused_by_every_command(tmp_path, path, code, *fragments, commands=ALL):
    for command in commands:
        out = tmp_path / "out" / command / ("report.json" if command == "verify" else "o.onnx")
        out.parent.mkdir(parents=True)
        before = snapshot(tmp_path)
        result = invoke(*command_line(command, path, out))
        assert result.exit_code == code, (command, result.output)
        assert_one_line_error(result, *fragments)
        assert snapshot(tmp_path) == before, command


@pytest.mark.parametrize("key", ["offset", "length"])
def test_external_offset_or_length_of_5000_digits(tmp_path: pathlib.Path, key: str):
    """int() of 5,000 digits raises ValueError (Python's 4,300-digit limit): that was an
    exit 4. It is a one-line refusal now."""
    path = _weighted(model_dir(tmp_path), **{key: "9" * 5000})
    _refused_by_every_command(tmp_path, path, 2, f"external-data {key} 99999", "(5000 digits)")


def test_external_offset_beyond_int64(tmp_path: pathlib.Path):
    path = _weighted(model_dir(tmp_path), offset=str(2**63))
    _refused_by_every_command(tmp_path, path, 2, "more than any file holds")


def _with_training_info(directory: pathlib.Path, location: str, reduce: bool = False):
    """A model whose training_info holds an external tensor at `location`; `reduce`: and a
    ReduceMax-18 of it (axes as an input)."""
    case = ExternalCase("training_info", location, "float32", (1, 2, 3, 4), 0, 18, 13)
    model = build(case)
    if reduce:
        algorithm = model.training_info[0].algorithm
        algorithm.initializer.append(numpy_helper.from_array(np.array([0], np.int64), "axes"))
        node = helper.make_node("ReduceMax", ["trained_w", "axes"], ["z"], name="t_reduce")
        algorithm.node.append(node)
        del algorithm.output[:]
        algorithm.output.append(helper.make_tensor_value_info("z", TensorProto.FLOAT, None))
    return save(model, directory)


def test_training_info_data_outside_the_directory(tmp_path: pathlib.Path):
    """maxlower.safety walks training_info too: `../secret.bin` there is refused."""
    secret_file(tmp_path)
    path = _with_training_info(model_dir(tmp_path), "../secret.bin")
    _refused_by_every_command(
        tmp_path, path, 2, "training_info[0].algorithm", "leads out of the model's directory"
    )


def test_training_info_whose_schema_changes_is_refused(tmp_path: pathlib.Path):
    """18 -> 13 would leave ReduceMax-18 (axes as an input) in a model importing opset 13,
    which onnx's checker does not look at: exit 3, the same in the library; lowering keeps
    the opset, so it keeps training_info as it is."""
    directory = model_dir(tmp_path)
    (directory / ".env").write_bytes(np.arange(4, dtype=np.float32).tobytes())
    path = _with_training_info(directory, ".env", reduce=True)
    fragments = ("'t_reduce' (ReduceMax)", "training_info[0].algorithm", "18..19")
    _refused_by_every_command(tmp_path, path, 3, *fragments, commands=("convert", "inspect"))
    with pytest.raises(maxlower.ConversionError, match="training_info"):
        maxlower.convert(onnx.load(path, load_external_data=False), 13, base_dir=directory)
    out = tmp_path / "lowered.onnx"
    result = invoke("lower", path, "--profile", "primitives", "-o", out)
    assert result.exit_code == 0, result.output
    kept = _read(out).training_info[0].algorithm
    assert [n.op_type for n in kept.node] == ["ReduceMax"]
    assert numpy_helper.to_array(kept.initializer[0]).tolist() == [0, 1, 2, 3]


def test_training_info_without_schema_change_is_kept(tmp_path: pathlib.Path):
    """Within 18..19, ReduceMax keeps its schema: training_info goes through as it is (its
    data carried to the output's directory), the same in the library."""
    directory = model_dir(tmp_path)
    (directory / ".env").write_bytes(np.arange(4, dtype=np.float32).tobytes())
    path = _with_training_info(directory, ".env", reduce=True)
    (tmp_path / "out").mkdir()
    out = tmp_path / "out" / "o.onnx"
    result = invoke("convert", path, "--opset", "19", "-o", out)
    assert result.exit_code == 0, result.output
    original = _training_info(path)
    assert _training_info(out) == original
    unloaded = onnx.load(path, load_external_data=False)
    library = maxlower.convert(unloaded, 19, base_dir=directory)
    assert _training_info(inlined(library, directory)) == original


def _training_info(model: pathlib.Path | onnx.ModelProto) -> list:
    """training_info's nodes and tensor values, read from the model's directory (onnx.load
    reads no external data in training_info)."""
    if isinstance(model, pathlib.Path):
        model = inlined(onnx.load(model, load_external_data=False), model.parent)
    graphs = [t.algorithm for t in model.training_info]
    return [
        ([n.SerializeToString() for n in g.node], [(t.name, t.raw_data) for t in g.initializer])
        for g in graphs
    ]


# --- fuzz ---------------------------------------------------------------------------------

EXAMPLES = 12  # in the slow tier (tests/budget.py)


@budget.fuzz(
    EXAMPLES,
    derandomize=True,
)
@given(case=external_cases())
def test_fuzz_external_data_everywhere(case: ExternalCase):
    """A drawn place, location, offset, type and opset pair: converted (and verified)
    from a working directory that holds a decoy, the output, written to another
    directory, runs from there with the model's values; verify finds the model equal to
    its inline twin; the library converts it the same from base_dir."""
    with tempfile.TemporaryDirectory() as temp:
        paths = _lay_out(case, pathlib.Path(temp))
        here = os.getcwd()
        os.chdir(paths["cwd"])
        try:
            _check_case(case, paths)
        finally:
            os.chdir(here)


def _check_case(case: ExternalCase, paths: dict[str, pathlib.Path]) -> None:
    model, out = paths["model"] / "m.onnx", paths["out"] / "o.onnx"
    runs = case.place != "sparse"  # onnx_ir (so verify, lower) reads no sparse Constant
    verify = ["--verify", "--trials", "3"] if runs else []
    result = invoke("convert", model, "--opset", case.target, *verify, "-o", out)
    if not runs:
        # onnx_ir reads no sparse attribute: where the Constant changes schema (13 -> 12)
        # conversion refuses it, as it refuses the inline twin
        twin = paths["model"] / "reference.onnx"
        alike = invoke("convert", twin, "--opset", case.target, "-o", paths["out"] / "t.onnx")
        assert (result.exit_code, alike.exit_code) in ((0, 0), (2, 2)), result.output
        if result.exit_code:
            assert result.stderr == alike.stderr.replace("reference.onnx", "m.onnx")
            return
    assert result.exit_code == 0, result.output
    onnx.checker.check_model(str(out), full_check=True)
    if runs:
        assert np.array_equal(_outputs_of(out, case), expected(case, _x(case)))
        report = maxlower.verify(model, paths["model"] / "reference.onnx", trials=3)
        assert report.status == "equivalent", report.summary()
    if case.place == "training_info":
        trained = _read(out).training_info[0].algorithm.initializer[0]
        assert numpy_helper.to_array(trained).tolist() == list(case.weights())
    loaded = onnx.load(model, load_external_data=False)
    library = maxlower.convert(loaded, case.target, base_dir=paths["model"])
    assert library.opset_import[0].version == case.target


# --- the library --------------------------------------------------------------------------


def test_library_refuses_external_data_that_no_directory_locates(tmp_path: pathlib.Path):
    """A ModelProto still holding external data, or an onnx_ir model whose tensors have no
    base_dir, names no directory: refused, never read from the working directory."""
    case = _case("constant")
    paths = _lay_out(case, tmp_path)
    unloaded = onnx.load(paths["model"] / "m.onnx", load_external_data=False)
    with pytest.raises(maxlower.InvalidModelError, match="nothing says which directory"):
        maxlower.verify(unloaded, paths["model"] / "reference.onnx")
    nameless = ir.serde.deserialize_model(unloaded)
    with pytest.raises(maxlower.InvalidModelError, match="nothing says which directory"):
        maxlower.verify(nameless, paths["model"] / "reference.onnx")
    with pytest.raises(maxlower.InvalidModelError, match="nothing says which directory"):
        maxlower.convert(nameless, 12)
    converted = maxlower.convert(nameless, 12, base_dir=paths["model"])
    assert maxlower.verify(converted, paths["model"] / "reference.onnx").ok


def test_library_reads_each_tensor_from_its_own_directory(tmp_path: pathlib.Path):
    """An onnx_ir model whose two Constants name the same file in two directories: each
    is read from its own (a {location: directory} map would read one of them twice)."""
    parts, twins = [], []
    for index, values in enumerate(((5, -2, 9, 1), (-7, 8, 0, 3))):
        case = ExternalCase("constant", "w.bin", "float32", values, 0, 13, 12)
        paths = _lay_out(case, tmp_path / f"part{index}")
        parts.append(ir.load(paths["model"] / "m.onnx"))
        twins.append(case.weights())
    first, second = parts
    constant = second.graph.node(0)
    second.graph.remove(constant)
    constant.outputs[0].name = "w2"
    first.graph.insert_before(first.graph.node(1), constant)
    maximum = first.graph.node(2)
    maximum.replace_input_with(0, first.graph.node(0).outputs[0])
    maximum.replace_input_with(1, constant.outputs[0])
    tail = ir.node("Max", [first.graph.inputs[0], maximum.outputs[0]], name="max_x")
    first.graph.append(tail)
    result = first.graph.outputs[0]
    first.graph.outputs[0] = tail.outputs[0]
    tail.outputs[0].name, result.name = "y", "w_max"
    tail.outputs[0].type, tail.outputs[0].shape = result.type, result.shape
    converted = maxlower.convert(first, 12)  # read in: its tensors come from two places
    x = X.astype(np.float32)
    got = onnxruntime_session(ir.to_proto(converted)).run(None, {"x": x})[0]
    assert np.array_equal(got, np.maximum(x, np.maximum(*twins)))
    assert maxlower.verify(first, converted).ok
