"""A backend profile: what one backend accepts, read from a TOML file (schema in
docs/profiles.md, "Profile files").

    name = "tensorrt"
    description = "one line for `maxlower profiles`"
    kernels = "onnxruntime-cpu"          # optional: also require an onnxruntime CPU kernel
    [ops.ReduceMax]
    types = ["float32", "float16"]       # element types of the op's data input
    constant_axes = true

Every key is checked when the file is read, so a typo is an error, not a silent no-op. The
accelerator keys (max_rank, axis_within_last, graph_output, int64_*) and the sources cited
beside each key are in rules_accel.py; a top-level `opsets = [first, last]` is the window of
model opsets the backend takes, and `target` the version of it the file describes.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import json
from collections.abc import Callable
from pathlib import Path

import onnx
import onnx_ir as ir

from maxlower.errors import ProfileError
from maxlower.profiles.rules_accel import (
    ACCELERATOR_CHECKS,
    ACCELERATOR_KEYS,
    final_remedy,
    parse_sources,
)
from passes.builder import FAMILY
from passes.decompose.max import same_shapes
from passes.decompose.reduce_max import read_axes, reduces_nonempty_set
from passes.extremum import MAX, MIN
from passes.graph_utils import constant_ints
from passes.legalize.rejection import Rejection

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
# Levels of the deepest valid profile: the file, ops, [ops.Op], a key's list.
MAX_DEPTH = 4
NAME_BYTES = 255  # a profile's name becomes part of a file name (<stem>.<name>.onnx)


@dataclasses.dataclass(frozen=True)
class OpRule:
    """The constraints of one op. Family-only keys are rejected on other ops when read."""

    absent: bool = False
    opsets: tuple[int, int] | None = None
    types: frozenset[DT] | None = None
    # Each family key applies to the op named and to its Min twin (FAMILY_KEYS).
    constant_axes: bool = False  # ReduceMax: axes an attribute, initializer or Constant
    single_axis: bool = False  # ReduceMax: exactly one (constant) axis
    nonempty_types: frozenset[DT] = frozenset()  # ReduceMax: these only on a non-empty set
    select_last_index: bool = True  # ArgMax: False = select_last_index=1 is not accepted
    min_rank: int | None = None  # ArgMax/ReduceMax/Max: rank of the data input
    max_inputs: int | None = None  # Max
    broadcast: bool = True  # Max: False = all inputs must have the same static shape
    # Accelerator keys (rules_accel.py says what each means and which ops take it).
    max_rank: int | None = None
    axis_within_last: int | None = None
    graph_output: bool = True
    int64_inputs: bool = True
    int64_outputs: bool = True
    int64_output_cast: bool = False

    def rejection(self, op: str, node: ir.Node, opset: int) -> str | None:
        found = self.rejected_by(op, node, opset)
        return None if found is None else found[1]

    def rejected_by(self, op: str, node: ir.Node, opset: int) -> tuple[str, str] | None:
        """(the key that rejects the node, why), or None when every key accepts it. A final
        rejection (rules_accel.final_remedy) comes first: no rewrite lifts it, so a node it
        applies to is refused whatever else rejects it."""
        found = None
        for key, check in _CHECKS_BY_KEY.items():
            reason = check(self, op, node, opset)
            if reason is not None and final_remedy(key, node) is not None:
                return key, reason
            found = found or (None if reason is None else (key, reason))
        return found


FAMILY_KEYS = {
    "constant_axes": {"ReduceMax"},
    "single_axis": {"ReduceMax"},
    "nonempty_types": {"ReduceMax"},
    "select_last_index": {"ArgMax"},
    "min_rank": set(FAMILY),
    "max_inputs": {"Max"},
    "broadcast": {"Max"},
}
# A key of a Max-family op applies to its Min twin too (passes.extremum: same role).
_TWIN = {getattr(MAX, role): getattr(MIN, role) for role in ("elementwise", "reduce", "arg")}
FAMILY_KEYS = {
    key: ops | {_TWIN[op] for op in ops if op in _TWIN} for key, ops in FAMILY_KEYS.items()
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
# The key each check reads, so that a rejection names its rule (and the rule its source).
_KEY_OF_CHECK = {
    _absent: "absent",
    _opsets: "opsets",
    _types: "types",
    _constant_axes: "constant_axes",
    _single_axis: "single_axis",
    _nonempty: "nonempty_types",
    _select_last_index: "select_last_index",
    _min_rank: "min_rank",
    _max_inputs: "max_inputs",
    _broadcast: "broadcast",
}
_CHECKS_BY_KEY = {_KEY_OF_CHECK[check]: check for check in _CHECKS} | ACCELERATOR_CHECKS
FAMILY_KEYS.update(ACCELERATOR_KEYS)


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
    # The model's opset window ([first, last]): `lower` converts into it first.
    opsets: tuple[int, int] | None = None
    target: str | None = None  # the version of the backend the file describes
    # "[ops.ArgMax] select_last_index" -> the comment beside that key (its source)
    sources: dict[str, str] = dataclasses.field(default_factory=dict, compare=False)

    def rejection(self, node: ir.Node, opset: int) -> Rejection | None:
        rule = self.ops.get(node.op_type)
        found = rule.rejected_by(node.op_type, node, opset) if rule is not None else None
        if found is not None:
            key, reason = found
            where = f"[ops.{node.op_type}] {key}"
            remedy = final_remedy(key, node)
            return Rejection(reason, where, self.sources.get(where, ""), remedy)
        if self.kernels == "onnxruntime-cpu":
            from maxlower.profiles.onnxruntime_kernels import kernel_rejection

            reason = kernel_rejection(node, opset)
            if reason is not None:
                return Rejection(reason, "kernels", self.sources.get("kernels", ""))
        return None

    @property
    def members(self) -> tuple[Profile, ...]:
        return (self,)


TOP_KEYS = ("name", "description", "target", "kernels", "opsets", "ops")


def parse_profile(data: dict, name: str, path: Path | None, text: str | None = None) -> Profile:
    """A Profile from the TOML table `data`; ProfileError for anything off-schema. `text`,
    the file as written, gives each key's source: the comment beside it."""
    where = str(path) if path else name
    if not isinstance(data, dict):
        raise ProfileError(f"{where}: a profile is a table of keys, not {type(data).__name__}")
    if _depth(data) > MAX_DEPTH:
        raise ProfileError(
            f"{where}: arrays or tables nested {_depth(data)} levels deep; a profile has at "
            f"most {MAX_DEPTH} (the file, ops, [ops.Op], a list of types)"
        )
    unknown = set(data) - set(TOP_KEYS)
    if unknown:
        raise ProfileError(
            f"{where}: unknown key(s) {_names(unknown)}; expected {', '.join(TOP_KEYS)}"
            + _suggestion(unknown, list(TOP_KEYS))
        )
    description = data.get("description")
    if not _one_line(description) or not description.strip():
        given = "" if description is None else f", not {_short(description)}"
        raise ProfileError(f"{where}: 'description' (one line of text) is required{given}")
    kernels = data.get("kernels")
    if kernels is not None and (not isinstance(kernels, str) or kernels not in KERNEL_SOURCES):
        raise ProfileError(
            f"{where}: kernels = {_short(kernels)}; expected one of {KERNEL_SOURCES}"
        )
    ops = data.get("ops", {})
    if not isinstance(ops, dict):
        raise ProfileError(f"{where}: 'ops' must be a table of [ops.OpType] tables")
    rules = {_op_name(where, op): _parse_rule(where, op, table) for op, table in ops.items()}
    target = data.get("target")
    if target is not None and (not _one_line(target) or not target.strip()):
        raise ProfileError(f"{where}: target = {_short(target)}; expected one line of text")
    return Profile(
        name=_profile_name(where, data.get("name", name)),
        description=description.strip(),
        path=path,
        kernels=kernels,
        ops=rules,
        opsets=_parse_opsets(f"{where}: opsets", data["opsets"]) if "opsets" in data else None,
        target=target.strip() if target is not None else None,
        sources=parse_sources(text) if text is not None else {},
    )


def _depth(value: object) -> int:
    """Levels of arrays and tables in a parsed TOML value (a scalar is 0). A loop, not
    recursion: a file that tomllib read may still be deep enough to exhaust the stack."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        item, level = stack.pop()
        children = item.values() if isinstance(item, dict) else item
        if isinstance(item, dict | list):
            deepest = max(deepest, level + 1)
            stack.extend((child, level + 1) for child in children)
    return deepest


def _one_line(text: object) -> bool:
    return isinstance(text, str) and text.isprintable()


def _short(value: object) -> str:
    """A value as TOML spells it (true, "text", [1, 2]), on one line, cut at 60 characters."""
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 60 else f"{text[:57]}..."


def _key(key: str) -> str:
    """A key as a message quotes it: 'absnt', or as TOML spells it if it is odd."""
    return repr(key) if key.isprintable() and len(key) <= 60 else _short(key)


def _names(keys) -> str:
    return ", ".join(_key(k) for k in sorted(keys))


def _suggestion(given, known) -> str:
    """'; did you mean ...?' for the first of `given` that is close to one of `known`."""
    for key in sorted(given):
        close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
        close = close or [k for k in known if k.lower() == key.lower()]
        if close:
            which = f" for {_key(key)}" if len(given) > 1 else ""
            return f"; did you mean {close[0]!r}{which}?"
    return ""


def _profile_name(where: str, name: object) -> str:
    """The name, which output file names include: one line, no path separator, at most
    NAME_BYTES bytes of UTF-8."""
    if (
        not _one_line(name)
        or not name.strip()
        or any(c in name for c in "/\\")
        or name in (".", "..")
        or len(name.encode("utf-8", "surrogatepass")) > NAME_BYTES
    ):
        raise ProfileError(
            f"{where}: name = {_short(name)}; expected one line of text without '/' or '\\', "
            f"at most {NAME_BYTES} bytes (it becomes part of output file names)"
        )
    return name


@functools.cache
def _default_domain_ops() -> tuple[str, ...]:
    return tuple(
        sorted({s.name for s in onnx.defs.get_all_schemas_with_history() if s.domain == ""})
    )


def _op_name(where: str, op: str) -> str:
    """An [ops.X] table's X: an op of the default domain (the only one profiles check);
    a misspelling is refused with the op it is closest to."""
    if op not in _default_domain_ops():
        raise ProfileError(
            f"{where}: [ops.{op if op.isprintable() and len(op) <= 60 else _short(op)}] is no "
            "ONNX op of the default domain"
            + (_suggestion([op], _default_domain_ops()) or "; op names are case-sensitive")
        )
    return op


def _parse_rule(where: str, op: str, table: object) -> OpRule:
    if not isinstance(table, dict):
        raise ProfileError(f"{where}: [ops.{op}] must be a table")
    fields = {f.name: f for f in dataclasses.fields(OpRule)}
    values = {}
    for key, value in table.items():
        if key not in fields:
            raise ProfileError(
                f"{where}: [ops.{op}] has unknown key {_key(key)}; expected one of "
                f"{sorted(fields)}" + _suggestion([key], sorted(fields))
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
            raise ProfileError(
                f"{where}: [ops.{op}] {key} = {_short(value)}; expected a list of type names"
            )
        bad = [t for t in value if t not in TYPE_NAMES]
        if bad:
            raise ProfileError(
                f"{where}: [ops.{op}] {key}: unknown type(s) {_short(bad)}; known: "
                f"{', '.join(TYPE_NAMES)}" + _suggestion(bad, list(TYPE_NAMES))
            )
        return frozenset(TYPE_NAMES[t] for t in value)
    if key == "opsets":
        return _parse_opsets(f"{where}: [ops.{op}] opsets", value)
    if key in ("min_rank", "max_inputs", "max_rank", "axis_within_last"):
        if not _is_int(value) or value < 0:
            raise ProfileError(
                f"{where}: [ops.{op}] {key} = {_short(value)}; expected a non-negative integer"
            )
        return value
    if not isinstance(value, bool):
        raise ProfileError(f"{where}: [ops.{op}] {key} = {_short(value)}; expected true or false")
    return value


def _parse_opsets(what: str, value: object) -> tuple[int, int]:
    if (
        not isinstance(value, list)
        or len(value) != 2
        or not all(_is_int(v) for v in value)
        or not 1 <= value[0] <= value[1]
    ):
        raise ProfileError(
            f"{what} must be [first, last], two integers with 1 <= first <= last, "
            f"not {_short(value)}"
        )
    return (value[0], value[1])


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)  # True is an int in Python
