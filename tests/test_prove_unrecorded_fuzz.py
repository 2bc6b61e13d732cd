"""`convert --prove` never proves a conversion that changed a node it did not record.

The sites prove what the run's records name; every other node, graph input and output,
and initializer of each graph must come out the same (maxlower/prove/sites.py,
`_unrecorded_changes`). Hypothesis draws the class: a planted whole-graph step, run inside
a real adapter, that changes one node the run does not record (an input swapped or
rewired, the op replaced, an attribute changed) or changes nothing, and the proof of the
conversion is judged by onnx.reference: a PROVED conversion must give the source's outputs
on every drawn input.
"""

from __future__ import annotations

import numpy as np
import onnx
import onnx_ir as ir
import pytest
from hypothesis import given
from hypothesis import strategies as st
from onnx.reference import ReferenceEvaluator

import maxlower
import maxlower.pipeline
from maxlower.errors import ProofFailed
from passes.version.registry import ADAPTERS
from tests import budget

pytest.importorskip("z3", reason="the prover needs z3-solver: pip install -e '.[prove]'")

SOURCE = onnx.parser.parse_model(
    '<ir_version: 8, opset_import: ["" : 13]>\n'
    "g (float[2] a, float[2] b, bool[2] c) => (float[2] y, float[2] w, float[2] v, float[2] u)"
    " { y = Max(a, b)  w = Where(c, a, b)  v = Sub(a, b)  u = LeakyRelu<alpha = 0.5>(v) }"
)
REAL_MAX = ADAPTERS["Max", 13, 12]
UNRECORDED = ["Where", "Sub", "LeakyRelu"]  # the same schema at 13 and 12: never recorded


def _mutate(graph: ir.Graph, op: str, how: str) -> None:
    node = next(n for n in graph if n.op_type == op)
    if how == "swap" and len(node.inputs) >= 2:
        i, j = len(node.inputs) - 2, len(node.inputs) - 1
        x, y = node.inputs[i], node.inputs[j]
        node.replace_input_with(i, y)
        node.replace_input_with(j, x)
    elif how == "rewire":
        node.replace_input_with(len(node.inputs) - 1, graph.inputs[0])
    elif how == "op":
        node.op_type = {"Sub": "Add", "Where": "Where", "LeakyRelu": "Relu"}[op]
        if op == "LeakyRelu":
            node.attributes.pop("alpha", None)
    elif how == "attribute" and op == "LeakyRelu":
        node.attributes["alpha"] = ir.AttrFloat32("alpha", 0.25)
    # "keep": nothing changes


def _outputs(model, feed):
    return ReferenceEvaluator(model).run(None, feed)


def _feeds(seed: int):
    rng = np.random.default_rng(seed)
    for _ in range(4):
        yield {
            "a": rng.standard_normal(2).astype(np.float32),
            "b": rng.standard_normal(2).astype(np.float32),
            "c": rng.integers(0, 2, 2).astype(bool),
        }


@budget.fuzz(40, derandomize=True)
@given(
    op=st.sampled_from(UNRECORDED),
    how=st.sampled_from(["swap", "rewire", "op", "attribute", "keep"]),
    seed=st.integers(0, 2**16),
)
def test_a_change_the_run_did_not_record_is_never_proved(op, how, seed):
    def planted(node, b):
        _mutate(node.graph, op, how)
        return REAL_MAX(node, b)

    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(ADAPTERS, ("Max", 13, 12), planted)
        patch.setattr(maxlower.pipeline, "convert_sparse", lambda *a, **k: None)
        converted = maxlower.convert(SOURCE, 12)  # (unproved: what --force writes)
        try:
            maxlower.convert(SOURCE, 12, prove=True)
            proved = True
        except ProofFailed:
            proved = False
    differs = any(
        not all(
            np.array_equal(e, a, equal_nan=True)
            for e, a in zip(_outputs(SOURCE, feed), _outputs(converted, feed))
        )
        for feed in _feeds(seed)
    )
    assert not (proved and differs), f"PROVED a conversion that {how}s {op}: it differs"
    if how == "keep":
        assert proved  # the real conversion, unchanged: still proved
