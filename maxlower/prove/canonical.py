"""Steps that change nothing the spec defines, proved by the schemas at any size (the
`schema` method of a site): both sides of a site are one node of the same op, and read as
its parameters they say the same thing.

    ReduceMax-18(x, axes=Constant [1]){keepdims=0}  ≡  ReduceMax-13(x){axes=[1], keepdims=0}
    ArgMax-12(x){axis=1, select_last_index=0}       ≡  ArgMax-11(x){axis=1}
    Squeeze-13(x, axes=[0])                         ≡  Squeeze-11(x){axes=[0]}

A node's parameters are its attributes and its inputs named like an attribute of another
version of the op (`axes`, moved to an input at 13 or 18), with constant inputs read as
values. An attribute the node leaves out has what its version does without it
(`passes.version.changed_defaults.absent_value`, the table conversion uses: the schema's
default, or where a later version added the attribute, that version's default, which kept
the old behaviour; an absent meaning no schema says is never equal to anything). Two nodes
whose op, value inputs, outputs and every parameter agree compute the same function by the
spec: no solver, no size bound, and no comparison policy (the same function gives the same
bits). The verdict lists that as an assumption, as it lists shared nodes.

Only ops whose versions from 11 on differ in nothing but types, attributes and attributes
moved to inputs are read so (SCHEMA_ONLY_OPS): their meaning is the same wherever both
versions run (negative axes from 11 on, so an axis means one thing at both). Softmax,
LogSoftmax and Hardmax (COERCED_TO_2D) changed what `axis` means at 13, so their axis is
read as what it normalises, the same on both sides only for the last axis alone:

    Shape-15(x){start=1}     ≡  Slice(Shape-13(x), [1], [INT64_MAX], [0])   (the adapter's form)
    Split-18(x: [4, 6]){axis=1, num_outputs=3}  ≡  Split-13(x){axis=1}     (three equal parts)
    Softmax-13(x){axis=-1}  ≡  Softmax-11(x){axis=-1}    (any rank)
    Softmax-13(x){axis=1}   ≢  Softmax-11(x){axis=1}     (unless x has rank 2) Reshape-14
with `allowzero=0`, as TorchScript exports write it, is Reshape-13 by this argument, and so
is one with `allowzero=1` to a constant shape that holds no 0 (dynamo's exports).
"""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import onnx

from maxlower.prove.shared import relabel_class, stripped_key, typed_alike
from maxlower.sparse import default_opset
from passes.builder import schema_version
from passes.version.changed_defaults import NOT_APPLICABLE, UNSAID, absent_value
from passes.version.relabel import MEANING_CHANGES

SCHEMA_ONLY_OPS = frozenset(
    {
        "ReduceMax", "ReduceMin", "ReduceSum", "ReduceMean", "ReduceProd", "ReduceL1",
        "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare",
        "ArgMax", "ArgMin", "Squeeze", "Unsqueeze",
        # from 5 (`shape` an input): 13 added bfloat16, 14 `allowzero` (its default 0 is
        # what 13 does with a 0 in the shape: copy the input's dim), 19 to 25 more types
        "Reshape",
        # 15 added start/end (absent: the whole shape, as before); the rest types
        "Shape",
        # 13 moved `split` to an input; 18 added num_outputs (absent at 13: not equal)
        "Split",
        # 13 added bfloat16; 16 `reduction` (its default "none" is what 11 and 13 do), 18
        # its max and min (dynamo's exports write reduction="none")
        "ScatterND", "ScatterElements",
        # 12 added `batch_dims` (its default 0 is what 11 does), 13 bfloat16
        "GatherND", "GatherElements",
        # 13 made roi and scales optional (11 takes an empty tensor for either: read as
        # absent, _empty_is_absent), and dropped tf_half_pixel_for_nn (left to the solver);
        # 18 added antialias, axes and keep_aspect_ratio_policy, each absent the old way
        "Resize",
        # 16 added coordinate_transformation_mode, absent at 10 as output_half_pixel (what
        # 10 does; changed_defaults.absent_value knows 16's default is not that)
        "RoiAlign",
    }
)  # fmt: skip
# Ops whose `axis` changed meaning at 13 (COERCED_UNTIL): before, the input coerced to 2-D at
# `axis` and normalised over [axis, ...) flattened; from 13, over `axis` alone. Their axis
# is read as what it normalises (_coerced_axis), so a relabel across 13 is the same node
# exactly where both normalise the last axis alone.
# (the table the relabel check uses: passes.version.relabel.MEANING_CHANGES)
_LAST_AXIS = {op: v for (op, v), unaffected in MEANING_CHANGES.items() if unaffected == "last_axis"}
COERCED_TO_2D = frozenset(_LAST_AXIS)
# The types whose Softmax-like relabel across 13 the argument takes: the spec makes every
# type one function, but onnxruntime's float16 kernels before and from 13 round apart
# (LogSoftmax over [1.3, -0.6, 6.1, 0]: -0.01162 and -0.01161; red team of 6eb0fa7), and
# a PROVED is held to runtimes by tests/test_prove_canonical.py
SAME_KERNELS_ACROSS_13 = frozenset({onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE})
(COERCED_UNTIL,) = set(_LAST_AXIS.values())
# Ops whose onnxruntime kernels give other bits for a type at other opsets, though the spec
# defines one function: ReduceLogSumExp on float16 overflows to inf at 18 and 20 where 13's
# kernel (computing in float32) gives 1.001e+04 (red team of aed5c82). Their nodes are
# never read by this argument, nor shared across opsets (maxlower.prove.shared).
KERNELS_APART_FOR_TYPE = frozenset({("ReduceLogSumExp", onnx.TensorProto.FLOAT16)})
SINCE = 11  # both versions from here on (negative axes mean one thing at both)
# Reshape's first version with `shape` as an input; RoiAlign's first; neither has axes
SINCE_OF = {"Reshape": 5, "Shape": 1, "RoiAlign": 10}
ABSENT = "<absent input>"
LAST = "<to the last axis>"  # Shape's absent end


@dataclasses.dataclass(frozen=True)
class Form:
    """One node read as its op's parameters."""

    op_type: str
    version: int  # the schema's since_version
    values: tuple[object, ...]  # the inputs that are not parameters (a name, or a constant)
    outputs: tuple[str, ...]
    params: dict[str, object]  # name -> value (a tuple of numbers, bytes, int, float)


def node_form(model: onnx.ModelProto) -> Form | None:
    """The one non-Constant node of `model` (a site's side) read as parameters, or None
    when the model is not one such node of a SCHEMA_ONLY_OPS op."""
    opset = default_opset(model)
    tensors, nodes = constants_and_nodes(model)
    constants = {name: onnx.numpy_helper.to_array(t) for name, t in tensors.items()}
    # a value input's constant by its ONNX element type too: numpy reads every float8,
    # int4 and int2 kind as 'V1' (red team of f098390)
    kinds = {name: t.data_type for name, t in tensors.items()}
    if opset is None:
        return None
    if len(nodes) == 2:
        return _shape_then_slice(nodes, constants, opset)
    if len(nodes) == 3:
        return _transposed_around(nodes, opset, model)
    if len(nodes) != 1:
        return None
    node = nodes[0]
    if node.domain not in ("", "ai.onnx") or node.op_type not in SCHEMA_ONLY_OPS | COERCED_TO_2D:
        return None
    schema = onnx.defs.get_schema(node.op_type, opset, "")
    if schema.since_version < SINCE_OF.get(node.op_type, SINCE):
        return None
    params: dict[str, object] = {
        a.name: _value(onnx.helper.get_attribute_value(a)) for a in node.attribute
    }
    values: list[object] = []
    for k, formal in enumerate(schema.inputs):
        name = node.input[k] if k < len(node.input) else ""
        if k == 0 or formal.name not in _attribute_names(node.op_type):
            # a value: a free input by its name, a constant by its contents (each side
            # brings its own constants, which may differ under one name)
            values.append(_constant(constants[name], kinds[name]) if name in constants else name)
        elif not name:
            params[formal.name] = ABSENT
        elif name in constants and constants[name].ndim == 1 and constants[name].size:
            params[formal.name] = _value(constants[name])
        else:  # computed at run time, or not a list of axes (a scalar, 2-D, empty): the solver's
            return None
    rank = _rank(model, node.input[0])
    if node.op_type == "Reshape":
        _drop_idle_allowzero(params, values)
    if node.op_type == "Resize" and schema.since_version < 13:
        crops = params.get("coordinate_transformation_mode") == b"tf_crop_and_resize"
        _empty_is_absent(values, (2,) if crops else (1, 2))
    if node.op_type == "Shape":
        params.update(_shape_bounds(params.get("start"), params.get("end")))
    if node.op_type == "Split":
        _split_sizes(params, len(node.output), _dims(model, node.input[0]))
    if (node.op_type, _elem_type(model, node.input[0])) in KERNELS_APART_FOR_TYPE:
        return None
    if node.op_type in COERCED_TO_2D:
        if _elem_type(model, node.input[0]) not in SAME_KERNELS_ACROSS_13:
            return None
        params["axis"] = _coerced_axis(node.op_type, params.get("axis"), schema.since_version, rank)
    form = Form(node.op_type, schema.since_version, tuple(values), tuple(node.output), params)
    return form if _plain(form, rank) else None


def _shape_bounds(start: object, end: object) -> dict[str, object]:
    """Shape-15's slice of the shape, [start, end) clamped to [0, rank] as Slice clamps
    (onnx.defs: "axes will be clamped to the range [0, r]"): an absent start is 0, and an
    absent end, or INT64_MAX (what a Slice to the end says), is "to the last axis"."""
    start = 0 if start is None else start
    end = LAST if end is None or end == np.iinfo(np.int64).max else end
    return {"start": start, "end": end}


def _shape_then_slice(nodes: list, constants: dict, opset: int) -> Form | None:
    """Shape(x) then Slice(·, [start], [end], [0]) with step 1, constants all, read as
    Shape-15(x){start, end}: Slice clamps a 1-D input's bounds to [0, length] after adding
    the length to a negative one, as Shape-15 clamps its axes (the form passes.version's
    adapter gives Shape-15 below 15), else None."""
    shape, cut = nodes
    if (shape.op_type, cut.op_type) != ("Shape", "Slice") or shape.attribute or cut.attribute:
        return None
    if {shape.domain, cut.domain} - {"", "ai.onnx"} or cut.input[0] != shape.output[0]:
        return None
    if onnx.defs.get_schema("Slice", opset, "").since_version < 10:  # (bounds as inputs)
        return None
    bounds = [constants.get(name) if name else None for name in list(cut.input[1:]) + [""] * 4]
    starts, ends, axes, steps = bounds[:4]
    if starts is None or ends is None or axes is None:
        return None
    one = [a.size == 1 and a.ndim == 1 and a.dtype.kind == "i" for a in (starts, ends, axes)]
    if not all(one) or int(axes[0]) not in (0, -1):
        return None
    if steps is not None and not (steps.size == 1 and steps.dtype.kind == "i" and steps[0] == 1):
        return None
    if cut.input[4:5] and cut.input[4] and steps is None:  # steps computed at run time
        return None
    version = onnx.defs.get_schema("Shape", opset, "").since_version
    params = _shape_bounds(int(starts[0]), int(ends[0]))
    return Form("Shape", version, (shape.input[0],), (cut.output[0],), params)


def _transposed_around(nodes: list, opset: int, model: onnx.ModelProto) -> Form | None:
    """Transpose(x){perm} then a Softmax-like node over its last axis alone, then the
    inverse Transpose, read as that op over axis perm[-1] alone (the form passes.version's
    adapter gives Softmax-13 with another axis below 13): the normalisation of each line
    along one axis reads that line's elements in their order whatever the order of the
    other axes, and the second Transpose puts every element back. Else None."""
    first, middle, last = nodes
    if (first.op_type, last.op_type) != ("Transpose", "Transpose") or middle.op_type not in (
        COERCED_TO_2D
    ):
        return None
    if {n.domain for n in nodes} - {"", "ai.onnx"} or middle.input[0] != first.output[0]:
        return None
    if last.input[0] != middle.output[0]:
        return None
    perm, back = (_ints_attribute(n, "perm") for n in (first, last))
    rank = len(perm) if perm is not None else None
    if perm is None or back is None or sorted(perm) != list(range(len(perm))):
        return None
    if [perm[k] for k in back] != list(range(len(perm))):  # (not the inverse)
        return None
    if _elem_type(model, first.input[0]) not in SAME_KERNELS_ACROSS_13:
        return None
    version = onnx.defs.get_schema(middle.op_type, opset, "").since_version
    axis = next((a.i for a in middle.attribute if a.name == "axis"), None)
    if _coerced_axis(middle.op_type, axis, version, rank) != "the last axis alone":
        return None
    moved = perm[-1]
    reading = "the last axis alone" if moved == len(perm) - 1 else f"axis {moved} alone"
    return Form(middle.op_type, version, (first.input[0],), (last.output[0],), {"axis": reading})


def _ints_attribute(node: onnx.NodeProto, name: str) -> list[int] | None:
    found = [list(a.ints) for a in node.attribute if a.name == name]
    return found[0] if found and len(node.attribute) == 1 else None


def _split_sizes(params: dict[str, object], count: int, dims: list | None) -> None:
    """Split's parts as sizes, where the split axis has a static length d: Split-18's
    num_outputs=n is ceil(d/n) each and the rest last (onnx.defs: "the last chunk will be
    smaller"; only where that rest is positive), and equal parts (no split, no
    num_outputs) are d/n each where n divides d. So the dynamo exporter's Split-18 with
    num_outputs=3 is Split-13 in three equal parts."""
    axis = params.get("axis", 0)
    split = params.get("split", ABSENT)
    if dims is None or not isinstance(axis, int) or split != ABSENT or count < 1:
        return
    axis = axis + len(dims) if axis < 0 else axis
    length = dims[axis] if 0 <= axis < len(dims) else None
    if not isinstance(length, int):
        return
    if "num_outputs" in params:
        if params["num_outputs"] != count:
            return
        part = -(-length // count)
        sizes = [part] * (count - 1) + [length - part * (count - 1)]
        if sizes[-1] <= 0:
            return
    elif length % count == 0:
        sizes = [length // count] * count
    else:
        return
    params["split"] = tuple(sizes)
    params.pop("num_outputs", None)


def _dims(model: onnx.ModelProto, name: str) -> list | None:
    """The dims the model declares for its input `name` (an int where static, else
    None), or None when it declares no shape."""
    tensor_type = _input_type(model, name)
    if tensor_type is None or not tensor_type.HasField("shape"):
        return None
    return [d.dim_value if d.HasField("dim_value") else None for d in tensor_type.shape.dim]


def _drop_idle_allowzero(params: dict[str, object], values: list[object]) -> None:
    """Reshape's allowzero (0 or 1) says what a 0 in the shape means, so with a constant
    shape that holds no 0 it says nothing: the dynamo exporter's Reshape-14 with
    allowzero=1 to [-1, 128] is Reshape-13 to [-1, 128]."""
    shape = values[1] if len(values) > 1 else None
    if not (isinstance(shape, tuple) and params.get("allowzero", 0) in (0, 1)):
        return
    _, _, dtype, _, data = shape
    if 0 not in np.frombuffer(data, dtype=np.dtype(dtype)):
        params.pop("allowzero", None)


def _empty_is_absent(values: list[object], positions: tuple[int, ...]) -> None:
    """An input that a version requires where a later one makes it optional, given as an
    empty constant, read as left out: Resize-11's roi and scales (onnx.defs: "If 'sizes'
    is needed, the user can use an empty string as the name of 'scales'", and roi "only
    takes effect when coordinate_transformation_mode is tf_crop_and_resize", where an
    empty one is an error and a left-out one is not: red team of de7dff6). Only below 13,
    where the input is required: from 13 an empty input is one given empty."""
    for k in positions:
        value = values[k] if k < len(values) else None
        if isinstance(value, tuple) and 0 in value[3]:
            values[k] = ""


def _coerced_axis(op_type: str, axis: object, version: int, rank: int | None) -> object:
    """What a Softmax-like node's axis normalises, in words that agree across 13 only
    where the functions do: "the last axis" (axis -1, or with a known rank r the axis r-1:
    before 13 the coercion at it is [d0*...*d(r-2), d(r-1)]), else the 2-D coercion at the
    axis (before 13) or the axis alone (from 13), counted from the front where the rank is
    known. An absent axis is the version's default (1 before 13, -1 from 13)."""
    if axis is None:
        axis = absent_value(op_type, "axis", version)
    if not isinstance(axis, int) or rank == 0:
        return UNSAID  # no axis said, or none to normalise (a scalar): equal to nothing
    if rank is not None and -rank <= axis < 0:
        axis += rank
    if axis == -1 or (rank is not None and axis == rank - 1):
        return "the last axis alone"
    return f"the 2-D coercion at axis {axis}" if version < COERCED_UNTIL else f"axis {axis} alone"


def _plain(form: Form, rank: int | None) -> bool:
    """Whether every parameter is in the domain where the versions' reference
    implementations agree: flags 0 or 1, and axes (when given) a non-empty list in range,
    each axis once, and Squeeze's and Unsqueeze's in increasing order. Outside it
    onnx.reference's classes for the versions part ways (keepdims=2, an empty list, an axis
    named twice, Squeeze's and Unsqueeze's axes out of order, which onnx.reference's
    versions before 13 take one at a time as listed: red team 4 and the red team of
    cac0e5a), so the solver decides. A reduction's axes are a set (PyTorch's dynamo
    exports write [-1, -2]), in whatever order, on both sides alike."""
    for flag in ("keepdims", "noop_with_empty_axes", "select_last_index", "allowzero"):
        if form.params.get(flag, 0) not in (0, 1):
            return False
    axes = form.params.get("axes", ABSENT)
    if axes == ABSENT:
        return True
    if not isinstance(axes, tuple) or not axes:
        return False
    if rank is None:  # (any rank: axes from the front, each once, in order, mean one thing,
        # or are out of range at both versions)
        return all(a >= 0 for a in axes) and list(axes) == sorted(set(axes))
    if form.op_type == "Unsqueeze":
        rank += len(axes)
    normal = [a + rank if a < 0 else a for a in axes]
    in_range = all(0 <= a < rank for a in normal) and len(set(normal)) == len(normal)
    if form.op_type in ("Squeeze", "Unsqueeze"):  # (onnx.reference takes them as listed)
        return in_range and all(a < b for a, b in itertools.pairwise(normal))
    return in_range


def constants_and_nodes(
    model: onnx.ModelProto,
) -> tuple[dict[str, onnx.TensorProto], list[onnx.NodeProto]]:
    """A site model's constants by name (its initializers that are no graph input, and its
    Constant nodes' `value`), and its other nodes in order."""
    inputs = {v.name for v in model.graph.input}
    tensors = {t.name: t for t in model.graph.initializer if t.name not in inputs}
    nodes = []
    for node in model.graph.node:
        attrs = node.attribute
        if (node.op_type, node.domain, len(attrs)) == ("Constant", "", 1) and (
            attrs[0].name == "value"
        ):
            tensors[node.output[0]] = attrs[0].t
            continue
        nodes.append(node)
    return tensors, nodes


def _input_type(model: onnx.ModelProto, name: str) -> onnx.TypeProto.Tensor | None:
    """The tensor type the model declares for its input `name` (a site's free input,
    typed by inference), else None."""
    return next((v.type.tensor_type for v in model.graph.input if v.name == name), None)


def _elem_type(model: onnx.ModelProto, name: str) -> int | None:
    tensor_type = _input_type(model, name)
    return None if tensor_type is None else tensor_type.elem_type


def _rank(model: onnx.ModelProto, name: str) -> int | None:
    dims = _dims(model, name)
    return None if dims is None else len(dims)


def _constant(array: np.ndarray, data_type: int) -> tuple:
    return ("constant", data_type, array.dtype.str, array.shape, array.tobytes())


def same_by_schema(reference: onnx.ModelProto, candidate: onnx.ModelProto) -> str | None:
    """The assumption under which the two sides are one function (for the verdict), or
    None when they are not the same node by their parameters, nor node by node
    (`_same_node_by_node`)."""
    if not constant_outputs_agree(reference, candidate):
        return None
    ref, cand = node_form(reference), node_form(candidate)
    if ref is None or cand is None:
        return _same_node_by_node(reference, candidate)
    return _same_forms(ref, cand)


def constant_outputs_agree(reference: onnx.ModelProto, candidate: onnx.ModelProto) -> bool:
    """Whether every output of the site that a constant gives on either side (a Constant
    node read outside the site too) is the same constant on both: the forms compare the
    nodes, never a Constant beside them (red team of aed5c82: Constant [0] against [1])."""
    ref_constants, cand_constants = (constants_and_nodes(m)[0] for m in (reference, candidate))
    for output in reference.graph.output:
        a, b = ref_constants.get(output.name), cand_constants.get(output.name)
        if (a is not None or b is not None) and _tensor_key(a) != _tensor_key(b):
            return False
    return True


def _same_node_by_node(reference: onnx.ModelProto, candidate: onnx.ModelProto) -> str | None:
    """Two sides of several nodes each, paired by the values they make, each pair one
    function by this argument or the same node at versions conversion relabels between
    (maxlower.prove.shared's rule): then every value either side makes is the same in
    both, in the order the nodes run, the site's outputs included (a region of `prove A
    B` where Reshape-14 became 13 beside a ReduceMean whose axes moved). Else None."""
    ref_constants, ref_nodes = constants_and_nodes(reference)
    cand_constants, cand_nodes = constants_and_nodes(candidate)
    if len(ref_nodes) < 2 or len(ref_nodes) != len(cand_nodes):
        return None
    twins = {tuple(n.output): n for n in cand_nodes}
    if len(twins) != len(cand_nodes):
        return None
    ref_types, cand_types = inferred_types(reference), inferred_types(candidate)
    found = []
    for node in ref_nodes:
        twin = twins.get(tuple(node.output))
        if twin is None:
            return None
        one = one_node(reference, node, ref_types, ref_constants)
        other = one_node(candidate, twin, cand_types, cand_constants)
        found.append(same_by_schema(one, other) or same_node_relabelled(one, other))
    if None in found:
        return None
    return "; ".join(dict.fromkeys(a for a in found if a))


def inferred_types(model: onnx.ModelProto) -> dict[str, onnx.TypeProto]:
    """Every value's type as inference gives it from the site's typed inputs."""
    try:
        inferred = onnx.shape_inference.infer_shapes(model)
    except (onnx.shape_inference.InferenceError, onnx.checker.ValidationError):
        inferred = model
    graph = inferred.graph
    return {v.name: v.type for v in (*graph.input, *graph.value_info, *graph.output)}


def one_node(
    model: onnx.ModelProto,
    node: onnx.NodeProto,
    types: dict[str, onnx.TypeProto],
    constants: dict[str, onnx.TensorProto],
) -> onnx.ModelProto:
    """`node` alone, reading its constants as constants and its other inputs as inputs
    of the types in `types` (none where inference gives none), in `model`'s opsets."""
    return nodes_model(model, [node], types, constants)


def nodes_model(
    model: onnx.ModelProto,
    nodes: list[onnx.NodeProto],
    types: dict[str, onnx.TypeProto],
    constants: dict[str, onnx.TensorProto],
    outputs_of: list[str] | None = None,
) -> onnx.ModelProto:
    """`nodes` alone (in order), reading the constants they read as constants and every
    other value they read and none of them makes as an input of its type in `types`,
    giving `outputs_of` (default: the last node's outputs), in `model`'s opsets."""
    made = {o for n in nodes for o in n.output}
    read = [name for n in nodes for name in n.input if name and name not in made]
    node = nodes[-1]
    inputs, tensors = [], []
    for name in dict.fromkeys(read):
        if name in constants:
            tensor = onnx.TensorProto()
            tensor.CopyFrom(constants[name])
            tensor.name = name
            tensors.append(tensor)
        else:
            info = onnx.ValueInfoProto(name=name)
            if name in types:
                info.type.CopyFrom(types[name])
            inputs.append(info)
    outputs = []
    for name in node.output if outputs_of is None else outputs_of:
        info = onnx.ValueInfoProto(name=name)
        if name in types:
            info.type.CopyFrom(types[name])
        outputs.append(info)
    graph = onnx.helper.make_graph(list(nodes), "pair", inputs, outputs, initializer=tensors)
    one = onnx.ModelProto()
    one.CopyFrom(model)
    one.graph.CopyFrom(graph)
    return one


def same_node_relabelled(reference: onnx.ModelProto, candidate: onnx.ModelProto) -> str | None:
    """For two one-node models holding the same node (its name aside), the assumption
    that it computes the same at both models' versions, where maxlower.prove.shared's
    rule says so (the same node at one version needs none: ''); else None."""
    (ref_constants, (a,)), (cand_constants, (b,)) = map(constants_and_nodes, (reference, candidate))
    if stripped_key(a) != stripped_key(b) or a.domain not in ("", "ai.onnx"):
        return None
    # what it reads by name must be the same too: a constant's contents, or a free value
    # on both sides (red team of 6fe6590: Add(x, W) with W 2.0 against W 5.0)
    read = [name for name in a.input if name]
    if [_tensor_key(ref_constants.get(n)) for n in read] != [
        _tensor_key(cand_constants.get(n)) for n in read
    ]:
        return None
    versions = [default_opset(m) for m in (reference, candidate)]
    subgraphs = onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS
    if versions[0] != versions[1] and any(x.type in subgraphs for x in a.attribute):
        return None  # (the ops of its bodies may mean other things at the two opsets)
    since = [schema_version(a.op_type, v) if v is not None else None for v in versions]
    if None in since or relabel_class(a, since[0]) != relabel_class(b, since[1]):
        return None
    typed = [{v.name: v.type for v in m.graph.output} for m in (reference, candidate)]
    if not typed_alike(*typed, a.output):
        return None
    if since[0] == since[1]:
        return ""
    low, high = sorted(since)  # type: ignore[type-var]
    return f"{a.op_type}-{low} and {a.op_type}-{high} compute the same (conversion relabels)"


def _tensor_key(tensor: onnx.TensorProto | None) -> tuple | None:
    """A constant by its element type, shape and contents (None: not a constant)."""
    if tensor is None:
        return None
    return _constant(onnx.numpy_helper.to_array(tensor), tensor.data_type)


def _same_forms(ref: Form, cand: Form) -> str | None:
    if (ref.op_type, ref.values, ref.outputs) != (cand.op_type, cand.values, cand.outputs):
        return None
    for name in dict.fromkeys([*ref.params, *cand.params]):
        a, b = _param(ref, name), _param(cand, name)
        if not (_same(a, b) or _both_not_given(a, b)):
            return None
    # an attribute left out of both still means each version's own absent value, which
    # may differ: RoiAlign's coordinate_transformation_mode is output_half_pixel at 10 and
    # half_pixel at 16 (the fuzz of test_prove_canonical.py found it taken)
    left_out = (_schema_attributes(ref) | _schema_attributes(cand)) - {*ref.params, *cand.params}
    if not all(_same_when_left_out(ref, cand, name) for name in left_out):
        return None
    if ref.version == cand.version:
        return f"{ref.op_type}-{ref.version} computes one function of its parameters"
    low, high = sorted((ref.version, cand.version))
    reading = f", both normalising {ref.params['axis']}" if ref.op_type in COERCED_TO_2D else ""
    return (
        f"{ref.op_type}-{low} and {ref.op_type}-{high} compute the same function of the same "
        f"parameters{reading} (their schemas; an attribute left out means what its "
        "version does without it)"
    )


def _both_not_given(a: object, b: object) -> bool:
    """A parameter that is an attribute at one version and an input at the other, left
    out of both: Squeeze-11 without `axes` and Squeeze-13 without its axes input both
    squeeze every dim of size 1 (the versions of these ops differ in nothing else; a
    reduction's noop_with_empty_axes, which 18 added for this case, is compared apart)."""
    return {_text(a), _text(b)} == {UNSAID, ABSENT}


def _schema_attributes(form: Form) -> set[str]:
    return set(onnx.defs.get_schema(form.op_type, form.version, "").attributes)


def _same_when_left_out(ref: Form, cand: Form, name: str) -> bool:
    """Whether attribute `name`, left out of both nodes, means one thing at both versions:
    the same absent value, or at both none the schemas say (the op's own text then says
    what it does without it, the same at versions that add nothing but attributes)."""
    a, b = (absent_value(f.op_type, name, f.version) for f in (ref, cand))
    if isinstance(a, str) and isinstance(b, str) and {a, b} <= {UNSAID, NOT_APPLICABLE}:
        return a == b
    return _same(_value(a) if isinstance(a, list) else a, _value(b) if isinstance(b, list) else b)


def _param(form: Form, name: str) -> object:
    if name in form.params:
        return form.params[name]
    absent = absent_value(form.op_type, name, form.version)
    return _value(absent) if isinstance(absent, list) else absent


def _same(a: object, b: object) -> bool:
    # what an absent parameter means must be said: UNSAID (no schema says) and
    # NOT_APPLICABLE (the attribute is gone at that version) are equal to nothing, and an
    # absent input only to an absent input
    if any(isinstance(v, str) and v in (UNSAID, NOT_APPLICABLE) for v in (a, b)):
        return False
    if ABSENT in (_text(a), _text(b)):
        return a == b
    return bool(np.array_equal(np.asarray(a), np.asarray(b))) and _kind(a) == _kind(b)


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _kind(value: object) -> str:
    array = np.asarray(value)
    return "float" if array.dtype.kind == "f" else array.dtype.kind


def _value(value: object) -> object:
    """A parameter's value as one comparable thing: a tuple of numbers for a list or a
    tensor (an attribute's ints and an int64 input say the same), else as it is."""
    if isinstance(value, np.ndarray):
        return tuple(value.reshape(-1).tolist())
    if isinstance(value, list | tuple):
        return tuple(value)
    return value


def _attribute_names(op_type: str) -> set[str]:
    """Every attribute name a version of the op that this argument reads has (an input so
    named is a parameter that moved between an attribute and an input). Reshape's `shape`
    was an attribute only before opset 5: from 5 on it is a value input, compared as one."""
    names: set[str] = set()
    for version in range(SINCE_OF.get(op_type, SINCE), onnx.defs.onnx_opset_version() + 1):
        try:
            names.update(onnx.defs.get_schema(op_type, version, "").attributes)
        except onnx.defs.SchemaError:
            continue
    return names
