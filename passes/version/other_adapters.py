"""Exact rewrites that bring a non-family node into a form the target schema accepts.

    Split-18(x: [.., 6, ..]){num_outputs=3}, to ≤ 17   →  Split(x)                (equal parts)
    Split-18(x: [.., 7, ..]){num_outputs=3}, to 13..17 →  Split(x, [3, 3, 1])
    Split-18(x: [.., 7, ..]){num_outputs=3}, to ≤ 12   →  Split(x){split=[3, 3, 1]}
    Split-13(x) (equal parts), to ≥ 18                  →  Split(x){num_outputs=N}
    Resize-13(x, "", "", sizes), to 11..12             →  Resize(x, roi=[], scales=[], sizes)
    Reshape-14(x, const s){allowzero=1}, to ≤ 13, no 0 in s  →  Reshape(x, s)
    Shape-15(x){start=1}, to ≤ 14                       →  Slice(Shape(x), [1], [max], [0])
    Softmax-13(x: rank 4){axis=1}, to ≤ 12              →  Transpose → Softmax{axis=3} → Transpose
    Softmax-13(x: any rank){axis=-1}, to ≤ 12           →  Softmax-12(x){axis=-1}  (a relabel)
    Softmax-11(x){axis=1}, to ≥ 13                      →  Flatten{axis=1} → Softmax{axis=1}
                                                           → Reshape(·, Shape(x))
    Dropout-12(x, const r, training_mode absent or const False), to ≤ 11
                                                        →  Dropout(x){ratio=r}
    Dropout-7(x){ratio=r}, to ≥ 12                      →  Dropout(x, float32 r)
    Cast-6(x){to=1}, to ≤ 5                            →  Cast-1(x){to="FLOAT"} (and back)
    Clip-6(x){min=a, max=b}, to ≥ 11                     →  Clip(x, a, b)  (absent: ±FLT_MAX)
    Clip-11(x, const a, const b), to ≤ 10                →  Clip(x){min=a, max=b}  (absent: ±inf)
    Slice-10(x, const starts, ends, axes, steps 1), to ≤ 9  →  Slice(x){starts, ends, axes}
    Slice-10(x, const ..., steps k on static dims), to ≤ 9  →  Gather(x, indices) per such axis

These are the steps where relabelling alone is not enough and `onnx.version_converter`
has no adapter, or a wrong one (it relabels Softmax-13 → 12 with axis=1 on a rank-4 input,
which then normalises over axes 1..3). Softmax, LogSoftmax and Hardmax coerced their input
to 2-D at [axis, ...) before opset 13, and work on one axis from 13: the forms above make
the node normalise over its last axis, where both agree. Each adapter only changes how the
node spells the same thing; afterwards the generic relabel check decides as for any node.
An adapter returns a description of what it did, or None when the node did not need it.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import onnx
import onnx_ir as ir

from passes.builder import Builder
from passes.graph_utils import (
    const_tensor,
    constant_ints,
    drop_inputs,
    is_used,
    remove_if_orphaned,
    require_dtype,
    require_rank,
    static_dim,
    static_rank,
)
from passes.version.reduce_axes import all_dims_positive
from passes.version.relabel import normalises_last_axis_only


def split_num_outputs_to_sizes(node: ir.Node, old: int, b: Builder) -> str | None:
    """Split-18's `num_outputs` (the last part may be smaller) as explicit sizes."""
    attr = node.attributes.get("num_outputs")
    if attr is None or b.opset >= 18:
        return None
    x = node.inputs[0]
    rank = require_rank(node, x, "num_outputs must become split sizes along the axis")
    axis = node.attributes["axis"].value if "axis" in node.attributes else 0
    axis = axis + rank if axis < 0 else axis
    size = static_dim(x, axis)
    if size is None:
        raise b.refuse(
            f"Split-{old}'s num_outputs has no equivalent before opset 18 unless the size of "
            f"axis {axis} of {x.name!r} is known, and it is not static",
            "give the input a static shape along the split axis, or target opset 18 or later",
        )
    count = attr.value
    del node.attributes["num_outputs"]
    if size % count == 0:
        return f"num_outputs={count} dropped: {size} splits evenly"
    part = -(-size // count)
    sizes = [part] * (count - 1) + [size - part * (count - 1)]
    if b.opset >= 13:
        node.resize_inputs(2)
        node.replace_input_with(1, b.const(np.array(sizes, dtype=np.int64)))
    else:
        node.attributes["split"] = ir.AttrInt64s("split", sizes)
    return f"num_outputs={count} → split sizes {sizes}"


def split_equal_parts_to_num_outputs(node: ir.Node, old: int, b: Builder) -> str | None:
    """Split before 18 without `split` cuts equal parts, one per output; Split-18 wants
    that count said as num_outputs (where the parts are equal both agree, and where they
    cannot be the older Split has no defined result)."""
    if old >= 18 or b.opset < 18 or "num_outputs" in node.attributes:
        return None
    if "split" in node.attributes or (len(node.inputs) > 1 and node.inputs[1] is not None):
        return None
    node.attributes["num_outputs"] = ir.AttrInt64("num_outputs", len(node.outputs))
    return f"equal parts → num_outputs={len(node.outputs)}"


def resize_optional_inputs(node: ir.Node, old: int, b: Builder) -> str | None:
    """Resize-11/12 need roi and scales present; an empty tensor says 'not given'."""
    if b.opset >= 13 or old < 13:
        return None
    filled = []
    for index, name in ((1, "roi"), (2, "scales")):
        if index < len(node.inputs) and node.inputs[index] is None:
            node.replace_input_with(index, b.const(np.zeros([0], dtype=np.float32)))
            filled.append(name)
    return f"empty {' and '.join(filled)} given" if filled else None


def reshape_allowzero(node: ir.Node, old: int, b: Builder) -> str | None:
    """allowzero=1 only differs from the old Reshape when the shape holds a 0."""
    attr = node.attributes.get("allowzero")
    if attr is None or attr.value == 0 or b.opset >= 14:
        return None
    shape = constant_ints(node.inputs[1])
    if shape is None or 0 in shape:
        raise b.refuse(
            "allowzero=1 (a 0 in the shape means an empty dimension) has no equivalent "
            "before opset 14 unless the shape is a constant without 0, and "
            + ("it is computed at run time" if shape is None else f"it is {shape}"),
            "target opset 14 or later",
        )
    del node.attributes["allowzero"]
    return "allowzero=1 dropped: the constant shape holds no 0"


def shape_start_end_to_slice(node: ir.Node, old: int, b: Builder) -> str | None:
    """Shape-15's start/end: the whole shape, then a Slice of it."""
    if b.opset >= 15 or not {"start", "end"} & set(node.attributes):
        return None
    start = node.attributes.pop("start").value if "start" in node.attributes else 0
    end = node.attributes.pop("end").value if "end" in node.attributes else None
    bounds = {
        "starts": [start],
        "ends": [end if end is not None else np.iinfo(np.int64).max],
        "axes": [0],
    }
    if b.opset < 10:  # Slice-1 takes them as attributes
        _follow_output(b, node, "Slice", [], {k: ir.AttrInt64s(k, v) for k, v in bounds.items()})
    else:
        inputs = [b.const(np.array(v, dtype=np.int64)) for v in bounds.values()]
        _follow_output(b, node, "Slice", inputs, {})
    return f"start={start}, end={end}: Shape, then Slice"


def softmax_on_last_axis(node: ir.Node, old: int, b: Builder) -> str | None:
    """Softmax/LogSoftmax/Hardmax across opset 13: make the node normalise its last axis."""
    if (old < 13) == (b.opset < 13):
        return None
    if normalises_last_axis_only(node, old):
        return None  # the relabel is exact
    x = node.inputs[0]
    rank = static_rank(x)
    attr = node.attributes.get("axis")
    axis = attr.value if attr is not None else (1 if old < 13 else -1)
    if rank is not None:
        axis = axis + rank if axis < 0 else axis
    if old < 13:  # coerced to 2-D at axis: say so with Flatten, and restore the shape
        flat = b.op("Flatten", [x], {"axis": axis}, dtype=x.dtype, shape=ir.Shape([None, None]))
        node.replace_input_with(0, flat)
        node.attributes["axis"] = ir.AttrInt64("axis", 1)
        shape = b.op("Shape", [x], dtype=ir.DataType.INT64)
        if all_dims_positive(x):
            _follow_output(b, node, "Reshape", [shape], {})
            return f"axis {axis}: Flatten, then Reshape back to the input's shape"
        if b.opset >= 14:  # a 0 in the shape is an empty dim only with allowzero=1
            _follow_output(b, node, "Reshape", [shape], {"allowzero": ir.AttrInt64("allowzero", 1)})
            return f"axis {axis}: Flatten, then Reshape (allowzero=1) back to the input's shape"
        _reshape_back_unless_empty(b, node, x, shape)
        return (
            f"axis {axis}: Flatten, then Reshape back to the input's shape (an empty input "
            "as it is: Reshape-13 reads a 0 in the shape as a copy of the input's dim)"
        )
    if rank is None:
        raise b.refuse(
            f"{node.op_type}-{old} normalises one axis, and the form before opset 13 needs a "
            f"Transpose to make it the last one, which needs the rank of {x.name!r}",
            "give the input a static rank, or target opset 13 or later",
        )
    perm = [i for i in range(rank) if i != axis] + [axis]
    dims = [list(x.shape)[i] for i in perm]
    moved = b.op("Transpose", [x], {"perm": perm}, dtype=x.dtype, shape=ir.Shape(dims))
    node.replace_input_with(0, moved)
    node.attributes["axis"] = ir.AttrInt64("axis", rank - 1)
    _follow_output(b, node, "Transpose", [], {"perm": list(np.argsort(perm).tolist())})
    return f"axis {axis} moved last with Transpose, and back"


def _reshape_back_unless_empty(b: Builder, node: ir.Node, x: ir.Value, shape: ir.Value) -> None:
    """After `node` (which normalised x flattened to 2-D), If(Size(x) == 0) then x, else
    Reshape(node's output, Shape(x)). Before opset 14 Reshape reads a 0 in `shape` as "copy
    the input's dim", which the 2-D input may not have (x of [2, 3, 0] flattened at 1 is
    [2, 0]: dim 2 does not exist); an empty x is its own Softmax, so it is taken as it is."""
    size = b.op("Size", [x], dtype=ir.DataType.INT64)
    empty = b.op("Equal", [size, b.const(np.array(0, dtype=np.int64))], dtype=ir.DataType.BOOL)
    out = node.outputs[0]
    uses = list(out.uses())
    back = b.sub_builder()
    restored = back.op("Reshape", [out, shape], dtype=x.dtype)
    after = b.sub_builder()
    result = after.if_(empty, (b.sub_builder(), x), (back, restored), x.dtype)
    _hand_over_output(b, node, result, uses, "reshape")
    anchor = node
    for follower in after.nodes:
        node.graph.insert_after(anchor, follower)
        anchor = follower


def _follow_output(
    b: Builder, node: ir.Node, op_type: str, extra_inputs: list, attributes: dict, suffix: str = ""
) -> None:
    """Insert `op_type(node's output, *extra_inputs)` after `node`; it takes over the
    output's name, type and users. `suffix` tells apart several followers' names; the
    names come from `b`'s namer, fresh in the model."""
    out = node.outputs[0]
    uses = list(out.uses())
    follower = ir.node(
        op_type,
        [out, *extra_inputs],
        attributes=attributes,
        name=b.namer.unique(f"{node.name}__{op_type}{suffix}") if node.name else None,
    )
    _hand_over_output(b, node, follower.outputs[0], uses, f"{op_type.lower()}{suffix}")
    node.graph.insert_after(node, follower)


def _hand_over_output(b: Builder, node: ir.Node, new: ir.Value, uses: list, label: str) -> None:
    """`new` takes over `node`'s output: its users (`uses`, taken before `new` read it), its
    place among the graph's outputs, its name, type and shape; the output is renamed
    `<name>__before_<label>`, fresh in the model."""
    out = node.outputs[0]
    for user, index in uses:
        user.replace_input_with(index, new)
    graph = node.graph
    if out.is_graph_output():
        for i, value in enumerate(graph.outputs):
            if value is out:
                graph.outputs[i] = new
    name, new.dtype, new.shape = out.name, out.dtype, out.shape
    out.name, out.shape = b.namer.unique(f"{name}__before_{label}"), None
    new.name = name


_SOFTMAX_LIKE = [softmax_on_last_axis]


# op → adapters tried, in order, before the relabel check
def dropout_inputs_to_attribute(node: ir.Node, old: int, b: Builder) -> str | None:
    """Dropout-12 took `ratio` and `training_mode` as inputs; before 12 the ratio is an
    attribute and there is no training mode. Out of training mode the output is the input
    and the mask all True, whatever the ratio, so the node converts exactly when
    training_mode is absent or a constant False; a constant ratio is kept as the
    attribute (a ratio computed at run time cannot be, and changes nothing)."""
    if old < 12 or b.opset >= 12 or len(node.inputs) < 2:
        return None
    ratio = node.inputs[1]
    training = node.inputs[2] if len(node.inputs) > 2 else None
    if training is not None:
        flag = None if training.is_graph_input() else const_tensor(training)
        if flag is None or bool(np.asarray(flag.numpy()).reshape(-1)[0]):
            raise b.refuse(
                f"Dropout-{old}'s training_mode input {training.name!r} is not a constant "
                "False, and no Dropout before opset 12 has a training mode",
                "give training_mode as a constant False (or leave it out), or target "
                "opset 12 or later",
            )
    mask_note = _dropout_mask_as_constant(node, b)
    value = None if ratio is None or ratio.is_graph_input() else const_tensor(ratio)
    node.resize_inputs(1)
    remove_if_orphaned(node.graph, *(v for v in (ratio, training) if v is not None))
    if value is None:
        return f"ratio input dropped (out of training mode it changes nothing){mask_note}"
    number = float(np.asarray(value.numpy()).reshape(-1)[0])
    node.attributes["ratio"] = ir.AttrFloat32("ratio", number)
    dropped = "; training_mode (constant False) dropped" if training is not None else ""
    return f"ratio input {number:g} → attribute{dropped}{mask_note}"


def dropout_ratio_to_input(node: ir.Node, old: int, b: Builder) -> str | None:
    """Dropout's `ratio` attribute is Dropout-12's `ratio` input: the same float32 value,
    as a scalar constant (training_mode stays absent: False, as before 12 outside training)."""
    if old >= 12 or b.opset < 12 or "ratio" not in node.attributes:
        return None
    number = node.attributes.pop("ratio").value
    node.resize_inputs(2)
    node.replace_input_with(1, b.const(np.array(number, dtype=np.float32)))
    return f"ratio attribute {number:g} → input"


def _dropout_mask_as_constant(node: ir.Node, b: Builder) -> str:
    """Out of training mode Dropout-12's mask is all True; before 12 onnxruntime's kernels
    give all False (onnx.reference all True), and before 10 the mask is not bool. A mask
    that is read becomes ConstantOfShape(Shape(x), True), which every runtime agrees on,
    and the node loses its mask output."""
    if len(node.outputs) < 2:
        return ""
    mask = node.outputs[1]
    if not (is_used(mask) or mask.is_graph_output()):
        node.resize_outputs(1)
        return ""
    b.require("ConstantOfShape")
    x = node.inputs[0]
    rank = static_rank(x)
    shape = b.op(
        "Shape", [x], dtype=ir.DataType.INT64, shape=None if rank is None else ir.Shape([rank])
    )
    true = ir.tensor(np.array([True]))
    ones = b.op("ConstantOfShape", [shape], {"value": true}, dtype=ir.DataType.BOOL)
    name, mask_shape = mask.name, mask.shape
    ir.convenience.replace_all_uses_with(mask, ones, replace_graph_outputs=True)
    node.resize_outputs(1)
    ones.name, ones.shape = name, mask_shape
    return "; mask computed as ConstantOfShape(Shape(x), True)"


def cast_to_spelling(node: ir.Node, old: int, b: Builder) -> str | None:
    """Cast names its target type by number from opset 6 and by name before: the same
    type, spelt as the target opset spells it."""
    attr = node.attributes.get("to")
    # (by the attribute's own type: Cast nodes a rewrite made are at the target already)
    if attr is None or (attr.type == ir.AttributeType.STRING) == (b.opset < 6):
        return None
    if b.opset < 6:
        if b.in_function:
            raise b.refuse(
                "before opset 6 Cast names its target type as a string, which ONNX cannot "
                "type inside a function body",
                "target opset 6 or later",
            )
        name = onnx.TensorProto.DataType.Name(attr.value)
        node.attributes["to"] = ir.AttrString("to", name)
        return f"to={attr.value} → to={name!r}"
    number = int(getattr(onnx.TensorProto, str(attr.value).upper()))
    node.attributes["to"] = ir.AttrInt64("to", number)
    return f"to={attr.value!r} → to={number}"


_FLT_MAX = float(np.finfo(np.float32).max)


def _constant_for_attribute(
    node: ir.Node, old: int, since: int, name: str, value: ir.Value, b: Builder
) -> np.ndarray:
    """The constant behind input `name`, which became an input at opset `since` and is an
    attribute below it; refused when it is computed at run time (or a graph input, whose
    initializer is only a default)."""
    tensor = None if value.is_graph_input() else const_tensor(value)
    if tensor is None:
        raise b.refuse(
            f"{node.op_type}-{old}'s {name} {value.name!r} is not a constant, and before "
            f"opset {since} it is an attribute",
            f"make {name} a constant, or target opset {since} or later",
        )
    return np.asarray(tensor.numpy())


def clip_bounds_as_inputs(node: ir.Node, old: int, b: Builder) -> str | None:
    """Clip-6's min/max attributes became inputs at 11. An absent attribute meant
    -FLT_MAX / FLT_MAX (which clamps ±inf and doubles beyond them), an absent input means
    no bound; so the attribute's value, default included, becomes a constant input."""
    if old >= 11 or b.opset < 11 or len(node.inputs) > 1:
        return None
    x = node.inputs[0]
    dtype = require_dtype(node, x, "the bounds become constants of the input's type")
    bounds = []
    for name, default in (("min", -_FLT_MAX), ("max", _FLT_MAX)):
        attr = node.attributes.pop(name, None)
        bounds.append(attr.value if attr is not None else default)
    node.resize_inputs(3)
    for k, bound in enumerate(bounds, start=1):
        node.replace_input_with(k, b.const(np.array(bound, dtype=dtype.numpy())))
    return f"min/max attributes → inputs {bounds[0]:g}, {bounds[1]:g}"


def clip_bounds_as_attributes(node: ir.Node, old: int, b: Builder) -> str | None:
    """Clip-11's constant min/max inputs as Clip-6's attributes (float32): exact when the
    bound is a float32 value; an absent bound becomes ±inf, which clamps nothing."""
    if old < 11 or b.opset >= 11 or {"min", "max"} & set(node.attributes):
        return None  # (attributes: a Clip a rewrite made, at the target already)
    bounds = []
    for k, (name, absent) in enumerate((("min", -np.inf), ("max", np.inf)), start=1):
        value = node.inputs[k] if len(node.inputs) > k else None
        if value is None:
            bounds.append(absent)
            continue
        bound = _constant_for_attribute(node, old, 11, name, value, b).reshape(-1)[0]
        if not np.isnan(bound) and float(np.float32(bound)) != float(bound):
            raise b.refuse(
                f"Clip-{old}'s {name} {float(bound)!r} is no float32 value, and before "
                "opset 11 the bounds are float32 attributes",
                "target opset 11 or later",
            )
        bounds.append(float(bound))
    used = [v for v in node.inputs[1:] if v is not None]
    node.resize_inputs(1)
    remove_if_orphaned(node.graph, *used)
    for name, bound in zip(("min", "max"), bounds):
        node.attributes[name] = ir.AttrFloat32(name, bound)
    return f"min/max inputs → attributes {bounds[0]:g}, {bounds[1]:g}"


_INT64_MAX = int(np.iinfo(np.int64).max)


def slice_inputs_to_attributes(node: ir.Node, old: int, b: Builder) -> str | None:
    """Slice-10 took starts/ends/axes/steps as inputs; Slice-1 has attributes and no steps.
    Constant inputs with unit steps become the attributes. An axis with another step (a
    reversal, say) is taken by a Gather of the indices numpy's slicing gives (onnx's own
    definition of Slice) on that axis, which needs the axis's size to be static."""
    if old < 10 or b.opset >= 10 or len(node.inputs) < 3:
        return None
    x = node.inputs[0]
    names = ("starts", "ends", "axes", "steps")
    given = dict(zip(names, node.inputs[1:]))
    values = {}
    for name, value in given.items():
        if value is not None:
            array = _constant_for_attribute(node, old, 10, name, value, b)
            values[name] = [int(v) for v in array.reshape(-1)]
    starts, ends = values["starts"], values["ends"]
    rank = require_rank(node, x, "its axes must be known to move them into attributes")
    axes = [a + rank if a < 0 else a for a in values.get("axes", range(len(starts)))]
    steps = values.get("steps", [1] * len(axes))
    unit = [k for k, step in enumerate(steps) if step == 1]
    other = [k for k, step in enumerate(steps) if step != 1]
    for k in other:
        if static_dim(x, axes[k]) is None:
            raise b.refuse(
                f"Slice-{old} steps by {steps[k]} along axis {axes[k]}, which Slice-1 cannot, "
                "and the size of that axis is not static (a Gather would need it)",
                "give the input a static shape on that axis, or target opset 10 or later",
            )
    drop_inputs(node, 1)
    kept = unit or [0]  # no unit-step axis: Slice-1 over the whole of one axis
    node.attributes["starts"] = ir.AttrInt64s("starts", [starts[k] if unit else 0 for k in kept])
    node.attributes["ends"] = ir.AttrInt64s("ends", [ends[k] if unit else _INT64_MAX for k in kept])
    node.attributes["axes"] = ir.AttrInt64s("axes", [axes[k] for k in kept])
    for k in other:
        size = static_dim(x, axes[k])
        indices = np.arange(size, dtype=np.int64)[slice(starts[k], ends[k], steps[k])]
        _follow_output(b, node, "Gather", [b.const(indices)], {"axis": axes[k]}, f"_{axes[k]}")
    gathered = f"; steps {[steps[k] for k in other]} by Gather" if other else ""
    return f"starts/ends/axes inputs → attributes{gathered}"


OTHER_ADAPTERS: dict[str, list[Callable[[ir.Node, int, Builder], str | None]]] = {
    "Cast": [cast_to_spelling],
    "Clip": [clip_bounds_as_inputs, clip_bounds_as_attributes],
    "Dropout": [dropout_inputs_to_attribute, dropout_ratio_to_input],
    "Split": [split_num_outputs_to_sizes, split_equal_parts_to_num_outputs],
    "Resize": [resize_optional_inputs],
    "Reshape": [reshape_allowzero],
    "Shape": [shape_start_end_to_slice],
    "Slice": [slice_inputs_to_attributes],
    "Softmax": _SOFTMAX_LIKE,
    "LogSoftmax": _SOFTMAX_LIKE,
    "Hardmax": _SOFTMAX_LIKE,
}
