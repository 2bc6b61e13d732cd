"""maxlower.io: proto-level checking and typing, external data kept external and lazy,
atomic writes, progress only on a terminal."""

from __future__ import annotations

import os
import pathlib

import numpy as np
import onnx
import onnx_ir as ir
import pytest
from click.testing import CliRunner
from onnx import TensorProto, helper, numpy_helper

import maxlower
from maxlower import pipeline
from maxlower.cli import cli
from maxlower.errors import InvalidModelError
from maxlower.io import check_and_infer, check_result, write_checked
from maxlower.pipeline import load_model, load_proto
from maxlower.runtime import bit_equal, run_model
from maxlower.ui import Progress
from passes.graph_utils import (
    DATA_PROPAGATION_BUDGET,
    data_propagation_affordable,
    infer_shapes,
)
from tests.conformance import family_cases
from tests.example_models import EXAMPLE_MODELS

EXAMPLES = EXAMPLE_MODELS  # never a glob: README commands write into examples/models/
WEIGHT_SHAPE = (64, 128)  # 32 KiB of float32 each


def _types(model: ir.Model) -> dict[str, tuple]:
    values = {}
    for graph in model.graphs():
        for value in [*graph.inputs, *graph.outputs, *graph.initializers.values()]:
            values[value.name] = (value.dtype, value.shape)
        for node in graph:
            for value in node.outputs:
                values[value.name] = (value.dtype, value.shape)
    return values


def _case_models():
    for case in family_cases()[::4]:
        yield case.name, case.model
    for path in EXAMPLES:
        yield path.name, onnx.load(path)


@pytest.mark.parametrize("name, proto", list(_case_models()), ids=lambda x: str(x)[:40])
def test_loaded_types_are_those_of_the_shape_inference_pass(tmp_path, name, proto):
    """load_model types values as ShapeInferencePass(strict_mode=False)
    does on the model that onnx_ir loads, with one C++ inference instead of a round trip."""
    path = tmp_path / "model.onnx"
    onnx.save(proto, path)
    expected = ir.load(path)
    infer_shapes(expected)
    loaded = load_model(path)
    assert _types(loaded) == _types(expected)
    assert [n.op_type for n in loaded.graph] == [n.op_type for n in expected.graph]


def _invalid_by_inference_only() -> onnx.ModelProto:
    """Structurally fine; strict shape inference rejects Add(float, int64)."""
    graph = helper.make_graph(
        [helper.make_node("Add", ["a", "b"], ["c"])],
        "g",
        [
            helper.make_tensor_value_info("a", TensorProto.FLOAT, [2]),
            helper.make_tensor_value_info("b", TensorProto.INT64, [2]),
        ],
        [helper.make_tensor_value_info("c", TensorProto.FLOAT, [2])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def _invalid_structure() -> onnx.ModelProto:
    graph = helper.make_graph(
        [helper.make_node("Relu", ["undefined"], ["y"])],
        "g",
        [],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


@pytest.mark.parametrize("make", [_invalid_by_inference_only, _invalid_structure])
def test_check_rejects_what_the_full_check_rejects(tmp_path, make):
    proto = make()
    with pytest.raises((onnx.checker.ValidationError, onnx.shape_inference.InferenceError)):
        onnx.checker.check_model(proto, full_check=True)
    with pytest.raises((onnx.checker.ValidationError, onnx.shape_inference.InferenceError)):
        check_and_infer(proto)
    path = tmp_path / "bad.onnx"
    onnx.save(proto, path)
    with pytest.raises(InvalidModelError, match="not valid ONNX"):
        load_model(path)


def test_large_initializers_stay_in_place_through_the_check():
    """Initializers over 1000 bytes reach the checker as typed inputs (as onnx_ir's
    CheckerPass passes them) and come back in their order; the inputs are unchanged."""
    big = numpy_helper.from_array(np.arange(600, dtype=np.float32).reshape(3, 200), "big")
    small = numpy_helper.from_array(np.array([1], np.int64), "axes")
    graph = helper.make_graph(
        [helper.make_node("ReduceMax", ["big", "axes"], ["y"], keepdims=0)],
        "g",
        [],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])],
        initializer=[big, small],
    )
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    checked = check_and_infer(proto)
    assert [t.name for t in checked.graph.initializer] == ["big", "axes"]
    assert list(checked.graph.input) == []
    assert numpy_helper.to_array(checked.graph.initializer[0]).tobytes() == big.raw_data


# --- external data ------------------------------------------------------------------------


def _external(name: str, array: np.ndarray, location: str, offset: int) -> TensorProto:
    tensor = TensorProto(
        name=name,
        dims=list(array.shape),
        data_type=helper.np_dtype_to_tensor_dtype(array.dtype),
        data_location=TensorProto.EXTERNAL,
    )
    for key, value in (("location", location), ("offset", offset), ("length", array.nbytes)):
        entry = tensor.external_data.add()
        entry.key, entry.value = key, str(value)
    return tensor


def write_external_model(directory: pathlib.Path, name: str = "weights.onnx") -> pathlib.Path:
    """Opset 20: three weights in `<name>.data` (one past a gap), each ReduceMax-ed over
    constant axes (in the model) and Max-ed into a chain; an 8-byte external int64 operand
    of an int Max (nothing reads its values to type the graph)."""
    rng = np.random.default_rng(0)
    weights = [rng.integers(-9, 9, WEIGHT_SHAPE).astype(np.float32) for _ in range(3)]
    small = np.array([3], np.int64)
    data = directory / f"{name}.data"
    tensors, offset = [], 0
    with open(data, "wb") as f:
        for i, array in enumerate(weights):
            tensors.append(_external(f"w{i}", array, data.name, offset))
            f.write(array.tobytes() + b"\0" * 100)  # a gap: offsets are not contiguous
            offset += array.nbytes + 100
        tensors.append(_external("small", small, data.name, offset))
        f.write(small.tobytes())
    nodes, h = [], "x"
    for i in range(3):
        nodes += [
            helper.make_node("ReduceMax", [f"w{i}", "axes"], [f"r{i}"], f"reduce{i}", keepdims=1),
            helper.make_node("Max", [h, f"r{i}"], [f"h{i}"], f"max{i}"),
        ]
        h = f"h{i}"
    nodes.append(helper.make_node("ArgMax", [h], ["a"], "argmax", axis=1, keepdims=1))
    nodes.append(helper.make_node("Max", ["a", "small"], ["index"], "max_index"))
    graph = helper.make_graph(
        nodes,
        "weights",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, WEIGHT_SHAPE[1]])],
        [
            helper.make_tensor_value_info(h, TensorProto.FLOAT, [1, WEIGHT_SHAPE[1]]),
            helper.make_tensor_value_info("index", TensorProto.INT64, [1, 1]),
        ],
        initializer=[*tensors, numpy_helper.from_array(np.array([0], np.int64), "axes")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)], ir_version=9)
    path = directory / name
    onnx.save(model, path)
    return path


def _weights_of(path: pathlib.Path) -> dict[str, np.ndarray]:
    model = onnx.load(path)  # loads the external data
    return {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}


def _outputs(path: pathlib.Path) -> list[np.ndarray]:
    x = np.random.default_rng(1).integers(-9, 9, (1, WEIGHT_SHAPE[1])).astype(np.float32)
    return run_model(onnx.load(path), {"x": x})[0]


def test_converted_weights_are_copied_not_read(tmp_path, monkeypatch):
    """Only the 8-byte tensor (which the output keeps inline) is ever mapped or read; the
    weights reach the output's data file by copy_file_range, byte for byte."""
    source = write_external_model(tmp_path)
    read = []
    original_load = ir.ExternalTensor._load

    def recording_load(self):
        read.append(self.name)
        return original_load(self)

    monkeypatch.setattr(ir.ExternalTensor, "_load", recording_load)
    outcome = _convert(source, 13)
    rewrites = outcome.report.rewrites
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    write_checked(outcome.checked, out_dir / "converted.onnx")
    monkeypatch.undo()

    assert set(read) == {"small"}  # read by both checks and inlined in the output
    assert {r.node for r in rewrites} >= {"reduce0", "reduce1", "reduce2"}
    assert sorted(p.name for p in out_dir.iterdir()) == ["converted.onnx", "converted.onnx.data"]
    onnx.checker.check_model(str(out_dir / "converted.onnx"), full_check=True)
    written = onnx.load(out_dir / "converted.onnx", load_external_data=False)
    kinds = {t.name: t.data_location for t in written.graph.initializer}
    assert kinds == {"w0": 1, "w1": 1, "w2": 1, "small": 0}  # 1: EXTERNAL, 0: DEFAULT
    locations = {
        e.value for t in written.graph.initializer for e in t.external_data if e.key == "location"
    }
    assert locations == {"converted.onnx.data"}
    before, after = _weights_of(source), _weights_of(out_dir / "converted.onnx")
    assert set(after) == {"w0", "w1", "w2", "small"}  # the axes became attributes
    for name, array in after.items():
        assert array.tobytes() == before[name].tobytes()
    assert all(map(bit_equal, _outputs(source), _outputs(out_dir / "converted.onnx")))


def test_in_place_conversion_replaces_model_and_data(tmp_path):
    source = write_external_model(tmp_path, "model.onnx")
    os.rename(tmp_path / "model.onnx.data", tmp_path / "model.onnx.data.tmp")
    # The input's data file has the name the output's will have.
    proto = onnx.load(source, load_external_data=False)
    for tensor in proto.graph.initializer:
        for entry in tensor.external_data:
            if entry.key == "location":
                entry.value = "model.onnx.data"
    onnx.save(proto, source)
    os.rename(tmp_path / "model.onnx.data.tmp", tmp_path / "model.onnx.data")
    expected = _outputs(source)
    before = _weights_of(source)

    result = CliRunner().invoke(cli, ["convert", str(source), "--opset", "13", "--in-place"])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.onnx", "model.onnx.data"]
    assert onnx.load(source, load_external_data=False).opset_import[0].version == 13
    after = _weights_of(source)
    for name in ("w0", "w1", "w2", "small"):
        assert after[name].tobytes() == before[name].tobytes()
    assert all(map(bit_equal, expected, _outputs(source)))


def test_a_failed_write_leaves_the_old_files_and_no_temporaries(tmp_path, monkeypatch):
    source = write_external_model(tmp_path)
    out = tmp_path / "out.onnx"
    out.write_bytes(b"old model")
    pathlib.Path(f"{out}.data").write_bytes(b"old data")
    listing = sorted(p.name for p in tmp_path.iterdir())

    def failing_copy(tensors, base_dir, relative_path, **kwargs):
        (pathlib.Path(base_dir) / relative_path).write_bytes(b"partial")
        raise OSError(28, "No space left on device", str(relative_path))

    monkeypatch.setattr(ir.external_data, "convert_tensors_to_external", failing_copy)
    outcome = _convert(source, 13)
    with pytest.raises(InvalidModelError, match="No space left on device"):
        write_checked(outcome.checked, out)
    assert sorted(p.name for p in tmp_path.iterdir()) == listing
    assert out.read_bytes() == b"old model"
    assert pathlib.Path(f"{out}.data").read_bytes() == b"old data"


def test_a_model_that_fails_the_check_is_not_written(tmp_path):
    model = ir.serde.deserialize_model(_invalid_by_inference_only())
    out = tmp_path / "out.onnx"
    with pytest.raises(onnx.shape_inference.InferenceError):
        write_checked(check_result(model), out)
    assert list(tmp_path.iterdir()) == []


def test_cli_and_library_write_the_same_model_with_external_data(tmp_path):
    """The command line (a file: data stays external) and the library (a model loaded
    with its data) run one pipeline: same nodes, same value types, same weights."""
    source = write_external_model(tmp_path)
    result = CliRunner().invoke(
        cli, ["convert", str(source), "--opset", "13", "-o", str(tmp_path / "cli.onnx")]
    )
    assert result.exit_code == 0, result.output
    written = onnx.load(tmp_path / "cli.onnx")
    library = maxlower.convert(onnx.load(source), 13)
    assert [n.SerializeToString() for n in written.graph.node] == [
        n.SerializeToString() for n in library.graph.node
    ]
    assert {v.name: v.type for v in written.graph.value_info} == {
        v.name: v.type for v in library.graph.value_info
    }
    assert _weights_of(tmp_path / "cli.onnx").keys() == {t.name for t in library.graph.initializer}


def test_the_library_refuses_external_data_it_cannot_locate(tmp_path):
    """A ModelProto loaded without its data, and no base_dir: the data's directory is
    unknown, so it is refused rather than looked up relative to the working directory."""
    source = write_external_model(tmp_path)
    unloaded = onnx.load(source, load_external_data=False)
    with pytest.raises(InvalidModelError, match="base_dir"):
        maxlower.convert(unloaded, 13)
    converted = maxlower.convert(unloaded, 13, base_dir=tmp_path)
    assert converted.opset_import[0].version == 13


def _convert(source: pathlib.Path, opset: int) -> pipeline.Outcome:
    """What `maxlower convert` does before writing."""
    return pipeline.run(load_proto(source), pipeline.Job(opset), source.parent)


# --- progress -----------------------------------------------------------------------------


def test_progress_is_silent_unless_enabled(capsys, monkeypatch):
    quiet = Progress(enabled=False)
    with quiet.stage("loading"), quiet.bar(100, "writing") as advance:
        advance(100)
    assert capsys.readouterr() == ("", "")
    assert [label for label, _ in quiet.timings] == ["writing", "loading"]

    # Enabled means stderr is a terminal; click draws its bar only on one.
    monkeypatch.setattr("click._termui_impl.isatty", lambda stream: True)
    shown = Progress(enabled=True)
    with shown.stage("loading"):
        pass
    with shown.bar(100, "writing data") as advance:
        advance(60)
        advance(40)
    err = capsys.readouterr().err
    assert err.startswith("loading…") and " s\n" in err
    assert "writing data" in err and "100%" in err

    with shown.stage("verifying", prints=True):
        print("verification: equivalent")  # the stage's own output starts on a fresh line
    captured = capsys.readouterr()
    assert captured.err == "verifying…\n"
    assert captured.out == "verification: equivalent\n"
    assert shown.timings[-1][0] == "verifying"


def test_cli_shows_no_progress_without_a_terminal_and_timings_on_request(tmp_path):
    source = write_external_model(tmp_path)
    runner = CliRunner()
    plain = runner.invoke(
        cli, ["convert", str(source), "--opset", "13", "-o", str(tmp_path / "a.onnx")]
    )
    assert plain.exit_code == 0, plain.output
    assert plain.stderr == ""
    timed = runner.invoke(
        cli, ["convert", str(source), "--opset", "13", "-o", str(tmp_path / "b.onnx"), "--timings"]
    )
    assert timed.exit_code == 0, timed.output
    labels = [line.rsplit("  ", 1)[0].strip() for line in timed.stderr.splitlines()]
    assert labels[0] == f"loading {source}"
    assert "checking the result (onnx.checker, full check)" in labels
    assert any(
        label.startswith("writing a.onnx.data") or label.startswith("writing b.onnx")
        for label in labels
    )


def test_external_axes_are_read_for_the_check_and_the_conversion(tmp_path):
    """Axes saved in the data file (onnx.save with size_threshold=0): onnx's own checker
    cannot type ReduceMax from them, maxlower reads the 8 bytes and converts."""
    proto = onnx.load(write_external_model(tmp_path))
    onnx.save(
        proto,
        tmp_path / "all_external.onnx",
        save_as_external_data=True,
        all_tensors_to_one_file=True,
        location="all.data",
        size_threshold=0,
    )
    path = tmp_path / "all_external.onnx"
    axes = next(
        t for t in onnx.load(path, load_external_data=False).graph.initializer if t.name == "axes"
    )
    assert axes.data_location == TensorProto.EXTERNAL
    model = load_model(path)
    assert model.graph.node(0).outputs[0].shape == ir.Shape([1, WEIGHT_SHAPE[1]])
    outcome = _convert(path, 13)
    rewrites = outcome.report.rewrites
    assert "constant axes input moved to the attribute axes=[0]" in {r.what for r in rewrites}
    write_checked(outcome.checked, tmp_path / "out.onnx")
    onnx.checker.check_model(str(tmp_path / "out.onnx"), full_check=True)
    assert all(map(bit_equal, _outputs(path), _outputs(tmp_path / "out.onnx")))


SHAPE_COMPUTED = """<ir_version: 8, opset_import: ["" : 13]>
g (float[2, 3] x, float[1, 1] z) => (float[2] y) {
  s = Shape (x)
  r = Expand (z, s)
  y = ReduceMax <axes = [1], keepdims = 0> (r)
}"""


def test_dims_computed_from_shape_are_inferred(tmp_path):
    """Data propagation runs where the model computes shapes and its 1-D values are few:
    Expand(z, Shape(x)) gets x's dims, so lowering can take the static Slice tree for
    ReduceMax instead of the Loop that an unknown dim needs."""
    path = tmp_path / "m.onnx"
    onnx.save(onnx.parser.parse_model(SHAPE_COMPUTED), path)
    loaded = load_model(path)
    expand = next(n for n in loaded.graph if n.op_type == "Expand")
    assert list(expand.outputs[0].shape) == [2, 3]
    lowered = maxlower.lower(onnx.load(path), "primitives")
    assert "Loop" not in {n.op_type for n in lowered.graph.node}
    assert "ReduceMax" not in {n.op_type for n in lowered.graph.node}


def test_data_propagation_budget_counts_1d_values_only():
    budget = DATA_PROPAGATION_BUDGET
    assert data_propagation_affordable([(budget,), (2, 10**9), None, (None,)])
    assert not data_propagation_affordable([(budget // 2,), (budget // 2 + 1,)])
    assert not data_propagation_affordable([(2**40,)])
