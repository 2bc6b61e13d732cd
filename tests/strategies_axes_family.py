"""Hypothesis strategy for one node of the axes family (every Reduce* op, Squeeze,
Unsqueeze, Split, Pad, TopK, Slice) with its concrete inputs, and a target opset, for
tests/test_fuzz_axes_family.py.

    axes_family_cases()   (model, feeds, target): a valid model (full check) of one axes-
                          family node at a source opset, and a target on the other side of
                          the op's attribute/input boundary most of the time

What varies: the op; the source opset (7 to the latest); the element type (float32, or
int32 where the op takes it); shapes of rank 1-3 with dims 0-3 (1 where Squeeze needs it,
at least k for TopK); the axes / split / pads / k / starts-ends as an attribute (before the
boundary) or, after it, as an initializer, a Constant node, a graph input (run time) or
absent; negative axes from opset 11; keepdims and noop_with_empty_axes; Pad's value,
axes (18) and mode 'wrap' (19). Stripped shapes: the data input declared with symbolic
dims, or reaching the node through a Reshape to a run-time shape, after which no rank is
known at all.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import onnx
from hypothesis import strategies as st
from onnx import TensorProto, helper

from passes.builder import axes_input_since
from passes.version.reduce_axes import REDUCTIONS
from tests.strategies import accepted_types

LATEST = onnx.defs.onnx_opset_version()
FIRST = 7
TYPES = (TensorProto.FLOAT, TensorProto.INT32)
# op → the version at which its attributes became inputs (Pad's pads: 11)
BOUNDARY = {
    **{op: axes_input_since(op) for op in REDUCTIONS},
    "Squeeze": 13,
    "Unsqueeze": 13,
    "Split": 13,
    "Pad": 11,
    "TopK": 10,
    "Slice": 10,
}
OPS = tuple(BOUNDARY)


@dataclasses.dataclass
class _Draft:
    """What the node reads besides its data: graph inputs, initializers, Constant nodes."""

    opset: int
    elem: int
    inputs: list = dataclasses.field(default_factory=list)
    initializers: list = dataclasses.field(default_factory=list)
    nodes: list = dataclasses.field(default_factory=list)
    feeds: dict = dataclasses.field(default_factory=dict)

    def ints(self, draw, name: str, values: list[int], allow_absent: bool = False) -> str:
        """An int64 vector as an initializer, a Constant node or a run-time graph input
        ("" for absent)."""
        hows = ["initializer", "constant", "input"] + (["absent"] if allow_absent else [])
        how = draw(st.sampled_from(hows))
        if how == "absent":
            return ""
        if how == "initializer":
            self.initializers.append(
                helper.make_tensor(name, TensorProto.INT64, [len(values)], values)
            )
        elif how == "constant":
            tensor = helper.make_tensor(f"{name}_value", TensorProto.INT64, [len(values)], values)
            self.nodes.append(helper.make_node("Constant", [], [name], value=tensor))
        else:
            self.inputs.append(
                helper.make_tensor_value_info(name, TensorProto.INT64, [len(values)])
            )
            self.feeds[name] = np.array(values, dtype=np.int64)
        return name


def _axes(draw, rank: int, opset: int, min_size: int = 0) -> list[int]:
    low = -rank if opset >= 11 else 0
    return draw(
        st.lists(
            st.integers(low, rank - 1),
            min_size=min_size,
            max_size=rank,
            unique_by=lambda a: a % rank,
        )
    )


@st.composite
def axes_family_cases(draw):
    op = draw(st.sampled_from(OPS))
    boundary = BOUNDARY[op]
    before = st.integers(FIRST, boundary - 1)
    after = st.integers(boundary, LATEST)
    source = draw(st.one_of(before, after))
    crossing = draw(st.booleans()) or draw(st.booleans())  # three times in four
    target = (
        draw(after if source < boundary else before)
        if crossing
        else draw(st.integers(FIRST, LATEST))
    )
    elem = draw(st.sampled_from([t for t in TYPES if t in accepted_types(op, source)]))
    rank = draw(st.integers(1, 3))
    shape = list(draw(st.lists(st.integers(0, 3), min_size=rank, max_size=rank)))
    draft = _Draft(source, elem)
    attrs, extra, out_rank, outputs = _node_parts(draw, op, source, boundary, shape, draft)
    data = _data(draw, shape, elem)
    node_inputs = ["x", *extra]
    while node_inputs and node_inputs[-1] == "":
        node_inputs.pop()
    stripped = draw(st.sampled_from(["static", "symbolic", "reshaped"]))
    declared = shape if stripped == "static" else [f"d{i}" for i in range(rank)]
    inputs = [helper.make_tensor_value_info("x", elem, declared)]
    feeds = {"x": data, **draft.feeds}
    nodes = list(draft.nodes)
    if stripped == "reshaped":  # no rank is known after a Reshape to a run-time shape
        inputs.append(helper.make_tensor_value_info("shape", TensorProto.INT64, ["r"]))
        feeds["shape"] = np.array(shape, dtype=np.int64)
        nodes.append(helper.make_node("Reshape", ["x", "shape"], ["x_any"]))
        node_inputs[0] = "x_any"
    out_elems = [elem] + ([TensorProto.INT64] if op == "TopK" else [])
    names = [f"out{i}" for i in range(outputs)]
    nodes.append(helper.make_node(op, node_inputs, names, **attrs))
    graph = helper.make_graph(
        nodes,
        "axes_family",
        inputs + draft.inputs,
        [
            helper.make_tensor_value_info(
                n, out_elems[min(i, len(out_elems) - 1)], [None] * out_rank
            )
            for i, n in enumerate(names)
        ],
        initializer=draft.initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", source)])
    model.ir_version = 7 if source <= 13 else 8
    return model, feeds, target


def _data(draw, shape: list[int], elem: int) -> np.ndarray:
    """Few distinct values, many ties, fractions that round when summed in another order."""
    pool = [0, 1, -2, 3] if elem == TensorProto.INT32 else [0.0, -0.0, 0.37, -1.5, 2.25, 1e-3]
    picks = draw(
        st.lists(st.sampled_from(pool), min_size=int(np.prod(shape)), max_size=int(np.prod(shape)))
    )
    dtype = np.int32 if elem == TensorProto.INT32 else np.float32
    return np.array(picks, dtype=dtype).reshape(shape)


def _node_parts(draw, op, source, boundary, shape, draft):
    """(attributes, extra inputs, output rank, output count) for `op`; may edit `shape`."""
    rank = len(shape)
    as_input = source >= boundary
    if op in REDUCTIONS:
        axes = _axes(draw, rank, source)
        keepdims = draw(st.integers(0, 1))
        attrs, extra = {"keepdims": keepdims}, []
        noop = 0
        if as_input:
            noop = draw(st.integers(0, 1))
            attrs["noop_with_empty_axes"] = noop
            extra = [draft.ints(draw, "axes", axes, allow_absent=not axes)]
        elif axes:
            attrs["axes"] = axes
        if keepdims:
            return attrs, extra, rank, 1
        return attrs, extra, (rank if noop else 0) if not axes else rank - len(axes), 1
    if op == "Squeeze":
        axes = _axes(draw, rank, source, min_size=1)
        for a in axes:
            shape[a % rank] = 1
        attrs, extra = _axes_attribute_or_input(draw, axes, as_input, draft)
        return attrs, extra, rank - len(axes), 1
    if op == "Unsqueeze":
        count = draw(st.integers(1, 2))
        out = rank + count
        low = -out if source >= 11 else 0
        axes = draw(
            st.lists(
                st.integers(low, out - 1),
                min_size=count,
                max_size=count,
                unique_by=lambda a: a % out,
            )
        )
        attrs, extra = _axes_attribute_or_input(draw, axes, as_input, draft)
        return attrs, extra, out, 1
    if op == "Split":
        axis = draw(st.integers(-rank if source >= 11 else 0, rank - 1))
        parts = draw(st.integers(1, 3))
        cuts = sorted(
            draw(st.lists(st.integers(0, shape[axis]), min_size=parts - 1, max_size=parts - 1))
        )
        sizes = [b - a for a, b in zip([0, *cuts], [*cuts, shape[axis]])]
        if not as_input:
            return {"axis": axis, "split": sizes}, [], rank, parts
        attrs = {"axis": axis}
        return attrs, [draft.ints(draw, "split", sizes)], rank, parts
    if op == "Pad":
        axes = (
            _axes(draw, rank, source, min_size=1) if source >= 18 and draw(st.booleans()) else None
        )
        padded = range(rank) if axes is None else axes
        pads = [draw(st.integers(0, 2)) for _ in range(2 * len(padded))]
        value = draw(st.sampled_from([0.0, -1.5, 2.0]))
        if not as_input:
            return {"pads": pads, "value": value}, [], rank, 1
        attrs = {}
        if source >= 19 and draw(st.booleans()):  # wraps around a non-empty axis
            attrs["mode"] = "wrap"
            shape[:] = [max(d, 1) for d in shape]
        elem_value = helper.make_tensor("c", draft.elem, [], [value])
        extra = [draft.ints(draw, "pads", pads)]
        if not attrs and draw(st.booleans()):
            draft.nodes.append(helper.make_node("Constant", [], ["c"], value=elem_value))
            extra.append("c")
        else:
            extra.append("")
        if axes is not None:
            extra.append(draft.ints(draw, "axes", axes))
        return attrs, extra, rank, 1
    if op == "TopK":
        axis = draw(st.integers(-rank if source >= 11 else 0, rank - 1))
        shape[axis] = max(shape[axis], 1)
        k = draw(st.integers(1, shape[axis]))
        if not as_input:
            return {"axis": axis, "k": k}, [], rank, 2
        return {"axis": axis}, [draft.ints(draw, "k", [k])], rank, 2
    # Slice
    axes = _axes(draw, rank, source, min_size=1)
    starts = [draw(st.integers(-3, 3)) for _ in axes]
    ends = [draw(st.sampled_from([-1, 0, 2, 3, 1000])) for _ in axes]
    if not as_input:
        return {"starts": starts, "ends": ends, "axes": axes}, [], rank, 1
    extra = [draft.ints(draw, "starts", starts), draft.ints(draw, "ends", ends)]
    extra.append(draft.ints(draw, "axes", axes))
    return {}, extra, rank, 1


def _axes_attribute_or_input(draw, axes, as_input, draft):
    if as_input:
        return {}, [draft.ints(draw, "axes", axes)]
    # (sorted: onnx's inference of Squeeze-1/Unsqueeze-1 misreads axes out of order)
    return {"axes": sorted(axes) if draft.opset < 11 else axes}, []
