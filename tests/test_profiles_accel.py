"""Issue 18's profile keys, their sources, opset windows and several profiles at once."""

from __future__ import annotations

import onnx
import pytest

from maxlower.api import lower, lower_with_report
from maxlower.profiles import (
    PROFILE_DIR,
    ProfileError,
    ProfileSet,
    load_profile,
    load_profiles,
    shipped_profiles,
    tomllib,
)
from maxlower.profiles.rules import parse_profile
from maxlower.profiles.rules_accel import parse_sources
from passes.errors import ConversionError
from passes.legalize.rejection import is_final
from tests.test_lower_conformance import default_opset
from tests.test_profiles import first_node, model_text

NEW = ["coreml", "ncnn", "openvino", "qnn-htp", "rknn", "sentis", "tflite"]


def rules(text: str):
    full = f'description = "test"\n{text}'
    return parse_profile(tomllib.loads(full), "test", None, full)


def keys_of(document: dict) -> list[str]:
    """Every limit of a profile file, as Profile.sources names it."""
    top = [k for k in document if k not in ("name", "description", "target", "ops")]
    ops = [f"[ops.{op}] {key}" for op, table in document.get("ops", {}).items() for key in table]
    return top + ops


@pytest.mark.parametrize("name", sorted(shipped_profiles()))
def test_every_key_of_every_shipped_profile_cites_a_source(name):
    profile = shipped_profiles()[name]
    document = tomllib.loads((PROFILE_DIR / f"{name}.toml").read_text())
    for key in keys_of(document):
        source = profile.sources.get(key, "")
        assert len(source) > 15, f"{name}: {key} cites no source"
    assert profile.target, f"{name} states no target version"


def test_new_profiles_cite_documents_or_vendor_threads():
    for name in NEW:
        text = (PROFILE_DIR / f"{name}.toml").read_text()
        assert "https://" in text, name


def test_sources_beside_the_key_or_above_it():
    text = (
        "# file comment\n"
        'description = "a # not a comment"\n'
        "opsets = [7, 15]  # https://example.org/opsets\n"
        "[ops.ArgMax]\n"
        "# https://example.org/above\n"
        "max_rank = 4\n"
        'types = ["float32"]  # beside, "quoted"\n'
        "min_rank = 1\n"
    )
    assert parse_sources(text) == {
        "opsets": "https://example.org/opsets",
        "[ops.ArgMax] max_rank": "https://example.org/above",
        "[ops.ArgMax] types": 'beside, "quoted"',
    }


ARGMAX_R5 = model_text("(float[1,2,3,4,5] x) => (int64[1,2,3,4,1] y)", "y = ArgMax <axis=-1> (x)")
ARGMAX_R4_AXIS0 = model_text("(float[2,3,4,5] x) => (int64[1,3,4,5] y)", "y = ArgMax <axis=0> (x)")
ARGMAX_R4_AXIS2 = model_text("(float[2,3,4,5] x) => (int64[2,3,1,5] y)", "y = ArgMax <axis=2> (x)")
ARGMAX_INNER = model_text(
    "(float[2,3] x) => (int64[2,1] z)", "y = ArgMax <axis=1> (x)\n  z = Neg (y)"
)
ARGMAX_CAST = model_text(
    "(float[2,3] x) => (int32[2,1] z)", "y = ArgMax <axis=1> (x)\n  z = Cast <to=6> (y)"
)
ARGMAX_CAST_AND_MORE = model_text(
    "(float[2,3] x) => (int32[2,1] z, int64[2,1] w)",
    "y = ArgMax <axis=1> (x)\n  z = Cast <to=6> (y)\n  w = Neg (y)",
)
ARGMAX_OUT = model_text("(float[2,3] x) => (int64[2,1] y)", "y = ArgMax <axis=1> (x)")
ARGMAX_INT64 = model_text(
    "(int64[2,3] x) => (int64[2,1] z)", "y = ArgMax <axis=1> (x)\n  z = Neg (y)"
)
MAX_INT64 = model_text("(int64[3] a, int64[3] b) => (int64[3] y)", "y = Max (a, b)")
MAX_INT32 = model_text("(int32[3] a, int32[3] b) => (int32[3] y)", "y = Max (a, b)")
REDUCE_R5 = model_text("(float[1,2,3,4,5] x) => (float[1,1,1,1,1] y)", "y = ReduceMax (x)")


@pytest.mark.parametrize(
    ("rule", "text", "rejection", "final"),
    [
        ("[ops.ArgMax]\nmax_rank = 4", ARGMAX_R5, "rank ≤ 4, not 5", False),
        ("[ops.ArgMax]\nmax_rank = 4", ARGMAX_R4_AXIS0, None, False),
        ("[ops.ReduceMax]\nmax_rank = 4", REDUCE_R5, "rank ≤ 4, not 5", False),
        ("[ops.ArgMax]\naxis_within_last = 1", ARGMAX_R4_AXIS0, "the last axis only", False),
        ("[ops.ArgMax]\naxis_within_last = 1", ARGMAX_R5, None, False),
        ("[ops.ArgMax]\naxis_within_last = 2", ARGMAX_R4_AXIS2, None, False),
        ("[ops.ArgMax]\naxis_within_last = 1", ARGMAX_R4_AXIS2, "not axis 2 of rank 4", False),
        ("[ops.ArgMax]\ngraph_output = false", ARGMAX_OUT, "gives 'y'", False),
        ("[ops.ArgMax]\ngraph_output = false", ARGMAX_INNER, None, False),
        ("[ops.Max]\nint64_inputs = false", MAX_INT64, "int64 inputs", True),
        ("[ops.Max]\nint64_inputs = false", MAX_INT32, None, False),
        ("[ops.ArgMax]\nint64_inputs = false", ARGMAX_INT64, "int64 inputs", True),
        ("[ops.ArgMax]\nint64_outputs = false", ARGMAX_INNER, "int64 output", True),
        ("[ops.ArgMax]\nint64_outputs = false", ARGMAX_CAST, "int64 output", True),
        ("[ops.ArgMax]\nint64_outputs = false\nint64_output_cast = true", ARGMAX_CAST, None, 0),
        (  # a final rejection comes first, whatever else rejects the node
            "[ops.ArgMax]\nselect_last_index = false\nint64_outputs = false",
            ARGMAX_INNER.replace("axis=1", "axis=1, select_last_index=1"),
            "int64 output",
            True,
        ),
        (
            "[ops.ArgMax]\nint64_outputs = false\nint64_output_cast = true",
            ARGMAX_CAST_AND_MORE,
            "unless its one consumer is a Cast to int32",
            True,
        ),
    ],
)
def test_each_accelerator_key(rule, text, rejection, final):
    node, opset = first_node(text)
    reason = rules(rule).rejection(node, opset)
    if rejection is None:
        assert reason is None
        return
    assert reason is not None and rejection in reason
    assert is_final(reason) is bool(final)
    assert reason.rule.startswith(f"[ops.{node.op_type}] ")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[ops.Max]\naxis_within_last = 1", "only applies to ArgMax"),
        ("[ops.ReduceMax]\nint64_output_cast = true", "only applies to ArgMax"),
        ("[ops.Where]\nmax_rank = 4", "only applies to"),
        ("[ops.ArgMax]\nmax_rank = -1", "non-negative integer"),
        ("[ops.ArgMax]\ngraph_output = 0", "true or false"),
        ("[ops.ArgMax]\nmax_rnak = 4", "did you mean 'max_rank'"),
        ("opsets = [15, 7]", "opsets must be [first, last]"),
        ('opsets = "7-15"', "opsets must be [first, last]"),
        ("target = 3", "target = 3; expected one line of text"),
        ("opset = [7, 15]", "did you mean 'opsets'"),
    ],
)
def test_malformed_accelerator_keys_are_refused(text, message):
    with pytest.raises(ProfileError, match=message.replace("[", r"\[").replace("]", r"\]")):
        rules(text)


def test_opset_window_converts_into_it_first():
    # a Max at opset 18 for Sentis (opsets 7-15): converted to 15, then lowered
    model = onnx.parser.parse_model(
        model_text("(float[3] a, float[3] b) => (float[3] y)", "y = Max (a, b)", 18)
    )
    lowered, report = lower_with_report(model, "sentis")
    assert default_opset(lowered) == 15
    assert (report.source_opset, report.target_opset) == (18, 15)
    # below the window: up to its first opset (RKNN: 12-19)
    old = onnx.parser.parse_model(
        model_text("(float[3] a, float[3] b) => (float[3] y)", "y = Max (a, b)", 11)
    )
    assert default_opset(lower(old, "rknn")) == 12
    # inside the window: left as it is
    assert default_opset(lower(old, "sentis")) == 11


def test_a_target_opset_outside_the_window_is_refused():
    from maxlower.api import convert_and_lower
    from maxlower.errors import InvalidModelError

    model = onnx.parser.parse_model(
        model_text("(float[3] a, float[3] b) => (float[3] y)", "y = Max (a, b)", 13)
    )
    with pytest.raises(InvalidModelError, match=r"outside profile 'sentis'.s opsets 7-15"):
        convert_and_lower(model, 18, "sentis")


def test_several_profiles_reject_what_any_rejects_and_share_a_window():
    both = load_profiles(["tflite", "qnn-htp"])
    assert isinstance(both, ProfileSet) and both.name == "tflite+qnn-htp"
    node, opset = first_node(ARGMAX_R5)
    reason = both.rejection(node, opset)
    assert reason is not None and reason.startswith("qnn-htp: ") and "rank ≤ 4" in reason
    assert load_profiles(["rknn", "sentis"]).opsets == (12, 15)
    assert load_profiles(["rknn"]) == load_profile("rknn")
    assert load_profiles(["rknn", "rknn"]).members == (load_profile("rknn"),)


def test_profiles_without_a_common_opset_are_refused(tmp_path):
    late = tmp_path / "late.toml"
    late.write_text('description = "late"\nopsets = [16, 20]  # test\n')
    with pytest.raises(ProfileError, match="share no opset"):
        load_profiles(["sentis", late])


def test_lowering_for_two_profiles_satisfies_both():
    model = onnx.parser.parse_model(ARGMAX_R5.replace("axis=-1", "axis=-1, select_last_index=1"))
    lowered = lower(model, ["qnn-htp", "tflite"])
    both = load_profiles(["qnn-htp", "tflite"])
    from tests.test_accel_conformance import rejected_nodes

    assert rejected_nodes(lowered, both) == []


def test_argmax_int64_output_is_refused_with_exit_3_and_a_remedy():
    model = onnx.parser.parse_model(ARGMAX_INNER)
    with pytest.raises(ConversionError) as info:
        lower(model, "coreml")
    message = str(info.value)
    assert "\n" not in message and "no exact rewrite can change that" in message
    assert "cast it to int32 in the source model" in message
    # with the Cast the backend fuses, it is accepted as it is
    assert lower_with_report(onnx.parser.parse_model(ARGMAX_CAST), "coreml")[1].lowerings == []
