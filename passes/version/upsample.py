"""Upsample across opset 7, where Upsample-1's (experimental) height_scale and width_scale
of a 4-D NCHW input became a scale per axis, and mode 'bilinear' became 'linear'; the
steps across 9 (scales as an input) are attribute_inputs.py's, taken after this one going
up and before it going down. From 10 Upsample is deprecated (the checker refuses it):
Upsample-9 is Resize-10 by another name (onnx's own 9 → 10 adapter renames it), which
resize.py then spells for the target.

    Upsample-1(x){height_scale=2, width_scale=3, bilinear}, to ≥ 7
                                                 →  Upsample(x){scales=[1, 1, 2, 3], linear}
    Upsample-7+(x){scales=[1, 1, h, w], nearest|linear}, to 1..6
                                                 →  Upsample(x){height_scale=h, width_scale=w}
    any other Upsample-7+ (another rank, scaled N or C), to 1..6  →  refused
    Upsample-1..9, to ≥ 10                       →  Resize-10(x, scales) made at the target
"""

from __future__ import annotations

import onnx_ir as ir

from passes.builder import Builder
from passes.graph_utils import remove_if_orphaned
from passes.version import resize
from passes.version.attribute_inputs import move_attributes

_SINCE = 7
_RESIZE = 10  # Upsample's deprecation: Resize-10 takes its place
_MODES = {"nearest": "nearest", "bilinear": "linear"}  # Upsample-1's → Upsample-7's


def upsample_for_target(node: ir.Node, old: int, b: Builder) -> str | None:
    if old < _SINCE <= b.opset:
        steps = [_up(node), move_attributes(node, old, b)]
    elif old >= _SINCE > b.opset:
        steps = [move_attributes(node, old, b), _down(node, old, b)]
    else:
        steps = [move_attributes(node, old, b)]
    if old < _RESIZE <= b.opset:
        steps.append(_to_resize(node, b))
    return "; ".join(s for s in steps if s) or None


def _to_resize(node: ir.Node, b: Builder) -> str:
    """Upsample-9's (X, scales){mode} → Resize-10's, spelt for the target by resize.py; the
    Resize takes over the node's name and output."""
    x, scales = node.inputs
    mode = node.attributes.get_string("mode", "nearest")
    out = node.outputs[0]
    y = b.op("Resize", [x, scales], {"mode": mode}, dtype=out.dtype, shape=out.shape)
    replacement = y.producer()
    replacement.name = node.name
    how = resize.resize_for_target(replacement, _RESIZE, b)
    ir.convenience.replace_all_uses_with(out, y, replace_graph_outputs=True)
    graph = node.graph
    graph.remove(node, safe=True)
    y.name = out.name
    remove_if_orphaned(graph, scales)
    return f"Upsample-9 is Resize-10: {how}" if how else "Upsample-9 is Resize-10"


def _up(node: ir.Node) -> str:
    height = node.attributes.pop("height_scale").value
    width = node.attributes.pop("width_scale").value
    mode = _MODES[node.attributes.get_string("mode", "nearest")]
    node.attributes["mode"] = ir.AttrString("mode", mode)
    scales = [1.0, 1.0, height, width]
    node.attributes["scales"] = ir.AttrFloat32s("scales", scales)
    return f"height_scale, width_scale → scales {scales}, mode {mode!r}"


def _down(node: ir.Node, old: int, b: Builder) -> str:
    scales = list(node.attributes["scales"].value)
    if len(scales) != 4 or scales[:2] != [1.0, 1.0]:
        raise b.refuse(
            f"Upsample-{old} scales by {scales}, and Upsample-1 only scales the last two axes "
            "(height and width) of a 4-D input",
            f"keep opset {_SINCE} or later as the target",
        )
    mode = {v: k for k, v in _MODES.items()}[node.attributes.get_string("mode", "nearest")]
    del node.attributes["scales"]
    node.attributes["height_scale"] = ir.AttrFloat32("height_scale", scales[2])
    node.attributes["width_scale"] = ir.AttrFloat32("width_scale", scales[3])
    node.attributes["mode"] = ir.AttrString("mode", mode)
    return f"scales {scales} → height_scale, width_scale, mode {mode!r}"


ADAPTERS = {"Upsample": [upsample_for_target]}
