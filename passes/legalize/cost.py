"""The cost model that ranks exact rewrites: node count weighted by measured latency.

    cost(form) = Σ over its nodes (subgraph bodies included) of
                 WEIGHTS[op] × elements(output) / elements(reference)

`WEIGHTS` is each op's onnxruntime CPU latency on a float32 [64, 4096] tensor (two inputs of
that shape for binary ops, one reduction over the last axis for reductions), divided by
Add's; `benchmarks/decompose_latency.py --weights` measures and prints it, and its
RESULTS.md section records the run these figures come from. Ops that are not listed weigh
`DEFAULT_WEIGHT`. The reference is the largest static input of the node being rewritten, so
that the levels of a Slice tree, which halve, cost less and less; a symbolic dim counts as
`NOMINAL_DIM`, and an output of unknown rank as the reference. Shape arithmetic (Shape,
Gather of a shape, Constant, ...) costs almost nothing, as in onnxruntime. A Loop costs
`LOOP_OVERHEAD` plus its body `LOOP_TRIPS` times (its trip count is not known statically).
"""

from __future__ import annotations

import math

import onnx_ir as ir

# Measured by benchmarks/decompose_latency.py --weights (see its RESULTS.md section).
WEIGHTS: dict[str, float] = {
    "Add": 1.0,
    "Sub": 1.0,
    "Mul": 1.0,
    "Max": 1.06,
    "Min": 1.06,
    "Greater": 0.96,
    "Less": 0.96,
    "Equal": 0.96,
    "IsNaN": 0.85,
    # Where's kernel branches per element: 41 when the condition follows the data (half
    # True, no pattern, as a comparison of data gives), 5.8 when it is all True.
    "Where": 41.0,
    "Or": 0.38,
    "And": 0.38,
    "Not": 0.31,
    "Cast": 1.77,
    "Clip": 1.0,
    "Slice": 0.43,
    "Concat": 1.14,
    "Tile": 1.14,
    "Expand": 1.10,
    "Gather": 1.0,
    "Identity": 0.66,
    "Unsqueeze": 0.69,
    "Squeeze": 0.69,
    "Reshape": 0.69,
    "ReduceMax": 0.54,
    "ReduceMin": 0.55,
    "ReduceSum": 0.55,
    "ArgMax": 4.67,
    "Range": 0.1,
    "Shape": 0.0,
    "Size": 0.0,
    "Constant": 0.0,
}
DEFAULT_WEIGHT = 1.0
SMALL = 64  # outputs of at most this many elements are shape arithmetic: weight 1/20
LOOP_OVERHEAD = 20.0
LOOP_TRIPS = 16
NOMINAL_DIM = 64  # what a symbolic dim counts as when sizes are compared


def elements(value: ir.Value | None) -> int | None:
    """The number of elements, counting a symbolic dim as NOMINAL_DIM; None if the rank is
    unknown."""
    if value is None or value.shape is None:
        return None
    return math.prod(d if isinstance(d, int) else NOMINAL_DIM for d in value.shape)


def reference_size(node: ir.Node) -> int | None:
    sizes = [elements(v) for v in node.inputs if v is not None]
    known = [s for s in sizes if s is not None]
    return max(known) if known else None


def graph_cost(graph: ir.Graph, reference: int | None) -> float:
    return sum(node_cost(node, reference) for node in graph)


def node_cost(node: ir.Node, reference: int | None) -> float:
    weight = WEIGHTS.get(node.op_type, DEFAULT_WEIGHT)
    size = elements(node.outputs[0]) if node.outputs else None
    if size is not None and size <= SMALL and (reference is None or reference > SMALL):
        factor = 0.05
    elif size is not None and reference:
        factor = size / reference
    else:
        factor = 1.0
    cost = weight * factor
    for attr in node.attributes.values():
        if attr.type == ir.AttributeType.GRAPH:
            body = graph_cost(attr.value, reference)
            cost += LOOP_OVERHEAD + LOOP_TRIPS * body if node.op_type == "Loop" else body
    return cost
