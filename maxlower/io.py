"""Reading, checking and writing model files for the command line: clear errors, atomic
writes, weights never in memory.

    read_model_proto(path)                the file's protobuf, external data not loaded
    check_and_infer(proto)                the full check, and the types inference gives
    model_from_proto(proto, base_dir)     onnx_ir, external data lazy from base_dir
    check_result(model) / write_checked   checked, then written through temporary files

(Loading a file for the pipeline, which also normalises and vets it, is
maxlower.pipeline's `load_proto` and `load_model`.)

The protobuf is parsed without its external data, checked (onnx.checker, full check) and
shape-inferred by onnx's C++ code, and only then turned into onnx_ir, once. Writing goes the
other way: onnx_ir to protobuf once, checked and shape-inferred there, then written. onnx_ir's
CheckerPass and ShapeInferencePass give the same verdicts and types, but each of them
serialises the whole model and the inference pass deserialises it again; on a graph of
20,000 nodes that cost seconds (see benchmarks/RESULTS.md).

External data stays where it is until the output is written: tensors are memory-mapped and
only the pages a rewrite reads (constant axes, say) are touched. Every read goes through
maxlower.external, from the model's own directory (never the working directory); tensors in
attributes (a Constant's value) are read in when the graph is built. The output's data file
is filled with `copy_file_range` (onnx_ir's `ExternalTensor.tofile`), in the kernel, so
writing a model of many GB takes little memory.
"""

from __future__ import annotations

import dataclasses
import math
import os
import pathlib
from collections.abc import Callable, Iterator

import onnx
import onnx_ir as ir
from google.protobuf.message import DecodeError

from maxlower.errors import CHECKER_ERRORS, InvalidModelError
from maxlower.external import (
    all_graphs,
    base_dir_of,
    external_protos,
    ir_external_tensors,
    ir_location_dirs,
    location,
    location_dirs,
    read_all_in,
    read_in,
    set_base_dirs,
    tensors,
)
from maxlower.files import MODEL_FILE_LIMIT, Outputs, read_input
from maxlower.serde import deserialize, serialize
from maxlower.ui import QUIET, Progress
from passes.errors import concise
from passes.graph_utils import (
    SHAPE_SOURCES,
    data_propagation_affordable,
    forget_generated_dim_names_in_proto,
    graph_protos,
    with_reshape_ranks,
)

# Initializers at most this big stay in the protobuf when the output has external data
# (onnx_ir.save's default): axes and other small constants stay readable by the checker.
EXTERNAL_SIZE_THRESHOLD = 256
# As onnx_ir's call_onnx_api: larger (or external) initializers of the main graph reach the
# checker and shape inference as typed graph inputs, without their values.
_CHECKER_TENSOR_LIMIT = 1000


# --- loading ------------------------------------------------------------------------------


def model_from_proto(
    proto: onnx.ModelProto, base_dir: str | os.PathLike, progress: Progress = QUIET
) -> ir.Model:
    """The onnx_ir model of a protobuf whose external tensors lie in `base_dir` (they are
    read lazily from there)."""
    with progress.stage("building the graph"):
        model = deserialize(proto)
        set_base_dirs(model, base_dir)
    return model


def read_model_proto(path: str | os.PathLike) -> onnx.ModelProto:
    """The file's ModelProto, external data not loaded; InvalidModelError with the reason if
    there is none. The file must be a regular one of at most MODEL_FILE_LIMIT bytes
    (`maxlower.files.read_input`); its suffix says its format, as for onnx.load."""
    path = pathlib.Path(path)
    data = read_input(path, "file", MODEL_FILE_LIMIT)
    file_format = onnx.serialization.registry.get_format_from_file_extension(path.suffix)
    try:
        proto = onnx.load_model_from_string(data, format=file_format or "protobuf")
    except DecodeError as error:
        raise InvalidModelError(
            f"{path}: not an ONNX model (the protobuf cannot be parsed)"
        ) from error
    except Exception as error:  # other formats' parsers (text, json) raise their own kinds
        raise InvalidModelError(f"{path}: cannot load ({concise(error)})") from error
    if proto.ir_version == 0 or not proto.opset_import:
        # An empty file parses as an empty ModelProto; say what is missing instead.
        raise InvalidModelError(f"{path}: not an ONNX model (no IR version or opset import)")
    return proto


def check_and_infer(
    proto: onnx.ModelProto, base_dirs: str | os.PathLike | dict[str, str] | None = None
) -> onnx.ModelProto:
    """`onnx.checker.check_model(full_check=True)` on `proto`, raising its errors, and the
    model with the value types that lenient shape inference gives.

    A full check is the structural check plus strict shape inference, so the structural
    check plus strict inference does both jobs in one inference; only if that inference
    fails is the plain full check consulted for the verdict. Data propagation refines the
    types afterwards where it is affordable (see passes.graph_utils.DATA_PROPAGATION_BUDGET).

    Main-graph initializers over 1000 bytes, and external ones, reach the C++ code as
    typed graph inputs, as onnx_ir's CheckerPass passes them, so weights are never read or
    copied. External ones of at most 1000 bytes (axes saved with the weights, say) are read
    when `base_dirs` says where their files are (one directory, or {location: directory}):
    inference then sees their values as it would if they were in the protobuf. Every other
    external tensor (a Constant's value, a subgraph's initializer, a function's or
    training_info's tensors) is read in from `base_dirs`: given as bytes, onnx's checker
    would look for its file in the working directory (maxlower.external).
    """
    light, restore = _light_model(proto, base_dirs)
    serialized = light.SerializeToString()  # once: the C++ calls take the bytes
    # Every external tensor names a location (maxlower.safety): bytes without the word hold
    # none, which spares most models a walk of every attribute.
    elsewhere = _other_external(light) if b"location" in serialized else []
    if elsewhere:
        if light is proto:
            light = onnx.ModelProto()
            light.CopyFrom(proto)
            elsewhere = _other_external(light)
        originals = [(_copy(tensor), index) for tensor, index in elsewhere]
        read_all_in([tensor for tensor, _ in elsewhere], base_dirs)
        serialized = light.SerializeToString()
    try:
        inferred = _check_and_infer_light(serialized)
    except ValueError as error:  # onnx's C++ code: an element type it does not know, say
        raise onnx.checker.ValidationError(concise(error)) from error
    forget_generated_dim_names_in_proto(inferred)  # unk__0 may name dims of different sizes
    keep_declared_outputs(inferred, declared_outputs(proto))
    if elsewhere:
        _put_back(inferred, originals)
    return restore(inferred)


DeclaredOutputs = dict[str, onnx.ValueInfoProto]


def declared_outputs(proto: onnx.ModelProto) -> DeclaredOutputs:
    """{name: ValueInfoProto}: the types the model declares for its graph outputs. Only
    the main graph's: a subgraph's outputs are its node's business, and there what
    inference adds matters (onnxruntime sizes a Loop's scan outputs on zero iterations
    from the body's output shapes)."""
    return {output.name: output for output in proto.graph.output}


def use_refined_outputs(proto: onnx.ModelProto) -> None:
    """The inverse of `keep_declared_outputs`: each graph output takes the type value_info
    refines it to, so that onnx_ir's values carry what inference knows."""
    infos = {v.name: v for v in proto.graph.value_info}
    for output in proto.graph.output:
        refined = infos.get(output.name)
        if refined is not None:
            output.type.CopyFrom(refined.type)


def keep_declared_outputs(proto: onnx.ModelProto, declared: DeclaredOutputs) -> None:
    """Inference merges what it finds into the graph outputs' types (a ZipMap output's map
    values become scalars, a dim gets a size): every output in `declared` is written back
    as the model declared it, and what differs goes into value_info, where the passes read
    it (maxlower.sparse types values from value_info first)."""
    graph = proto.graph
    infos = None
    for output in graph.output:
        original = declared.get(output.name)
        if original is None or output == original:
            continue
        if infos is None:
            infos = {v.name: v for v in graph.value_info}
        refined = infos.get(output.name)  # (one entry a name: a second pass replaces it)
        if refined is None:
            refined = infos[output.name] = graph.value_info.add(name=output.name)
        refined.type.CopyFrom(output.type)
        output.CopyFrom(original)


def _check_and_infer_light(serialized: bytes) -> onnx.ModelProto:
    onnx.checker.check_model(serialized)
    try:
        inferred = onnx.shape_inference.infer_shapes(
            serialized, check_type=True, strict_mode=True, data_prop=False
        )
    except CHECKER_ERRORS:
        onnx.checker.check_model(serialized, full_check=True)  # raises if the model is invalid
        inferred = onnx.shape_inference.infer_shapes(
            serialized, check_type=True, strict_mode=False, data_prop=False
        )
    data_prop = _computes_shapes(inferred, serialized) and data_propagation_affordable(
        _proto_shapes(inferred)
    )
    if data_prop:
        inferred = onnx.shape_inference.infer_shapes(
            serialized, check_type=True, strict_mode=False, data_prop=True
        )
    # the ranks of Reshapes to shapes computed at run time, which onnx's inference leaves
    # unknown, and what follows from them (passes.graph_utils.add_reshape_ranks)
    return with_reshape_ranks(
        inferred,
        lambda model: onnx.shape_inference.infer_shapes(
            model, check_type=True, strict_mode=False, data_prop=data_prop
        ),
    )


def _computes_shapes(model: onnx.ModelProto, serialized: bytes) -> bool:
    """Whether a graph or function of `model` has a Shape or Size node (the op names'
    bytes are looked for first: most models without one are told apart at once)."""
    if not any(name.encode() in serialized for name in SHAPE_SOURCES):
        return False
    nodes = [n for g in graph_protos(model.graph) for n in g.node]
    nodes += [n for f in model.functions for n in f.node]
    return any(n.op_type in SHAPE_SOURCES and n.domain in ("", "ai.onnx") for n in nodes)


def _proto_shapes(model: onnx.ModelProto) -> Iterator[tuple[int | None, ...] | None]:
    """The static shapes `model` states for its values, in every graph and function
    (None: no shape)."""
    infos = [v for f in model.functions for v in f.value_info]
    for graph in graph_protos(model.graph):
        for tensor in graph.initializer:
            yield tuple(tensor.dims)
        infos += [*graph.input, *graph.value_info, *graph.output]
    for info in infos:
        tensor_type = info.type.tensor_type
        if not tensor_type.HasField("shape"):
            yield None
            continue
        yield tuple(d.dim_value if d.HasField("dim_value") else None for d in tensor_type.shape.dim)


def _light_model(
    proto: onnx.ModelProto, base_dirs: str | os.PathLike | dict[str, str] | None
) -> tuple[onnx.ModelProto, Callable[[onnx.ModelProto], onnx.ModelProto]]:
    """`proto` with its large or external main-graph initializers, and those a caller may
    override, as typed graph inputs (a shallow rebuild: nodes and small tensors are copied,
    large tensors are not) and its small external ones read in, and the function that puts
    the originals back into a model derived from it."""
    graph = proto.graph
    heavy, loaded = [], {}
    # From IR 4 an initializer listed as a graph input is a default a caller may override:
    # inference must not read its value (a Reshape to it would get the default's shape).
    # Before IR 4 every initializer had to be listed so: those stay constants.
    overridable = {v.name for v in graph.input} if proto.ir_version >= 4 else set()
    for tensor in graph.initializer:
        if _nbytes(tensor) > _CHECKER_TENSOR_LIMIT or tensor.name in overridable:
            heavy.append(tensor)
        elif tensor.data_location == onnx.TensorProto.EXTERNAL:
            base_dir = base_dir_of(tensor, base_dirs)
            if base_dir is None:
                heavy.append(tensor)
            else:
                loaded[tensor.name] = read_in(tensor, base_dir)
    if not heavy and not loaded:
        return proto, lambda derived: derived
    heavy_names = {t.name for t in heavy}
    input_names = {v.name for v in graph.input}
    light = onnx.ModelProto()
    for field, value in proto.ListFields():
        if field.name != "graph":
            _copy_field(light, field, value)
    for field, value in graph.ListFields():
        if field.name != "initializer":
            _copy_field(light.graph, field, value)
    light.graph.initializer.extend(
        loaded.get(t.name, t) for t in graph.initializer if t.name not in heavy_names
    )
    added = [t.name for t in heavy if t.name not in input_names]
    light.graph.input.extend(
        onnx.helper.make_tensor_value_info(t.name, t.data_type, list(t.dims))
        for t in heavy
        if t.name not in input_names
    )

    def restore(derived: onnx.ModelProto) -> onnx.ModelProto:
        if added:
            dropped = set(added)
            kept = [v for v in derived.graph.input if v.name not in dropped]
            del derived.graph.input[:]
            derived.graph.input.extend(kept)
        del derived.graph.initializer[:]  # the originals, in their order
        derived.graph.initializer.extend(graph.initializer)
        return derived

    return light, restore


def _other_external(proto: onnx.ModelProto) -> list[tuple[onnx.TensorProto, int]]:
    """The external tensors of `proto` other than main-graph initializers, each with its
    position among all such tensors (external or not), in a walk that inference keeps."""
    return [
        (tensor, index)
        for index, tensor in enumerate(_other_tensors(proto))
        if tensor.data_location == onnx.TensorProto.EXTERNAL
    ]


def _other_tensors(proto: onnx.ModelProto) -> Iterator[onnx.TensorProto]:
    """Every tensor but the main graph's initializers: other graphs' initializers
    (subgraphs, training_info), then the rest (sparse tensors, attributes, functions)."""
    for index, graph in enumerate(all_graphs(proto)):
        if index:
            yield from graph.initializer
    yield from (t for t, _ in tensors(proto, initializers=False))


def _copy(tensor: onnx.TensorProto) -> onnx.TensorProto:
    copy = onnx.TensorProto()
    copy.CopyFrom(tensor)
    return copy


def _put_back(derived: onnx.ModelProto, originals: list[tuple[onnx.TensorProto, int]]) -> None:
    """Inference adds types but keeps every node, attribute and initializer in place: the
    tensors read in for it become the external ones they were."""
    if not originals:
        return
    walked = list(_other_tensors(derived))
    for original, index in originals:
        if index >= len(walked) or walked[index].name != original.name:
            raise AssertionError(f"shape inference moved tensor {original.name!r}")
        walked[index].CopyFrom(original)


def _nbytes(tensor: onnx.TensorProto) -> float:
    if tensor.data_type in (onnx.TensorProto.UNDEFINED, onnx.TensorProto.STRING):
        return 0
    return math.prod(tensor.dims) * ir.DataType(tensor.data_type).itemsize


def _copy_field(target, field, value) -> None:
    if field.is_repeated:
        getattr(target, field.name).extend(value)
    elif field.type == field.TYPE_MESSAGE:
        getattr(target, field.name).CopyFrom(value)
    else:
        setattr(target, field.name, value)


# --- writing ------------------------------------------------------------------------------


def default_output_path(input_path: str | os.PathLike, opset: int) -> pathlib.Path:
    """`<stem>.opset<N>.onnx` beside the input."""
    input_path = pathlib.Path(input_path)
    return input_path.with_name(f"{input_path.stem}.opset{opset}.onnx")


@dataclasses.dataclass
class CheckedModel:
    """A model serialised, checked and shape-inferred: what `write_checked` writes.

    External tensors in `proto` still point at their files; `base_dirs` maps each external
    location to the directory it is relative to."""

    proto: onnx.ModelProto
    base_dirs: dict[str, str]


def check_result(
    model: ir.Model, progress: Progress = QUIET, declared: DeclaredOutputs | None = None
) -> CheckedModel:
    """Serialise `model` once, check it with `onnx.checker` (full check) and add the value
    types shape inference gives; raises onnx's checker or inference error if the model
    fails. Outputs in `declared` (the input model's `declared_outputs`) keep its types."""
    with progress.stage("checking the result (onnx.checker, full check)"):
        base_dirs = ir_location_dirs(model)
        proto = serialize(model)
        if declared:
            keep_declared_outputs(proto, declared)
        return CheckedModel(check_and_infer(proto, base_dirs), base_dirs)


def check_proto_result(
    proto: onnx.ModelProto,
    base_dir: str | os.PathLike,
    progress: Progress = QUIET,
    *,
    checked_already: bool = False,
) -> CheckedModel:
    """`check_result` for a converted protobuf whose external tensors all lie in
    `base_dir` (what maxlower.sparse returns). `checked_already`: the caller knows that the
    input's full check and types stand for `proto` (see maxlower.pipeline.run)."""
    base_dirs = location_dirs(proto, base_dir)
    if checked_already:
        return CheckedModel(proto, base_dirs)
    with progress.stage("checking the result (onnx.checker, full check)"):
        return CheckedModel(check_and_infer(proto, base_dirs), base_dirs)


def save_model_file(proto: onnx.ModelProto, path: str, file_format: str = "protobuf") -> None:
    """onnx.save in `file_format`. The protobuf is serialised and written directly: onnx.save
    would first walk every tensor of the model for external data to write, which
    write_checked has written already."""
    if file_format == "protobuf":
        with open(path, "wb") as handle:
            handle.write(proto.SerializeToString())
    else:
        onnx.save(proto, path, format=file_format)


def write_checked(
    checked: CheckedModel,
    path: str | os.PathLike,
    *,
    progress: Progress = QUIET,
    outputs: Outputs | None = None,
) -> pathlib.Path:
    """Write a checked model to `path`, never leaving `path` or its data file half-written.

    A model with external data gets every initializer over 256 bytes in `<name>.data`
    beside `path` (and no data file if it has none): external tensors are copied range by
    range in the kernel (`copy_file_range`), never read into memory. Both files are staged
    under temporary names in the output directory (`maxlower.files.Outputs`), the data file
    first; with `outputs`, the caller has declared them and commits them with its other
    files, else they are renamed into place here.
    """
    path = pathlib.Path(path)
    data_path = path.with_name(f"{path.name}.data")
    if outputs is None:
        with Outputs() as own:
            own.declare(path, "OUT")
            own.declare(data_path, "OUT.data", optional=True)
            write_checked(checked, path, progress=progress, outputs=own)
            own.commit()
        return path
    proto = checked.proto
    try:
        if checked.base_dirs and _large_initializers(proto, checked.base_dirs):
            temp_data = outputs.stage(data_path)
            _write_external_data(
                proto, checked.base_dirs, path.parent, temp_data, data_path.name, progress
            )
        elif checked.base_dirs:
            _inline_external_data(proto, checked.base_dirs)
        with progress.stage(f"writing {path}"):
            file_format = onnx.serialization.registry.get_format_from_file_extension(path.suffix)
            save_model_file(proto, outputs.stage(path), file_format or "protobuf")
    except OSError as error:
        what = f"{error.strerror}: {error.filename}" if error.filename else str(error)
        raise InvalidModelError(f"{path}: cannot write ({what})") from error
    return path


def _large_initializers(proto: onnx.ModelProto, base_dirs: dict[str, str]) -> bool:
    """Whether some tensor goes to the data file (over EXTERNAL_SIZE_THRESHOLD)."""
    return any(
        _source(t, base_dirs).nbytes > EXTERNAL_SIZE_THRESHOLD for t in _data_candidates(proto)
    )


def _data_candidates(proto: onnx.ModelProto) -> list[onnx.TensorProto]:
    """The tensors that may go to the data file: every initializer (in every graph) and
    every other external tensor (a Constant's value, a function's, training_info's)."""
    initializers = [t for graph in all_graphs(proto) for t in graph.initializer]
    return [*initializers, *external_protos(proto, initializers=False, checked=True)]


def _source(tensor: onnx.TensorProto, base_dirs: dict[str, str]) -> ir.TensorProtocol:
    """The tensor's data, an external one read from the directory `base_dirs` gives its
    location, never from the working directory."""
    if tensor.data_location != onnx.TensorProto.EXTERNAL:
        return ir.serde.deserialize_tensor(tensor, "")
    if not base_dirs.get(location(tensor)):
        raise AssertionError(f"no directory for the external tensor {tensor.name!r}")
    return ir.serde.deserialize_tensor(tensor, base_dirs[location(tensor)])


def _inline_external_data(proto: onnx.ModelProto, base_dirs: dict[str, str]) -> None:
    """Read every (small) external tensor into the protobuf."""
    for tensor in _data_candidates(proto):
        if tensor.data_location == onnx.TensorProto.EXTERNAL:
            source = _source(tensor, base_dirs)
            tensor.CopyFrom(onnx.numpy_helper.from_array(source.numpy(), tensor.name))


def _write_external_data(
    proto: onnx.ModelProto,
    base_dirs: dict[str, str],
    directory: pathlib.Path,
    temp_data: str,
    data_name: str,
    progress: Progress,
) -> None:
    """Write every initializer over the threshold (in every graph) to `temp_data`, and point
    its TensorProto at `data_name`, the name the file will have. So are the other external
    tensors over it (a Constant's value, a function's, training_info's): every location
    the output names is its own data file. Small external tensors are read into the
    protobuf. Each source is read from the directory `base_dirs` gives its location,
    never from the working directory."""
    large, sources = [], []
    for tensor in _data_candidates(proto):
        external = tensor.data_location == onnx.TensorProto.EXTERNAL
        source = _source(tensor, base_dirs)
        if source.nbytes > EXTERNAL_SIZE_THRESHOLD:
            large.append(tensor)
            sources.append(source)
        elif external:
            tensor.CopyFrom(onnx.numpy_helper.from_array(source.numpy(), tensor.name))
    total = sum(source.nbytes for source in sources)
    with progress.bar(total, f"writing {data_name} ({total / 1e9:.2f} GB)") as advance:
        written = ir.external_data.convert_tensors_to_external(
            sources,
            base_dir=str(directory),
            relative_path=os.path.basename(temp_data),
            callback=lambda tensor, info: advance(tensor.nbytes),
        )
    for tensor, out in zip(large, written):
        for field in (
            "raw_data",
            "float_data",
            "int32_data",
            "int64_data",
            "double_data",
            "uint64_data",
            "string_data",
            "external_data",
        ):
            tensor.ClearField(field)
        tensor.data_location = onnx.TensorProto.EXTERNAL
        for key, value in (
            ("location", data_name),
            ("offset", str(out.offset)),
            ("length", str(out.length)),
        ):
            entry = tensor.external_data.add()
            entry.key, entry.value = key, value


def external_data_files(*models: ir.Model) -> set[str]:
    """The paths of the files the models' external tensors read (attributes, subgraphs and
    functions included)."""
    return {tensor.path for model in models for tensor in ir_external_tensors(model)}
