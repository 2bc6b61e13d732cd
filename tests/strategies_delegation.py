"""Hypothesis strategies for the class behind issue 13: ops outside the Max family on values
whose rank shape inference cannot know, as third-party exporters write them.

`shapeless_models()` draws a model at a random opset whose input passes through Squeeze
without axes on a dynamic dim (so the value has a type and no rank; [2, 3, 4] at run time,
or the empty [2, 3, 0]), then one op of the
axes family or a reduction (ReduceMean, ReduceSum, ReduceProd, ReduceL2, Squeeze, Unsqueeze,
Flatten...) with its axes spelt as that opset spells them (attribute or constant input), or
one of Softmax, LogSoftmax and Hardmax (whose axis changed meaning at 13: the 2-D coercion
before, one axis after) with its axis given or left at its version's default, optionally
inside both branches of an If, then a Reshape to one dimension.
"""

from __future__ import annotations

import onnx
from hypothesis import strategies as st

from tests.fixtures.export_patterns import parse_with_shapeless_branches

# op → (first opset the model may be at, how its axes are spelt: {opset from: spelling})
_AXES_INPUT_SINCE = {"ReduceSum": 13, "Squeeze": 13, "Unsqueeze": 13}
_REDUCE_INPUT_SINCE = 18
REDUCTIONS = ("ReduceMean", "ReduceSum", "ReduceProd", "ReduceL2", "ReduceMin")
SOFTMAX_LIKE = ("Softmax", "LogSoftmax", "Hardmax")
OPS = (*REDUCTIONS, "Squeeze", "Unsqueeze", *SOFTMAX_LIKE)


def _axes_as_input(op: str, opset: int) -> bool:
    since = _AXES_INPUT_SINCE.get(op, _REDUCE_INPUT_SINCE)
    return opset >= since


def _node_text(op: str, opset: int, axis: int | None, keepdims: int) -> str:
    """`o = op(r, ...)` at `opset`; Squeeze removes the axis Unsqueeze adds first. A
    Softmax-like op takes `axis` (None: left at its version's default)."""
    if op in SOFTMAX_LIKE:
        return f"o = {op} <axis = {axis}> (r)" if axis is not None else f"o = {op} (r)"
    extra = ""
    if op == "Squeeze":
        # the value is [N, 3, D] at run time (N = 2): insert a 1 to squeeze
        pre = (
            f"u = Unsqueeze <axes = [{axis}]> (r)"
            if opset < 13
            else (f"pa = Constant <value = int64[1] {{{axis}}}> ()\n u = Unsqueeze (r, pa)")
        )
        extra, source = pre + "\n ", "u"
    else:
        source = "r"
    attributes = [] if op in ("Squeeze", "Unsqueeze") else [f"keepdims = {keepdims}"]
    if _axes_as_input(op, opset):
        inputs = f"({source}, a)"
        constant = f"a = Constant <value = int64[1] {{{axis}}}> ()\n "
    else:
        attributes.append(f"axes = [{axis}]")
        inputs, constant = f"({source})", ""
    spelt = f" <{', '.join(attributes)}>" if attributes else ""
    return f"{extra}{constant}o = {op}{spelt} {inputs}"


@st.composite
def shapeless_models(draw) -> onnx.ModelProto:
    opset = draw(st.sampled_from([11, 12, 13, 15, 16, 17, 18, 20, 21]))
    op = draw(st.sampled_from(OPS))
    # nonnegative axes below 11 are the only ones onnx defines there; both kinds from 11
    axis = draw(st.sampled_from([0, 1, -1, None] if op in SOFTMAX_LIKE else [0, 1, -1]))
    keepdims = draw(st.sampled_from([0, 1]))
    in_if = draw(st.booleans())
    # the value's last dim: 0 makes it empty at run time (a 0 in its Shape that Reshape
    # before 14 reads as "copy the input's dim")
    last = draw(st.sampled_from([4, 0]))
    body = _node_text(op, opset, axis, keepdims)
    if in_if:
        branch = body.replace("\n", "\n   ")
        core = (
            "w = If (c) <then_branch = g1 () => (float o) {\n   " + branch + "\n },"
            " else_branch = g2 () => (float o2) { o2 = Identity (r) }>"
        )
        result = "w"
    else:
        core, result = body, "o"
    text = (
        f'<ir_version: 8, opset_import: ["" : {opset}]>\n'
        f"g (float[N,1,3,{last}] x, bool c) => (float[?] y) {{\n"
        " r = Squeeze (x)\n"
        f" {core}\n"
        " f = Constant <value = int64[1] {-1}> ()\n"
        f" y = Reshape ({result}, f)\n"
        "}"
    )
    return parse_with_shapeless_branches(text)
