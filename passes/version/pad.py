"""Pad across opset 11 (`pads` and `value` attributes became the inputs `pads` and
`constant_value`) and 18 (the `axes` input), both ways, and 19 (the mode 'wrap').

    Pad-2(x){pads, value=v}, to ≥ 11                 →  Pad(x, int64 pads, v as x's type)
    Pad-11(x, constant pads, constant v), to ≤ 10    →  Pad(x){pads, value=v} (v must be a
                                                        float32 value; absent: 0)
    Pad-11(x, run-time pads), to ≤ 10                →  refused: the output shape follows
                                                        pads, and Pad-2 takes an attribute
    Pad-18(x, pads, c, constant axes), to ≤ 17       →  pads over every axis (0 for those
                                                        not listed), then as above
    Pad-18(x, pads, c, run-time axes or pads), to 11..17
                                                     →  pads over every axis computed: for
                                                        axis i, Σ_k [axes_k ≡ i] · pads_k
                                                        (begins) and · pads_n+k (ends)
    Pad-19(x, constant pads){mode='wrap'}, to ≤ 18  →  per padded axis of static length n,
                                                        Gather(·, (arange(n+b+e) - b) mod n)
"""

from __future__ import annotations

import numpy as np
import onnx_ir as ir

from passes.builder import Builder
from passes.graph_utils import (
    constant_ints,
    drop_inputs,
    remove_if_orphaned,
    replace_node,
    require_rank,
    static_dim,
)
from passes.version.attribute_inputs import constant_input

DT = ir.DataType


def pad_for_target(node: ir.Node, old: int, b: Builder) -> str | None:
    if old >= 19 > b.opset and node.attributes.get_string("mode", "constant") == "wrap":
        return _wrap_as_gathers(node, old, b)
    done = []
    if old >= 18 > b.opset:
        done.append(_axes_to_full_pads(node, b))
    if old >= 11 > b.opset:
        done.append(_inputs_to_attributes(node, old, b))
    elif old < 11 <= b.opset:
        done.append(_attributes_to_inputs(node, b))
    return "; ".join(d for d in done if d) or None


def _attributes_to_inputs(node: ir.Node, b: Builder) -> str | None:
    pads = node.attributes.pop("pads", None)
    if pads is None:
        return None
    value = node.attributes.pop("value", None)
    node.resize_inputs(3 if value is not None else 2)
    node.replace_input_with(1, b.int64_initializer(list(pads.as_ints())))
    if value is None:
        return "pads attribute moved to an int64 input"
    x = node.inputs[0]
    if x.dtype is None:
        raise b.refuse(
            f"the element type of {x.name!r} is unknown, and the value attribute becomes a "
            "constant_value input of that type",
            "declare the input's type",
        )
    node.replace_input_with(2, b.const(np.array(value.value, dtype=x.dtype.numpy())))
    return f"pads and value={value.value:g} attributes moved to inputs"


def _inputs_to_attributes(node: ir.Node, old: int, b: Builder) -> str | None:
    why = "; the output's shape follows it"
    pads_array = constant_input(node, old, b, 11, "pads", node.inputs[1], why)
    pads = [int(v) for v in pads_array.reshape(-1)]
    fill = node.inputs[2] if len(node.inputs) > 2 else None
    value = 0.0
    if fill is not None:
        value = constant_input(node, old, b, 11, "constant_value", fill).reshape(-1)[0].item()
        if not np.isnan(value) and float(np.float32(value)) != float(value):
            raise b.refuse(
                f"Pad-{old}'s constant_value {value!r} is no float32 value, and before opset "
                "11 it is a float32 attribute",
                "target opset 11 or later",
            )
    drop_inputs(node, 1)
    node.attributes["pads"] = ir.AttrInt64s("pads", pads)
    if value != 0.0 or np.signbit(value) or np.isnan(value):
        node.attributes["value"] = ir.AttrFloat32("value", float(value))
    return f"constant pads and constant_value inputs moved to attributes (value={value:g})"


def _axes_to_full_pads(node: ir.Node, b: Builder) -> str | None:
    axes_value = node.inputs[3] if len(node.inputs) > 3 else None
    if axes_value is None:
        return None
    x, pads_value = node.inputs[0], node.inputs[1]
    rank = require_rank(node, x, "pads given for some axes must be spread over every axis")
    axes = None if axes_value.is_graph_input() else constant_ints(axes_value)
    pads = None if pads_value.is_graph_input() else constant_ints(pads_value)
    if axes is not None and pads is not None:
        full = [0] * (2 * rank)
        for k, axis in enumerate(axes):
            axis = axis + rank if axis < 0 else axis
            full[axis], full[rank + axis] = pads[k], pads[len(axes) + k]
        new_pads = b.int64_initializer(full)
        how = f"pads for axes {axes} spread over all {rank} axes: {full}"
    elif b.opset < 11:
        raise b.refuse(
            f"Pad-18's axes {axes_value.name!r} or pads {pads_value.name!r} are computed at "
            "run time, and before opset 11 pads over every axis are an attribute",
            "make axes and pads constants, or target opset 11 or later",
        )
    else:
        new_pads = _runtime_full_pads(b, pads_value, axes_value, rank)
        how = f"pads for run-time axes spread over all {rank} axes at run time"
    node.replace_input_with(1, new_pads)
    node.replace_input_with(3, None)
    node.resize_inputs(3 if node.inputs[2] is not None else 2)
    remove_if_orphaned(node.graph, pads_value, axes_value)
    return how


def _wrap_as_gathers(node: ir.Node, old: int, b: Builder) -> str:
    """mode='wrap' (19): output index j of an axis of length n reads x[(j - begin) mod n],
    a Gather of constant indices per padded axis (cropping too: the indices stay in range)."""
    x = node.inputs[0]
    rank = require_rank(node, x, "wrap padding becomes one Gather per padded axis")
    pads = [None if v is None or v.is_graph_input() else constant_ints(v) for v in node.inputs[1:2]]
    axes_value = node.inputs[3] if len(node.inputs) > 3 else None
    axes = list(range(rank)) if axes_value is None else constant_ints(axes_value)
    if pads[0] is None or axes is None or (axes_value is not None and axes_value.is_graph_input()):
        raise b.refuse(
            f"Pad-{old}'s mode 'wrap' only exists from opset 19, and its exact form (a Gather "
            "per axis) needs constant pads and axes",
            "make pads and axes constants, or target opset 19 or later",
        )
    result = x
    for k, axis in enumerate(axes):
        axis = axis + rank if axis < 0 else axis
        begin, end = pads[0][k], pads[0][len(axes) + k]
        if begin == 0 and end == 0:
            continue
        n = static_dim(x, axis)
        if not n:
            raise b.refuse(
                f"Pad-{old}'s mode 'wrap' only exists from opset 19, and its exact form (a "
                f"Gather per axis) needs the length of axis {axis} of {x.name!r}, which is "
                "not static and positive",
                "give the input a static shape, or target opset 19 or later",
            )
        indices = (np.arange(n + begin + end, dtype=np.int64) - begin) % n
        result = b.op("Gather", [result, b.const(indices)], {"axis": axis}, dtype=x.dtype)
    if result is x:
        result = b.op("Identity", [x], dtype=x.dtype)
    replace_node(node, result)
    return "mode 'wrap' as a Gather of wrapped indices per padded axis"


def _runtime_full_pads(b: Builder, pads: ir.Value, axes: ir.Value, rank: int) -> ir.Value:
    """[begin_0 .. begin_r-1, end_0 .. end_r-1], begin_i = Σ_k [axes_k ≡ i] · pads[k]."""
    i64 = DT.INT64
    rows = b.op("Reshape", [pads, b.const(np.array([2, -1], dtype=np.int64))], dtype=i64)
    sides = [
        b.op("Gather", [rows, b.const(np.array(s, dtype=np.int64))], {"axis": 0}, dtype=i64)
        for s in (0, 1)
    ]
    per_side: list[list[ir.Value]] = [[], []]
    for i in range(rank):
        listed = b.op(
            "Or",
            [
                b.binary("Equal", axes, b.const(np.array(i, dtype=np.int64)), dtype=DT.BOOL),
                b.binary("Equal", axes, b.const(np.array(i - rank, dtype=np.int64)), dtype=DT.BOOL),
            ],
            dtype=DT.BOOL,
        )
        match = b.cast(listed, i64)
        for side, amounts in enumerate(sides):
            picked = b.binary("Mul", match, amounts, dtype=i64)
            per_side[side].append(b.op("ReduceSum", [picked], {"keepdims": 1}, dtype=i64))
    return b.op("Concat", per_side[0] + per_side[1], {"axis": 0}, dtype=i64)


ADAPTERS = {"Pad": [pad_for_target]}
