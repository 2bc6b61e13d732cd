"""When a node may simply move to another schema version: the generic relabel check.

    Relu-14(x: float), target 13                    →  Relu-13(x)           (types accepted)
    Reshape-14(x, shape){allowzero=0}, target 13     →  Reshape-13(x, shape)  (default dropped)
    Softmax-1(x: float[1,1000]){axis=1}, target 13   →  Softmax-13(x){axis=1} (last axis)
    Relu-14(x: int8), target 13                      →  not relabelled (int8 only from 14)
    Dropout-7(x) → (y, mask: float), target 10        →  not relabelled (mask becomes bool)

A node can be relabelled when the target version's schema accepts it as it is and means
the same thing by it:
- `onnx.checker.check_node` at the target: attribute names and types, input/output counts;
- the target schema's type and shape inference on the node's input types: type constraints,
  attribute combinations (Split-18 needs `split` or `num_outputs`), and outputs keep the
  element types they had;
- no version in between changed the meaning of what the node uses (`MEANING_CHANGES`).

Before the check, `changed_defaults.attributes_for_target` writes out attributes whose
default (or meaning when absent) differs at the target and drops those the target lacks
where it behaves as they say, and `drop_unused_outputs` removes the trailing optional
outputs that nothing reads.
"""

from __future__ import annotations

import functools

import onnx
import onnx.shape_inference
import onnx_ir as ir

from passes.builder import op_versions
from passes.errors import error_text
from passes.graph_utils import is_used, static_rank

# Versions whose meaning changed while the signature stayed valid: (op, version) → which
# nodes are unaffected (None: none are). Relabelling across them goes through the
# version converter's own adapters instead.
_COERCE_TO_2D = ("Softmax", "LogSoftmax", "Hardmax")  # 13: per-axis instead of flattening
# 7: numpy-style broadcasting replaced the `broadcast` attribute, without which older
# versions need inputs of one shape; a node whose inputs provably have one is unaffected
# (found per op, lazily: reading every schema at import costs 40 ms of start-up).
MEANING_CHANGES = {
    **{(op, 13): "last_axis" for op in _COERCE_TO_2D},
    # (op, 7): "one_shape" for every op that had a `broadcast` attribute: _meaning_changes
    # inputs (X, scales) became (X, roi, scales, sizes), with the coordinate transformation
    # and rounding said; a node spelt so that both mean one thing (resize.py) is unaffected
    ("Resize", 11): "resize_pinned",
    ("Scan", 9): None,  # batch axis and sequence_lens removed
    # scale and bias per group at 18, per channel from 21 (one shape when the groups are
    # the channels, but 21 also computes in stash_type's precision)
    ("GroupNormalization", 21): None,
}


@functools.cache
def _meaning_changes(op_type: str) -> dict[int, str | None]:
    """MEANING_CHANGES of one op, with 7 → "one_shape" where a version before 7 had the
    legacy `broadcast` attribute (7: numpy-style broadcasting replaced it)."""
    changes = {version: u for (op, version), u in MEANING_CHANGES.items() if op == op_type}
    if any(
        "broadcast" in onnx.defs.get_schema(op_type, v, "").attributes
        for v in op_versions(op_type)
        if v < 7
    ):
        changes[7] = "one_shape"
    return changes


# String attribute values that only exist from some version on: (op, attribute, value) → since.
NEW_ATTRIBUTE_VALUES = {
    ("Resize", "coordinate_transformation_mode", "half_pixel_symmetric"): 19,
    ("Resize", "mode", "cubic"): 11,
    ("Pad", "mode", "wrap"): 19,
}


def drop_unused_outputs(node: ir.Node, schema) -> bool:
    """Remove trailing optional outputs nothing reads (Dropout's mask, say), whose type may
    differ between versions."""
    if schema.outputs and schema.outputs[-1].option == _VARIADIC:
        return False  # Loop/Scan/Split outputs are positional, not optional
    count = len(node.outputs)
    while count > max(schema.min_output, 1):
        value = node.outputs[count - 1]
        if is_used(value) or value.is_graph_output():
            break
        count -= 1
    if count == len(node.outputs):
        return False
    node.resize_outputs(count)
    return True


def control_flow_problem(node: ir.Node, target: int) -> str | None:
    """Why If/Loop/Scan at the target would not accept the node's outputs, or None: each
    known output type must be one the target schema allows, and before If-11 both branches
    must give outputs of one shape: the same rank and no two known dims that differ (as
    If-1's own checker rule: a model at opset 10 whose branches give [?] and [?] is valid,
    and one converted up and back must be too)."""
    schema = onnx.defs.get_schema(node.op_type, target, "")
    allowed = {c.type_param_str: set(c.allowed_type_strs) for c in schema.type_constraints}
    for kind, values, formals in (
        ("inputs", node.inputs, schema.inputs),
        ("outputs", node.outputs, schema.outputs),
    ):
        for i, value in enumerate(values):
            formal = formals[min(i, len(formals) - 1)]
            type_str = _type_str(value.type) if value is not None else None
            if type_str is None or formal.type_str not in allowed:
                continue
            if type_str not in allowed[formal.type_str]:
                return f"{node.op_type}-{schema.since_version} does not accept {type_str} {kind}"
    if node.op_type == "If" and schema.since_version < 11:
        then_graph = node.attributes["then_branch"].as_graph()
        else_graph = node.attributes["else_branch"].as_graph()
        for a, b in zip(then_graph.outputs, else_graph.outputs):
            if not _one_shape(a.shape, b.shape):
                return (
                    f"If before opset 11 needs both branches to give one shape, and "
                    f"{a.name!r} / {b.name!r} are {a.shape} / {b.shape}"
                )
    return None


def _type_str(type_: ir.TypeProtocol | None) -> str | None:
    """The type as onnx.defs writes it in type constraints: tensor(float),
    seq(tensor(int64)), optional(seq(tensor(float))); None when unknown."""
    if isinstance(type_, ir.TensorType):
        return f"tensor({type_.dtype.name.lower()})"
    if isinstance(type_, (ir.SequenceType, ir.OptionalType)):
        inner = _type_str(type_.elem_type)
        kind = "seq" if isinstance(type_, ir.SequenceType) else "optional"
        return f"{kind}({inner})" if inner is not None else None
    return None


def _one_shape(a: ir.Shape | None, b: ir.Shape | None) -> bool:
    """Whether two branch outputs can be of one shape: known ranks that agree, and no two
    static dims that differ."""
    if a is None or b is None or len(a) != len(b):
        return False
    return all(not (isinstance(x, int) and isinstance(y, int)) or x == y for x, y in zip(a, b))


def meaning_changes_between(op_type: str, old: int, new: int) -> list[int]:
    """The versions between `old` and `new` at which the op's meaning changed."""
    low, high = sorted((old, new))
    return [v for v in _meaning_changes(op_type) if low < v <= high]


def meaning_change(node: ir.Node, old: int, new: int) -> str | None:
    """Why the node would mean something else at `new`, or None."""
    low, high = sorted((old, new))
    for version, unaffected in _meaning_changes(node.op_type).items():
        if not low < version <= high:
            continue
        if unaffected == "last_axis" and normalises_last_axis_only(node, old):
            continue
        if unaffected == "one_shape" and (
            _legacy_broadcast_said(node, old, new) or _inputs_of_one_static_shape(node)
        ):
            continue
        if unaffected == "resize_pinned" and _resize_pinned(node, new):
            continue
        why = {
            "last_axis": " and this node's axis is not its input's last axis",
            "one_shape": " (broadcasting) and its inputs are not provably of one shape",
        }
        op = node.op_type
        return f"{op}'s meaning changed at version {version} (between {old} and {new})" + (
            why.get(unaffected, "")
        )
    for (op, attribute, value), since in NEW_ATTRIBUTE_VALUES.items():
        attr = node.attributes.get(attribute)
        if op == node.op_type and attr is not None and attr.value == value and new < since:
            return f"{attribute}={value!r} only exists from {op}-{since}"
    return None


def _resize_pinned(node: ir.Node, new: int) -> bool:
    """Resize spelt for the side of opset 11 it goes to by passes/version/resize.py: the
    asymmetric transformation written out (11 and later), or (X, scales) alone (10)."""
    if new >= 11:
        attr = node.attributes.get("coordinate_transformation_mode")
        return attr is not None and attr.value == "asymmetric"
    return len(node.inputs) == 2


def _legacy_broadcast_said(node: ir.Node, old: int, new: int) -> bool:
    """Upward, once `legacy.legacy_broadcast_to_numpy` has taken `broadcast` off: without
    it the old op is defined only on inputs of one shape, where numpy's broadcasting agrees;
    with it, the adapter has lined the inputs up for numpy. (Downward, numpy's broadcasting
    of inputs of different shapes has no such form.)"""
    return old < new and "broadcast" not in node.attributes


def _inputs_of_one_static_shape(node: ir.Node) -> bool:
    shapes = [v.shape for v in node.inputs if v is not None]
    if any(shape is None or not all(isinstance(d, int) for d in shape) for shape in shapes):
        return False
    return all(shape == shapes[0] for shape in shapes)


def normalises_last_axis_only(node: ir.Node, version: int) -> bool:
    """Whether Softmax/LogSoftmax/Hardmax-`version` normalises its input's last axis alone,
    so that the coercion to 2-D before 13 and the single axis from 13 agree: its axis is -1
    (before 13 that coerces to [d0*...*d(r-2), d(r-1)], whatever the rank r), or the dims
    after its axis are all 1 (or there are none)."""
    attr = node.attributes.get("axis")
    if attr is not None and attr.is_ref():  # (its value is the call's: unknown here)
        return False
    axis = attr.value if attr is not None else (1 if version < 13 else -1)
    if axis == -1:
        return True
    x = node.inputs[0]
    rank = static_rank(x)
    if rank is None:
        return False
    axis = axis + rank if axis < 0 else axis
    return all(d == 1 for d in list(x.shape)[axis + 1 :])


def schema_problem(node: ir.Node, old: int, target: int, ir_version: int) -> str | None:
    """Why the target opset's schema does not accept `node` as it is, or None. Unused
    outputs whose element type differs at the target take the target's type."""
    proto = ir.serde.serialize_node(node)
    ctx = onnx.checker.C.CheckerContext()
    ctx.ir_version = ir_version
    ctx.opset_imports = {"": target}
    try:
        onnx.checker.check_node(proto, ctx)
    except onnx.checker.ValidationError as error:
        return error_text(error)
    inputs = [v for v in node.inputs if v is not None]
    if any(v.type is None for v in inputs):
        return _unknown_types_problem(node, old, target)
    schema = onnx.defs.get_schema(node.op_type, target, "")
    types = {v.name: ir.serde.serialize_type(v.type) for v in inputs}
    try:
        inferred = onnx.shape_inference.infer_node_outputs(
            schema, proto, types, opset_imports=[onnx.helper.make_opsetid("", target)]
        )
    except Exception as error:  # InferenceError, or a type constraint it rejects
        return error_text(error)
    retyped = {}
    for value in node.outputs:
        found = inferred.get(value.name)
        if found is None or value.dtype is None or not found.HasField("tensor_type"):
            continue
        dtype = ir.DataType(found.tensor_type.elem_type)
        if dtype == value.dtype:
            continue
        if is_used(value) or value.is_graph_output():
            return f"its output {value.name!r} would be {dtype.name}, not {value.dtype.name}"
        retyped[value] = dtype
    for value, dtype in retyped.items():
        value.dtype = dtype
    return None


def _unknown_types_problem(node: ir.Node, old: int, target: int) -> str | None:
    """Without input types: accepted when every type constraint is at least as wide at the
    target as at the node's current version."""
    new_schema = onnx.defs.get_schema(node.op_type, target, "")
    old_schema = onnx.defs.get_schema(node.op_type, old, "")
    wide = {c.type_param_str: set(c.allowed_type_strs) for c in new_schema.type_constraints}
    for constraint in old_schema.type_constraints:
        missing = set(constraint.allowed_type_strs) - wide.get(constraint.type_param_str, set())
        if missing:
            names = sorted(missing)
            more = f" and {len(names) - 3} more" if len(names) > 3 else ""
            return (
                f"its input types are unknown and {constraint.type_param_str} lacks "
                f"{', '.join(names[:3])}{more} there"
            )
    return None


_VARIADIC = onnx.defs.OpSchema.FormalParameterOption.Variadic
