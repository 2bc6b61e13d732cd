"""The profile keys that accelerator targets need (issue 18), and where each rule is from.

    [ops.ArgMax]
    max_rank = 4                # the node's inputs and outputs have rank <= 4 (known)
    axis_within_last = 1        # ArgMax: its axis is one of the last N dims (1: last only)
    graph_output = false        # no output of the node is a graph output
    int64_inputs = false        # no int64 data input
    int64_outputs = false       # no int64 output (ArgMax's always is: refused, see below)
    int64_output_cast = true    # ArgMax: ... unless its one consumer is Cast(to=INT32)

Which ops take a key is said by role (elementwise, reduce, arg), through ROLE_OF, so that
both families take every key (ROLE_OF is built from passes.extremum.FAMILIES).

An int64 value cannot be narrowed exactly (design notes: int64 → int32 or float64 is not
exact), and ArgMax's output is int64 by the spec, so a rejection by an int64 key is final:
no rewrite lifts it, and the node is refused with `final_remedy`'s remedy (exit code 3).

`parse_sources(text)` reads the comment beside each key of a profile file, the source that
every shipped file must cite for every limit (tests/test_profiles_accel.py).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Protocol

import onnx_ir as ir

from passes.extremum import FAMILIES


class OpRule(Protocol):
    """The keys of a profile's rule for one op that these checks read (the fields of
    maxlower.profiles.rules.OpRule, which imports this module)."""

    max_rank: int | None
    axis_within_last: int | None
    graph_output: bool
    int64_inputs: bool
    int64_outputs: bool
    int64_output_cast: bool


DT = ir.DataType

# op_type -> its role in its family, for both families (passes.extremum).
ROLE_OF: dict[str, str] = {
    getattr(family, role): role for family in FAMILIES for role in ("elementwise", "reduce", "arg")
}
_ALL = frozenset({"elementwise", "reduce", "arg"})
KEY_ROLES: dict[str, frozenset[str]] = {
    "max_rank": _ALL,
    "axis_within_last": frozenset({"arg"}),
    "graph_output": _ALL,
    "int64_inputs": _ALL,
    "int64_outputs": _ALL,
    "int64_output_cast": frozenset({"arg"}),
}
# key -> the ops it applies to (what rules.FAMILY_KEYS holds for the other keys)
ACCELERATOR_KEYS: dict[str, set[str]] = {
    key: {op for op, role in ROLE_OF.items() if role in roles} for key, roles in KEY_ROLES.items()
}


def _data_inputs(node: ir.Node) -> list[ir.Value]:
    """The tensors the op compares: every input of an elementwise op, input 0 otherwise
    (not ReduceMax's axes)."""
    values = list(node.inputs) if ROLE_OF.get(node.op_type) == "elementwise" else node.inputs[:1]
    return [v for v in values if v is not None]


def _max_rank(rule: OpRule, op: str, node: ir.Node, opset: int) -> str | None:
    if rule.max_rank is None:
        return None
    values = [*_data_inputs(node), *node.outputs]
    if any(v.shape is None for v in values):
        return f"{op} needs rank ≤ {rule.max_rank}, and a rank is unknown"
    rank = max(len(v.shape) for v in values)
    return f"{op} needs rank ≤ {rule.max_rank}, not {rank}" if rank > rule.max_rank else None


def _axis_within_last(rule: OpRule, op: str, node: ir.Node, opset: int) -> str | None:
    n = rule.axis_within_last
    if n is None:
        return None
    axis = node.attributes.get_int("axis", 0)
    shape = node.inputs[0].shape if node.inputs and node.inputs[0] is not None else None
    which = "the last axis" if n == 1 else f"one of the last {n} axes"
    if shape is None:  # a negative axis counts from the end whatever the rank
        return None if -n <= axis < 0 else f"{op} takes {which} only, and the rank is unknown"
    rank = len(shape)
    if axis + (rank if axis < 0 else 0) >= rank - n:
        return None
    return f"{op} takes {which} only, not axis {axis} of rank {rank}"


def _graph_output(rule: OpRule, op: str, node: ir.Node, opset: int) -> str | None:
    if rule.graph_output:
        return None
    for value in node.outputs:
        if value.is_graph_output():
            return f"{op} may not give a graph output, and it gives {value.name!r}"
    return None


def _int64_inputs(rule: OpRule, op: str, node: ir.Node, opset: int) -> str | None:
    if rule.int64_inputs or all(v.dtype != DT.INT64 for v in _data_inputs(node)):
        return None
    return f"{op} does not take int64 inputs"


def _int64_outputs(rule: OpRule, op: str, node: ir.Node, opset: int) -> str | None:
    if rule.int64_outputs or all(v.dtype != DT.INT64 for v in node.outputs):
        return None
    if rule.int64_output_cast and _only_cast_to_int32(node):
        return None
    unless = " unless its one consumer is a Cast to int32" if rule.int64_output_cast else ""
    return f"{op} may not give an int64 output{unless}"


def _only_cast_to_int32(node: ir.Node) -> bool:
    """Whether the node's one output feeds exactly one node, a Cast to int32, and no graph
    output (the pair a backend can fuse into an int32 ArgMax)."""
    (output,) = node.outputs
    uses = list(output.uses())
    if output.is_graph_output() or len(uses) != 1:
        return False
    consumer = uses[0].node
    return consumer.op_type == "Cast" and consumer.attributes.get_int("to", 0) == DT.INT32


ACCELERATOR_CHECKS: dict[str, Callable[[OpRule, str, ir.Node, int], str | None]] = {
    "max_rank": _max_rank,
    "axis_within_last": _axis_within_last,
    "graph_output": _graph_output,
    "int64_inputs": _int64_inputs,
    "int64_outputs": _int64_outputs,
}


def final_remedy(key: str, node: ir.Node) -> str | None:
    """What would make a node acceptable that a rejection by `key` no rewrite can lift
    (None: the key's rejections are lifted by rewriting)."""
    if key == "int64_outputs" and ROLE_OF.get(node.op_type) == "arg":
        return (
            f"{node.op_type}'s output is int64 by the ONNX spec and no exact rewrite changes "
            "a value's type; cast it to int32 in the source model (torch: "
            "`.argmax(...).to(torch.int32)`), or target a profile that accepts int64 there"
        )
    if key in ("int64_inputs", "int64_outputs"):
        return (
            "int64 has no exact narrower type (int64 → int32 or float64 loses values); "
            "compute it in int32 in the source model if its values fit, or target a profile "
            "that accepts int64"
        )
    return None


_TABLE = re.compile(r"^\s*\[\s*([^\]]+?)\s*\]\s*(#.*)?$")
_KEY = re.compile(r"^\s*([A-Za-z0-9_-]+)\s*=")
_UNCITED = ("name", "description", "target")  # what the file is, not a limit


def parse_sources(text: str) -> dict[str, str]:
    """{rule: its source} for every key of a profile file: the comment after the key's value
    on its line, else the comment lines right above it. Rules are "[ops.ArgMax] min_rank"
    or a top-level key ("opsets", "kernels")."""
    sources: dict[str, str] = {}
    table = ""
    above: list[str] = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("#"):
            above.append(stripped.lstrip("#").strip())
            continue
        header = _TABLE.match(line)
        key = _KEY.match(line)
        if header:
            table = f"[{header.group(1)}] "
        elif key and (table or key.group(1) not in _UNCITED):
            comment = _trailing_comment(line[key.end() :])
            sources[f"{table}{key.group(1)}"] = comment or " ".join(above)
        above = []
    return {rule: source for rule, source in sources.items() if source}


def _trailing_comment(value: str) -> str:
    """The comment after a TOML value on one line ('#' inside a string does not count)."""
    quote = None
    for i, char in enumerate(value):
        if quote is None and char == "#":
            return value[i + 1 :].strip()
        if char in "\"'" and quote in (None, char):
            quote = None if quote == char else char
    return ""


__all__ = ["ACCELERATOR_CHECKS", "ACCELERATOR_KEYS", "ROLE_OF", "final_remedy", "parse_sources"]
