"""maxlower.safety's fast UTF-8 check (a proto3 reparse) refuses what the field walk refuses."""

from __future__ import annotations

import onnx
import pytest
from onnx import helper

from maxlower import safety
from maxlower.errors import InvalidModelError
from maxlower.safety import _all_utf8, _not_utf8

MARK = "QQQQ"
# Not UTF-8 (as long as MARK, so that lengths hold): a stray byte, an overlong NUL, an
# encoded surrogate, a truncated sequence.
BAD = [b"Q\xffQQ", b"\xc0\x80QQ", b"\xed\xa0\x80Q", b"\xe2\x82QQ"]


def _model() -> onnx.ModelProto:
    branch = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y"], name="inner")],
        "branch",
        [],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1])],
    )
    nodes = [
        helper.make_node("Max", ["x", "x"], ["m"], name="max", doc_string="doc"),
        helper.make_node("If", ["c"], ["o"], name="if", then_branch=branch, else_branch=branch),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [
            helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1]),
            helper.make_tensor_value_info("c", onnx.TensorProto.BOOL, []),
        ],
        [helper.make_tensor_value_info("o", onnx.TensorProto.FLOAT, [1])],
        initializer=[
            helper.make_tensor("w", onnx.TensorProto.FLOAT, [2], b"\xff\xfe\xff\xfe" * 2, raw=True)
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.metadata_props.add(key="k", value="v")
    return model


def _places(model: onnx.ModelProto) -> list:
    """Setters of one string field each, in several messages and depths."""
    return [
        lambda m: setattr(m, "producer_name", MARK),
        lambda m: setattr(m.graph.node[0], "name", MARK),
        lambda m: setattr(m.graph.node[0], "doc_string", MARK),
        lambda m: m.graph.node[0].input.__setitem__(1, MARK),
        lambda m: setattr(m.graph.node[1].attribute[0].g.node[0], "op_type", MARK),
        lambda m: setattr(m.metadata_props[0], "value", MARK),
        lambda m: setattr(m.graph.initializer[0], "name", MARK),
        lambda m: setattr(m.graph.input[0].type.tensor_type.shape.dim[0], "dim_param", MARK),
    ]


@pytest.mark.parametrize("place", range(8))
@pytest.mark.parametrize("bad", BAD)
def test_fast_check_refuses_what_the_walk_finds(place, bad):
    model = _model()
    _places(model)[place](model)
    damaged = onnx.ModelProto.FromString(model.SerializeToString().replace(MARK.encode(), bad))
    assert _not_utf8(damaged) is not None
    assert not _all_utf8(damaged)


def test_fast_check_passes_valid_text_and_any_bytes():
    model = _model()
    model.graph.node[0].doc_string = "ünïcödé ✓ 𝄞"
    assert _not_utf8(model) is None
    assert _all_utf8(model)  # raw_data holds bytes that are not UTF-8: not a string field


@pytest.mark.parametrize("limit", [0, 1 << 26])
def test_check_model_data_names_the_field_either_way(tmp_path, monkeypatch, limit):
    """Walked (a model over the fast check's size) or reparsed, the same refusal."""
    monkeypatch.setattr(safety, "_FAST_TEXT_CHECK_BYTES", limit)
    model = _model()
    model.graph.node[0].name = MARK
    damaged = onnx.ModelProto.FromString(model.SerializeToString().replace(MARK.encode(), BAD[0]))
    with pytest.raises(InvalidModelError, match=r"NodeProto\.name b'Q\\xffQQ' is not valid UTF-8"):
        safety.check_model_data(damaged, tmp_path / "m.onnx")
    safety.check_model_data(model, tmp_path / "m.onnx")
