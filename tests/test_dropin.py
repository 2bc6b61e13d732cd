"""The drop-in doors (maxlower.dropin): onnx's `convert_version`, onnxscript's
`ConvertVersionPass`, and a LegalizePass that takes a profile by name. Each must give what
`maxlower.convert` / `maxlower.lower` give, be caught by the `except` written for the
library it replaces, and keep that library's calling convention (a new ModelProto from
onnx's, the same object changed in place by onnxscript's pass)."""

from __future__ import annotations

import numpy as np
import onnx
import onnx.version_converter
import onnx_ir as ir
import onnxruntime
import pytest

import maxlower
from passes import legalize

REDUCE_MAX_18 = """
    <ir_version: 8, opset_import: ["" : 18]>
    g (float[2,3,4] x, int64[1] axes) => (float[2,1,4] y, int64[2,4] i) {
      y = ReduceMax <keepdims = 1> (x, axes)
      i = ArgMax <axis = 1, keepdims = 0, select_last_index = 1> (x)
    }"""

BITWISE_AND_18 = """
    <ir_version: 8, opset_import: ["" : 18]>
    g (int32[4] a, int32[4] b) => (int32[4] c) {
      c = BitwiseAnd (a, b)
    }"""

LAYER_NORM_17 = """
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[2,4] x, float[4] s, float[4] b) => (float[2,4] y) {
      y = LayerNormalization <axis = -1> (x, s, b)
    }"""

MAX_13 = """
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3] a, float[2,3] b) => (float[2,3] y) {
      y = Max (a, b)
    }"""


def _proto(text: str) -> onnx.ModelProto:
    return onnx.parser.parse_model(text)


def _run(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    session = onnxruntime.InferenceSession(
        model.SerializeToString(), providers=["CPUExecutionProvider"]
    )
    return session.run(None, feeds)


def _reduce_feeds() -> dict[str, np.ndarray]:
    x = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)
    x[0, :, 0] = 7.0  # ties: select_last_index must pick the last
    return {"x": x, "axes": np.array([1], np.int64)}


def test_convert_version_is_maxlower_convert_under_onnx_s_signature():
    model = _proto(REDUCE_MAX_18)
    before = model.SerializeToString()
    converted = maxlower.convert_version(model, 13)
    assert isinstance(converted, onnx.ModelProto)
    assert model.SerializeToString() == before, "the input is not changed, as in onnx's"
    assert converted.SerializeToString() == maxlower.convert(model, 13).SerializeToString()
    assert [o.version for o in converted.opset_import if o.domain == ""] == [13]
    onnx.checker.check_model(converted, full_check=True)
    feeds = _reduce_feeds()
    for got, want in zip(_run(converted, feeds), _run(model, feeds)):
        np.testing.assert_array_equal(got, want)


def test_convert_version_takes_onnx_s_positional_call_and_keyword_names():
    model = _proto(MAX_13)
    by_position = maxlower.convert_version(model, 11)
    by_name = maxlower.convert_version(model=model, target_version=11)
    assert by_position.SerializeToString() == by_name.SerializeToString()


@pytest.mark.parametrize(
    "converter", [onnx.version_converter.convert_version, maxlower.convert_version]
)
def test_one_except_runtimeerror_catches_both_converters_refusals(converter):
    """Code written for onnx's converter (`except RuntimeError`) keeps working."""
    model = _proto(BITWISE_AND_18)  # no BitwiseAnd before 18, and no function body
    with pytest.raises(RuntimeError):
        converter(model, 13)


def test_a_refusal_names_the_node_and_a_remedy_that_works_through_the_same_door():
    model = _proto(LAYER_NORM_17)
    with pytest.raises(maxlower.ConversionError, match="expand_functions=True") as info:
        maxlower.convert_version(model, 13, expand_functions=False)
    assert isinstance(info.value, RuntimeError)
    assert "LayerNormalization" in str(info.value)
    expanded = maxlower.convert_version(model, 13)  # the function body, by default
    assert "LayerNormalization" not in {n.op_type for n in expanded.graph.node}


@pytest.mark.parametrize(
    ("model", "version", "kind"),
    [
        (ir.from_onnx_text(MAX_13), 11, "onnx.ModelProto"),
        ("model.onnx", 11, "onnx.ModelProto"),
        (_proto(MAX_13), "11", "int"),
        (_proto(MAX_13), 11.0, "int"),
        (_proto(MAX_13), True, "int"),
    ],
)
def test_convert_version_refuses_arguments_onnx_s_refuses(model, version, kind):
    with pytest.raises(TypeError, match=kind):
        maxlower.convert_version(model, version)


def test_convert_version_pass_changes_the_model_it_is_given_as_onnxscript_s_does():
    model = ir.from_onnx_text(REDUCE_MAX_18)
    graph_outputs = [v.name for v in model.graph.outputs]
    result = maxlower.ConvertVersionPass(target_version=13)(model)
    assert result.model is model
    assert result.modified
    assert model.opset_imports[""] == 13
    assert [v.name for v in model.graph.outputs] == graph_outputs
    want = maxlower.convert(ir.from_onnx_text(REDUCE_MAX_18), 13)
    assert ir.to_proto(model).SerializeToString() == ir.to_proto(want).SerializeToString()
    onnx.checker.check_model(ir.to_proto(model), full_check=True)


def test_convert_version_pass_takes_onnxscript_s_arguments():
    model = ir.from_onnx_text(MAX_13)
    maxlower.ConvertVersionPass(11, False)(model)  # positional, as onnxscript's
    assert model.opset_imports[""] == 11
    unchanged = maxlower.ConvertVersionPass(11, fallback=True)(model)
    assert not unchanged.modified, "already at 11: nothing to do"


def test_convert_version_pass_leaves_a_refused_model_as_it_was():
    model = ir.from_onnx_text(BITWISE_AND_18)
    before = ir.to_proto(model).SerializeToString()
    with pytest.raises(RuntimeError, match="BitwiseAnd"):
        maxlower.ConvertVersionPass(13)(model)
    assert ir.to_proto(model).SerializeToString() == before, "never half-converted"


def test_legalize_pass_takes_a_profile_by_name_as_lower_does():
    model = ir.from_onnx_text(MAX_13)
    maxlower.LegalizePass("primitives")(model)
    assert "Max" not in {n.op_type for n in model.graph}
    lowered = ir.to_proto(model)
    feeds = {
        "a": np.array([[1, -0.0, np.nan], [3, 4, -np.inf]], np.float32),
        "b": np.array([[2, 0.0, 1], [3, -4, 5]], np.float32),
    }
    for got, want in zip(_run(lowered, feeds), _run(_proto(MAX_13), feeds)):
        np.testing.assert_array_equal(got, want)


def test_legalize_pass_takes_a_list_of_profiles_and_a_loaded_profile():
    model = ir.from_onnx_text(MAX_13)
    maxlower.LegalizePass(["primitives", "onnxruntime"])(model)
    assert "Max" not in {n.op_type for n in model.graph}
    profile = maxlower.load_profile("primitives")
    assert maxlower.LegalizePass(profile).profile is profile


def test_legalize_pass_names_an_unknown_profile():
    with pytest.raises(maxlower.ProfileError, match="no-such-backend"):
        maxlower.LegalizePass("no-such-backend")


def test_the_pure_pass_given_a_name_says_where_names_are_taken():
    """passes never import maxlower (where profiles are read): a name there is a TypeError
    naming the door that takes it, not an AttributeError deep in the pass."""
    with pytest.raises(TypeError, match=r"maxlower\.LegalizePass\('tensorrt'\)"):
        legalize.LegalizePass("tensorrt")


def test_swapping_onnx_s_function_for_maxlower_s_does_not_make_maxlower_call_itself(
    monkeypatch,
):
    """The one-line swap onnx's own tests need (`onnx.version_converter.convert_version =
    maxlower.convert_version`): maxlower hands ops it has no adapter for to onnx's
    converter, and must reach onnx's, not itself (it recursed, one conversion per level)."""
    calls = []

    def swapped(model, target_version):
        calls.append(target_version)
        if len(calls) > 1:  # re-entered: stop here (the old recursion ran for minutes)
            raise AssertionError("maxlower called the swapped converter")
        return maxlower.convert_version(model, target_version)

    monkeypatch.setattr(onnx.version_converter, "convert_version", swapped)
    model = _proto("""
        <ir_version: 8, opset_import: ["" : 13]>
        g (float[2,3] a, float[3,2] b) => (float[2,2] y) {
          y = Gemm (a, b)
        }""")  # Gemm without C below 11: onnx's converter is asked, at each opset between
    with pytest.raises(RuntimeError, match="Gemm"):
        onnx.version_converter.convert_version(model, 9)
    assert calls == [9], "maxlower reached the swapped function again"


def test_convert_version_reads_external_data_from_base_dir_only(tmp_path):
    """A model loaded without its external data: the refusal names base_dir, and
    base_dir= converts it (nothing is read from the working directory)."""
    model = _proto(MAX_13)
    weights = onnx.numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(2, 3), "b")
    model.graph.initializer.append(weights)
    del model.graph.input[1]  # b: an initializer now, not an input
    path = tmp_path / "m.onnx"
    onnx.save(model, path, save_as_external_data=True, size_threshold=0, location="w.bin")
    loaded = onnx.load(path, load_external_data=False)
    with pytest.raises(maxlower.InvalidModelError, match="base_dir"):
        maxlower.convert_version(loaded, 11)
    converted = maxlower.convert_version(loaded, 11, base_dir=tmp_path)
    assert [o.version for o in converted.opset_import if o.domain == ""] == [11]


@pytest.mark.parametrize("target", [0, -1, 10**6])
def test_a_target_opset_onnx_does_not_know_is_a_runtimeerror_as_onnx_s_is(target):
    """onnx's converter raises RuntimeError; maxlower's is also an InvalidModelError (exit 2)."""
    for converter in (onnx.version_converter.convert_version, maxlower.convert_version):
        with pytest.raises(RuntimeError):
            converter(_proto(MAX_13), target)
    with pytest.raises(maxlower.InvalidModelError, match=r"outside 1\.\."):
        maxlower.convert_version(_proto(MAX_13), target)


def test_a_pass_that_changes_nothing_keeps_the_caller_s_graph():
    """At the target already: the graph, nodes and values the caller holds stay the model's."""
    model = ir.from_onnx_text(MAX_13)
    graph, node = model.graph, next(iter(model.graph))
    result = maxlower.ConvertVersionPass(13)(model)
    assert not result.modified
    assert model.graph is graph and node.graph is graph


def test_an_ir_version_bump_counts_as_modified():
    model = ir.from_onnx_text(MAX_13.replace("ir_version: 8", "ir_version: 3"))
    result = maxlower.ConvertVersionPass(13)(model)
    assert result.modified == (model.ir_version != 3)


@pytest.mark.parametrize("target", [True, 18.0, None, "18"])
def test_convert_version_pass_refuses_a_target_that_is_not_an_int(target):
    with pytest.raises(TypeError, match="takes an int as target_version"):
        maxlower.ConvertVersionPass(target)


def test_legalize_pass_takes_a_custom_profile_object_and_refuses_other_types():
    class NothingRejected:
        name = "custom"

        def rejection(self, node, opset):
            return None

    custom = NothingRejected()
    assert maxlower.LegalizePass(custom).profile is custom
    for wrong in (None, 3, {"primitives"}):
        with pytest.raises(TypeError, match="takes a profile name"):
            maxlower.LegalizePass(wrong)
