"""Models that import no default-domain opset (only ai.onnx.ml ops, as onnxmltools writes
xgboost): conversion is the identity plus the import of the target opset; lowering takes
them as they are. onnx.version_converter asserts on them (`assertInVersionRange`)."""

from __future__ import annotations

import pathlib

import numpy as np
import onnx
import onnx_ir as ir
import pytest
from click.testing import CliRunner

import maxlower
from maxlower.cli import cli
from maxlower.runtime import bit_equal, run_model
from passes.builder import min_ir_version
from passes.version.to_opset import ConvertToOpsetPass

SKLEARN = pathlib.Path(__file__).resolve().parent / "fixtures" / "sklearn"
ML_ONLY = ["xgboost_classifier.opset13.onnx", "xgboost_regressor.opset15.onnx"]
TARGETS = [9, 13, 21, onnx.defs.onnx_opset_version()]


def _feeds(model: onnx.ModelProto) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    shapes = {
        v.name: [d.dim_value or 5 for d in v.type.tensor_type.shape.dim] for v in model.graph.input
    }
    return {name: rng.standard_normal(shape).astype(np.float32) for name, shape in shapes.items()}


@pytest.mark.parametrize("name", ML_ONLY)
def test_fixtures_import_no_default_domain(name):
    model = onnx.load(SKLEARN / name)
    assert {o.domain for o in model.opset_import} == {"ai.onnx.ml"}
    with pytest.raises(Exception, match="assertInVersionRange"):
        onnx.version_converter.convert_version(model, 13)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", ML_ONLY)
def test_conversion_is_the_identity_plus_the_import(name, target, tmp_path):
    model = onnx.load(SKLEARN / name)
    converted, report = maxlower.convert_with_report(model, target)
    # golden: the same graph, the import of the target, an IR version that allows it
    assert converted.graph.SerializeToString() == model.graph.SerializeToString()
    imports = {o.domain: o.version for o in converted.opset_import}
    assert imports == {"ai.onnx.ml": 1, "": target}
    assert converted.ir_version == max(model.ir_version, min_ir_version(target))
    assert report.counts() == {} and report.source_opset is None
    onnx.checker.check_model(converted, full_check=True)
    # numeric: the same outputs, bit for bit
    feeds = _feeds(model)
    before, _ = run_model(model, feeds)
    after, _ = run_model(converted, feeds)
    assert all(bit_equal(np.asarray(a), np.asarray(b)) for a, b in zip(before, after, strict=True))
    # the command line writes the same model
    path, out = tmp_path / name, tmp_path / "out.onnx"
    path.write_bytes(model.SerializeToString())
    result = CliRunner().invoke(cli, ["convert", str(path), "--opset", str(target), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert onnx.load(out).SerializeToString() == converted.SerializeToString()


@pytest.mark.parametrize("name", ML_ONLY)
def test_lowering_takes_it_as_it_is(name, tmp_path):
    model = onnx.load(SKLEARN / name)
    lowered = maxlower.lower(model, "primitives")
    assert lowered.graph.SerializeToString() == model.graph.SerializeToString()
    converted, _ = maxlower.convert_and_lower(model, 13, "onnxruntime")
    assert {o.domain: o.version for o in converted.opset_import}[""] == 13
    path = tmp_path / name
    path.write_bytes(model.SerializeToString())
    result = CliRunner().invoke(
        cli, ["lower", str(path), "--profile", "onnxruntime", "-o", str(tmp_path / "o.onnx")]
    )
    assert result.exit_code == 0, result.output


def test_the_pass_adds_the_import():
    model = ir.serde.deserialize_model(onnx.load(SKLEARN / ML_ONLY[0]))
    result = ConvertToOpsetPass(17)(model)
    assert result.modified and model.opset_imports[""] == 17
    assert model.ir_version >= min_ir_version(17)
