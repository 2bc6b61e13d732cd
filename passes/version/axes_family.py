"""The own adapters of the ops whose `axes` (or `split`, `pads`, `k`, ...) moved between an
attribute and an input, for ConvertOtherOpsPass: op → adapters `(node, old, b)`, tried in
order after those of `other_adapters`. One module per op family:

    reduce_axes.py   every Reduce* op (ReduceMax's step adapters too, for ConvertFamilyPass)
    squeeze.py       Squeeze and Unsqueeze
    split.py         Split's `split` (13)
    pad.py           Pad's `pads` and `value` (11), `axes` (18) and mode 'wrap' (19)
    attribute_inputs.py  TopK's k and Slice's starts/ends/axes (10), Upsample's scales (9),
                     Reshape's shape (5), table-driven; and the steps the modules above share (the
                     dispatcher across the boundary, attribute → input, constant input
                     → attribute, the refusal of a run-time input)
    resize.py        Resize's (X, scales) and the coordinate transformation (11)
    upsample.py      Upsample-1's height_scale/width_scale (7), then attribute_inputs'
                     scales (9)
"""

from __future__ import annotations

from passes.version import (
    attribute_inputs,
    pad,
    reduce_axes,
    resize,
    split,
    squeeze,
    upsample,
)

AXES_ADAPTERS = {
    **reduce_axes.ADAPTERS,
    **squeeze.ADAPTERS,
    **split.ADAPTERS,
    **pad.ADAPTERS,
    **attribute_inputs.ADAPTERS,
    **resize.ADAPTERS,
    **upsample.ADAPTERS,  # after attribute_inputs': its adapter takes the steps of both
}
