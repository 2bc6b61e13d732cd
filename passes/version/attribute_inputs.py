"""Ops whose integer attributes became int64 inputs and that changed nothing else at that
version, table-driven (MOVED): TopK's k and Slice's starts/ends/axes at 10.

    TopK-1(x){k=3}, to ≥ 10                        →  TopK(x, int64 initializer [3])
    TopK-10(x, constant K), to ≤ 9                  →  TopK(x){k}
    TopK-10(x, run-time K), to ≤ 9                  →  refused: the output shape follows K,
                                                       and no op before 10 takes a run-time
                                                       count or bound
    Slice-1(x){starts, ends, axes}, to ≥ 10         →  Slice(x, starts, ends[, axes])

(Slice-10 to ≤ 9, with its steps, is in other_adapters.py.)
"""

from __future__ import annotations

import dataclasses

import onnx_ir as ir

from passes.builder import Builder
from passes.graph_utils import const_tensor, remove_if_orphaned


@dataclasses.dataclass(frozen=True)
class Moved:
    """An attribute that became input `index` (a 1-element vector for a `scalar` one)."""

    attribute: str
    index: int
    scalar: bool = False


# op → (version at which the inputs came, what moved, whether the way down is here)
MOVED = {
    "TopK": (10, (Moved("k", 1, scalar=True),), True),
    "Slice": (10, (Moved("starts", 1), Moved("ends", 2), Moved("axes", 3)), False),
}


def move_attributes(node: ir.Node, old: int, b: Builder) -> str | None:
    since, moved, down = MOVED[node.op_type]
    if old < since <= b.opset:
        return attributes_to_inputs(node, b, moved)
    if down and old >= since > b.opset:
        return inputs_to_attributes(node, old, b, since, moved)
    return None


def attributes_to_inputs(node: ir.Node, b: Builder, moved: tuple[Moved, ...]) -> str | None:
    present = [m for m in moved if m.attribute in node.attributes]
    if not present:
        return None
    node.resize_inputs(max(len(node.inputs), max(m.index for m in present) + 1))
    for m in present:
        value = node.attributes.pop(m.attribute).value
        node.replace_input_with(m.index, b.int64_initializer([value] if m.scalar else value))
    return f"{', '.join(m.attribute for m in present)} attributes moved to int64 inputs"


def inputs_to_attributes(
    node: ir.Node, old: int, b: Builder, since: int, moved: tuple[Moved, ...]
) -> str | None:
    given = [m for m in moved if m.index < len(node.inputs) and node.inputs[m.index] is not None]
    values = {}
    for m in given:
        value = node.inputs[m.index]
        tensor = None if value.is_graph_input() else const_tensor(value)
        if tensor is None:
            raise b.refuse(
                f"{node.op_type}-{old}'s {m.attribute} {value.name!r} is computed at run time, "
                f"and before opset {since} it is an attribute; the output's shape follows it, "
                "and no op before that takes it at run time",
                f"make {m.attribute} a constant (an initializer or a Constant node), or target "
                f"opset {since} or later",
            )
        ints = [int(v) for v in tensor.numpy().reshape(-1)]
        values[m] = ints[0] if m.scalar else ints
    if not given:
        return None
    used = [node.inputs[m.index] for m in given]
    node.resize_inputs(min(m.index for m in moved))
    remove_if_orphaned(node.graph, *used)
    for m, value in values.items():
        attr = ir.AttrInt64 if m.scalar else ir.AttrInt64s
        node.attributes[m.attribute] = attr(m.attribute, value)
    return f"constant {', '.join(m.attribute for m in given)} inputs moved to attributes"


ADAPTERS = {op: [move_attributes] for op in MOVED}
