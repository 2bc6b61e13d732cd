"""Planted bugs: plausible but wrong version adapters, for testing the verifier.

Each mutant replaces one entry of `passes.version.registry.ADAPTERS` with a rewrite that a
careful-looking engineer could have written, and that is wrong. `Mutant.apply()` converts
the mutant's source model with it installed, through the pipeline's whole-graph path
(which checks the result with `onnx.checker` full_check), so the broken model is valid ONNX
and only its meaning differs. `witness` is a hand-picked input on which the original and the
broken model give different outputs: it proves that the mutant changes the meaning,
independently of the verifier that must find that on its own.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterator

import numpy as np
import onnx
import onnx_ir as ir

from maxlower.io import check_result
from maxlower.pipeline import whole_graph
from passes.builder import Builder
from passes.extremum import MAX, MIN
from passes.graph_utils import constant_ints, replace_node
from passes.version import arg_max, common, reduce_axes
from passes.version import max as max_adapters
from passes.version.registry import ADAPTERS
from passes.version.to_opset import ConvertToOpsetPass

DT = ir.DataType
Adapter = Callable[[ir.Node, Builder], "str | None"]


@dataclasses.dataclass(frozen=True)
class Mutant:
    name: str
    story: str  # why it looks right, and why it is wrong
    source: str  # the model, in onnx text
    target: int
    key: tuple[str, int, int]  # the adapter it replaces
    adapter: Adapter
    witness: dict[str, np.ndarray]

    def source_model(self) -> onnx.ModelProto:
        return onnx.parser.parse_model(self.source)

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        original = ADAPTERS[self.key]
        ADAPTERS[self.key] = self.adapter
        try:
            yield
        finally:
            ADAPTERS[self.key] = original

    def apply(self) -> onnx.ModelProto:
        """The source model converted to `target` with this mutant installed: the
        pipeline's whole-graph path, except that graph outputs take the types the mutant
        gives them (maxlower.pipeline writes them as declared, and the full check would
        then refuse a mutant that changes an output's shape before the verifier sees it)."""
        prepared = onnx.shape_inference.infer_shapes(self.source_model())
        model, _ = whole_graph(prepared, ".")
        with self.installed():
            ConvertToOpsetPass(self.target)(model)
        return check_result(model).proto


def _model(opset: int, signature: str, body: str) -> str:
    return f'<ir_version: 8, opset_import: ["" : {opset}]>\nm {signature}\n{{\n{body}\n}}'


def _declare_shape(value: ir.Value, shape: ir.Shape | None) -> None:
    """A rewrite that changes the output's shape declares what it computes (the declared
    shape that `replace_node` carries over would contradict it, and the checker says so)."""
    value.shape = None if shape is None else ir.Shape(list(shape))


# -- ArgMax -------------------------------------------------------------------------------
def _drop_select_last_index(node: ir.Node, b: Builder) -> str:
    node.attributes.pop("select_last_index", None)
    return "dropped select_last_index (ArgMax-11 has no such attribute)"


def _swap_tie_breaking(node: ir.Node, b: Builder) -> str | None:
    last = node.attributes.get_int("select_last_index", 0)
    node.attributes["select_last_index"] = ir.AttrInt64("select_last_index", 1 - last)
    return arg_max.select_last_index_to_reversal(node, b)  # the condition read backwards


def _argmax_reversal_without_keepdims(node: ir.Node, b: Builder) -> str | None:
    shape = node.inputs[0].shape
    kept = None if shape is None else [*shape]
    if kept is not None:
        kept[node.attributes.get_int("axis", 0)] = 1
    what = arg_max.select_last_index_to_reversal(node, b)
    for inner in b.nodes:
        if inner.op_type == "ArgMax":
            inner.attributes.pop("keepdims", None)  # "ArgMax keeps dims by default anyway"
    if b.nodes:
        _declare_shape(b.nodes[-1].outputs[0], kept)
    return what


# -- Max ----------------------------------------------------------------------------------
def _max_as_where_greater(node: ir.Node, b: Builder) -> str:
    result = node.inputs[0]
    for other in node.inputs[1:]:
        greater = b.op("Greater", [result, other], dtype=DT.BOOL)
        result = b.op("Where", [greater, result, other], dtype=result.dtype)
    replace_node(node, result)
    return "Max as Where(Greater(a, b), a, b)"


def _max_through(wide: DT) -> Adapter:
    def adapter(node: ir.Node, b: Builder) -> str:
        common.compute_in_wider_type(node, b, wide, family_version=8)
        return f"Max computed in {wide.name}"

    return adapter


def _uint64_max_through_int64(node: ir.Node, b: Builder) -> str:
    x, y = (b.cast(v, DT.INT64) for v in node.inputs)
    greater = b.op("Greater", [x, y], dtype=DT.BOOL)
    replace_node(node, b.cast(b.op("Where", [greater, x, y], dtype=DT.INT64), DT.UINT64))
    return "uint64 Max compared as int64"


def _broadcast_along_wrong_axis(node: ir.Node, b: Builder) -> str:
    """Pads the lower-rank input with trailing axes (numpy pads leading ones), then tiles
    every input to the common shape computed at run time."""
    inputs = list(node.inputs)
    rank = max(len(v.shape) for v in inputs)
    padded = [
        b.unsqueeze(v, range(len(v.shape), rank)) if len(v.shape) < rank else v for v in inputs
    ]
    one = b.const(np.array(1, dtype=np.int64))
    shapes = [b.op("Shape", [v], dtype=DT.INT64) for v in padded]
    target = shapes[0]
    for shape in shapes[1:]:  # target + (shape - target) * [target == 1]
        is_one = b.cast(b.binary("Equal", target, one, dtype=DT.BOOL), DT.INT64)
        step = b.binary(
            "Mul", b.binary("Sub", shape, target, dtype=DT.INT64), is_one, dtype=DT.INT64
        )
        target = b.binary("Add", target, step, dtype=DT.INT64)
    grow = b.binary("Sub", target, one, dtype=DT.INT64)
    for i, (value, shape) in enumerate(zip(padded, shapes)):
        is_one = b.cast(b.binary("Equal", shape, one, dtype=DT.BOOL), DT.INT64)
        repeats = b.binary(
            "Add", one, b.binary("Mul", grow, is_one, dtype=DT.INT64), dtype=DT.INT64
        )
        node.replace_input_with(i, b.op("Tile", [value, repeats], dtype=value.dtype))
    return "broadcasting made explicit with Unsqueeze/Tile"


# -- ReduceMax ----------------------------------------------------------------------------
def _drop_noop_with_empty_axes(node: ir.Node, b: Builder) -> str | None:
    node.attributes.pop("noop_with_empty_axes", None)  # "ReduceMax-13 has no such attribute"
    return reduce_axes.axes_input_to_attribute(node, b)


def _size_one_reduction_is_identity(node: ir.Node, b: Builder) -> str | None:
    x = node.inputs[0]
    axes = constant_ints(node.inputs[1]) if len(node.inputs) > 1 else None
    if axes and x.shape is not None and all(x.shape[a] == 1 for a in axes):
        result = b.op("Identity", [x], dtype=x.dtype)
        replace_node(node, result)
        _declare_shape(result, x.shape)
        return "reducing only size-1 axes is the identity"
    return reduce_axes.axes_input_to_attribute(node, b)


def _bool_through_float(node: ir.Node, b: Builder) -> str:
    common.compute_in_wider_type(node, b, DT.FLOAT, family_version=18)
    return "bool ReduceMax computed in FLOAT"


def _negative_axes_with_wrong_rank(node: ir.Node, b: Builder) -> str | None:
    axes = node.attributes.get_ints("axes", None)
    if not axes or all(a >= 0 for a in axes):
        return None
    rank = len(node.inputs[0].shape) - 1  # off by one: the rank of the output
    node.attributes["axes"] = ir.AttrInt64s("axes", [a + rank if a < 0 else a for a in axes])
    return "negative axes normalised"


def _empty_set_filled_with(fill: Callable[[DT], np.ndarray]) -> Adapter:
    """Guards empty inputs (onnxruntime fails on some empty reductions) and fills them
    with `fill(dtype)`: a wrong value where it is not the op's identity."""

    def adapter(node: ir.Node, b: Builder) -> str:
        x = node.inputs[0]
        attributes = {
            "axes": constant_ints(node.inputs[1]),
            "keepdims": node.attributes.get_int("keepdims", 1),
        }
        reduced = b.op(node.op_type, [x], attributes, family_version=13, dtype=x.dtype)
        size = b.op("Size", [x], dtype=DT.INT64)
        empty = b.binary("Equal", size, b.const(np.array(0, dtype=np.int64)), dtype=DT.BOOL)
        filler = b.const(fill(x.dtype))
        replace_node(node, b.op("Where", [empty, filler, reduced], dtype=x.dtype))
        return "constant axes moved to the attribute; empty input guarded"

    return adapter


def _int8_empty_set_pinned_at_zero(node: ir.Node, b: Builder) -> str:
    common.compute_in_wider_type(
        node, b, DT.FLOAT, family_version=11, finish=lambda y: b.clip_pick(y, np.array(0.0), MAX)
    )  # uint8's minimum
    return "int8 ReduceMax computed in FLOAT, empty set pinned"


# -- the Min family: what does not mirror, and Max code reused where Min was meant ----------
def _min_as_negated_max(node: ir.Node, b: Builder) -> str:
    """min(a, b) = -max(-a, -b), so a wins where -a > -b; wrong at INT_MIN, whose negation
    wraps to itself."""
    result = node.inputs[0]
    for other in node.inputs[1:]:
        negated = [b.op("Neg", [v], dtype=v.dtype) for v in (result, other)]
        wins = b.op("Greater", negated, dtype=DT.BOOL)
        result = b.op("Where", [wins, result, other], dtype=result.dtype)
    replace_node(node, result)
    return "Min as Where(Greater(-a, -b), a, b)"


def _min_with_the_max_tie_break(node: ir.Node, b: Builder) -> str:
    """The exact 64-bit form below opset 9 with Min's order but Max's tie-break (x - y, the
    first minus the second, instead of the winner minus the loser)."""
    half_mirrored = dataclasses.replace(MIN, direction=MAX.direction)
    result = node.inputs[0]
    for other in node.inputs[1:]:
        result = max_adapters._arithmetic_pick(b, half_mirrored, result, other, result.dtype)
    replace_node(node, result)
    return "64-bit Min as an exact comparison and select"


def _reversal_through_argmax(node: ir.Node, b: Builder) -> str | None:
    """ArgMin's select_last_index reversal with the inner node copied from ArgMax's."""
    what = arg_max.select_last_index_to_reversal(node, b)
    for inner in b.nodes:
        if inner.op_type == MIN.arg:
            inner.op_type = MAX.arg
    return what


F32, I64 = np.float32, np.int64
MUTANTS = (
    Mutant(
        "select_last_index_dropped",
        "ArgMax-11 has no select_last_index, so the adapter drops it; ties then give the first "
        "index instead of the last",
        _model(
            12,
            "(float[N, M] x) => (int64[N, 1] y)",
            "y = ArgMax <axis = 1, keepdims = 1, select_last_index = 1> (x)",
        ),
        11,
        ("ArgMax", 12, 11),
        _drop_select_last_index,
        {"x": np.array([[1.0, 1.0]], F32)},
    ),
    Mutant(
        "tie_breaking_swapped",
        "the reversal that makes ArgMax pick the last tie runs for select_last_index=0 "
        "instead of 1",
        _model(
            12,
            "(int32[N, M] x) => (int64[N] y)",
            "y = ArgMax <axis = -1, keepdims = 0, select_last_index = 0> (x)",
        ),
        11,
        ("ArgMax", 12, 11),
        _swap_tie_breaking,
        {"x": np.array([[2, 2, 1]], np.int32)},
    ),
    Mutant(
        "max_where_greater_without_nan",
        "Max(a, b) written as Where(Greater(a, b), a, b): Greater(NaN, b) is false, so a NaN "
        "in a is lost",
        _model(12, "(float[N, M] a, float[N, M] b) => (float[N, M] y)", "y = Max(a, b)"),
        9,
        ("Max", 12, 8),
        _max_as_where_greater,
        {"a": np.array([[np.nan]], F32), "b": np.array([[1.0]], F32)},
    ),
    Mutant(
        "noop_with_empty_axes_dropped",
        "ReduceMax-13 has no noop_with_empty_axes, so the adapter drops it; empty run-time "
        "axes then reduce everything instead of nothing",
        _model(
            18,
            "(float[N, M, K] x, int64[A] axes) => (float[N, M, K] y)",
            "y = ReduceMax <keepdims = 1, noop_with_empty_axes = 1> (x, axes)",
        ),
        13,
        ("ReduceMax", 18, 13),
        _drop_noop_with_empty_axes,
        {"x": np.array([[[1.0, 2.0]]], F32), "axes": np.zeros(0, I64)},
    ),
    Mutant(
        "keepdims_flipped_for_size_one_axis",
        "reducing a size-1 axis changes no value, so it is rewritten as Identity; that keeps "
        "the axis, which keepdims=0 removes",
        _model(
            18,
            "(float[N, 1, K] x) => (float[N, K] y)",
            "axes = Constant <value = int64[1] {1}> ()\ny = ReduceMax <keepdims = 0> (x, axes)",
        ),
        13,
        ("ReduceMax", 18, 13),
        _size_one_reduction_is_identity,
        {"x": np.ones((1, 1, 1), F32)},
    ),
    Mutant(
        "int32_max_through_float32",
        "integer Max computed in float32 like the 8- and 16-bit types; float32 holds integers "
        "exactly only up to 2^24",
        _model(12, "(int32[N] a, int32[N] b) => (int32[N] y)", "y = Max(a, b)"),
        8,
        ("Max", 12, 8),
        _max_through(DT.FLOAT),
        {"a": np.array([2**24 + 1], np.int32), "b": np.array([0], np.int32)},
    ),
    Mutant(
        "int64_max_through_float64",
        "int64 Max computed in float64 like int32; float64 holds integers exactly only up to 2^53",
        _model(12, "(int64[N] a, int64[N] b) => (int64[N] y)", "y = Max(a, b)"),
        8,
        ("Max", 12, 8),
        _max_through(DT.DOUBLE),
        {"a": np.array([2**53 + 1], I64), "b": np.array([0], I64)},
    ),
    Mutant(
        "bool_reduce_max_empty_set_true",
        "bool ReduceMax through float32: the empty set gives -inf, which casts back to True "
        "instead of False",
        _model(
            20,
            "(bool[N, M] x) => (bool[N] y)",
            "axes = Constant <value = int64[1] {1}> ()\ny = ReduceMax <keepdims = 0> (x, axes)",
        ),
        18,
        ("ReduceMax", 20, 18),
        _bool_through_float,
        {"x": np.zeros((2, 0), bool)},
    ),
    Mutant(
        "negative_axis_wrong_rank",
        "negative axes normalised by adding the rank, but the rank of the output (one less) "
        "is used",
        _model(
            11,
            "(float[N, M, K] x) => (float[N, M] y)",
            "y = ReduceMax <axes = [-1], keepdims = 0> (x)",
        ),
        10,
        ("ReduceMax", 11, 1),
        _negative_axes_with_wrong_rank,
        {"x": np.arange(6, dtype=F32).reshape(1, 2, 3)},
    ),
    Mutant(
        "broadcast_along_wrong_axis",
        "the lower-rank input gets trailing axes before tiling, but numpy broadcasting "
        "aligns the last axes",
        _model(8, "(float[N, M] a, float[M] b) => (float[N, M] y)", "y = Max(a, b)"),
        6,
        ("Max", 8, 6),
        _broadcast_along_wrong_axis,
        {"a": np.array([[1, 2], [3, 4]], F32), "b": np.array([10, 0], F32)},
    ),
    Mutant(
        "empty_reduce_max_zero",
        "empty inputs are guarded because some runtimes reject them, and filled with 0 "
        "instead of -inf",
        _model(
            18,
            "(float[N, M] x) => (float[N] y)",
            "axes = Constant <value = int64[1] {1}> ()\ny = ReduceMax <keepdims = 0> (x, axes)",
        ),
        13,
        ("ReduceMax", 18, 13),
        _empty_set_filled_with(lambda dtype: np.array(0, dtype.numpy())),  # not -inf
        {"x": np.zeros((2, 0), F32)},
    ),
    Mutant(
        "argmax_keepdims_dropped",
        "the inner ArgMax of the select_last_index reversal is built without keepdims, "
        "which defaults to 1",
        _model(
            12,
            "(float[N, M] x) => (int64[N] y)",
            "y = ArgMax <axis = 1, keepdims = 0, select_last_index = 1> (x)",
        ),
        11,
        ("ArgMax", 12, 11),
        _argmax_reversal_without_keepdims,
        {"x": np.array([[1.0, 2.0]], F32)},
    ),
    Mutant(
        "uint64_max_through_int64",
        "uint64 Max compared after a cast to int64, which wraps values from 2^63 to negative",
        _model(12, "(uint64[N] a, uint64[N] b) => (uint64[N] y)", "y = Max(a, b)"),
        9,
        ("Max", 12, 8),
        _uint64_max_through_int64,
        {"a": np.array([2**63], np.uint64), "b": np.array([1], np.uint64)},
    ),
    Mutant(
        "int8_empty_set_pinned_at_zero",
        "int8 ReduceMax through float with the empty set pinned by Clip at uint8's minimum 0, "
        "which also lifts every all-negative set to 0",
        _model(12, "(int8[N, M] x) => (int8[N] y)", "y = ReduceMax <axes = [1], keepdims = 0> (x)"),
        11,
        ("ReduceMax", 12, 11),
        _int8_empty_set_pinned_at_zero,
        {"x": np.array([[-5, -3]], np.int8)},
    ),
    Mutant(
        "min_as_negated_max",
        "int64 Min below opset 12 as Where(Greater(-a, -b), a, b), the Max form on negated "
        "inputs; -INT64_MIN wraps to INT64_MIN, so INT64_MIN loses to 0",
        _model(12, "(int64[N] a, int64[N] b) => (int64[N] y)", "y = Min(a, b)"),
        11,
        ("Min", 12, 8),
        _min_as_negated_max,
        {"a": np.array([np.iinfo(np.int64).min], I64), "b": np.array([0], I64)},
    ),
    Mutant(
        "min_with_the_max_tie_break",
        "the 64-bit form below opset 9 with Less for the order but Max's tie-break a - b: of "
        "two values float64 cannot tell apart, the larger wins",
        _model(12, "(int64[N] a, int64[N] b) => (int64[N] y)", "y = Min(a, b)"),
        8,
        ("Min", 12, 8),
        _min_with_the_max_tie_break,
        {"a": np.array([2**53 + 1], I64), "b": np.array([2**53], I64)},
    ),
    Mutant(
        "argmin_reversal_through_argmax",
        "ArgMin's select_last_index reversal built from ArgMax's, inner ArgMax included",
        _model(
            12,
            "(float[N, M] x) => (int64[N] y)",
            "y = ArgMin <axis = 1, keepdims = 0, select_last_index = 1> (x)",
        ),
        11,
        ("ArgMin", 12, 11),
        _reversal_through_argmax,
        {"x": np.array([[1.0, 2.0, 2.0]], F32)},
    ),
    Mutant(
        "empty_reduce_min_max_identity",
        "empty inputs are guarded and filled with the type's minimum, as for ReduceMax; "
        "ReduceMin's empty set is +inf",
        _model(
            18,
            "(float[N, M] x) => (float[N] y)",
            "axes = Constant <value = int64[1] {1}> ()\ny = ReduceMin <keepdims = 0> (x, axes)",
        ),
        13,
        ("ReduceMin", 18, 13),
        _empty_set_filled_with(MAX.identity),  # the type's minimum, ReduceMax's identity
        {"x": np.zeros((2, 0), F32)},
    ),
)
