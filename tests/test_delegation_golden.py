"""Golden cases of the one-node hand-off on values of unknown rank and of the Equal/TopK
adapters (tests/fixtures/golden/delegation.onnxtxt): exact text, full check, bit-equal
outputs on inputs full of ties, NaN, ±inf, ±0 and extremes, negatives with their message,
and a second conversion that changes nothing."""

from __future__ import annotations

import numpy as np
import onnx
import pytest

import maxlower
from maxlower.runtime import bit_equal, run_model
from passes import ConversionError
from passes.one_node import HOLD_DOMAIN
from tests.fixtures.catalog import HERE
from tests.golden import canonical_text, load_cases, random_feeds

GOLDEN = HERE / "golden" / "delegation.onnxtxt"
CASES = [pytest.param(case, id=case.name) for case in load_cases(GOLDEN)]
POSITIVE = [c for c in CASES if not c.values[0].error]
NEGATIVE = [c for c in CASES if c.values[0].error]


def test_cases_state_intent_and_cover_negatives():
    assert len(POSITIVE) >= 8 and len(NEGATIVE) >= 3
    assert all(c.values[0].intent for c in CASES)


@pytest.mark.parametrize("case", NEGATIVE)
def test_negative_case_raises(case):
    with pytest.raises(ConversionError, match=case.error) as info:
        maxlower.convert(case.source_model(), case.target)
    remedy = str(info.value).split("To make it possible:")[1]
    assert f"opset {case.target} " not in remedy + " "


@pytest.mark.parametrize("case", POSITIVE)
def test_golden_text(case):
    converted = maxlower.convert(case.source_model(), case.target)
    # (first: canonical_text renames the initializers of the proto it is given)
    again = maxlower.convert(converted, case.target)
    expected = onnx.parser.parse_model(case.expected_text)
    assert canonical_text(converted) == canonical_text(expected)
    assert canonical_text(again) == canonical_text(converted)
    assert HOLD_DOMAIN not in {o.domain for o in converted.opset_import}


def _special_feeds(model: onnx.ModelProto, fixed: dict, seed: int) -> dict:
    """Random feeds, with float and integer inputs drawn from a few special values so that
    equal pairs, NaN, ±inf, ±0 and the type's extremes meet."""
    feeds = random_feeds(model, fixed, seed=seed)
    rng = np.random.default_rng(seed)
    for name, array in feeds.items():
        if name in fixed:
            continue
        if array.dtype.kind == "f":
            info = np.finfo(array.dtype)
            pool = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, info.max, info.tiny])
        elif array.dtype.kind in "iu":
            info = np.iinfo(array.dtype)
            pool = np.array([info.min, info.max, 0, 1, info.max - 1], dtype=array.dtype)
        else:
            continue
        feeds[name] = rng.choice(pool, size=array.shape).astype(array.dtype)
    return feeds


@pytest.mark.parametrize("case", POSITIVE)
def test_golden_numerics(case):
    source = case.source_model()
    converted = maxlower.convert(source, case.target)
    onnx.checker.check_model(converted, full_check=True)
    for seed in range(4):
        feeds = _special_feeds(source, case.feeds, seed)
        expected, _ = run_model(source, feeds)
        actual, _ = run_model(converted, feeds)
        assert all(bit_equal(e, a) for e, a in zip(expected, actual, strict=True)), seed


def test_the_converter_alone_refuses_float_equal_below_11():
    case = next(c.values[0] for c in POSITIVE if c.values[0].name == "equal_float_11_to_9")
    with pytest.raises(Exception):  # noqa: B017 (its C++ assertion has no type of its own)
        converted = onnx.version_converter.convert_version(case.source_model(), 9)
        onnx.checker.check_model(converted, full_check=True)


def test_a_value_of_unknown_rank_is_held_not_dropped():
    """The one-node model of a node on a value of unknown rank passes the full check, keeps
    the element type, and releases back to plain graph inputs and outputs."""
    import onnx_ir as ir

    from passes.graph_utils import infer_shapes
    from passes.one_node import OneNodeModel, release_holds

    case = next(c.values[0] for c in POSITIVE if c.values[0].name.startswith("reduce_mean_unk"))
    model = ir.serde.deserialize_model(case.source_model())
    infer_shapes(model)
    node = next(n for n in model.graph if n.op_type == "ReduceMean")
    assert node.inputs[0].shape is None and node.inputs[0].dtype == ir.DataType.FLOAT
    with pytest.raises(onnx.checker.ValidationError, match="shape"):
        onnx.checker.check_model(OneNodeModel(node, 12).proto(), full_check=True)
    held = OneNodeModel(node, 12).proto(hold_unknown_ranks=True)
    onnx.checker.check_model(held, full_check=True)
    assert [n.domain for n in held.graph.node] == [HOLD_DOMAIN, "", HOLD_DOMAIN]
    released = ir.serde.deserialize_model(held)
    release_holds(released)
    assert [n.op_type for n in released.graph] == ["ReduceMean"]
    assert [v.name for v in released.graph.inputs] == ["__mirror0"]
    assert released.graph.inputs[0].dtype == ir.DataType.FLOAT
    assert released.graph.inputs[0].shape is None
    assert [v.name for v in released.graph.outputs] == ["__output0"]
    assert HOLD_DOMAIN not in released.opset_imports
