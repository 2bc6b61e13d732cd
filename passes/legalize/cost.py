"""The cost model that ranks exact rewrites: measured per-op latency, scaled by size.

    cost(form) = Σ over its nodes of  LAUNCH + WEIGHTS[op] × elements(output) / elements(reference)
                                             × bytes per element / the probe's
    cost(If)   = IF_OVERHEAD + the dearer branch            (one branch runs)
    cost(Loop) = LOOP_OVERHEAD + trips × LOOP_TRIP + data

Every figure comes from `weights.json` beside this module, which
`benchmarks/decompose_latency.py --write-weights` measures and writes (onnxruntime CPU, one
thread, medians over interleaved runs; see its RESULTS.md section); nothing here is typed by
hand. `WEIGHTS[op]` is the op's latency on float32 [64, 4096] (two inputs of that shape for
binary ops, a reduction over the last axis for reductions) divided by Add's; `LAUNCH` is what
any kernel costs on a scalar, in the same unit, so that shape arithmetic costs what it costs.
Ops that were not measured weigh `DEFAULT_WEIGHT`. The reference is the largest input of the
node being rewritten, so that the levels of a Slice tree, which halve, cost less and less; a
symbolic dim counts as `NOMINAL_DIM`, and an output of unknown rank as the reference.

A Loop's trip count is rarely static. With a constant condition it runs M times (M constant)
or `NOMINAL_DIM` times (M computed: an axis length), its body each time. With a condition the
body computes and a constant bound M, it stops early: the only such loop among the
decompositions is the halving reduction (passes.decompose.log_depth), whose carried tensor
halves every trip, so it runs ⌈log2 NOMINAL_DIM⌉ times and moves about one body's data at the
reference size (see `_loop_cost`). Values of unknown length count as the reference at most.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import onnx_ir as ir

WEIGHTS_FILE = Path(__file__).with_name("weights.json")
WEIGHTS: dict[str, float] = {}
LAUNCH = IF_OVERHEAD = LOOP_OVERHEAD = LOOP_TRIP = 0.0


def reload() -> None:
    """Read weights.json (again: the benchmark rewrites it, then plans with it)."""
    global LAUNCH, IF_OVERHEAD, LOOP_OVERHEAD, LOOP_TRIP
    measured = json.loads(WEIGHTS_FILE.read_text(encoding="utf-8"))
    WEIGHTS.clear()
    WEIGHTS.update(measured["ops"])
    LAUNCH = measured["launch"]
    IF_OVERHEAD = measured["if_overhead"]
    LOOP_OVERHEAD = measured["loop_overhead"]
    LOOP_TRIP = measured["loop_trip"]


reload()
# Bytes per element of the widest value in each op's probe (float32 where not listed).
PROBE_WIDTH = {"Or": 1, "And": 1, "Not": 1, "Cast": 8}  # Cast: float32 → float64
# Ops that only move shapes and scalars around: a launch, whatever their output's size.
SHAPE_OPS = frozenset({"Shape", "Size", "Constant", "Range"})
DEFAULT_WEIGHT = 1.0
NOMINAL_DIM = 64  # what a symbolic dim (and a computed trip count) counts as


def elements(value: ir.Value | None) -> int | None:
    """The number of elements, counting a symbolic dim as NOMINAL_DIM; None if the rank is
    unknown."""
    if value is None or value.shape is None:
        return None
    return math.prod(d if isinstance(d, int) else NOMINAL_DIM for d in value.shape)


@dataclasses.dataclass(frozen=True)
class Reference:
    """What sizes are relative to: the largest input of the node being rewritten."""

    size: int
    static: bool  # every input's shape is static


def reference_size(node: ir.Node) -> Reference | None:
    inputs = [v for v in node.inputs if v is not None]
    known = [s for s in map(elements, inputs) if s is not None]
    return Reference(max(known), all(map(_static, inputs))) if known else None


def graph_cost(graph: ir.Graph, reference: Reference | None) -> float:
    return sum(node_cost(node, reference) for node in graph)


def node_cost(node: ir.Node, reference: Reference | None) -> float:
    if node.op_type == "If":
        branches = [
            graph_cost(attr.value, reference)
            for attr in node.attributes.values()
            if attr.type == ir.AttributeType.GRAPH
        ]
        return IF_OVERHEAD + max(branches, default=0.0)
    if node.op_type == "Loop":
        return _loop_cost(node, reference)
    if node.op_type in SHAPE_OPS:
        return LAUNCH
    output = node.outputs[0] if node.outputs else None
    size = elements(output)
    if size is None or reference is None or (reference.static and not _static(output)):
        factor = 1.0  # as large as the reference, for all we know
    else:
        factor = size / max(reference.size, 1)
        if not _static(output):  # unknown dims: no larger than the reference, we assume
            factor = min(factor, 1.0)
    op = node.op_type
    if op == "Where" and _sparse_condition(node.inputs[0]):
        op = "Where, sparse condition"
    return LAUNCH + WEIGHTS.get(op, DEFAULT_WEIGHT) * factor * _width(node)


def _width(node: ir.Node) -> float:
    """Bytes per element of the data (first input, output) against the probe's (PROBE_WIDTH):
    the kernels are memory-bound, so a Min on float64 costs about twice one on float32."""
    data = [node.inputs[0] if node.inputs else None, node.outputs[0] if node.outputs else None]
    sizes = [
        v.dtype.itemsize
        for v in data  # not the int64 starts, axes or shapes beside the data
        if v is not None and v.dtype is not None and v.dtype != ir.DataType.STRING
    ]
    if not sizes:
        return 1.0
    # Below 4 bytes an element is not cheaper (not measured, and onnxruntime's kernels for
    # small types are not faster in proportion): widths count from 4 bytes up.
    return max(max(sizes), 4) / max(PROBE_WIDTH.get(node.op_type, 4), 4)


def _static(value: ir.Value | None) -> bool:
    return value is not None and value.shape is not None and value.shape.is_static()


def _sparse_condition(condition: ir.Value | None) -> bool:
    """Whether a Where's condition is an Equal (or Or of Equals and IsNaNs): true at few
    places, such as where x equals its maximum, which onnxruntime's Where (it branches per
    element) predicts well; a comparison such as Greater is true at unpredictable places."""
    producer = condition.producer() if condition is not None else None
    if producer is None:
        return False
    if producer.op_type == "Or":
        return all(_sparse_condition(v) for v in producer.inputs)
    return producer.op_type in ("Equal", "IsNaN")


def _loop_cost(node: ir.Node, reference: Reference | None) -> float:
    body = graph_cost(node.attributes["body"].value, reference)
    bound = _constant_int(node.inputs[0] if node.inputs else None)
    condition = node.inputs[1] if len(node.inputs) > 1 else None
    if condition is not None and condition.const_value is None and bound is not None:
        # Stops early: the halving loop. Its body's values have unknown lengths, so they
        # count as the reference, twice the first trip's real size; the trips after halve,
        # so that in all the data is about one body at the reference size.
        trips = math.ceil(math.log2(NOMINAL_DIM))
        return LOOP_OVERHEAD + trips * LOOP_TRIP + body
    trips = bound if bound is not None else NOMINAL_DIM
    return LOOP_OVERHEAD + trips * (LOOP_TRIP + body)


def _constant_int(value: ir.Value | None) -> int | None:
    if value is None or value.const_value is None:
        return None
    return int(value.const_value.numpy().reshape(-1)[0])
