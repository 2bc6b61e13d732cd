"""Models holding value types onnx_ir cannot read (ZipMap's sequence of maps) go through
every door: convert, lower, convert --profile, inspect, verify, and the library; the parts
no rewrite touches are written back byte for byte."""

from __future__ import annotations

import pathlib

import onnx
import pytest
from click.testing import CliRunner

import maxlower
from maxlower.cli import cli

SKLEARN = pathlib.Path(__file__).resolve().parent / "fixtures" / "sklearn"
ZIPMAP_MODELS = ["logreg_zipmap.opset18.onnx", "voting_soft_zipmap.opset21.onnx"]


def invoke(*args) -> tuple[int, str]:
    result = CliRunner().invoke(cli, [str(a) for a in args])
    return result.exit_code, result.output


def _zipmap_parts(model: onnx.ModelProto) -> list[bytes]:
    """The ZipMap node and the map-typed outputs, serialised."""
    nodes = [n.SerializeToString() for n in model.graph.node if n.op_type == "ZipMap"]
    outputs = [
        o.SerializeToString()
        for o in model.graph.output
        if o.type.WhichOneof("value") == "sequence_type"
    ]
    assert nodes and outputs, "the fixture should hold a ZipMap and its sequence output"
    return nodes + outputs


@pytest.mark.parametrize("name", ZIPMAP_MODELS)
@pytest.mark.parametrize(
    "command",
    [
        ("convert", "--opset", "13"),
        ("convert", "--opset", "13", "--profile", "onnxruntime"),
        ("convert", "--opset", "11", "--verify"),
        ("lower", "--profile", "onnxruntime"),
        ("lower", "--profile", "webnn", "--verify"),
    ],
    ids=" ".join,
)
def test_every_command_keeps_the_zipmap_untouched(tmp_path, name, command):
    source = SKLEARN / name
    out = tmp_path / "out.onnx"
    code, output = invoke(command[0], source, *command[1:], "-o", out)
    assert code == 0, output
    written = onnx.load(out)
    onnx.checker.check_model(written, full_check=True)
    assert _zipmap_parts(written) == _zipmap_parts(onnx.load(source))


@pytest.mark.parametrize("name", ZIPMAP_MODELS)
def test_inspect_and_verify_read_zipmap_models(name):
    source = SKLEARN / name
    code, output = invoke("inspect", source, "--opset", "11")
    assert code == 0 and "would succeed" in output, output
    code, output = invoke("verify", source, source)
    assert code == 0 and "EQUIVALENT" in output, output


@pytest.mark.parametrize("name", ZIPMAP_MODELS)
def test_the_library_gives_what_the_command_line_writes(tmp_path, name):
    source = SKLEARN / name
    model = onnx.load(source)
    for opset, profile in ((13, None), (11, "onnxruntime")):
        out = tmp_path / f"{opset}.onnx"
        extra = ("--profile", profile) if profile else ()
        code, output = invoke("convert", source, "--opset", opset, *extra, "-o", out)
        assert code == 0, output
        library = (
            maxlower.convert_and_lower(model, opset, profile)[0]
            if profile
            else maxlower.convert(model, opset)
        )
        assert library.SerializeToString() == onnx.load(out).SerializeToString()
    lowered = maxlower.lower(model, "onnxruntime")
    assert _zipmap_parts(lowered) == _zipmap_parts(model)
