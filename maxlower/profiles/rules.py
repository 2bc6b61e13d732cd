"""A backend profile: what one backend accepts, read from a TOML file (schema in README.md).

    name = "tensorrt"
    description = "one line for `maxlower profiles`"
    kernels = "onnxruntime-cpu"          # optional: also require an onnxruntime CPU kernel
    [ops.ReduceMax]
    types = ["float32", "float16"]       # element types of the op's data input
    constant_axes = true

Every key is checked when the file is read, so a typo is an error, not a silent no-op.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

import onnx
import onnx_ir as ir

from maxlower.api import InvalidModelError
from passes.builder import FAMILY
from passes.decompose.max import same_shapes
from passes.decompose.reduce_max import read_axes, reduces_nonempty_set
from passes.graph_utils import constant_ints

DT = ir.DataType
TYPE_NAMES: dict[str, DT] = {
    "bool": DT.BOOL,
    "int8": DT.INT8,
    "int16": DT.INT16,
    "int32": DT.INT32,
    "int64": DT.INT64,
    "uint8": DT.UINT8,
    "uint16": DT.UINT16,
    "uint32": DT.UINT32,
    "uint64": DT.UINT64,
    "float16": DT.FLOAT16,
    "bfloat16": DT.BFLOAT16,
    "float32": DT.FLOAT,
    "float": DT.FLOAT,
    "float64": DT.DOUBLE,
    "double": DT.DOUBLE,
}
KERNEL_SOURCES = ("onnxruntime-cpu",)


class ProfileError(InvalidModelError):
    """A profile that does not exist, cannot be read or does not follow the schema (bad
    input, like an unusable model: exit code 2 on the command line)."""


@dataclasses.dataclass(frozen=True)
class OpRule:
    """The constraints of one op. Family-only keys are rejected on other ops when read."""

    absent: bool = False
    opsets: tuple[int, int] | None = None
    types: frozenset[DT] | None = None
    constant_axes: bool = False  # ReduceMax: axes an attribute, initializer or Constant
    single_axis: bool = False  # ReduceMax: exactly one (constant) axis
    nonempty_types: frozenset[DT] = frozenset()  # ReduceMax: these only on a non-empty set
    select_last_index: bool = True  # ArgMax: False = select_last_index=1 is not accepted
    min_rank: int | None = None  # ArgMax/ReduceMax/Max: rank of the data input
    max_inputs: int | None = None  # Max
    broadcast: bool = True  # Max: False = all inputs must have the same static shape

    def rejection(self, op: str, node: ir.Node, opset: int) -> str | None:
        for check in _CHECKS:
            reason = check(self, op, node, opset)
            if reason is not None:
                return reason
        return None


FAMILY_KEYS = {
    "constant_axes": {"ReduceMax"},
    "single_axis": {"ReduceMax"},
    "nonempty_types": {"ReduceMax"},
    "select_last_index": {"ArgMax"},
    "min_rank": set(FAMILY),
    "max_inputs": {"Max"},
    "broadcast": {"Max"},
}


def _absent(rule: OpRule, op: str, node: ir.Node, opset: int) -> str | None:
    return f"{op} is absent" if rule.absent else None


def _opsets(rule: OpRule, op: str, node: ir.Node, opset: int) -> str | None:
    if rule.opsets and not rule.opsets[0] <= opset <= rule.opsets[1]:
        return f"{op} only at opsets {rule.opsets[0]}-{rule.opsets[1]}, not {opset}"
    return None


def _types(rule: OpRule, op: str, node: ir.Node, opset: int) -> str | None:
    if rule.types is None:
        return None
    value = data_input(node, opset)
    if value is None or value.dtype is None or value.dtype in rule.types:
        return None
    return f"{op} does not take {value.dtype.name}"


def _constant_axes(rule: OpRule, op: str, node: ir.Node, opset: int) -> str | None:
    if not rule.constant_axes or len(node.inputs) < 2 or node.inputs[1] is None:
        return None
    if constant_ints(node.inputs[1]) is None:
        return f"{op} needs constant axes, and these are computed at run time"
    return None


def _single_axis(rule: OpRule, op: str, node: ir.Node, opset: int) -> str | None:
    if not rule.single_axis:
        return None
    axes, _, _ = read_axes(node)
    if axes is None or len(axes) != 1:
        return f"{op} reduces one constant axis at a time"
    return None


def _nonempty(rule: OpRule, op: str, node: ir.Node, opset: int) -> str | None:
    dtype = node.inputs[0].dtype if node.inputs else None
    if dtype in rule.nonempty_types and not reduces_nonempty_set(node):
        return f"{dtype.name} {op} fails on an empty set, and this one may reduce one"
    return None


def _select_last_index(rule: OpRule, op: str, node: ir.Node, opset: int) -> str | None:
    if not rule.select_last_index and node.attributes.get_int("select_last_index", 0) == 1:
        return f"{op} does not take select_last_index=1"
    return None


def _min_rank(rule: OpRule, op: str, node: ir.Node, opset: int) -> str | None:
    if rule.min_rank is None:
        return None
    shape = node.inputs[0].shape
    if shape is None:
        return f"{op} needs rank ≥ {rule.min_rank}, and the rank is unknown"
    if len(shape) < rule.min_rank:
        return f"{op} needs rank ≥ {rule.min_rank}, not {len(shape)}"
    return None


def _max_inputs(rule: OpRule, op: str, node: ir.Node, opset: int) -> str | None:
    if rule.max_inputs is not None and len(node.inputs) > rule.max_inputs:
        return f"{op} takes at most {rule.max_inputs} inputs, not {len(node.inputs)}"
    return None


def _broadcast(rule: OpRule, op: str, node: ir.Node, opset: int) -> str | None:
    if rule.broadcast or len(node.inputs) < 2 or same_shapes(list(node.inputs)):
        return None
    return f"{op} does not broadcast, and its inputs' shapes are not provably equal"


_CHECKS: list[Callable[[OpRule, str, ir.Node, int], str | None]] = [
    _absent,
    _opsets,
    _types,
    _constant_axes,
    _single_axis,
    _nonempty,
    _select_last_index,
    _min_rank,
    _max_inputs,
    _broadcast,
]


def data_input(node: ir.Node, opset: int) -> ir.Value | None:
    """The input whose type `types` constrains: the first one bound to a type parameter that
    allows more than one type (Where's x rather than its bool condition; input 0 mostly)."""
    try:
        schema = onnx.defs.get_schema(node.op_type, opset, "")
    except onnx.defs.SchemaError:
        return node.inputs[0] if node.inputs else None
    multi = {c.type_param_str for c in schema.type_constraints if len(c.allowed_type_strs) > 1}
    for i, value in enumerate(node.inputs):
        formal = schema.inputs[min(i, len(schema.inputs) - 1)] if schema.inputs else None
        if formal is not None and formal.type_str in multi:
            return value
    return node.inputs[0] if node.inputs else None


@dataclasses.dataclass(frozen=True)
class Profile:
    """A backend profile; `rejection(node, opset)` says why a node is not accepted."""

    name: str
    description: str
    path: Path | None = None
    kernels: str | None = None
    ops: dict[str, OpRule] = dataclasses.field(default_factory=dict)

    def rejection(self, node: ir.Node, opset: int) -> str | None:
        rule = self.ops.get(node.op_type)
        if rule is not None and (reason := rule.rejection(node.op_type, node, opset)):
            return reason
        if self.kernels == "onnxruntime-cpu":
            from maxlower.profiles.onnxruntime_kernels import kernel_rejection

            return kernel_rejection(node, opset)
        return None


def parse_profile(data: dict, name: str, path: Path | None) -> Profile:
    """A Profile from the TOML table `data`; ProfileError for anything off-schema."""
    where = str(path) if path else name
    unknown = set(data) - {"name", "description", "kernels", "ops"}
    if unknown:
        raise ProfileError(
            f"{where}: unknown key(s) {sorted(unknown)}; expected name, description, kernels, ops"
        )
    description = data.get("description")
    if not isinstance(description, str) or not description.strip():
        raise ProfileError(f"{where}: 'description' (one line of text) is required")
    kernels = data.get("kernels")
    if kernels is not None and kernels not in KERNEL_SOURCES:
        raise ProfileError(f"{where}: kernels = {kernels!r}; expected one of {KERNEL_SOURCES}")
    ops = data.get("ops", {})
    if not isinstance(ops, dict):
        raise ProfileError(f"{where}: 'ops' must be a table of [ops.OpType] tables")
    rules = {op: _parse_rule(where, op, table) for op, table in ops.items()}
    return Profile(
        name=str(data.get("name", name)),
        description=description.strip(),
        path=path,
        kernels=kernels,
        ops=rules,
    )


def _parse_rule(where: str, op: str, table: object) -> OpRule:
    if not isinstance(table, dict):
        raise ProfileError(f"{where}: [ops.{op}] must be a table")
    fields = {f.name: f for f in dataclasses.fields(OpRule)}
    values = {}
    for key, value in table.items():
        if key not in fields:
            raise ProfileError(
                f"{where}: [ops.{op}] has unknown key {key!r}; expected one of {sorted(fields)}"
            )
        if key in FAMILY_KEYS and op not in FAMILY_KEYS[key]:
            raise ProfileError(
                f"{where}: [ops.{op}] {key} only applies to {', '.join(sorted(FAMILY_KEYS[key]))}"
            )
        values[key] = _parse_value(where, op, key, value)
    return OpRule(**values)


def _parse_value(where: str, op: str, key: str, value: object) -> object:
    if key in ("types", "nonempty_types"):
        if not isinstance(value, list) or not all(isinstance(t, str) for t in value):
            raise ProfileError(f"{where}: [ops.{op}] {key} must be a list of type names")
        bad = [t for t in value if t not in TYPE_NAMES]
        if bad:
            raise ProfileError(
                f"{where}: [ops.{op}] {key}: unknown type(s) {bad}; known: {', '.join(TYPE_NAMES)}"
            )
        return frozenset(TYPE_NAMES[t] for t in value)
    if key == "opsets":
        if (
            not isinstance(value, list)
            or len(value) != 2
            or not all(isinstance(v, int) for v in value)
            or value[0] > value[1]
        ):
            raise ProfileError(f"{where}: [ops.{op}] opsets must be [first, last]")
        return (value[0], value[1])
    if key in ("min_rank", "max_inputs"):
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ProfileError(f"{where}: [ops.{op}] {key} must be a non-negative integer")
        return value
    if not isinstance(value, bool):
        raise ProfileError(f"{where}: [ops.{op}] {key} must be true or false")
    return value
