"""Whole real models: every fixture to opsets 11, 13, 17, 18 and the latest, exactly.

Each result passes the full checker, runs in onnxruntime with optimisations off, and gives
the original's outputs bit for bit on seeded inputs. The one exception is listed in
`SPEC_NOT_KERNEL`: where the target has no LayerNormalization, conversion is refused by
default (exit 3, naming --expand-functions); with expand_functions=True the node becomes its
ONNX function body. That body is the op's definition in the spec, and the converted model
reproduces it bit for bit (the original with the same nodes expanded at its own opset), but
onnxruntime's fused LayerNormalization kernel sums in another order than its ReduceMean, so
float outputs downstream differ from the original's by a few ulp. The argmax heads agree.

The default tier converts every fixture but the larger zoo networks (tests/tiers.py); the
slow tier converts those.
"""

from __future__ import annotations

import functools
import hashlib
import json

import numpy as np
import onnx
import onnx.version_converter
import onnx_ir as ir
import pytest

import maxlower
from passes import ConversionError
from passes.graph_utils import infer_shapes
from passes.version.other_ops import ConvertOtherOpsPass, source_opsets_of
from tests import tiers
from tests.fixtures.catalog import (
    MANIFEST,
    TARGETS,
    differences,
    fixtures,
    outputs_of,
    spec_reference,
)

FIXTURES = {f.name: f for f in fixtures()}
PAIRS = tiers.split(
    [pytest.param(name, t, id=f"{name}-{t}") for name in FIXTURES for t in TARGETS],
    keep=lambda pair: not tiers.large_network(pair[0]),
)

# Ops that do not exist below some opset, which conversion replaces by their function body
# there; onnxruntime runs the original's with a fused kernel (see the module docstring).
SPEC_NOT_KERNEL = {"LayerNormalization": 17}
MAX_ULP_FROM_KERNEL = 4

ARCHITECTURES = ("cnn_classifier", "segmentation", "encoder", "pointnet", "gru_tagger", "clamp_max")
LIGHT = (
    "bvlc_alexnet",
    "densenet121",
    "inception_v1",
    "inception_v2",
    "resnet50",
    "shufflenet",
    "squeezenet",
    "vgg19",
    "zfnet512",
)


@functools.cache
def original_outputs(name: str) -> tuple[dict, dict]:
    fixture = FIXTURES[name]
    model = fixture.load()
    feeds = fixture.feeds(model)
    outputs, runtime = outputs_of(model, feeds)
    assert runtime == "onnxruntime"
    return feeds, outputs


@functools.cache
def spec_outputs(name: str, op_types: frozenset[str]) -> dict:
    """The original's outputs with `op_types` expanded into their bodies at its own opset."""
    original = FIXTURES[name].load()
    proto = spec_reference(original, op_types)
    assert op_types <= all_op_types(original) and not op_types & all_op_types(proto)
    onnx.checker.check_model(proto, full_check=True)
    outputs, _ = outputs_of(proto, original_outputs(name)[0])
    return outputs


def all_op_types(model: onnx.ModelProto) -> set[str]:
    return {n.op_type for n in model.graph.node} | {
        n.op_type for f in model.functions for n in f.node
    }


def expanded_ops(model: onnx.ModelProto, target: int) -> frozenset[str]:
    ops = all_op_types(model)
    return frozenset(op for op, since in SPEC_NOT_KERNEL.items() if op in ops and target < since)


def test_fixture_set_is_complete_small_and_as_exported():
    manifest = json.loads(MANIFEST.read_text())
    for arch in ARCHITECTURES:
        for how in ("dynamo", "legacy13", "legacy17"):
            assert f"{arch}.{how}.onnx" in manifest
    for light in LIGHT:
        assert f"light_{light}.heads.onnx" in manifest
    total = 0
    for name, entry in manifest.items():
        data = FIXTURES[name].path.read_bytes()
        assert hashlib.sha256(data).hexdigest() == entry["sha256"], f"{name} was edited by hand"
        assert len(data) < 1_000_000
        total += len(data)
    assert total < 3_000_000
    dynamo = onnx.load(FIXTURES["encoder.dynamo.onnx"].path)
    opset = {o.domain: o.version for o in dynamo.opset_import}[""]
    assert opset >= 18 and any(
        n.op_type == "ReduceMax" and len(n.input) == 2 for n in dynamo.graph.node
    ), "ReduceMax with an axes input"


@pytest.mark.parametrize(("name", "target"), PAIRS)
def test_fixture_converts_exactly(name, target):
    feeds, expected = original_outputs(name)
    original = FIXTURES[name].load()
    expanded = expanded_ops(original, target)
    if expanded:  # refused on request: the body is exact to the spec, not to the kernel
        with pytest.raises(ConversionError, match="--no-expand-functions"):
            maxlower.convert(original, target, expand_functions=False)
    converted = maxlower.convert(original, target)  # expanded by default
    onnx.checker.check_model(converted, full_check=True)
    assert {o.domain: o.version for o in converted.opset_import}[""] == target
    assert len(converted.functions) == len(original.functions)
    actual, runtime = outputs_of(converted, feeds)
    assert runtime == "onnxruntime"
    if not expanded:
        assert differences(expected, actual) == []
        return
    assert differences(spec_outputs(name, expanded), actual) == []
    for output, e in expected.items():
        if e.dtype.kind == "f":
            np.testing.assert_array_max_ulp(e, actual[output], maxulp=MAX_ULP_FROM_KERNEL)
        else:
            np.testing.assert_array_equal(e, actual[output])


def test_spec_not_kernel_pairs_really_differ_from_the_kernel():
    """Guard for the exception: if onnxruntime's kernel ever matched the body, the
    exception should go."""
    _, expected = original_outputs("encoder.dynamo.onnx")
    spec = spec_outputs("encoder.dynamo.onnx", frozenset({"LayerNormalization"}))
    assert differences(expected, spec) != []


def test_model_local_function_kept_where_version_converter_drops_it():
    original = FIXTURES["encoder.legacy17_functions.onnx"].load()
    assert [(f.domain, f.name) for f in original.functions] == [
        ("maxlower_fixtures", "EncoderLayer")
    ]
    alone = onnx.version_converter.convert_version(original, 18)
    assert len(alone.functions) == 0  # what the issue reports; maxlower must not do this
    for target in (13, 18):
        converted = maxlower.convert(original, target, expand_functions=target < 17)
        assert [(f.domain, f.name) for f in converted.functions] == [
            ("maxlower_fixtures", "EncoderLayer")
        ]
        body = {n.op_type for n in converted.functions[0].node}
        assert ("LayerNormalization" in body) == (target >= 17)
        function_opsets = {o.domain: o.version for o in converted.functions[0].opset_import}
        assert function_opsets[""] == target


def test_names_metadata_and_value_info_survive():
    original = FIXTURES["light_squeezenet.heads.onnx"].load()
    original.metadata_props.add(key="author", value="fixture")
    original.doc_string = "kept"
    original.graph.doc_string = "graph doc"
    inferred = onnx.shape_inference.infer_shapes(original)
    original.graph.value_info.extend(inferred.graph.value_info[:3])
    converted = maxlower.convert(original, 13)
    assert {p.key: p.value for p in converted.metadata_props} == {"author": "fixture"}
    assert converted.doc_string == "kept" and converted.graph.doc_string == "graph doc"
    assert [n.name for n in converted.graph.node] == [n.name for n in original.graph.node]
    names = {v.name for v in converted.graph.value_info}
    assert {v.name for v in original.graph.value_info} <= names
    assert [i.name for i in converted.graph.input] == [i.name for i in original.graph.input]
    assert [o.name for o in converted.graph.output] == [o.name for o in original.graph.output]


def test_external_data_stays_external(tmp_path):
    from click.testing import CliRunner

    from maxlower.cli import cli

    source = tmp_path / "cnn.onnx"
    model = FIXTURES["cnn_classifier.dynamo.onnx"].load()
    onnx.save(
        model,
        source,
        save_as_external_data=True,
        all_tensors_to_one_file=True,
        location="cnn.onnx.data",
        size_threshold=1024,  # the weights; small constants (axes) stay inline, as torch does
    )
    out = tmp_path / "cnn13.onnx"
    result = CliRunner().invoke(cli, ["convert", str(source), "--opset", "13", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "cnn13.onnx.data").is_file()
    header = onnx.load(out, load_external_data=False)
    assert any(t.data_location == onnx.TensorProto.EXTERNAL for t in header.graph.initializer)
    feeds, expected = original_outputs("cnn_classifier.dynamo.onnx")
    actual, _ = outputs_of(onnx.load(out), feeds)
    assert differences(expected, actual) == []


def test_refusal_names_node_op_and_reachable_opsets():
    model = onnx.parser.parse_model(
        """<ir_version: 8, opset_import: ["" : 18]>
        g (float[3,3] x) => (float[3,3] y) {
            r = Relu (x)
            y = Trilu <upper = 0> (r)
        }"""
    )
    model.graph.node[1].name = "lower_triangle"
    with pytest.raises(ConversionError) as info:
        maxlower.convert(model, 13)
    error = info.value
    assert (error.node_name, error.op_type) == ("lower_triangle", "Trilu")
    assert "does not exist at opset 13" in error.reason
    latest = onnx.defs.onnx_opset_version()
    assert error.remedy.startswith(f"a target opset in 14..{latest}")


def test_refusal_exit_code_3(tmp_path):
    from click.testing import CliRunner

    from maxlower.cli import cli

    model = onnx.parser.parse_model(
        """<ir_version: 8, opset_import: ["" : 14]>
        g (float[2,2] x) => (float[2,2] y) { y = Trilu (x) }"""
    )
    path = tmp_path / "trilu.onnx"
    onnx.save(model, path)
    result = CliRunner().invoke(cli, ["convert", str(path), "--opset", "13"])
    assert result.exit_code == 3
    assert "(Trilu)" in result.output and "a target opset in 14.." in result.output
    assert not (tmp_path / "trilu.opset13.onnx").exists()


def test_pass_reports_how_and_modified_is_exact():
    model = ir.serde.deserialize_model(FIXTURES["encoder.dynamo.onnx"].load())
    infer_shapes(model)
    convert = ConvertOtherOpsPass(13, source_opsets_of(model), expand_functions=True)
    result = convert(model)
    assert result.modified
    hows = {(c.op_type, c.how) for c in result.conversions}
    assert ("LayerNormalization", "expanded into its ONNX function body") in hows
    assert ("MatMul", "relabelled") not in hows  # MatMul-13 is MatMul-13: nothing to do
    assert any(op == "Split" and "num_outputs" in how for op, how in hows)
    again = ConvertOtherOpsPass(13, {id(model.graph): 13})(model)
    assert again.modified is False
    relabel_only = ir.serde.deserialize_model(FIXTURES["clamp_max.legacy13.onnx"].load())
    infer_shapes(relabel_only)
    assert ConvertOtherOpsPass(17)(relabel_only).modified is False


def test_benchmark_writes_its_section_only(tmp_path):
    import importlib.util
    import sys

    from tests.fixtures.catalog import HERE

    script = HERE.parents[1] / "benchmarks" / "whole_model.py"
    spec = importlib.util.spec_from_file_location("whole_model_benchmark", script)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while it executes
    try:
        spec.loader.exec_module(module)
        results = tmp_path / "RESULTS.md"
        results.write_text("# Results\n\n<!-- other:start -->\nkeep me\n<!-- other:end -->\n")
        exit_code = module.main(
            ["--fixture", "pytorch/clamp_max.legacy17", "--results", str(results)]
        )
    finally:
        del sys.modules[spec.name]
    text = results.read_text()
    assert exit_code == 0 and "keep me" in text
    assert text.count(module.START_MARKER) == 1 and text.count(module.END_MARKER) == 1
    row = next(line for line in text.splitlines() if line.startswith("| `pytorch/clamp_max"))
    # the legacy 17 export has Mul-14: the converter alone cannot go below 14
    assert row == "| `pytorch/clamp_max.legacy17` |" + " ✗ / ✓ |" * 3 + " ✓ / ✓ |" * 5
    assert "| maxlower | 8 | 0 | 0 | 0 | 0 | 0 | 0 | 0 | 0 |" in text
    assert "| pytorch | 1 | 5 | 8 | 0 |" in text


DROPOUT_12 = """<ir_version: 8, opset_import: ["" : 13]>
dropout ({x_type} x{ratio_input}) => (float[2, 3] y, bool[2, 3] mask) {{
  {ratio_node}
  t = Constant <value = bool {{{training}}}> ()
  y, mask = Dropout (x, r, t)
}}"""


@pytest.mark.parametrize(
    ("ratio_input", "ratio_node", "expected"),
    [
        ("", "r = Constant <value = float {0.25}> ()", "ratio input 0.25 → attribute"),
        (", float r", "", "ratio input dropped"),
    ],
)
def test_dropout_ratio_and_training_mode_inputs_go_back_to_the_attribute(
    ratio_input, ratio_node, expected
):
    """Found by the chained-conversion test: 9 → 13 made Dropout's ratio an input, and
    13 → 11 had no way back. Out of training mode the output is the input whatever the
    ratio, so a constant False training_mode converts exactly."""
    text = DROPOUT_12.format(
        x_type="float[2, 3]", ratio_input=ratio_input, ratio_node=ratio_node, training=0
    )
    model = onnx.parser.parse_model(text)
    converted, report = maxlower.convert_with_report(model, 11)
    (dropout,) = [n for n in converted.graph.node if n.op_type == "Dropout"]
    assert list(dropout.input) == ["x"]
    assert next(c.how for c in report.conversions if c.op_type == "Dropout").startswith(expected)
    # the constants went; the mask (all True out of training mode, which onnxruntime's
    # Dropout before 12 gets wrong) is computed on its own
    assert {n.op_type for n in converted.graph.node} == {"Dropout", "Shape", "ConstantOfShape"}
    assert len(dropout.output) == 1
    assert maxlower.verify(model, converted, trials=3).ok


def test_dropout_in_training_mode_is_refused_below_12():
    text = DROPOUT_12.format(
        x_type="float[2, 3]",
        ratio_input="",
        ratio_node="r = Constant <value = float {0.25}> ()",
        training=1,
    )
    with pytest.raises(maxlower.ConversionError, match="training_mode input 't' is not a"):
        maxlower.convert(onnx.parser.parse_model(text), 11)


def test_cast_spells_its_target_type_as_the_target_opset_does():
    """Found by the chained-conversion fuzz: uint8 Max 12 → 6 → 1 left Cast-6's `to=1`,
    which Cast-1 reads as a type name. Both directions, and the chain verifies."""
    model = onnx.parser.parse_model("""<ir_version: 7, opset_import: ["" : 12]>
        g (uint8 x, uint8 y) => (uint8 z) { z = Max (x, y) }""")
    at6 = maxlower.convert(model, 6)
    at1, report = maxlower.convert_with_report(at6, 1)
    casts = [n for n in at1.graph.node if n.op_type == "Cast"]
    assert casts and all(a.type == onnx.AttributeProto.STRING for n in casts for a in n.attribute)
    assert any("to=1 → to='FLOAT'" in c.how for c in report.conversions)
    back = maxlower.convert(at1, 6)
    casts = [n for n in back.graph.node if n.op_type == "Cast"]
    assert all(a.type == onnx.AttributeProto.INT for n in casts for a in n.attribute)
    for candidate in (at1, back):
        assert maxlower.verify(model, candidate).ok


CLIP_6 = """<ir_version: 7, opset_import: ["" : 10]>
g (float[5] x) => (float[5] y) {{ y = Clip {attributes} (x) }}"""


@pytest.mark.parametrize("attributes", ["<min = 0.0, max = 6.0>", "<min = -1.5>", ""])
def test_clip_bounds_move_between_attributes_and_inputs_exactly(attributes):
    """Found by the chained-conversion fuzz (12 → 1 → 11 refused). Clip-6 without a bound
    clamps at ∓FLT_MAX (±inf too), Clip-11 without one does not clamp: absent bounds
    become explicit ones each way, and the chain verifies on ±inf and extremes."""
    model = onnx.parser.parse_model(CLIP_6.format(attributes=attributes))
    up = maxlower.convert(model, 13)
    (clip,) = [n for n in up.graph.node if n.op_type == "Clip"]
    assert len(clip.input) == 3 and not clip.attribute
    down = maxlower.convert(up, 10)
    (clip,) = [n for n in down.graph.node if n.op_type == "Clip"]
    assert list(clip.input) == ["x"] and {a.name for a in clip.attribute} == {"min", "max"}
    for candidate in (up, down):
        assert maxlower.verify(model, candidate).ok


def test_clip_with_a_bound_computed_at_run_time_is_refused_below_11():
    model = onnx.parser.parse_model("""<ir_version: 7, opset_import: ["" : 13]>
        g (float[5] x, float lo) => (float[5] y) { y = Clip (x, lo) }""")
    with pytest.raises(maxlower.ConversionError, match="min 'lo' is not a constant"):
        maxlower.convert(model, 10)


SLICE_10 = """<ir_version: 6, opset_import: ["" : 10]>
g (float[4, 5] x) => (float[?, ?] y) {{
  starts = Constant <value = int64[{n}] {{{starts}}}> ()
  ends = Constant <value = int64[{n}] {{{ends}}}> ()
  axes = Constant <value = int64[{n}] {{{axes}}}> ()
  steps = Constant <value = int64[{n}] {{{steps}}}> ()
  y = Slice (x, starts, ends, axes, steps)
}}"""


@pytest.mark.parametrize(
    ("starts", "ends", "axes", "steps", "ops"),
    [
        ("1, 0", "3, 9223372036854775807", "0, -1", "1, 1", {"Slice"}),
        ("-1", "-9223372036854775807", "1", "-1", {"Slice", "Gather"}),  # a reversal
        ("0, 4", "4, 0", "0, 1", "2, -2", {"Slice", "Gather"}),
    ],
)
def test_slice_inputs_become_attributes_or_gathers_below_10(starts, ends, axes, steps, ops):
    """Found by the chained-conversion fuzz (an ArgMax's reversal, made as Slice-10 with
    step -1, could not come down to opset 1). Unit steps: Slice-1's attributes; other
    steps on a static axis: a Gather of the positions numpy's slicing gives."""
    n = starts.count(",") + 1
    text = SLICE_10.format(n=n, starts=starts, ends=ends, axes=axes, steps=steps)
    model = onnx.parser.parse_model(text)
    converted = maxlower.convert(model, 9)
    assert {n.op_type for n in converted.graph.node} == ops
    assert maxlower.verify(model, converted).ok


def test_slice_with_run_time_starts_is_refused_below_10():
    model = onnx.parser.parse_model("""<ir_version: 6, opset_import: ["" : 10]>
        g (float[4] x, int64[1] s) => (float[?] y) {
            e = Constant <value = int64[1] {3}> ()
            y = Slice (x, s, e)
        }""")
    with pytest.raises(maxlower.ConversionError, match="starts 's' is not a constant"):
        maxlower.convert(model, 9)


def test_split_in_equal_parts_says_how_many_at_18():
    """Found while checking the refusal messages: Split-13 without `split` went to 18
    unchanged, and Split-18 needs num_outputs (the result failed the full check)."""
    model = onnx.parser.parse_model("""<ir_version: 8, opset_import: ["" : 13]>
        g (float[6] x) => (float[2] a, float[2] b, float[2] c) { a, b, c = Split (x) }""")
    converted, report = maxlower.convert_with_report(model, 18)
    (split,) = converted.graph.node
    assert [(a.name, a.i) for a in split.attribute if a.name == "num_outputs"] == [
        ("num_outputs", 3)
    ]
    assert any("num_outputs=3" in c.how for c in report.conversions)
    assert maxlower.verify(model, converted).ok


def test_broadcasting_ops_are_relabelled_below_7_only_on_inputs_of_one_shape():
    """Found by the chained-conversion fuzz (an internal error, 8 → 7 → 6): Add-7
    broadcasts, Add-6 needs `broadcast=1` to. Inputs of one static shape relabel; others go
    through onnx.version_converter's adapter, which writes the attribute."""
    model = onnx.parser.parse_model("""<ir_version: 4, opset_import: ["" : 7]>
        g (float[2,3] a, float[3] b, float[2,3] c) => (float[2,3] y, float[2,3] z) {
            y = Add (a, b)
            z = Add (a, c)
        }""")
    converted, report = maxlower.convert_with_report(model, 6)
    attributes = [{a.name: a.i for a in n.attribute} for n in converted.graph.node]
    assert attributes == [{"broadcast": 1}, {}]
    assert [c.how for c in report.conversions] == [
        "converted by onnx.version_converter",
        "relabelled",
    ]
    assert maxlower.verify(model, converted).ok
