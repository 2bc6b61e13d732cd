"""Legacy attributes of opsets 1 to 6, said the way opset 7 and later say them.

    Relu-1(x){consumed_inputs=[0]}, to ≥ 6               →  Relu(x)
    Add-1(a: [2,3,4,5], b: [5]){broadcast=1}, to ≥ 7       →  Add(a, b)
    Add-1(a: [2,3,4,5], b: [3,4]){broadcast=1, axis=1}, to ≥ 7
                                                         →  Add(a, Unsqueeze(b, [2]))
    Add-1(a, b: rank unknown){broadcast=1, axis=1}       →  ConversionError (needs the ranks)
    Gemm-6(a, b, c){broadcast=1}, to ≥ 7                 →  Gemm(a, b, c)
    BatchNormalization-6(x, ...){is_test=1} → y, to ≥ 7  →  BatchNormalization(x, ...) → y
    Dropout-6(x){is_test=1} → y, to ≥ 7                  →  Dropout(x) → y
    Pad-1(x){paddings=[0, 2, 0, 0]}, to ≥ 2             →  Pad(x){pads=[0, 2, 0, 0]}
    LpPool-1(x){p=2.0}, to ≥ 2                           →  LpPool(x){p=2}
    LpPool-1(x){p=2.5}, to ≥ 2                           →  ConversionError (p is an int)
    BatchNormalization-6 / Dropout-6 without is_test=1   →  ConversionError (training mode)

`consumed_inputs` was an optimisation hint (onnx.defs: "legacy optimization attribute"):
it never changed a result, so it goes wherever the target's schema lacks it.

`broadcast`/`axis` (the ops whose schema before 7 has them, read from onnx.defs): with
`broadcast=1` the second input's dims line up with the first's from `axis`, by default
`rank(a) - rank(b)`, which is where numpy's broadcasting, from opset 7, lines them up
too; another axis needs `rank(a) - axis - rank(b)` trailing dims of 1 on the second input,
so it needs both ranks. Without `broadcast=1` the old op is defined only on inputs of one
shape, where numpy's broadcasting gives the same. Gemm has no `axis`: its `C` lines up
as a suffix, as Gemm-7's unidirectional broadcasting does.

Pad-1's `paddings` is Pad-2's `pads`, in the format both descriptions give,
`[x1_begin, x2_begin, ..., x1_end, x2_end, ...]`, which onnx.reference's Pad_1 reads too.
(Pad-1's example, `paddings = [0, 0, 2, 0]` to "insert 0 paddings to the beginning of the
second dimension", pairs begin and end per axis; Pad-2 corrected the example to
`pads = [0, 2, 0, 0]` and kept the description.)

LpPool-1 and GlobalLpPool-1 take `p` as a float, version 2 as an int: a whole number is
written as the integer, any other is refused.

`is_test` (BatchNormalization, Dropout before 7): with `is_test=1` the op is in test mode,
which is what BatchNormalization-7 does with one output (its "Output case #2") and what
Dropout-7 does when a model is run for inference (Y = X). Without it (its default, 0) the
op is in training mode: BatchNormalization normalises by the batch's own statistics
(onnx.reference's BatchNormalization_6), Dropout drops at random; opset 7 and later leave
the mode to the number of outputs or to the runtime, so that is refused; so is test mode
with an extra output read, which the old schema does not define there.
"""

from __future__ import annotations

import functools

import onnx
import onnx_ir as ir

from passes.builder import Builder, schema_version
from passes.graph_utils import is_used, static_rank

_TEST_MODE = ("BatchNormalization", "Dropout")


@functools.cache
def _attributes(op_type: str, version: int) -> frozenset[str]:
    return frozenset(onnx.defs.get_schema(op_type, version, "").attributes)


def _target_lacks(node: ir.Node, b: Builder, name: str) -> bool:
    new = schema_version(node.op_type, b.opset)
    return new is not None and name not in _attributes(node.op_type, new)


def drop_consumed_inputs(node: ir.Node, old: int, b: Builder) -> str | None:
    """consumed_inputs never had a meaning in the computed function: dropped."""
    if "consumed_inputs" not in node.attributes or not _target_lacks(node, b, "consumed_inputs"):
        return None
    del node.attributes["consumed_inputs"]
    return "consumed_inputs dropped (a legacy optimisation hint)"


def legacy_broadcast_to_numpy(node: ir.Node, old: int, b: Builder) -> str | None:
    """`broadcast`/`axis` made numpy-style broadcasting (see the module docstring)."""
    if "broadcast" not in _attributes(node.op_type, old) or not _target_lacks(node, b, "broadcast"):
        return None
    broadcast = node.attributes.get("broadcast")
    axis = node.attributes.get("axis")
    if broadcast is None or broadcast.value == 0:
        if axis is None and broadcast is None:
            return None
        node.attributes.pop("broadcast", None)
        node.attributes.pop("axis", None)
        return "broadcast=0 dropped (inputs of one shape, where numpy's broadcasting agrees)"
    if axis is None:
        _require_output_rank(node, b, old, static_rank(node.inputs[0]))
        del node.attributes["broadcast"]
        return "broadcast=1 dropped (numpy's broadcasting lines the dims up as a suffix too)"
    a, second = node.inputs[0], node.inputs[1]
    rank_a, rank_b = static_rank(a), static_rank(second)
    if rank_a is None or rank_b is None:
        unknown = " and ".join(
            repr(v.name) for v, r in ((a, rank_a), (second, rank_b)) if r is None
        )
        raise b.refuse(
            f"broadcast=1 with axis={axis.value} lines {second.name!r} up with {a.name!r} from "
            f"that axis, and the rank of {unknown} is unknown, so no Unsqueeze can say it for "
            "numpy's broadcasting (opset 7 and later)",
            f"known ranks for {unknown} (value_info), or a target opset below 7",
        )
    _require_output_rank(node, b, old, rank_a)
    trailing = rank_a - axis.value - rank_b
    if axis.value < 0 or trailing < 0:
        raise b.refuse(
            f"broadcast=1 with axis={axis.value} does not fit {second.name!r} (rank {rank_b}) "
            f"into {a.name!r} (rank {rank_a}), so {node.op_type}-{old} gives no result to keep",
            "an axis from 0 to rank(A) - rank(B)",
        )
    del node.attributes["broadcast"], node.attributes["axis"]
    if trailing == 0:
        return f"broadcast=1, axis={axis.value} dropped (numpy lines the dims up there too)"
    unsqueezed = b.unsqueeze(second, range(rank_b, rank_b + trailing))
    if second.shape is not None:
        unsqueezed.shape = ir.Shape([*second.shape, *[1] * trailing])
    node.replace_input_with(1, unsqueezed)
    return (
        f"broadcast=1, axis={axis.value}: the second input unsqueezed by {trailing} trailing "
        "dims for numpy's broadcasting"
    )


def _require_output_rank(node: ir.Node, b: Builder, old: int, rank_a: int | None) -> None:
    """With broadcast=1 the old op gives the first input's shape; a model that declares
    another rank for the output says two things (the checker cannot see it at these
    opsets), and numpy's broadcasting would keep the one the model did not mean."""
    if "axis" not in _attributes(node.op_type, old):
        return  # Gemm: its C broadcasts to the product's shape, not to an input's
    out = node.outputs[0]
    rank_out = static_rank(out)
    if rank_a is None or rank_out is None or rank_a == rank_out:
        return
    raise b.refuse(
        f"with broadcast=1 {node.op_type}-{old} gives the shape of {node.inputs[0].name!r} "
        f"(rank {rank_a}), and the model declares {out.name!r} of rank {rank_out}",
        f"a declared shape of {out.name!r} that agrees with the node",
    )


def concat_axis_in_range(node: ir.Node, old: int, b: Builder) -> str | None:
    """Concat-1's axis (1 where absent: changed_defaults writes it out) must be an axis of
    its inputs; the checker cannot see it before Concat-4, and a Concat-4 that names
    another axis fails it."""
    if node.op_type != "Concat" or old >= 4 or "axis" not in node.attributes:
        return None
    axis = node.attributes["axis"].value
    for value in node.inputs:
        rank = static_rank(value) if value is not None else None
        if rank is not None and not 0 <= axis < rank:
            raise b.refuse(
                f"Concat-{old} concatenates on axis {axis} (1 where the attribute is absent), "
                f"and {value.name!r} has rank {rank}",
                "an axis attribute that names an axis of the inputs",
            )
    return None


def is_test_to_test_mode(node: ir.Node, old: int, b: Builder) -> str | None:
    """is_test=1 of BatchNormalization/Dropout dropped; training mode refused."""
    if node.op_type not in _TEST_MODE or "is_test" not in _attributes(node.op_type, old):
        return None
    if not _target_lacks(node, b, "is_test"):
        return None
    attr = node.attributes.get("is_test")
    extra = [v.name for v in node.outputs[1:] if is_used(v) or v.is_graph_output()]
    if attr is None or attr.value == 0:
        what = (
            "normalises by the batch's own statistics"
            if node.op_type == "BatchNormalization"
            else "drops at random"
        )
        raise b.refuse(
            f"without is_test=1 {node.op_type}-{old} is in training mode (it {what}), which "
            f"{node.op_type} from opset 7 leaves to its outputs or the runtime",
            "is_test=1 on the node if the model is run for inference, or a target opset below 7",
        )
    if extra:
        raise b.refuse(
            f"is_test=1 and its output {extra[0]!r} is used, which {node.op_type}-{old} "
            "does not define in test mode",
            f"a model that does not read {extra[0]!r}",
        )
    del node.attributes["is_test"]
    return "is_test=1 dropped (test mode: the op from opset 7 on gives Y alone the same way)"


def pad_paddings_to_pads(node: ir.Node, old: int, b: Builder) -> str | None:
    """Pad-1's `paddings` is Pad-2's `pads` (see the module docstring)."""
    if node.op_type != "Pad" or "paddings" not in node.attributes:
        return None
    if not _target_lacks(node, b, "paddings"):
        return None
    paddings = node.attributes.pop("paddings").value
    node.attributes["pads"] = ir.AttrInt64s("pads", list(paddings))
    return "paddings → pads (one format)"


def float_p_to_int(node: ir.Node, old: int, b: Builder) -> str | None:
    """LpPool-1 and GlobalLpPool-1 take the norm's `p` as a float, version 2 as an int (the
    kinds read from onnx.defs): a whole number is the same p; another has no form there."""
    attr = node.attributes.get("p")
    new = schema_version(node.op_type, b.opset)
    if attr is None or attr.type != ir.AttributeType.FLOAT or new is None:
        return None
    target = onnx.defs.get_schema(node.op_type, new, "").attributes.get("p")
    if target is None or target.type != onnx.defs.OpSchema.AttrType.INT:
        return None
    if not float(attr.value).is_integer():
        raise b.refuse(
            f"{node.op_type}-{old}'s p={attr.value:g} is not a whole number, and "
            f"{node.op_type}-{new} takes p as an integer",
            f"a whole p, or keeping a target opset where {node.op_type} takes a float p",
        )
    node.attributes["p"] = ir.AttrInt64("p", int(attr.value))
    return f"p={attr.value:g} written as the integer {int(attr.value)}"


LEGACY_ADAPTERS = [
    float_p_to_int,
    pad_paddings_to_pads,
    drop_consumed_inputs,
    legacy_broadcast_to_numpy,
    concat_axis_in_range,
    is_test_to_test_mode,
]
