"""The own adapters of the ops whose `axes` (or `split`, `pads`, `k`, ...) moved between an
attribute and an input, for ConvertOtherOpsPass: op → adapters `(node, old, b)`, tried in
order after those of `other_adapters`. One module per op family:

    reduce_axes.py   every Reduce* op (ReduceMax's step adapters too, for ConvertFamilyPass)
    squeeze.py       Squeeze and Unsqueeze
"""

from __future__ import annotations

from passes.version import reduce_axes, squeeze

AXES_ADAPTERS = {**reduce_axes.ADAPTERS, **squeeze.ADAPTERS}
