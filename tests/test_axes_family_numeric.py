"""Numeric checks of the axes-family adapters (passes/version/reduce_axes.py, squeeze.py,
split.py, pad.py, attribute_inputs.py), both directions, in onnxruntime and in
onnx.reference: each runtime gives the converted model the outputs it gives the original
(bit for bit; NaN equals NaN, -0.0 equals +0.0), for constant, empty and run-time axes,
noop_with_empty_axes, negative axes and 0-size dims. Also the facts the forms rely on:
each reduction's noop_with_empty_axes result is the op over a unit axis, and the
empty-set values (ReduceSum 0, ReduceProd 1, ReduceMin +inf / dtype max, ReduceMax -inf /
dtype min, ReduceMean NaN in onnx.reference and 0 in onnxruntime) survive conversion."""

from __future__ import annotations

import itertools

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto
from onnx import helper as oh
from onnx.reference import ReferenceEvaluator

import maxlower
from maxlower.runtime import bit_equal
from passes import ConversionError
from passes.builder import axes_input_since
from passes.version.reduce_axes import NOOP_IS_IDENTITY, REDUCTIONS
from tests import tiers

FLOAT_ONLY = {"ReduceLogSum", "ReduceLogSumExp"}
EDGES = np.array([1e30, -1e-30, 3.4e38, -0.0, np.nan, -np.inf, np.inf, 1e-45, 7.25, -3.0])


def _model(nodes, inputs, outputs, opset, initializers=()) -> onnx.ModelProto:
    graph = oh.make_graph(nodes, "g", inputs, outputs, list(initializers))
    model = oh.make_model(graph, opset_imports=[oh.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def _out(name: str, onnx_type: int, rank: int) -> onnx.ValueInfoProto:
    """A graph output of unknown dims (a main graph's outputs need a rank; where it
    follows run-time axes it is a guess, which the runtimes only warn about)."""
    return oh.make_tensor_value_info(name, onnx_type, [None] * rank)


def _run(model: onnx.ModelProto, feeds: dict, runtime: str) -> list[np.ndarray]:
    if runtime == "reference":
        return ReferenceEvaluator(model).run(None, feeds)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def _agree(source, converted, feeds_list, runtimes=("onnxruntime", "reference")):
    onnx.checker.check_model(converted, full_check=True)
    for runtime, feeds in itertools.product(runtimes, feeds_list):
        with np.errstate(all="ignore"):
            expected, actual = _run(source, feeds, runtime), _run(converted, feeds, runtime)
        for e, a in zip(expected, actual, strict=True):
            assert bit_equal(e, a), f"{runtime}, {feeds}: {e!r} != {a!r}"


def _data(shape, dtype, seed=0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    values = rng.integers(-4, 5, size=shape).astype(dtype)
    if np.issubdtype(dtype, np.floating):
        values = (values * 0.37).astype(dtype)  # fractions: sums round by axis order
        if values.size:
            values.flat[0] = -0.0
    return values


def _dtypes(op):
    return [(np.float32, TensorProto.FLOAT)] + (
        [] if op in FLOAT_ONLY else [(np.int32, TensorProto.INT32)]
    )


# -- reductions ----------------------------------------------------------------------------
SHAPES = [(2, 3, 4), (2, 0, 3)]
RUN_TIME_AXES = [[0], [-1], [1, -3], [0, 1, 2], []]


# Every (op, keepdims, noop); the default tier runs each op at one (keepdims, noop), taking
# each in turn, the slow tier the rest.
KEEPDIMS_NOOP = [(0, 0), (0, 1), (1, 0), (1, 1)]
RUN_TIME_AXES_DOWN = [
    pytest.param(
        op,
        keepdims,
        noop,
        id=f"{op}-{keepdims}-{noop}",
        marks=() if KEEPDIMS_NOOP[k % 4] == (keepdims, noop) else tiers.slow,
    )
    for k, op in enumerate(REDUCTIONS)
    for keepdims, noop in KEEPDIMS_NOOP
]


@pytest.mark.parametrize(("op", "keepdims", "noop"), RUN_TIME_AXES_DOWN)
def test_reduction_run_time_axes_down(op, keepdims, noop):
    """Axes from a graph input, to the last opset with the attribute, for every subset."""
    since = axes_input_since(op)
    for (np_type, onnx_type), shape in itertools.product(_dtypes(op), SHAPES):
        node = oh.make_node(op, ["x", "axes"], ["y"], keepdims=keepdims, noop_with_empty_axes=noop)
        source = _model(
            [node],
            [
                oh.make_tensor_value_info("x", onnx_type, shape),
                oh.make_tensor_value_info("axes", TensorProto.INT64, ["n"]),
            ],
            [_out("y", onnx_type, 3)],
            since,
        )
        converted = maxlower.convert(source, since - 1)
        feeds = [
            {"x": _data(shape, np_type), "axes": np.array(axes, dtype=np.int64)}
            for axes in RUN_TIME_AXES
        ]
        _agree(source, converted, feeds)


CONSTANT_AXES = [None, [], [-1], [0, 2], [1]]


# Every (op, noop); the default tier runs each op at one noop, taking each in turn.
@pytest.mark.parametrize(
    ("op", "noop"),
    [
        pytest.param(op, noop, id=f"{op}-{noop}", marks=() if k % 2 == noop else tiers.slow)
        for k, op in enumerate(REDUCTIONS)
        for noop in (0, 1)
    ],
)
def test_reduction_constant_axes_both_ways(op, noop):
    """Constant axes (absent, empty, negative) down to the attribute, and back up."""
    since = axes_input_since(op)
    np_type, onnx_type = _dtypes(op)[-1]
    for axes, shape, target in itertools.product(CONSTANT_AXES, SHAPES, (since - 1, 11)):
        inputs = ["x"] if axes is None else ["x", "axes"]
        initializers = [] if axes is None else [oh.make_tensor("axes", 7, [len(axes)], axes)]
        node = oh.make_node(op, inputs, ["y"], keepdims=0, noop_with_empty_axes=noop)
        source = _model(
            [node],
            [oh.make_tensor_value_info("x", onnx_type, shape)],
            [_out("y", onnx_type, _kept_rank(axes, noop))],
            since,
            initializers,
        )
        down = maxlower.convert(source, target)
        feeds = [{"x": _data(shape, np_type, seed)} for seed in range(2)]
        _agree(source, down, feeds)
        _agree(down, maxlower.convert(down, since), feeds)  # attribute → input


def _kept_rank(axes, noop, rank=3):
    if not axes:
        return rank if noop else 0
    return rank - len(axes)


@pytest.mark.parametrize("op", REDUCTIONS)
def test_reduction_negative_axes_below_11(op):
    since = axes_input_since(op)
    node = oh.make_node(op, ["x"], ["y"], keepdims=1, axes=[-1, -3])
    source = _model(
        [node],
        [oh.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4])],
        [_out("y", TensorProto.FLOAT, 3)],
        since - 1 if since == 18 else 11,
    )
    converted = maxlower.convert(source, 10)
    attrs = {a.name: list(a.ints) for n in converted.graph.node for a in n.attribute}
    assert attrs["axes"] == [2, 0]
    _agree(source, converted, [{"x": _data([2, 3, 4], np.float32)}], ("onnxruntime",))


@pytest.mark.parametrize("op", REDUCTIONS)
def test_noop_result_is_the_op_over_a_unit_axis(op):
    """The fact the noop forms rest on, in both runtimes, on ±inf, NaN, -0.0, huge and tiny
    values: noop_with_empty_axes=1 with empty axes gives what the op gives over a unit
    axis, and for NOOP_IS_IDENTITY ops that is the input itself."""
    for np_type, onnx_type in _dtypes(op):
        x = EDGES.astype(np_type) if np_type is np.float32 else np.array([-7, 0, 3, 2**31 - 1])
        x = x.astype(np_type)
        source = _model(
            [oh.make_node(op, ["x", "axes"], ["y"], noop_with_empty_axes=1)],
            [
                oh.make_tensor_value_info("x", onnx_type, [len(x)]),
                oh.make_tensor_value_info("axes", TensorProto.INT64, ["n"]),
            ],
            [_out("y", onnx_type, 1)],
            axes_input_since(op),
        )
        converted = maxlower.convert(source, axes_input_since(op) - 1)
        feeds = [{"x": x, "axes": np.zeros([0], dtype=np.int64)}]
        _agree(source, converted, feeds)
        if op in NOOP_IS_IDENTITY:
            for runtime in ("onnxruntime", "reference"):
                assert bit_equal(x, _run(source, feeds[0], runtime)[0])


IDENTITIES = {
    "ReduceSum": (0.0, 0),
    "ReduceProd": (1.0, 1),
    "ReduceMin": (np.inf, np.iinfo(np.int32).max),
    "ReduceMax": (-np.inf, np.iinfo(np.int32).min),
    "ReduceL1": (0.0, 0),
    "ReduceSumSquare": (0.0, 0),
}


@pytest.mark.parametrize("op", [*sorted(IDENTITIES), "ReduceMean"])
def test_empty_set_values_survive_conversion(op):
    """Over a 0-size axis, with run-time axes converted to the branch or select form."""
    since = axes_input_since(op)
    for np_type, onnx_type in _dtypes(op):
        source = _model(
            [oh.make_node(op, ["x", "axes"], ["y"], keepdims=0)],
            [
                oh.make_tensor_value_info("x", onnx_type, [0, 2]),
                oh.make_tensor_value_info("axes", TensorProto.INT64, [1]),
            ],
            [_out("y", onnx_type, 1)],
            since,
        )
        converted = maxlower.convert(source, since - 1)
        feeds = {"x": np.zeros([0, 2], np_type), "axes": np.array([0], dtype=np.int64)}
        for runtime in ("onnxruntime", "reference"):
            with np.errstate(all="ignore"):
                got = _run(converted, feeds, runtime)[0]
            if op == "ReduceMean":
                expected = {"onnxruntime": 0, "reference": np.nan}[runtime]
                if np_type is np.int32:
                    continue  # an integer mean of nothing: each runtime its own way
            else:
                expected = IDENTITIES[op][np_type is np.int32]
            # (onnx.reference gives some integer reductions of nothing as int64)
            assert bit_equal(np.full([2], expected, dtype=got.dtype), got), (runtime, got)
        _agree(source, converted, [feeds])


# -- Squeeze / Unsqueeze ---------------------------------------------------------------------
@pytest.mark.parametrize("target", [12, 11, 10])
@pytest.mark.parametrize("dims", [(1, 3, 1), (1, "n", 1)])
def test_squeeze_run_time_axes_down(target, dims):
    source = _model(
        [oh.make_node("Squeeze", ["x", "axes"], ["y"])],
        [
            oh.make_tensor_value_info("x", TensorProto.FLOAT, list(dims)),
            oh.make_tensor_value_info("axes", TensorProto.INT64, ["k"]),
        ],
        [_out("y", TensorProto.FLOAT, 2)],
        13,
    )
    if target < 11 and "n" in dims:  # below 11 the form is a Reshape: a 0 dim breaks it
        with pytest.raises(ConversionError, match="static positive dims"):
            maxlower.convert(source, target)
        return
    converted = maxlower.convert(source, target)
    middles = [3] if "n" not in dims else [3, 1, 0]
    feeds = [
        {"x": _data([1, m, 1], np.float32), "axes": np.array(axes, dtype=np.int64)}
        for m in middles
        for axes in ([0], [-1], [0, 2], [2, -3])
    ]
    # empty axes: onnx.reference removes no dim, onnxruntime every dim of length 1
    # (the spec only defines an absent axes); the form follows onnxruntime
    empty = [{"x": _data([1, m, 1], np.float32), "axes": np.zeros([0], np.int64)} for m in middles]
    _agree(source, converted, feeds)
    _agree(source, converted, empty, ("onnxruntime",))


@pytest.mark.parametrize("target", [12, 11, 10])
def test_unsqueeze_run_time_axes_down(target):
    dims = [2, 3] if target < 11 else [2, "n"]
    source = _model(
        [oh.make_node("Unsqueeze", ["x", "axes"], ["y"])],
        [
            oh.make_tensor_value_info("x", TensorProto.FLOAT, dims),
            oh.make_tensor_value_info("axes", TensorProto.INT64, [2]),
        ],
        [_out("y", TensorProto.FLOAT, 4)],
        13,
    )
    converted = maxlower.convert(source, target)
    middles = [3] if target < 11 else [3, 0]
    feeds = [
        {"x": _data([2, m], np.float32), "axes": np.array(axes, dtype=np.int64)}
        for m in middles
        for axes in ([0, 1], [-1, 0], [3, 1], [-4, -1])
    ]
    _agree(source, converted, feeds)


@pytest.mark.parametrize("op", ["Squeeze", "Unsqueeze"])
def test_squeeze_unsqueeze_constant_axes_both_ways(op):
    shape = [1, 0, 1] if op == "Squeeze" else [2, 0]
    for axes in ([0], [-1], [0, 2] if op == "Squeeze" else [0, -1]):
        source = _model(
            [oh.make_node(op, ["x", "axes"], ["y"])],
            [oh.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
            [
                _out(
                    "y",
                    TensorProto.FLOAT,
                    len(shape) + (len(axes) if op == "Unsqueeze" else -len(axes)),
                )
            ],
            13,
            [oh.make_tensor("axes", 7, [len(axes)], axes)],
        )
        feeds = [{"x": _data(shape, np.float32)}]
        for target in (12, 10):
            down = maxlower.convert(source, target)
            _agree(source, down, feeds)
            _agree(down, maxlower.convert(down, 13), feeds)


# -- Split, Pad, TopK, Slice -------------------------------------------------------------------
@pytest.mark.parametrize("target", [12, 10])
def test_split_run_time_sizes_down(target):
    source = _model(
        [oh.make_node("Split", ["x", "split"], ["a", "b", "c"], axis=-1)],
        [
            oh.make_tensor_value_info("x", TensorProto.INT32, [2, "n"]),
            oh.make_tensor_value_info("split", TensorProto.INT64, [3]),
        ],
        [_out(v, TensorProto.INT32, 2) for v in "abc"],
        13,
    )
    converted = maxlower.convert(source, target)
    feeds = [
        {"x": _data([2, sum(sizes)], np.int32), "split": np.array(sizes, dtype=np.int64)}
        for sizes in ([1, 2, 2], [0, 5, 0], [0, 0, 0], [3, 0, 1])
    ]
    _agree(source, converted, feeds)


def test_split_constant_sizes_both_ways():
    source = _model(
        [oh.make_node("Split", ["x"], ["a", "b"], axis=1, split=[1, 4])],
        [oh.make_tensor_value_info("x", TensorProto.FLOAT, [2, 5])],
        [_out(v, TensorProto.FLOAT, 2) for v in "ab"],
        11,
    )
    feeds = [{"x": _data([2, 5], np.float32)}]
    up = maxlower.convert(source, 13)
    _agree(source, up, feeds)
    _agree(up, maxlower.convert(up, 12), feeds)
    _agree(source, maxlower.convert(source, 18), feeds)


@pytest.mark.parametrize("target", [17, 13, 11])
def test_pad_run_time_axes_down(target):
    source = _model(
        [oh.make_node("Pad", ["x", "pads", "", "axes"], ["y"])],
        [
            oh.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
            oh.make_tensor_value_info("pads", TensorProto.INT64, ["p"]),
            oh.make_tensor_value_info("axes", TensorProto.INT64, ["a"]),
        ],
        [_out("y", TensorProto.FLOAT, 2)],
        18,
    )
    converted = maxlower.convert(source, target)
    cases = [([0], [1, 2]), ([-1], [0, 3]), ([1, 0], [1, 0, 0, 2]), ([], [])]
    cropping = [([1, 0], [1, 0, -1, 2])]  # negative pads: onnx.reference's Pad refuses them

    def feeds(cases):
        x = _data([2, 3], np.float32)
        return [
            {"x": x, "axes": np.array(a, np.int64), "pads": np.array(p, np.int64)} for a, p in cases
        ]

    _agree(source, converted, feeds(cases))
    _agree(source, converted, feeds(cropping), ("onnxruntime",))


def test_pad_constant_both_ways():
    source = _model(
        [oh.make_node("Pad", ["x"], ["y"], pads=[0, 1, 2, 0], value=-2.5)],
        [oh.make_tensor_value_info("x", TensorProto.FLOAT, [2, 0])],
        [_out("y", TensorProto.FLOAT, 2)],
        2,
    )
    feeds = [{"x": np.zeros([2, 0], np.float32)}]
    for target in (11, 13, 18, 19):
        up = maxlower.convert(source, target)
        _agree(source, up, feeds, ("onnxruntime",))
        _agree(up, maxlower.convert(up, 10), feeds, ("onnxruntime",))


def test_top_k_and_slice_both_ways():
    top_k = _model(
        [oh.make_node("TopK", ["x"], ["v", "i"], axis=1, k=2)],
        [oh.make_tensor_value_info("x", TensorProto.FLOAT, [2, 5])],
        [
            _out("v", TensorProto.FLOAT, 2),
            _out("i", TensorProto.INT64, 2),
        ],
        1,
    )
    sliced = _model(
        [oh.make_node("Slice", ["x"], ["y"], starts=[1, -1], ends=[1000, 0], axes=[1, 0])],
        [oh.make_tensor_value_info("x", TensorProto.FLOAT, [2, 5])],
        [_out("y", TensorProto.FLOAT, 2)],
        1,
    )
    feeds = [{"x": _data([2, 5], np.float32, seed)} for seed in range(3)]
    for source in (top_k, sliced):
        for target in (10, 13):
            up = maxlower.convert(source, target)
            _agree(source, up, feeds, ("onnxruntime",))
            _agree(up, maxlower.convert(up, 9), feeds, ("onnxruntime",))


# -- Resize ------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["nearest", "linear"])
def test_resize_10_both_ways(mode):
    """onnxruntime only: onnx.reference has no Resize-10. Scales that grow, shrink, both."""
    x = _data([1, 2, 5, 7], np.float32)
    scales_sets = [[1, 1, 2, 3], [1, 1, 0.6, 0.4], [1, 1, 2.5, 0.4], [1, 1, 1, 0.7]]
    if mode == "nearest":  # onnxruntime's linear takes no scale on the channel axis
        scales_sets.append([1, 2, 1, 1.5])
    for scales in scales_sets:
        source = _model(
            [oh.make_node("Resize", ["x", "s"], ["y"], mode=mode)],
            [oh.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 5, 7])],
            [_out("y", TensorProto.FLOAT, 4)],
            10,
            [oh.make_tensor("s", TensorProto.FLOAT, [4], scales)],
        )
        for target in (11, 13, 19):
            up = maxlower.convert(source, target)
            _agree(source, up, [{"x": x}], ("onnxruntime",))
            _agree(up, maxlower.convert(up, 10), [{"x": x}], ("onnxruntime",))


@pytest.mark.parametrize("pads", [[1, 2, 0, 4], [0, 7, 2, 0], [3, 0, 3, 0]])
def test_pad_wrap_below_19(pads):
    """mode='wrap' as Gathers of wrapped indices, pads beyond the axis's length included."""
    source = _model(
        [oh.make_node("Pad", ["x", "pads"], ["y"], mode="wrap")],
        [oh.make_tensor_value_info("x", TensorProto.INT32, [2, 3])],
        [_out("y", TensorProto.INT32, 2)],
        19,
        [oh.make_tensor("pads", TensorProto.INT64, [4], pads)],
    )
    converted = maxlower.convert(source, 18)
    assert "Pad" not in {n.op_type for n in converted.graph.node}
    _agree(source, converted, [{"x": _data([2, 3], np.int32, seed)} for seed in range(2)])


# -- Upsample ----------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["nearest", "linear"])
@pytest.mark.parametrize("scales", [[1, 1, 2, 3], [1, 1, 1.5, 2.5], [1, 1, 1, 1.25]])
def test_upsample_scales_7_and_9_both_ways(mode, scales):
    """Upsample-7's scales attribute and Upsample-9's constant input: bit-equal either way,
    and to the Resize it becomes from 10. onnxruntime only: onnx.reference's Upsample reads
    scales from an input, not Upsample-7's attribute."""
    source = _model(
        [oh.make_node("Upsample", ["x"], ["y"], mode=mode, scales=[float(s) for s in scales])],
        [oh.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 4, 5])],
        [_out("y", TensorProto.FLOAT, 4)],
        7,
    )
    feeds = [{"x": _data([1, 2, 4, 5], np.float32, seed)} for seed in range(2)]
    up = maxlower.convert(source, 9)
    assert [n.op_type for n in up.graph.node] == ["Upsample"]
    assert len(up.graph.node[0].input) == 2
    _agree(source, up, feeds, ("onnxruntime",))
    down = maxlower.convert(up, 7)
    assert not down.graph.initializer and len(down.graph.node[0].input) == 1
    _agree(up, down, feeds, ("onnxruntime",))
    for target in (10, 11, 13, 19):  # deprecated from 10: Resize-10, spelt for the target
        resized = maxlower.convert(source, target)
        assert {n.op_type for n in resized.graph.node} == {"Resize"}
        _agree(source, resized, feeds, ("onnxruntime",))
