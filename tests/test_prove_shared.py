"""What two models share (maxlower.prove.shared): proof by regions takes a shared node as
equal in both models, so a node is shared only if everything it reads is the same.

Each pair below differs (shown in onnx.reference or onnxruntime) only in something a node
reads without naming it in its own fields: an outer value its subgraph reads, the body or
opset imports of a function it calls, the type of a graph input, the schema its opset
gives an op of its subgraph. Every model is outside the prover's fragment (or too large
for it), so `maxlower prove A B` proves it by regions; that used to say PROVED (0 sites).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np
import onnx
import pytest
from click.testing import CliRunner
from onnx.reference import ReferenceEvaluator

import maxlower
from maxlower.cli import cli
from maxlower.runtime import onnxruntime_session

pytest.importorskip("z3", reason="the prover needs z3-solver: pip install -e '.[prove]'")

from maxlower.prove.sites import prove_models

OPSET13 = '<ir_version: 8, opset_import: ["" : 13]>\n'
LOCAL = '<ir_version: 8, opset_import: ["" : {V}, "local" : 1]>\n'


def _model(text: str) -> onnx.ModelProto:
    model = onnx.parser.parse_model(text)
    onnx.checker.check_model(model, full_check=True)
    return model


def _reference(model: onnx.ModelProto, feeds: dict) -> list[np.ndarray]:
    return ReferenceEvaluator(model).run(None, feeds)


def _onnxruntime(model: onnx.ModelProto, feeds: dict) -> list[np.ndarray] | str:
    try:
        return onnxruntime_session(model).run(None, feeds)
    except Exception as error:  # a model that cannot take the input: that is a difference
        return f"fails: {str(error).splitlines()[0]}"


@dataclasses.dataclass
class Pair:
    name: str
    reference: str
    candidate: str
    feeds: dict[str, np.ndarray]
    runner: Callable = _reference  # where the difference shows

    def models(self) -> tuple[onnx.ModelProto, onnx.ModelProto]:
        return _model(self.reference), _model(self.candidate)


def _if_reading(outer: str) -> str:
    return (
        OPSET13 + "g (bool c, float[100] x) => (float[100] y) " + outer + " {\n"
        "  y = If (c) <then_branch = t () => (float[100] a) { a = Add(x, w) },"
        " else_branch = e () => (float[100] b) { b = Identity(x) }>\n}"
    )


def _loop_reading(value: str) -> str:
    """A Loop whose body's If reads the main graph's `w`, two scopes out."""
    return (
        OPSET13 + "g (bool c, float[100] x) => (float[100] y) <float[1] w = {" + value + "}, "
        "int64 n = {1}> {\n"
        "  y = Loop (n, c, x) <body = b (int64 i, bool k, float[100] v) => (bool k2, float[100] o)"
        " {\n    k2 = Identity(k)\n"
        "    o = If (k) <then_branch = t () => (float[100] a) { a = Add(v, w) },"
        " else_branch = e () => (float[100] z) { z = Identity(v) }>\n  }>\n}"
    )


def _calling(body: str, opset: int = 13, inner: str = "Neg") -> str:
    """f computes `body`, which may call the model's g (computing `inner`)."""
    head = LOCAL.replace("{V}", str(opset))
    return (
        head + "g (float[1,2,3] x) => (float[1,2,3] y) { y = local.f(x) }\n"
        f'<domain: "local", opset_import: ["" : {opset}, "local" : 1]>\n'
        f"f (a) => (b) {{ b = {body} }}\n"
        f'<domain: "local", opset_import: ["" : {opset}]>\n'
        f"g (a) => (b) {{ b = {inner}(a) }}"
    )


def _scan(opset: int) -> str:
    """Scan-11 is the node at opsets 12 and 13; Softmax in its body is Softmax-11 (over the
    dims from axis 1 on, flattened) at 12 and Softmax-13 (over the last axis) at 13."""
    return (
        f'<ir_version: 8, opset_import: ["" : {opset}]>\n'
        "g (float[2,1,2,3] x) => (float[2,1,2,3] y) { y = Scan <num_scan_inputs=1, "
        "body = b (float[1,2,3] s) => (float[1,2,3] o) { o = Softmax(s) }> (x) }"
    )


ROWS = np.arange(6, dtype=np.float32).reshape(1, 2, 3)
# a RoiAlign with coordinate_transformation_mode left out: output_half_pixel at 10 (opset
# 13), half_pixel at 16
_ROI_ALIGN = (
    "g (float[1,2,6,6] x, float[2,4] rois, int64[2] batch) => (float[2,2,1,1] y) "
    "{ y = RoiAlign <output_height = 1, output_width = 1> (x, rois, batch) }"
)
# Squeeze (axes an attribute at 11, an input at 13), then a Softmax over axis 1 of a
# rank-3 value, which means another thing at 11 and 13 (x of 64x... elements: regions)
_SQUEEZED_SOFTMAX = (
    "g (float[1,2,3,4] x) => (float[2,3,4] y) <int64[1] zero = {{0}}> "
    "{{ s = Squeeze {axes} (x{a})  y = Softmax <axis = 1> (s) }}"
)
# two nodes reading initializers: a region of two nodes where the constants differ
_ADD_MUL = (
    "g (float[64,64] inp) => (float[64,64] out) <float x_c = {{{x}}}, float w_c = {{{w}}}> "
    "{{ a = Add(inp, x_c)  out = Mul(a, w_c) }}"
)
_ROIS = {
    "rois": np.array([[0, 0, 5, 5], [1.5, 0.5, 3.25, 4]], np.float32),
    "batch": np.zeros(2, np.int64),
}
WIDE = {"c": np.array(True), "x": np.zeros(100, np.float32)}
PAIRS = [
    Pair(
        "a subgraph reads an initializer of another value",
        _if_reading("<float[1] w = {1.0}>"),
        _if_reading("<float[1] w = {2.0}>"),
        WIDE,
    ),
    Pair(
        "a subgraph two scopes in reads an initializer of another value",
        _loop_reading("1.0"),
        _loop_reading("2.0"),
        WIDE,
    ),
    Pair(
        "a called function's body differs",
        _calling("Neg(a)"),
        _calling("Abs(a)"),
        {"x": ROWS - 3},
        _onnxruntime,  # onnx.reference cannot run a function that calls one
    ),
    Pair(
        "a function that the called function calls differs",
        _calling("local.g(a)", inner="Neg"),
        _calling("local.g(a)", inner="Abs"),
        {"x": ROWS - 3},
        _onnxruntime,  # onnx.reference cannot run a function that calls one
    ),
    Pair(
        "a called function's opset import gives its op another schema",
        _calling("Softmax(a)", opset=11),
        _calling("Softmax(a)", opset=13),
        {"x": ROWS},
        _onnxruntime,  # onnx.reference runs a function's body at the latest opset
    ),
    Pair(
        "a graph input of another element type",
        OPSET13 + "g (float[100] x) => (float[100] y) { y = Sin(x) }",
        OPSET13 + "g (double[100] x) => (double[100] y) { y = Sin(x) }",
        {"x": np.ones(100, np.float32)},
        _onnxruntime,  # onnx.reference does not check an input's type
    ),
    Pair(
        "a graph input of another shape",
        OPSET13 + "g (float[N] x) => (float[N] y) { y = Sin(x) }",
        OPSET13 + "g (float[3] x) => (float[3] y) { y = Sin(x) }",
        {"x": np.ones(5, np.float32)},
        _onnxruntime,
    ),
    Pair(
        "an attribute left out means another thing at the other version",
        '<ir_version: 8, opset_import: ["" : 16]>\n' + _ROI_ALIGN,
        OPSET13 + _ROI_ALIGN,
        {"x": np.arange(72, dtype=np.float32).reshape(1, 2, 6, 6), **_ROIS},
        _onnxruntime,  # onnx.reference reads 10's absent mode as 16's
    ),
    Pair(
        "a version between the two changed what the node means",
        '<ir_version: 8, opset_import: ["" : 11]>\n'
        "g (float[2,3,2] x) => (float[2,3,2] y) { y = Softmax <axis = 1> (x) }",
        OPSET13 + "g (float[2,3,2] x) => (float[2,3,2] y) { y = Softmax <axis = 1> (x) }",
        {"x": np.arange(12, dtype=np.float32).reshape(2, 3, 2)},
        _onnxruntime,  # onnx.reference's Softmax normalises one axis at every version
    ),
    Pair(
        "a region whose one pair is the same by the schemas and whose other is not",
        '<ir_version: 8, opset_import: ["" : 11]>\n'
        + _SQUEEZED_SOFTMAX.format(axes="<axes = [0]>", a=""),
        OPSET13 + _SQUEEZED_SOFTMAX.format(axes="", a=", zero"),
        {"x": np.arange(24, dtype=np.float32).reshape(1, 2, 3, 4) / 7},
        _onnxruntime,
    ),
    Pair(
        "a region's nodes read constants of other values under one name",
        OPSET13 + _ADD_MUL.format(x="1.0", w="2.0"),
        OPSET13 + _ADD_MUL.format(x="3.0", w="5.0"),
        {"inp": np.ones((64, 64), np.float32)},
    ),
    Pair(
        "the opset gives an op in a subgraph another schema",
        _scan(12),
        _scan(13),
        {"x": np.arange(12, dtype=np.float32).reshape(2, 1, 2, 3)},
        _onnxruntime,
    ),
]


def _differ(pair: Pair, reference: onnx.ModelProto, candidate: onnx.ModelProto) -> bool:
    with np.errstate(all="ignore"):
        a, b = pair.runner(reference, pair.feeds), pair.runner(candidate, pair.feeds)
    if isinstance(a, str) or isinstance(b, str):
        return a != b
    return not all(np.array_equal(x, y) for x, y in zip(a, b))


@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: p.name)
def test_the_library_does_not_prove_a_pair_that_differs_in_what_a_node_reads(pair):
    reference, candidate = pair.models()
    assert _differ(pair, reference, candidate), "the pair must differ to test anything"
    report = prove_models(reference, candidate, timeout=20)
    assert report.status != "proved", report.summary()
    assert prove_models(reference, reference, timeout=20).status == "proved"


@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: p.name)
def test_prove_a_b_does_not_prove_a_pair_that_differs_in_what_a_node_reads(tmp_path, pair):
    paths = []
    for name, model in zip(("a.onnx", "b.onnx"), pair.models()):
        onnx.save(model, tmp_path / name)
        paths.append(str(tmp_path / name))
    result = CliRunner().invoke(cli, ["prove", *paths, "--timeout", "20"])
    assert result.exit_code in (1, 5), result.output  # refuted, or inconclusive
    assert "PROVED" not in result.output


def test_a_region_reading_a_retyped_input_names_the_input_and_both_types():
    """The one interface check answers first: a retyped input is a refutation that names
    it (the shared decision's own refusal stays behind it, for the regions it reads)."""
    reference, candidate = PAIRS[5].models()
    report = prove_models(reference, candidate)
    assert report.status == "counterexample" and report.method == "interface"
    assert "input 'x' is float in the reference and double in the candidate" in (report.summary())


def test_names_and_doc_strings_inside_a_subgraph_or_function_are_not_what_it_reads():
    """Renaming the nodes of a body changes nothing it computes: still shared, proved."""
    for text in (_calling("local.g(a)"), _if_reading("<float[1] w = {1.0}>")):
        reference = _model(text)
        candidate = _model(text)
        bodies = [f.node for f in candidate.functions]
        bodies += [a.g.node for n in candidate.graph.node for a in n.attribute if a.g.node]
        for nodes in bodies:
            for node in nodes:
                node.name, node.doc_string = "renamed", "a note"
        assert prove_models(reference, candidate).status == "proved"


# --- convert --prove: a site's models take the opset imports of the scope it is in --------
FUNCTION_WITH_BRANCHES = (
    '<ir_version: 8, opset_import: ["" : 18, "local" : 1]>\n'
    "g (bool c, float[2,3] x) => (float[2,1] y) { y = local.f(c, x) }\n"
    '<domain: "local", opset_import: ["" : 18]>\n'
    "f (c, a) => (b) {\n"
    "  b = If (c) <then_branch = t () => (float[2,1] p) {\n"
    "    ax = Constant <value = int64[1] {1}> ()\n    p = ReduceMax <keepdims=1> (a, ax)\n  },"
    " else_branch = e () => (float[2,1] q) {\n"
    "    ax2 = Constant <value = int64[1] {1}> ()\n    q = ReduceMin <keepdims=1> (a, ax2)\n  }>\n}"
)


def test_a_site_in_a_subgraph_of_a_function_is_proved_at_the_functions_opset(tmp_path):
    """The ReduceMax-18 in an If branch of a function becomes ReduceMax-13: its site's
    models import the function's opsets (18, then 13), as the function's body itself."""
    import maxlower

    model = _model(FUNCTION_WITH_BRANCHES)
    _, report = maxlower.convert_with_report(model, 13, prove=True)
    assert report.proof is not None and report.proof.ok, report.proof.summary()
    where = {s.where for s in report.proof.sites}
    assert "function local::f > If '<unnamed If>' > then_branch" in where
    source = tmp_path / "f.onnx"
    onnx.save(model, source)
    args = ["convert", str(source), "--opset", "13", "--prove", "-o", str(tmp_path / "o.onnx")]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    # the ReduceMax and the ReduceMin in its branches; the relabelled If is no site
    assert "PROVED: 2 sites proved" in result.output


def test_a_node_relabelled_across_versions_is_shared_and_the_assumption_says_so():
    """Relu-14 and Relu-13 mean one thing (conversion relabels between them): `prove A B`
    shares the node, proves nothing for it, and lists the pair of versions it assumed."""
    body = "g (float[64,64] x) => (float[64,64] y) { r = Relu(x)  y = Neg(r) }"  # (past the solver)
    reference = _model('<ir_version: 8, opset_import: ["" : 14]>\n' + body)
    candidate = _model(OPSET13 + body)
    report = prove_models(reference, candidate, timeout=20)
    assert report.status == "proved", report.summary()
    assert any("Relu-14/Relu-13" in a for a in report.assumptions), report.assumptions


def test_a_region_whose_nodes_are_each_the_same_is_proved_node_by_node():
    """A region of `prove A B` where Reshape-14 (allowzero=0) became Reshape-13 and the
    ReduceMean-18 it feeds became ReduceMean-13 (axes an attribute): each pair is one
    function by the schemas, so the region is, at any size; onnxruntime agrees."""
    text = (
        "g (float[64,64] x) => (float[64,1] y) <int64[2] shape = {{64, 64}}{axes}> "
        "{{ r = Reshape {allowzero} (x, shape)  y = ReduceMean <keepdims = 1{attr}> (r{input}) }}"
    )
    reference = _model(
        '<ir_version: 8, opset_import: ["" : 18]>\n'
        + text.format(
            axes=", int64[1] ax = {1}", allowzero="<allowzero = 0>", attr="", input=", ax"
        )
    )
    candidate = _model(OPSET13 + text.format(axes="", allowzero="", attr=", axes = [1]", input=""))
    report = prove_models(reference, candidate, timeout=20)
    assert report.status == "proved", report.summary()
    text = " ".join(report.assumptions)
    assert "Reshape-13 and Reshape-14" in text and "ReduceMean-13 and ReduceMean-18" in text
    x = {"x": np.random.default_rng(0).standard_normal((64, 64)).astype(np.float32)}
    assert np.array_equal(_onnxruntime(reference, x)[0], _onnxruntime(candidate, x)[0])


def test_a_node_with_a_body_is_not_taken_as_relabelled_across_opsets():
    """An If holding a Softmax over axis 1 of a rank-3 value is the same node at 11 and
    13, but its body's Softmax means another thing there: node by node, it is not one."""
    from maxlower.prove.canonical import same_node_relabelled

    text = (
        "g (bool c, float[2,3,4] x) => (float[2,3,4] y) {{ y = If (c) <"
        "then_branch = t () => (float[2,3,4] a) {{ a = Softmax <axis = 1> (x) }}, "
        "else_branch = e () => (float[2,3,4] b) {{ b = Identity (x) }}> }}"
    )
    at = [_model(f'<ir_version: 8, opset_import: ["" : {v}]>\n' + text.format()) for v in (11, 13)]
    assert same_node_relabelled(*at) is None
    assert same_node_relabelled(at[1], at[1]) == ""


def test_group_normalization_is_not_one_node_across_21():
    """Its scale and bias are per group at 18 and per channel at 21 (red team of 6fe6590:
    shared across the two by prove A B, which does not check the reference's validity)."""
    from maxlower.prove.shared import relabel_class

    node = onnx.helper.make_node("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=2)
    assert relabel_class(node, 18) != relabel_class(node, 21)


_NORM_THEN_RESHAPE = (
    '<ir_version: 8, opset_import: ["" : 17]>\n'
    "g (float[64,64] x) => (float[64,64] y) "
    "<float[64] scale = {scale}, int64[2] shape = {{64, 64}}> "
    "{{ n = LayerNormalization <axis = -1> (x, scale)  y = Reshape <allowzero = 0> (n, shape) }}"
)


def _norm_then_reshape(scale: float) -> onnx.ModelProto:
    values = "{" + ", ".join([str(scale)] * 64) + "}"
    return _model(
        _NORM_THEN_RESHAPE.replace("{scale}", values).replace("{{", "{").replace("}}", "}")
    )


def test_a_region_is_proved_node_by_node_of_the_reference_an_expansion_included():
    """LayerNormalization-17 expanded into its body at 13 beside a Reshape-14 relabelled:
    one region of `prove A B` (its nodes are not shared), proved by parts: the body by
    the expansion method, the Reshape by the schemas."""
    reference = _norm_then_reshape(1.0)
    candidate = maxlower.convert(reference, 13)
    report = prove_models(reference, candidate, timeout=30)
    assert report.status == "proved", report.summary()
    assert any(s.method == "parts" for s in report.sites), report.summary()
    text = " ".join(report.assumptions)
    assert "LayerNormalization-17 computes its function body" in text and "Reshape-13" in text


def test_a_region_whose_part_is_not_the_body_is_not_proved_by_parts():
    """The same with the body's scale changed in the candidate (and a wrong epsilon):
    the part does not match the body built from the reference, so no PROVED."""
    reference = _norm_then_reshape(1.0)
    candidate = maxlower.convert(reference, 13)
    for tensor in candidate.graph.initializer:
        if tensor.name == "scale":
            tensor.CopyFrom(onnx.numpy_helper.from_array(np.full(64, 2.0, np.float32), "scale"))
    x = {"x": np.random.default_rng(0).standard_normal((64, 64)).astype(np.float32)}
    assert not np.array_equal(_onnxruntime(reference, x)[0], _onnxruntime(candidate, x)[0])
    assert prove_models(reference, candidate, timeout=30).status != "proved"
