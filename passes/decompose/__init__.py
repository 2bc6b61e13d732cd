"""Exact decompositions of Max, ReduceMax and ArgMax, and of their Min twins (the same
modules, parameterised by passes.extremum), into other ops, one module per op.

`DECOMPOSITIONS[op_type]` lists every rewrite of that op; `passes.legalize` picks, per node,
the cheapest one whose result a backend profile accepts. Each is usable alone:

    from passes.decompose import BY_NAME
    from passes.legalize import apply_decomposition
    apply_decomposition(node, BY_NAME["reduce_max_slice_tree"], opset)
"""

from __future__ import annotations

from passes.decompose import (
    arg_max,
    graph_output,
    log_depth,
    negated,
    reduce_max,
    runtime_axes_if,
    where,
)
from passes.decompose import max as max_decompositions
from passes.decompose.common import Decomposition

DECOMPOSITIONS: dict[str, list[Decomposition]] = {}
for _decomposition in (
    *max_decompositions.DECOMPOSITIONS,
    *reduce_max.DECOMPOSITIONS,
    *log_depth.DECOMPOSITIONS,
    *runtime_axes_if.DECOMPOSITIONS,
    *negated.DECOMPOSITIONS,
    *arg_max.DECOMPOSITIONS,
    *where.DECOMPOSITIONS,
    *graph_output.DECOMPOSITIONS,
):
    DECOMPOSITIONS.setdefault(_decomposition.op_type, []).append(_decomposition)

BY_NAME: dict[str, Decomposition] = {d.name: d for ds in DECOMPOSITIONS.values() for d in ds}

__all__ = ["BY_NAME", "DECOMPOSITIONS"]
