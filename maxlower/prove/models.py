"""The two models a proof compares: how they are read, and what a caller sees of them.

    read_model(path, candidate=)        a file read, vetted by the pipeline's rules and its
                                        external tensors read in from the file's directory
    refuse_external(model, side)        InvalidModelError for a model still holding
                                        external references (nothing says where they are)
    constants_read_in(model, base_dir)  a copy with what a rewrite site reads as a constant
                                        read in from the model's directory (for --prove)
    interface_differences(ref, cand)    what a caller feeds and reads differently: input and
                                        output names, order, element types, shapes, defaults
    caller_inputs(model)                the graph inputs a caller may feed
    defaults(model)                     {input: its default}: initializers a caller may
                                        override (IR 4 on; before, every initializer was
                                        listed as an input, and onnxruntime refuses a feed)
    differing_defaults(ref, cand)       the inputs both give a default, not the same one

Every door of the prover (`maxlower prove`, maxlower.prove.prove, `--prove`) goes through
`refuse_external` and `interface_differences`, so that one rule decides what "the same
interface" means and no external file is resolved against the working directory.
"""

from __future__ import annotations

import pathlib

import onnx

from maxlower.errors import InvalidModelError

# The first IR version whose initializers need not be graph inputs: from it on, one that is
# an input is a default the caller may override (passes.graph_utils.const_tensor).
DEFAULTS_IR_VERSION = 4


def read_model(path: pathlib.Path, *, candidate: bool) -> onnx.ModelProto:
    """The model as its file has it (opset imports normalised), read once and vetted by
    the pipeline's safety rules and full check (maxlower.pipeline.prepare, on a copy); the
    proof runs on the file's own annotations, not on what shape inference adds or drops.
    Every external tensor is then read in from the file's own directory (the safety rules
    checked its location first), so that neither onnx's checker, numpy_helper,
    onnx.reference nor onnxruntime resolves one against the working directory.
    A candidate that fails only the full check is read all the same, for prove to refute:
    an invalid candidate of a valid reference is a refutation (exit 1), as in
    maxlower.prove.prove, not a bad input."""
    from maxlower.errors import CHECKER_ERRORS
    from maxlower.external import inlined
    from maxlower.io import read_model_proto
    from maxlower.pipeline import normalise_opset_imports, prepare

    proto = read_model_proto(path)
    vetted = onnx.ModelProto()
    vetted.CopyFrom(proto)
    try:
        prepare(vetted, path)
    except InvalidModelError as error:
        if not candidate or not isinstance(error.__cause__, CHECKER_ERRORS):
            raise
    normalise_opset_imports(proto)
    return inlined(proto, path.parent)


def refuse_external(model: onnx.ModelProto, side: str) -> None:
    """A ModelProto handed to the prover with external references has no directory to read
    them from: onnx would look in the working directory, and prove on what it found there."""
    from maxlower.external import external_protos, location

    found = external_protos(model)
    if found:
        raise InvalidModelError(
            f"the {side} model keeps tensor {found[0].name!r} in the external file "
            f"{location(found[0])[:200]!r}, and nothing says which directory that is in: "
            "give `maxlower prove` the model's path, or load it with onnx.load(path), which "
            "reads the data in"
        )


# A dense initializer of at most this many bytes a site reads is read in for its proof (axes
# saved with the weights); a larger one is a weight, and the site reading it inconclusive.
SITE_TENSOR_LIMIT = 1 << 16


def constants_read_in(model: onnx.ModelProto, base_dir) -> onnx.ModelProto:
    """A copy of `model` (prepared from a file in `base_dir`) with the external tensors a
    rewrite site may take as constants read in from `base_dir`, by the project's reader:
    every tensor attribute (a Constant's value) and sparse tensor, and the dense
    initializers of at most SITE_TENSOR_LIMIT bytes. A site model handed to onnx with a
    relative location would be resolved against the working directory; the weights stay
    external (maxlower.prove.sites: a site that reads one is inconclusive)."""
    from maxlower.external import all_graphs, external_protos, is_external, read_all_in

    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    found = external_protos(copy, initializers=False)
    for graph in all_graphs(copy):
        found += [t for t in graph.initializer if is_external(t) and _small(t)]
    if found:
        read_all_in(found, str(base_dir) if base_dir else None)
    return copy


def _small(tensor: onnx.TensorProto) -> bool:
    try:
        itemsize = onnx.helper.tensor_dtype_to_np_dtype(tensor.data_type).itemsize
    except (KeyError, TypeError, ValueError):  # a type numpy has no width for: not a constant
        return False
    elements = 1
    for d in tensor.dims:
        elements *= d
    return tensor.data_type != onnx.TensorProto.STRING and elements * itemsize <= SITE_TENSOR_LIMIT


def caller_inputs(model: onnx.ModelProto) -> list[onnx.ValueInfoProto]:
    """The graph inputs a caller may feed: all but the initializers a model before IR 4
    listed as inputs (onnxruntime takes those as constants and refuses a feed)."""
    if model.ir_version >= DEFAULTS_IR_VERSION:
        return list(model.graph.input)
    constants = {t.name for t in model.graph.initializer}
    return [v for v in model.graph.input if v.name not in constants]


def defaults(model: onnx.ModelProto) -> dict[str, onnx.TensorProto]:
    """{input name: its default}: the initializers that are also inputs a caller feeds."""
    fed = {v.name for v in caller_inputs(model)}
    return {t.name: t for t in model.graph.initializer if t.name in fed}


def differing_defaults(reference: onnx.ModelProto, candidate: onnx.ModelProto) -> list[str]:
    """The inputs to which both models give a default, and not the same one (type, shape,
    value): left unfed, they run with other values."""
    ref, cand = defaults(reference), defaults(candidate)
    return [name for name in ref if name in cand and _value(ref[name]) != _value(cand[name])]


def _value(tensor: onnx.TensorProto) -> tuple:
    array = onnx.numpy_helper.to_array(tensor)  # (read in: refuse_external came first)
    return tensor.data_type, array.shape, array.tobytes()


# --- the interface ------------------------------------------------------------------------
def interface_differences(
    reference: onnx.ModelProto, candidate: onnx.ModelProto, *, shapes: bool = True
) -> list[str]:
    """What a caller of the reference would find different in the candidate, one line each
    (empty: the same interface). The candidate must take every input the reference takes,
    in the same order, of the same element type, accepting every shape the reference
    accepts, with a default wherever the reference has one; an input only the candidate has
    must have a default (the reference's callers never feed it). It must give the same
    outputs, by name, in the same order, of the same element types, of shapes that agree
    where both declare them. `shapes=False`: all but the declared shapes."""
    return _input_differences(reference, candidate, shapes) + _output_differences(
        reference, candidate, shapes
    )


def _input_differences(reference, candidate, shapes: bool) -> list[str]:
    ref = {v.name: v for v in caller_inputs(reference)}
    cand = {v.name: v for v in caller_inputs(candidate)}
    ref_defaults, cand_defaults = defaults(reference), defaults(candidate)
    notes = [
        f"input {n!r} of the reference is not an input of the candidate"
        for n in ref
        if n not in cand
    ]
    notes += [
        f"the candidate needs an input {n!r} that the reference does not have"
        for n in cand
        if n not in ref and n not in cand_defaults
    ]
    notes += _order("inputs", ref, cand)
    for name in (n for n in ref if n in cand):
        notes += _type_differences("input", name, ref[name], cand[name], shapes, accepts=True)
        if name in ref_defaults and name not in cand_defaults:
            notes.append(
                f"input {name!r} has a default in the reference, and none in the candidate "
                "(a caller may leave it out)"
            )
    return notes


def _output_differences(reference, candidate, shapes: bool) -> list[str]:
    ref = {v.name: v for v in reference.graph.output}
    cand = {v.name: v for v in candidate.graph.output}
    notes = [
        f"output {n!r} of the reference is not an output of the candidate"
        for n in ref
        if n not in cand
    ]
    notes += [
        f"the candidate has an extra output {n!r} that the reference does not have"
        for n in cand
        if n not in ref
    ]
    notes += _order("outputs", ref, cand)
    for name in (n for n in ref if n in cand):
        notes += _type_differences("output", name, ref[name], cand[name], shapes, accepts=False)
    return notes


def _order(what: str, ref: dict, cand: dict) -> list[str]:
    """The values both models have, in another order (a caller may take them by place)."""
    ref_order, cand_order = [n for n in ref if n in cand], [n for n in cand if n in ref]
    if ref_order == cand_order:
        return []
    return [f"the {what} are in another order: reference {ref_order}, candidate {cand_order}"]


def _type_differences(what, name, ref, cand, shapes: bool, *, accepts: bool) -> list[str]:
    """The value's type in the two models: kind and element type must be the same; shapes
    (`shapes`) must agree where both declare a size, and, for an input (`accepts`), the
    candidate must take every shape the reference takes (a size where the reference has a
    symbolic dim, or one dim name for two of the reference's, narrows it)."""
    a, b = ref.type, cand.type
    if a.WhichOneof("value") != "tensor_type" or b.WhichOneof("value") != "tensor_type":
        if a.SerializeToString(deterministic=True) == b.SerializeToString(deterministic=True):
            return []
        return [f"{what} {name!r} has another type in the candidate"]
    ta, tb = a.tensor_type, b.tensor_type
    if ta.elem_type != tb.elem_type:
        return [
            f"{what} {name!r} is {_dtype(ta.elem_type)} in the reference and "
            f"{_dtype(tb.elem_type)} in the candidate"
        ]
    if not shapes:
        return []
    if not (ta.HasField("shape") and tb.HasField("shape")):
        if accepts and tb.HasField("shape"):
            return [f"input {name!r} has no declared shape in the reference, one in the candidate"]
        return []
    shape_a, shape_b = _dims(ta.shape), _dims(tb.shape)
    if len(shape_a) != len(shape_b) or not _shapes_agree(shape_a, shape_b, accepts):
        return [
            f"{what} {name!r} is declared of shape {_shape_text(shape_a)} in the reference "
            f"and {_shape_text(shape_b)} in the candidate"
        ]
    return []


def _dims(shape: onnx.TensorShapeProto) -> list[int | str | None]:
    return [d.dim_value if d.HasField("dim_value") else (d.dim_param or None) for d in shape.dim]


def _shapes_agree(ref: list, cand: list, accepts: bool) -> bool:
    """Two sizes differ; for an input, the candidate fixes a size or ties two dims where
    the reference does not (its dim names bound to one reference dim each)."""
    bound: dict[str, int | str | None] = {}
    for a, b in zip(ref, cand):
        if isinstance(a, int) and isinstance(b, int) and a != b:
            return False
        if not accepts or b is None:
            continue
        if isinstance(b, int) and not isinstance(a, int):
            return False
        if isinstance(b, str) and (a is None or bound.setdefault(b, a) != a):
            return False
    return True


def _shape_text(dims: list) -> str:
    return "[" + ", ".join("?" if d is None else str(d) for d in dims) + "]"


def _dtype(elem_type: int) -> str:
    try:
        return onnx.TensorProto.DataType.Name(elem_type).lower()
    except ValueError:
        return f"type {elem_type}"


__all__ = [
    "DEFAULTS_IR_VERSION",
    "SITE_TENSOR_LIMIT",
    "caller_inputs",
    "constants_read_in",
    "defaults",
    "differing_defaults",
    "interface_differences",
    "read_model",
    "refuse_external",
]
