"""Refusals read as one actionable line: node, op, reason, remedy.

Every refusal here (conformance cases, fixtures, hand-built nodes) must be one line, free of
other libraries' source paths and assertion boilerplate (passes.errors.concise), short, and
its remedy must never offer a range of opsets that holds the target that just failed.
"""

from __future__ import annotations

import functools
import re
import warnings

import onnx
import onnx_ir as ir
import pytest
from click.testing import CliRunner
from onnx import TensorProto, helper

import maxlower
from maxlower.cli import cli
from passes.errors import ConversionError, ErrorDetail, concise
from passes.version.other_ops import reachable_opsets, refusal_remedy
from tests.conformance import family_cases
from tests.fixtures.catalog import fixtures

LATEST = onnx.defs.onnx_opset_version()
CONVERTER_ASSERTION = (
    "/project/onnx/version_converter/BaseConverter.h:66: adapter_lookup: Assertion `false` "
    "failed: No Adapter From Version $13 for Equal"
)
# The fixed text of a refusal, without the node's name and op type (which can be long):
# "node '' (): ... To make it possible: ..." stays under this many characters.
MAX_FIXED_LENGTH = 230
LIBRARY_NOISE = re.compile(r"\.(h|hpp|cc|cpp):\d|Assertion|\$\d|\[ONNXRuntimeError\]|==> Context")


def one_node(op: str, input_type: int, output_type: int, opset: int, inputs: int = 1):
    """A model holding one node `op` (named 'x') on float[2, 3]-shaped inputs."""
    names = [f"i{k}" for k in range(inputs)]
    graph = helper.make_graph(
        [helper.make_node(op, names, ["y"], name="x")],
        "g",
        [helper.make_tensor_value_info(n, input_type, [2, 3]) for n in names],
        [helper.make_tensor_value_info("y", output_type, [2, 3])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def untyped_equal() -> onnx.ModelProto:
    """Equal-13 on bfloat16 whose first input comes from an unknown op, so has no type."""
    model = onnx.parser.parse_model("""
        <ir_version: 8, opset_import: ["" : 13, "com.acme" : 1]>
        g (bfloat16[2] a, bfloat16[2] b) => (bool[2] y) {
            t = com.acme.Opaque (a)
            y = Equal (t, b)
        }""")
    model.graph.node[1].name = "x"
    return model


BF16, F32 = TensorProto.BFLOAT16, TensorProto.FLOAT
HAND_BUILT = {
    "equal_bfloat16": (one_node("Equal", BF16, TensorProto.BOOL, 13, inputs=2), 11),
    "hard_swish_without_expansion": (one_node("HardSwish", F32, F32, 14), 11),
    "trilu_below_14": (one_node("Trilu", F32, F32, 14), 13),
    "equal_untyped_input": (untyped_equal(), 11),
}
FIXTURE_REFUSALS = [
    ("encoder.dynamo.onnx", 7),
    ("encoder.dynamo.onnx", 13),
    ("encoder.legacy13.onnx", 7),
    ("encoder.legacy13.onnx", 9),
    ("cnn_classifier.dynamo.onnx", 9),
    ("segmentation.dynamo.onnx", 9),
]
CONFORMANCE_TARGETS = (1, 5, 6, 7, 11, 12)


def _model(key: str) -> onnx.ModelProto:
    kind, name = key.split(":", 1)
    if kind == "hand":
        return HAND_BUILT[name][0]
    if kind == "fixture":
        return next(f for f in fixtures() if f.name == name).load()
    return next(c for c in family_cases() if c.name == name).model


def _convert(model: onnx.ModelProto, target: int, **options) -> onnx.ModelProto:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return maxlower.convert(model, target, **options)


@functools.cache
def refusal(key: str, target: int) -> ConversionError:
    """The refusal with function bodies not allowed (--no-expand-functions): the remedy
    then weighs the body too."""
    with pytest.raises(ConversionError) as info:
        _convert(_model(key), target, expand_functions=False)
    return info.value


def _refused_conformance_pairs() -> list:
    pairs = []
    for case in family_cases():
        for target in CONFORMANCE_TARGETS:
            try:
                _convert(case.model, target, expand_functions=False)
            except ConversionError:
                pairs.append(pytest.param(f"case:{case.name}", target, id=f"{case.name}-{target}"))
    return pairs


REFUSALS = [
    *(pytest.param(f"hand:{name}", target, id=name) for name, (_, target) in HAND_BUILT.items()),
    *(pytest.param(f"fixture:{n}", t, id=f"{n}-{t}") for n, t in FIXTURE_REFUSALS),
    *_refused_conformance_pairs(),
]


def test_the_set_of_refusals_is_not_empty():
    assert len(REFUSALS) >= len(HAND_BUILT) + len(FIXTURE_REFUSALS) + 3


@pytest.mark.parametrize(("key", "target"), REFUSALS)
def test_refusal_is_one_concise_line(key, target):
    error = refusal(key, target)
    text = str(error)
    assert "\n" not in text, text
    assert not LIBRARY_NOISE.search(text), text
    assert text.startswith(f"node {error.node_name!r} ({error.op_type}): "), text
    assert ". To make it possible: " in text and error.remedy, text
    fixed = text.replace(error.node_name, "").replace(error.op_type, "")
    assert len(fixed) <= MAX_FIXED_LENGTH, (len(fixed), text)


@pytest.mark.parametrize(("key", "target"), REFUSALS)
def test_remedy_never_offers_a_range_holding_the_failed_target(key, target):
    error = refusal(key, target)
    for low, high in re.findall(r"opset in (\d+)\.\.(\d+)", error.remedy):
        assert not int(low) <= target <= int(high), str(error)


def test_converter_failure_is_condensed_and_kept_whole_for_debug():
    error = refusal("hand:equal_bfloat16", 11)
    assert "onnx.version_converter: no adapter from version 13 for Equal" in error.reason
    assert error.detail is not None and CONVERTER_ASSERTION in error.detail
    assert isinstance(error.__cause__, ErrorDetail)
    assert CONVERTER_ASSERTION in str(error.__cause__)
    assert error.remedy == f"a target opset in 13..{LATEST}"


def test_expansion_is_offered_only_where_it_converts_and_not_counted_in_the_range():
    """HardSwish-14 has a body of ops that exist long before: with --expand-functions it
    converts to 11, so the range offered without the flag must not reach below 14 (it was
    1..28, target 11 included)."""
    error = refusal("hand:hard_swish_without_expansion", 11)
    assert (
        error.remedy
        == "its function body (leave out --no-expand-functions; expand_functions=True), or a "
        f"target opset in 14..{LATEST}"
    )
    converted = _convert(HAND_BUILT["hard_swish_without_expansion"][0], 11, expand_functions=True)
    assert {o.domain: o.version for o in converted.opset_import}[""] == 11
    # LayerNormalization's body converts down to 7 (its negative axes made nonnegative);
    # below 7 the model's broadcasting Add blocks it, and no flag helps.
    assert "--no-expand-functions" in refusal("fixture:encoder.dynamo.onnx", 7).remedy
    assert "--no-expand-functions" not in refusal("fixture:encoder.dynamo.onnx", 6).remedy
    assert "--no-expand-functions" in refusal("fixture:encoder.dynamo.onnx", 13).remedy


def test_untyped_inputs_are_named_as_what_is_missing():
    error = refusal("hand:equal_untyped_input", 11)
    assert error.remedy.startswith("known input types"), str(error)


def test_remedy_for_a_node_that_converts_alone_names_no_range():
    """Where the node alone reaches the target, its place in the model blocks it: the remedy
    must not send the user to a range that holds the target."""
    model = ir.serde.deserialize_model(one_node("Relu", F32, F32, 14))
    node = next(iter(model.graph))
    assert reachable_opsets(node, 14)[0] <= 13
    remedy = refusal_remedy(node, 14, 13, expand_functions=False)
    assert "opset in" not in remedy and "converts to the target" in remedy
    assert "13" not in remedy  # the remedy never names the target that failed


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (CONVERTER_ASSERTION, "no adapter from version 13 for Equal"),
        (
            "Node (x) has input size 4 not in range [min=1, max=1].\n\n"
            "==> Context: Bad node spec for node. Name: x OpType: Slice",
            "input size 4 not in range [min=1, max=1]",
        ),
        (
            "Slice-1 does not accept it (Node(/a/Slice) with schema(::Slice:1) has input size "
            "4 not in range [min=1, max=1].)",
            "Slice-1 does not accept it (input size 4 not in range [min=1, max=1])",
        ),
        (
            "A typestr: T, has unsupported type: tensor(bfloat16)",
            "T does not take tensor(bfloat16)",
        ),
        (
            "Cast-6 does not accept it (input typestr: T1, has unsupported type: tensor(int4)); "
            "onnx.version_converter: DataType (22) of Input or Output of operator 'Cast' is "
            "unallowed for Opset Version 20.; its ONNX function body is used only on request",
            "Cast-6 does not accept it (T1 does not take tensor(int4)); onnx.version_converter: "
            "Cast at opset 20 does not take int4; its ONNX function body is used only on request",
        ),
        (
            "[ONNXRuntimeError] : 9 : NOT_IMPLEMENTED : Could not find an implementation for "
            "ReduceMax(20) node with name 'x'",
            "Could not find an implementation for ReduceMax(20) node with name 'x'",
        ),
        (
            "[ShapeInferenceError] Inference error(s): (op_type:Split): [ShapeInferenceError] "
            "Neither 'split' input nor 'num_outputs' attribute has been given\n",
            "(op_type:Split): Neither 'split' input nor 'num_outputs' attribute has been given",
        ),
        # our own texts pass unchanged: names with '/' and '$', numbers, dotted names
        (
            "the rank of input '/layer/x$1' is unknown, and axis 2 of 'a.b' must be static",
            "the rank of input '/layer/x$1' is unknown, and axis 2 of 'a.b' must be static",
        ),
    ],
)
def test_concise(raw, expected):
    assert concise(raw) == expected
    assert concise(concise(raw)) == expected
    assert concise(RuntimeError(raw)) == expected


def test_command_line_prints_one_line_and_debug_shows_the_converter_text(tmp_path):
    path = tmp_path / "equal.onnx"
    onnx.save(HAND_BUILT["equal_bfloat16"][0], path)
    result = CliRunner().invoke(cli, ["convert", str(path), "--opset", "11"])
    assert result.exit_code == 3
    assert result.stderr.count("\n") == 1, result.stderr
    assert "no adapter from version 13 for Equal" in result.stderr
    assert not LIBRARY_NOISE.search(result.stderr), result.stderr
    debug = CliRunner().invoke(cli, ["convert", str(path), "--opset", "11", "--debug"])
    assert isinstance(debug.exception, ConversionError)
    assert CONVERTER_ASSERTION in str(debug.exception.__cause__)


LAYER_NORM_AND_GELU = """<ir_version: 10, opset_import: ["" : 20]>
g (float[2,4] x, float[4] s, float[4] b) => (float[2,4] y) {
  n = LayerNormalization <axis = -1> (x, s, b)
  y = Gelu (n)
}"""


@pytest.mark.parametrize("target", [13, 17, 18, 19])
def test_remedy_names_the_opsets_where_every_node_converts(target):
    """LayerNormalization alone converts to 17..latest and Gelu to 20..latest: refused at 13
    on LayerNormalization, the remedy names 20..latest (it said 17..latest, and 17 was then
    refused on Gelu), and each opset it names converts the model."""
    model = onnx.parser.parse_model(LAYER_NORM_AND_GELU)
    with pytest.raises(ConversionError) as info:
        maxlower.convert(model, target, expand_functions=False)
    assert info.value.remedy.endswith(f"a target opset in 20..{LATEST}"), str(info.value)
    assert "\n" not in str(info.value)
    for opset in (20, LATEST):
        maxlower.convert(model, opset)


def test_remedy_with_expand_functions_is_what_is_true():
    """With --expand-functions both bodies convert to 13: there is nothing to refuse."""
    model = onnx.parser.parse_model(LAYER_NORM_AND_GELU)
    converted = maxlower.convert(model, 13, expand_functions=True)
    onnx.checker.check_model(converted, full_check=True)
    assert {n.op_type for n in converted.graph.node}.isdisjoint({"LayerNormalization", "Gelu"})


ERF_AND_FLOAT_MASK = """<ir_version: 4, opset_import: ["" : 9]>
g (float[2,8] x) => (float[2,8] e, float[2,8] y, float[2,8] mask) {
  e = Erf (x)
  y, mask = Dropout (x)
}"""


@pytest.mark.parametrize(
    ("target", "refused", "blocker", "blocker_range"),
    [(8, "Erf", "Dropout", "7..9"), (10, "Dropout", "Erf", f"9..{LATEST}")],
)
def test_remedy_says_no_opset_converts_every_node_and_lists_the_blockers(
    target, refused, blocker, blocker_range
):
    """Erf exists from 9, and Dropout-7's float mask is bool from 10: each alone has a range,
    and they meet only at the model's own opset 9. The remedy says so and names both."""
    model = onnx.parser.parse_model(ERF_AND_FLOAT_MASK)
    with pytest.raises(ConversionError) as info:
        maxlower.convert(model, target)
    error = info.value
    assert error.op_type == refused
    assert "\n" not in str(error)
    assert "keeping opset 9 (no other opset converts every node of the model" in error.remedy
    assert f"node '<unnamed {blocker}>' ({blocker}) converts to {blocker_range}" in error.remedy
    assert "a target opset in" not in error.remedy


def test_cli_refusal_names_the_model_range(tmp_path):
    path = tmp_path / "ln_gelu.onnx"
    onnx.save(onnx.parser.parse_model(LAYER_NORM_AND_GELU), path)
    result = CliRunner().invoke(
        cli,
        ["convert", str(path), "--opset", "13", "--no-expand-functions", "-o", str(tmp_path / "o")],
    )
    assert result.exit_code == 3, result.output
    assert f"a target opset in 20..{LATEST}" in result.output


def test_model_range_reads_function_bodies_as_the_conversion_types_them():
    """A model-local function's nodes are untyped until their calls type them: probed
    untyped, each seemed to convert to no opset that changes its schema (17..18 here,
    while 19 and 21 convert)."""
    error = refusal("fixture:encoder.legacy17_functions.onnx", 13)
    assert error.remedy.endswith(f"a target opset in 17..{LATEST}"), str(error)
    for target in (19, 21):
        _convert(_model("fixture:encoder.legacy17_functions.onnx"), target)


def test_model_range_excludes_an_opset_another_node_refuses():
    """The GRU tagger's Expand alone converts to 8, but at 8 a Constant of int64 is refused:
    the remedy at 7 names 9.. (it said 8..), and 8 is refused indeed."""
    error = refusal("fixture:gru_tagger.legacy13.onnx", 7)
    assert error.remedy == f"a target opset in 9..{LATEST}"
    with pytest.raises(ConversionError):
        _convert(_model("fixture:gru_tagger.legacy13.onnx"), 8)
