"""Backend profiles: the shipped files, the schema checks, every constraint, and the
onnxruntime kernel registry."""

from __future__ import annotations

from pathlib import Path

import onnx
import onnx_ir as ir
import pytest

from maxlower.profiles import PROFILE_DIR, Profile, ProfileError, load_profile, shipped_profiles
from maxlower.profiles.onnxruntime_kernels import kernel_rejection
from passes.graph_utils import infer_shapes

ACCELERATORS = ["coreml", "ncnn", "openvino", "qnn-htp", "rknn", "sentis", "tflite"]  # issue 18
SHIPPED = sorted(["no-argmax", "onnxruntime", "primitives", "tensorrt", "webnn", *ACCELERATORS])


def first_node(text: str) -> tuple[ir.Node, int]:
    """The first node of a model in onnx.parser text, with shapes inferred, and its opset."""
    model = ir.serde.deserialize_model(onnx.parser.parse_model(text))
    infer_shapes(model)
    return next(iter(model.graph)), model.opset_imports[""]


def model_text(signature: str, body: str, opset: int = 13, inits: str = "") -> str:
    return (
        f'<ir_version: 9, opset_import: ["" : {opset}]>\n'
        f"g {signature} {('<' + inits + '>') if inits else ''} {{\n  {body}\n}}"
    )


def test_shipped_profiles_have_names_descriptions_and_sources():
    profiles = shipped_profiles()
    assert sorted(profiles) == SHIPPED
    for name, profile in profiles.items():
        assert profile.description and "\n" not in profile.description
        text = (PROFILE_DIR / f"{name}.toml").read_text()
        assert text.startswith("#") and "ource" in text, f"{name} cites no source"
    assert profiles["onnxruntime"].kernels == "onnxruntime-cpu"
    assert all(profiles["primitives"].ops[op].absent for op in ("Max", "ReduceMax", "ArgMax"))


def test_load_by_name_path_and_object(tmp_path):
    path = tmp_path / "mine.toml"
    path.write_text('description = "mine"\n[ops.ArgMax]\nselect_last_index = false\n')
    profile = load_profile(path)
    assert profile.name == "mine" and profile.path == path
    assert load_profile(str(path)).ops["ArgMax"].select_last_index is False
    assert load_profile(profile) is profile
    assert load_profile("webnn").name == "webnn"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('description = "x"\nbogus = 1\n', "unknown key"),
        ("[ops.Max]\nabsent = true\n", "'description'"),
        ('description = "x"\n[ops.Max]\nabsnt = true\n', "unknown key 'absnt'"),
        ('description = "x"\n[ops.Max]\nconstant_axes = true\n', "only applies to ReduceMax"),
        ('description = "x"\n[ops.Max]\ntypes = ["float128"]\n', "unknown type"),
        ('description = "x"\n[ops.Max]\nopsets = [13, 7]\n', "opsets must be"),
        ('description = "x"\n[ops.Max]\nabsent = "yes"\n', "true or false"),
        ('description = "x"\n[ops.ArgMax]\nmin_rank = -1\n', "non-negative integer"),
        ('description = "x"\nkernels = "tensorrt"\n', "kernels"),
        ('description = "x"\n[ops.Max\n', "not valid TOML"),
    ],
)
def test_malformed_profiles_are_refused(tmp_path, text, message):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ProfileError, match=message):
        load_profile(path)


def test_unknown_profile_names_the_shipped_ones():
    with pytest.raises(
        ProfileError, match="shipped profiles: coreml, ncnn, no-argmax, onnxruntime"
    ):
        load_profile("tensorflow")
    with pytest.raises(ProfileError, match="no such profile file"):
        load_profile(Path("missing/profile.toml"))


def rules(text: str) -> Profile:
    from maxlower.profiles import tomllib
    from maxlower.profiles.rules import parse_profile

    return parse_profile(tomllib.loads(f'description = "test"\n{text}'), "test", None)


REDUCE_RUNTIME = model_text(
    "(float[2,3] x, int64[1] axes) => (float[2,1] y)", "y = ReduceMax (x, axes)", 18
)
REDUCE_INIT = model_text(
    "(float[2,3] x) => (float[2,1] y)", "y = ReduceMax (x, axes)", 18, "int64[1] axes = {1}"
)
REDUCE_ATTR = model_text("(float[2,3] x) => (float[2,1] y)", "y = ReduceMax <axes = [1]> (x)")
REDUCE_TWO = model_text("(float[2,3] x) => (float[1,1] y)", "y = ReduceMax <axes = [0, 1]> (x)")
BOOL_STATIC = model_text(
    "(bool[2,3] x) => (bool[2,1] y)", "y = ReduceMax (x, axes)", 20, "int64[1] axes = {1}"
)
BOOL_DYNAMIC = model_text(
    "(bool[2,N] x) => (bool[2,1] y)", "y = ReduceMax (x, axes)", 20, "int64[1] axes = {1}"
)
BOOL_EMPTY = model_text(
    "(bool[2,0] x) => (bool[2,1] y)", "y = ReduceMax (x, axes)", 20, "int64[1] axes = {1}"
)
ARGMAX_LAST = model_text(
    "(float[2,3] x) => (int64[2,1] y)", "y = ArgMax <axis = 1, select_last_index = 1> (x)"
)
ARGMAX_FIRST = model_text("(float[2,3] x) => (int64[2,1] y)", "y = ArgMax <axis = 1> (x)")
ARGMAX_RANK1 = model_text("(float[3] x) => (int64[1] y)", "y = ArgMax (x)")
MAX3 = model_text("(float[3] a, float[3] b, float[3] c) => (float[3] y)", "y = Max (a, b, c)")
MAX_BROADCAST = model_text("(float[2,1] a, float[3] b) => (float[2,3] y)", "y = Max (a, b)")
MAX_SAME = model_text("(float[2,3] a, float[2,3] b) => (float[2,3] y)", "y = Max (a, b)")
MAX_INT16 = model_text("(int16[3] a, int16[3] b) => (int16[3] y)", "y = Max (a, b)")


@pytest.mark.parametrize(
    ("rule", "text", "rejection"),
    [
        ("[ops.Max]\nabsent = true", MAX_SAME, "Max is absent"),
        ("[ops.Max]\nopsets = [7, 12]", MAX_SAME, "only at opsets 7-12, not 13"),
        ("[ops.Max]\nopsets = [7, 13]", MAX_SAME, None),
        ('[ops.Max]\ntypes = ["float32"]', MAX_INT16, "does not take INT16"),
        ('[ops.Max]\ntypes = ["int16"]', MAX_INT16, None),
        ("[ops.ReduceMax]\nconstant_axes = true", REDUCE_RUNTIME, "computed at run time"),
        ("[ops.ReduceMax]\nconstant_axes = true", REDUCE_INIT, None),
        ("[ops.ReduceMax]\nconstant_axes = true", REDUCE_ATTR, None),
        ("[ops.ReduceMax]\nsingle_axis = true", REDUCE_TWO, "one constant axis at a time"),
        ("[ops.ReduceMax]\nsingle_axis = true", REDUCE_ATTR, None),
        ('[ops.ReduceMax]\nnonempty_types = ["bool"]', BOOL_STATIC, None),
        ('[ops.ReduceMax]\nnonempty_types = ["bool"]', BOOL_DYNAMIC, "may reduce one"),
        ('[ops.ReduceMax]\nnonempty_types = ["bool"]', BOOL_EMPTY, "may reduce one"),
        ("[ops.ArgMax]\nselect_last_index = false", ARGMAX_LAST, "select_last_index=1"),
        ("[ops.ArgMax]\nselect_last_index = false", ARGMAX_FIRST, None),
        ("[ops.ArgMax]\nmin_rank = 2", ARGMAX_RANK1, "rank ≥ 2, not 1"),
        ("[ops.ArgMax]\nmin_rank = 2", ARGMAX_FIRST, None),
        ("[ops.Max]\nmax_inputs = 2", MAX3, "at most 2 inputs, not 3"),
        ("[ops.Max]\nbroadcast = false", MAX_BROADCAST, "does not broadcast"),
        ("[ops.Max]\nbroadcast = false", MAX_SAME, None),
    ],
)
def test_each_constraint(rule, text, rejection):
    node, opset = first_node(text)
    reason = rules(rule).rejection(node, opset)
    if rejection is None:
        assert reason is None
    else:
        assert reason is not None and rejection in reason


@pytest.mark.parametrize(
    ("text", "rejection"),
    [
        (MAX_INT16, "no CPU kernel for Max-13 with T=int16"),
        (model_text("(int32[3] a, int32[3] b) => (int32[3] y)", "y = Max (a, b)"), None),
        (model_text("(float16[2,3] x) => (int64[2,1] y)", "y = ArgMax <axis=1> (x)"), "float16"),
        (
            model_text("(uint32[2,3] x) => (uint32[2,1] y)", "y = ReduceMax <axes=[1]> (x)"),
            "uint32",
        ),
        (
            model_text(
                "(bool[3] c, uint64[3] a, uint64[3] b) => (uint64[3] y)", "y = Where (c, a, b)", 11
            ),
            "T=uint64",
        ),
        (model_text("(float[3] a) => (float[3] y)", "y = Mish (a)", 18), None),  # a function
        (model_text("(float[3] a) => (double[3] y)", "y = Cast <to = 11> (a)"), None),
        (model_text("(float[3] a, float[3] b) => (float[3] y)", "y = Max (a, b)", 7), None),
        (
            model_text("(double[3] a, double[3] b) => (double[3] y)", "y = Max (a, b)", 7),
            "no CPU kernel for Max-6",
        ),
    ],
)
def test_onnxruntime_kernel_registry(text, rejection):
    node, opset = first_node(text)
    reason = kernel_rejection(node, opset)
    if rejection is None:
        assert reason is None
    else:
        assert reason is not None and rejection in reason


def test_onnxruntime_profile_adds_the_empty_bool_gap():
    profile = load_profile("onnxruntime")
    for text, accepted in [(BOOL_STATIC, True), (BOOL_DYNAMIC, False), (BOOL_EMPTY, False)]:
        node, opset = first_node(text)
        assert (profile.rejection(node, opset) is None) is accepted
