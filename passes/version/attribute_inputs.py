"""Ops whose attributes became inputs: the one implementation of each step
across such a boundary (the step dispatcher, attribute → input, constant input → attribute,
the refusal of a run-time input), used by reduce_axes.py, split.py, squeeze.py and pad.py;
and, table-driven (MOVED), the ops that changed nothing else at that version: TopK's k and
Slice's starts/ends/axes at 10, Upsample's float scales at 9, Reshape's shape at 5 (up only).

    TopK-1(x){k=3}, to ≥ 10                        →  TopK(x, int64 initializer [3])
    TopK-10(x, constant K), to ≤ 9                  →  TopK(x){k}
    TopK-10(x, run-time K), to ≤ 9                  →  refused: the output shape follows K,
                                                       and no op before 10 takes a run-time
                                                       count or bound
    Slice-1(x){starts, ends, axes}, to ≥ 10         →  Slice(x, starts, ends[, axes])
    Upsample-7(x){scales}, to 9                     →  Upsample(x, float initializer scales)
    Reshape-1(x){shape=[0, -1]}, to ≥ 5             →  Reshape(x, int64 initializer [0, -1])
    Upsample-9(x, constant scales), to 7..8         →  Upsample(x){scales}
    Upsample-9(x, run-time scales), to 7..8         →  refused, as TopK's K

(Slice-10 to ≤ 9, with its steps, is in other_adapters.py; Upsample's other steps, across 7
and to Resize from 10, in upsample.py.)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np
import onnx_ir as ir

from passes.builder import Builder
from passes.graph_utils import const_tensor, constant_ints, drop_inputs


@dataclasses.dataclass(frozen=True)
class Moved:
    """An attribute that became input `index` (a 1-element vector for a `scalar` one) of
    element type `dtype`: int64, or float for Upsample's scales."""

    attribute: str
    index: int
    scalar: bool = False
    dtype: ir.DataType = ir.DataType.INT64

    def constant(self, value: ir.Value) -> list | None:
        """The contents of a constant input as the attribute's numbers, else None."""
        if self.dtype == ir.DataType.INT64:
            return constant_ints(value)
        tensor = const_tensor(value)
        if tensor is None:
            return None
        return [float(v) for v in np.asarray(tensor.numpy()).reshape(-1)]

    def to_attribute(self, values: list) -> ir.Attr:
        ints = self.dtype == ir.DataType.INT64
        if self.scalar:
            kind = ir.AttrInt64 if ints else ir.AttrFloat32
            return kind(self.attribute, values[0])
        return (ir.AttrInt64s if ints else ir.AttrFloat32s)(self.attribute, values)

    @property
    def kind(self) -> str:
        return self.dtype.name.lower()


Step = Callable[[ir.Node, Builder], "str | None"]
# What an op makes of a moved input computed at run time: (node, b, value, moved) → its
# own run-time form's description, or it raises the refusal.
RunTime = Callable[[ir.Node, Builder, ir.Value, Moved], str]
# A constant input's check before it becomes an attribute: (node, b, value, ints), raises.
Check = Callable[[ir.Node, Builder, ir.Value, list[int]], None]

# op → (version at which the inputs came, what moved, whether the way down is here)
MOVED = {
    "TopK": (10, (Moved("k", 1, scalar=True),), True),
    "Slice": (10, (Moved("starts", 1), Moved("ends", 2), Moved("axes", 3)), False),
    "Upsample": (9, (Moved("scales", 1, dtype=ir.DataType.FLOAT),), True),
    # Reshape-1's `shape` attribute is Reshape-5's second input (the same reading of 0
    # and -1); the way down stays with onnx.version_converter's adapter
    "Reshape": (5, (Moved("shape", 1),), False),
}


def step_across(
    node: ir.Node,
    old: int,
    b: Builder,
    since: int,
    up: Step,
    down: Step | None,
    normalise: Step | None = None,
) -> str | None:
    """From schema version `old` to the target in one jump over the boundary `since`: `up`
    or `down` (None: that way is elsewhere), then, going below 11 (where negative axes came
    in), `normalise` the axes unless the node was replaced."""
    done = []
    if old < since <= b.opset:
        done.append(up(node, b))
    elif down is not None and old >= since > b.opset:
        done.append(down(node, b))
    if normalise is not None and node.graph is not None and b.opset < 11 <= old:
        done.append(normalise(node, b))
    return "; ".join(d for d in done if d) or None


def adapter(
    since: int, up: Step, down: Step | None, normalise: Step | None = None
) -> Callable[[ir.Node, int, Builder], str | None]:
    """The version adapter of an op whose attributes became inputs at `since` (see
    step_across)."""

    def move(node: ir.Node, old: int, b: Builder) -> str | None:
        return step_across(node, old, b, since, up, down, normalise)

    return move


def move_attributes(node: ir.Node, old: int, b: Builder) -> str | None:
    since, moved, down = MOVED[node.op_type]

    def refuse(node: ir.Node, b: Builder, value: ir.Value, m: Moved) -> str:
        why = "; the output's shape follows it, and no op before that takes it at run time"
        raise run_time_refusal(node, old, b, since, m.attribute, value, why)

    return step_across(
        node,
        old,
        b,
        since,
        lambda node, b: attributes_to_inputs(node, b, moved),
        (lambda node, b: inputs_to_attributes(node, b, moved, refuse)) if down else None,
    )


def _attribute_to_input(node: ir.Node, b: Builder, m: Moved) -> list:
    value = node.attributes.pop(m.attribute).value
    values = [value] if m.scalar else list(value)
    node.resize_inputs(max(len(node.inputs), m.index + 1))
    # an initializer (a Constant in functions); float attributes are float32, so exact
    node.replace_input_with(m.index, b.const(np.array(values, dtype=m.dtype.numpy())))
    return values


def attributes_to_inputs(node: ir.Node, b: Builder, moved: tuple[Moved, ...]) -> str | None:
    present = [m for m in moved if m.attribute in node.attributes]
    for m in present:
        _attribute_to_input(node, b, m)
    if not present:
        return None
    kinds = " and ".join(dict.fromkeys(m.kind for m in present))
    return f"{', '.join(m.attribute for m in present)} attributes moved to {kinds} inputs"


def attribute_to_input(node: ir.Node, b: Builder, name: str, index: int = 1) -> str | None:
    """The list attribute `name` → an int64 initializer (a Constant in functions) at
    input `index`."""
    if name not in node.attributes:
        return None
    ints = _attribute_to_input(node, b, Moved(name, index))
    return f"{name} {ints} moved to an int64 input"


def inputs_to_attributes(
    node: ir.Node,
    b: Builder,
    moved: tuple[Moved, ...],
    run_time: RunTime,
    check: Check | None = None,
    say: Callable[[dict[Moved, list[int]]], str] | None = None,
) -> str | None:
    """The given inputs of `moved`, all constants, → their attributes (`say` words what was
    set; by default their names); the first one computed at run time goes to `run_time`
    instead, before anything is changed."""
    given = [m for m in moved if m.index < len(node.inputs) and node.inputs[m.index] is not None]
    if not given:
        return None
    values = {}
    for m in given:
        value = node.inputs[m.index]
        numbers = m.constant(value)
        if numbers is None:
            return run_time(node, b, value, m)
        if check is not None:
            check(node, b, value, numbers)
        values[m] = numbers
    drop_inputs(node, min(m.index for m in moved))
    for m, numbers in values.items():
        node.attributes[m.attribute] = m.to_attribute(numbers)
    if say is not None:
        return say(values)
    return f"constant {', '.join(m.attribute for m in values)} inputs moved to attributes"


def input_to_attribute(
    node: ir.Node, b: Builder, name: str, run_time: RunTime, check: Check | None = None
) -> str | None:
    """Input 1 → the list attribute `name`, as inputs_to_attributes."""

    def say(values: dict[Moved, list[int]]) -> str:
        return f"constant {name} input moved to the attribute {name}={values[moved[0]]}"

    moved = (Moved(name, 1),)
    return inputs_to_attributes(node, b, moved, run_time, check, say)


def constant_input(
    node: ir.Node, old: int, b: Builder, since: int, name: str, value: ir.Value, why: str = ""
) -> np.ndarray:
    """The constant behind input `name`, which is an attribute before opset `since`;
    refused when it is computed at run time (a graph input's initializer is only a
    default)."""
    tensor = const_tensor(value)
    if tensor is None:
        raise run_time_refusal(node, old, b, since, name, value, why)
    return np.asarray(tensor.numpy())


def run_time_refusal(
    node: ir.Node, old: int, b: Builder, since: int, name: str, value: ir.Value, why: str = ""
) -> Exception:
    """The refusal of input `name` computed at run time, where before opset `since` it is
    an attribute (`why`: what else stands in the way)."""
    return b.refuse(
        f"{node.op_type}-{old}'s {name} {value.name!r} is computed at run time, and before "
        f"opset {since} it is an attribute{why}",
        f"make {name} a constant (an initializer or a Constant node), or target opset "
        f"{since} or later",
    )


ADAPTERS = {op: [move_attributes] for op in MOVED}
