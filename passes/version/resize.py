"""Resize across opset 11, where (X, scales){mode} became (X, roi, scales, sizes) with a
coordinate transformation and a rounding rule, both ways.

Resize-10 leaves both unsaid; onnxruntime, the runtime that runs it (onnx.reference has no
Resize-10), maps output index i to input coordinate i / scale ("asymmetric"), and for
`nearest` takes floor of it on an axis with scale ≥ 1 and ceil on one with scale < 1 (its
"simple" rounding). Nearest-neighbour picks an index per axis on its own, so axes that
round differently can be resized one after the other.

    Resize-10(X, s){linear}, to ≥ 11              →  Resize(X, "", s){linear, asymmetric}
    Resize-10(X, const s){nearest}, to ≥ 11       →  Resize(X, "", s){nearest, asymmetric,
                                                     floor} over the axes with s ≥ 1, then
                                                     ceil over those with s < 1 (one node
                                                     where all round alike)
    Resize-10(X, run-time s){nearest}, to ≥ 11    →  refused: the rounding follows s
    Resize-11+(X, roi, s){linear, asymmetric}, to 10            →  Resize(X, s){linear}
    Resize-11+(X, roi, s){nearest, asymmetric, floor: all s ≥ 1,
                          ceil: all s < 1 or 1}, to 10          →  Resize(X, s){nearest}
    any other Resize-11+, to 10                   →  refused (sizes, cubic, other
                                                     transformations and roundings)

(At 11-12 an absent roi is spelt as an empty tensor: other_adapters.resize_optional_inputs.)
"""

from __future__ import annotations

import numpy as np
import onnx_ir as ir

from passes.builder import Builder
from passes.graph_utils import const_tensor, remove_if_orphaned

_SINCE = 11
_KEEP = "keep opset 11 or later as the target"


def resize_for_target(node: ir.Node, old: int, b: Builder) -> str | None:
    if old < _SINCE <= b.opset:
        return _up(node, b)
    if old >= _SINCE > b.opset:
        return _down(node, old, b)
    return None


def _scales(value: ir.Value | None) -> list[float] | None:
    tensor = None if value is None or value.is_graph_input() else const_tensor(value)
    return None if tensor is None else [float(v) for v in np.asarray(tensor.numpy()).reshape(-1)]


def _up(node: ir.Node, b: Builder) -> str:
    mode = node.attributes.get_string("mode", "nearest")
    x, scales_value = node.inputs[0], node.inputs[1]
    empty = b.const(np.zeros([0], dtype=np.float32)) if b.opset < 13 else None
    node.resize_inputs(3)
    node.replace_input_with(2, scales_value)
    node.replace_input_with(1, empty)
    node.attributes["coordinate_transformation_mode"] = ir.AttrString(
        "coordinate_transformation_mode", "asymmetric"
    )
    if mode != "nearest":
        return f"{mode}: the asymmetric coordinate transformation written out"
    scales = _scales(scales_value)
    if scales is None:
        raise b.refuse(
            "Resize-10 nearest rounds down on axes that grow and up on axes that shrink, and "
            f"its scales {scales_value.name!r} are computed at run time",
            "make the scales a constant, or use mode linear",
        )
    up = [s if s >= 1 else 1.0 for s in scales]
    down = [s if s < 1 else 1.0 for s in scales]
    if all(s == 1.0 for s in down):
        node.attributes["nearest_mode"] = ir.AttrString("nearest_mode", "floor")
        return "nearest: asymmetric, rounding down (every scale ≥ 1)"
    node.attributes["nearest_mode"] = ir.AttrString("nearest_mode", "ceil")
    if all(s == 1.0 for s in up):
        return "nearest: asymmetric, rounding up (every scale < 1 or 1)"
    attributes = {"mode": "nearest", "coordinate_transformation_mode": "asymmetric"}
    growing = b.op(
        "Resize",
        [x, empty, b.const(np.array(up, dtype=np.float32))],
        {**attributes, "nearest_mode": "floor"},
        dtype=x.dtype,
    )
    node.replace_input_with(0, growing)
    node.replace_input_with(2, b.const(np.array(down, dtype=np.float32)))
    remove_if_orphaned(node.graph, scales_value)
    return "nearest: growing axes rounded down, then shrinking axes rounded up (two Resizes)"


def _down(node: ir.Node, old: int, b: Builder) -> str:
    mode = node.attributes.get_string("mode", "nearest")
    transform = node.attributes.get_string("coordinate_transformation_mode", "half_pixel")
    rounding = node.attributes.get_string("nearest_mode", "round_prefer_floor")
    sizes = node.inputs[3] if len(node.inputs) > 3 else None
    scales_value = node.inputs[2] if len(node.inputs) > 2 else None
    scales = _scales(scales_value)

    def refuse(why: str):
        return b.refuse(f"Resize-{old} {why}, which Resize-10 cannot say", _KEEP)

    if sizes is not None or scales_value is None or scales == []:
        raise refuse("is given output sizes")
    if node.attributes.get_int("antialias", 0) or "axes" in node.attributes:
        raise refuse("is given antialias or axes")
    if mode not in ("nearest", "linear"):
        raise refuse(f"uses mode {mode!r}")
    if transform != "asymmetric":
        raise refuse(f"maps coordinates by {transform!r} (Resize-10's is 'asymmetric')")
    if mode == "nearest":
        if scales is None:
            raise refuse("rounds by a fixed rule over scales computed at run time")
        rules = {"floor"} if all(s >= 1 for s in scales) else set()
        rules |= {"ceil"} if all(s <= 1 for s in scales) else set()
        if rounding not in rules:
            raise refuse(
                f"rounds {rounding!r} with scales {scales} (Resize-10 rounds down where a "
                "scale is ≥ 1 and up where it is < 1)"
            )
    roi = node.inputs[1]
    node.replace_input_with(1, scales_value)
    node.resize_inputs(2)
    # the rest is read only by modes and transformations refused above
    for name in list(node.attributes):
        if name != "mode":
            del node.attributes[name]
    if roi is not None:
        remove_if_orphaned(node.graph, roi)
    return f"{mode}, asymmetric: Resize-10's (X, scales)"


ADAPTERS = {"Resize": [resize_for_target]}
