"""The library entry points: `convert(model, opset)` and friends, and the errors every door
raises. They run maxlower.pipeline, as the command line does."""

from __future__ import annotations

import os
import pathlib
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar, cast

import onnx
import onnx_ir as ir

from passes.errors import ConversionError
from passes.graph_utils import graph_protos

if TYPE_CHECKING:
    from maxlower.pipeline import Job, Report
    from maxlower.prove import ProofOptions, ProveLike
    from maxlower.report import ReportFile

ModelLike = TypeVar("ModelLike", onnx.ModelProto, ir.Model)
T = TypeVar("T")

LATEST_OPSET = onnx.defs.onnx_opset_version()


class InvalidModelError(ValueError):
    """The input is not a model maxlower can work on (exit code 2 on the command line)."""


def convert(
    model: ModelLike,
    opset: int,
    *,
    expand_functions: bool = False,
    base_dir: str | os.PathLike[str] | None = None,
    report: str | os.PathLike[str] | None = None,
    prove: ProveLike = False,
) -> ModelLike:
    """Convert `model` to `opset`, exactly; returns the same kind of object it was given.

    The input is not modified. Raises ConversionError when some node has no exact form at
    `opset`, and InvalidModelError when the input is not a usable model. This runs the
    pipeline `maxlower convert` runs (maxlower.pipeline), so both give the same model or
    the same refusal.

    `expand_functions=True` lets an op that does not exist at `opset` (LayerNormalization
    below 17, say) become its ONNX function body: the spec's definition, which a runtime's
    fused kernel may round differently in the last bits of a float. `base_dir` is the
    directory of a ModelProto's external data, when it was loaded without it. `report`:
    also write the HTML report `maxlower convert --report` writes (maxlower.report).
    `prove`: what `--prove` does (see `run_job`).
    """
    converted, _ = convert_with_report(
        model,
        opset,
        expand_functions=expand_functions,
        base_dir=base_dir,
        report=report,
        prove=prove,
    )
    return converted


def convert_with_report(
    model: ModelLike,
    opset: int,
    *,
    expand_functions: bool = False,
    base_dir: str | os.PathLike[str] | None = None,
    report: str | os.PathLike[str] | None = None,
    prove: ProveLike = False,
) -> tuple[ModelLike, Report]:
    """`convert`, plus the report of what it changed (what the command line prints):
    `report.rewrites` (both families), `report.conversions` (the other ops)."""
    from maxlower.pipeline import Job

    check_target_opset(opset)
    job = Job(opset, expand_functions=expand_functions)
    return run_job(model, job, base_dir, report, prove=prove)


def run_job(
    model: ModelLike,
    job: Job,
    base_dir: str | os.PathLike[str] | None = None,
    report: str | os.PathLike[str] | None = None,
    *,
    prove: ProveLike = False,
) -> tuple[ModelLike, Report]:
    """The library's door into maxlower.pipeline: `model` (untouched) through `job`, as the
    same kind of object, and the report; with `report`, the HTML page at that path too.

    `prove` (what `--prove` does on the command line): True, a dict of
    maxlower.prove.ProofOptions' fields (max_dim, timeout, signed_zeros) or a
    ProofOptions: every rewrite site of the run is proved equal to the node it replaced
    (maxlower.prove.sites.prove_run), and the result is returned only if every site is;
    else CounterexampleFound (a site differs: `error.report.counterexample` holds the
    inputs) or ProofInconclusive (the message names the node, op and size), one line
    each, as the command line's exit codes 1 and 5."""
    from maxlower.prove import ProofOptions, require_solver

    proving = ProofOptions.of(prove)
    if proving is not None:
        require_solver()
    if report is not None:
        from maxlower.report import ReportFile

        with ReportFile(report) as file:  # vetted before any work, written last
            return _run_job(model, job, base_dir, file, proving)
    return _run_job(model, job, base_dir, None, proving)


def _run_job(
    model: ModelLike,
    job: Job,
    base_dir: str | os.PathLike[str] | None,
    file: ReportFile | None,
    proving: ProofOptions | None = None,
) -> tuple[ModelLike, Report]:
    from maxlower import pipeline

    known = base_dir is not None or isinstance(model, ir.Model)  # ir: tensors know theirs
    proto, base_dir = _as_proto(model, base_dir)
    path = pathlib.Path(base_dir) / _LABEL
    prepared = _labelled(lambda: pipeline.prepare(proto, path, directory_known=known))
    before = None
    if file is not None or proving is not None:  # the input as the pipeline starts from
        before = onnx.ModelProto()  # it (run changes it)
        before.CopyFrom(prepared)
    outcome = _labelled(lambda: pipeline.run(prepared, job, base_dir))
    proof = None
    if proving is not None and before is not None:
        from maxlower.prove.sites import prove_run

        proof = outcome.report.proof = prove_run(before, outcome, job, proving)
        error = proof.error()
        if error is not None:
            raise error
    if file is not None and before is not None:
        from maxlower.report import job_report

        file.write(job_report(_LABEL, before, outcome, job, file.seconds, None, proof))
    if not isinstance(model, ir.Model):
        return outcome.proto, outcome.report
    converted = deserialize(outcome.proto)
    if outcome.checked.base_dirs:
        from maxlower.external import set_base_dirs

        set_base_dirs(converted, base_dir)
    # (mypy cannot rule out a class deriving from both ModelProto and ir.Model)
    return cast(ModelLike, converted), outcome.report


# What the pipeline's messages call a model that has no file (the command line says IN).
_LABEL = "<model>"


def _labelled(step: Callable[[], T]) -> T:
    """Run a pipeline step; its InvalidModelError names no file (there is none)."""
    try:
        return step()
    except InvalidModelError as error:
        text = str(error)
        for prefix in (f"{_LABEL}: ", f"{os.sep}{_LABEL}: "):
            at = text.find(prefix)
            if at != -1 and (at == 0 or prefix.startswith(os.sep)):
                text = text[at + len(prefix) :]
                break
        raise InvalidModelError(text) from error


def _as_proto(
    model: onnx.ModelProto | ir.Model, base_dir: str | os.PathLike[str] | None
) -> tuple[onnx.ModelProto, str]:
    """A protobuf copy of `model` and the directory of its external data."""
    if isinstance(model, ir.Model):
        from maxlower.external import ir_external_tensors, ir_read_all_in

        # every external tensor, attributes and functions too
        directories = {str(t.base_dir or "") for t in ir_external_tensors(model)}
        if len(directories) > 1 or "" in directories:
            # tensors from several places (or from one nobody named): read them in, each
            # from its own directory (base_dir where it has none)
            model = model.clone()
            ir_read_all_in(model, base_dir)
            directories = set()
        found = directories.pop() if directories else None
        return serialize(model), str(base_dir or found or os.curdir)
    if not isinstance(model, onnx.ModelProto):
        raise TypeError(f"expected onnx.ModelProto or onnx_ir.Model, got {type(model).__name__}")
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    return copy, str(base_dir or os.curdir)


def check_target_opset(opset: int) -> None:
    if not 1 <= opset <= LATEST_OPSET:
        raise InvalidModelError(
            f"target opset {opset} is outside 1..{LATEST_OPSET}, the opsets this onnx "
            f"({onnx.__version__}) knows"
        )


# model.meta key: the value types onnx_ir cannot read, set aside by `deserialize`
_SET_ASIDE = "maxlower.types_onnx_ir_cannot_read"


def deserialize(proto: onnx.ModelProto) -> ir.Model:
    """ir.serde.deserialize_model, with what onnx_ir cannot read (and onnx.checker let
    through: a damaged function, say) an InvalidModelError.

    Value types onnx_ir has no class for (a map, as in ZipMap's sequence of maps; an opaque
    type) are set aside: the values are read untyped and `serialize` puts their types back,
    so a model holding them goes through every pass (none of which reads those values)."""
    set_aside = _set_aside_unreadable_types(proto)
    clashing = _clashing_function_value_names(proto)
    if set_aside or clashing:
        copy = onnx.ModelProto()
        copy.CopyFrom(proto)
        _set_aside_unreadable_types(copy, clear=True)
        clashing_infos = _drop_value_info(copy.graph, clashing)
        proto = copy
    try:
        model = ir.serde.deserialize_model(proto)
        if set_aside:
            model.meta[_SET_ASIDE] = set_aside
        if clashing:  # the main graph's own values: typed by their entries, by hand
            values = ir.convenience.create_value_mapping(model.graph)
            for info in clashing_infos:
                if info.name in values:
                    ir.serde.deserialize_value_info_proto(info, values[info.name])
        return model
    except ir.serde.SerdeError as error:
        details = [str(e).strip().splitlines()[0] for e in (error, error.__cause__) if e]
        raise InvalidModelError(
            f"onnx_ir cannot read the model ({': '.join(filter(None, details))})"
        ) from error


def serialize(model: ir.Model) -> onnx.ModelProto:
    """ir.serde.serialize_model, with the value types `deserialize` set aside put back."""
    proto = ir.serde.serialize_model(model)
    clashing = _clashing_function_value_names(proto)
    if clashing:  # the graph's own entries come first; the others are its functions'
        proto.graph.value_info.extend(_drop_value_info(proto.graph, clashing))
    set_aside = model.meta.get(_SET_ASIDE)
    if set_aside:
        for graph in graph_protos(proto.graph):
            for info in [*graph.input, *graph.output, *graph.value_info]:
                if not info.HasField("type") and info.name in set_aside:
                    info.type.CopyFrom(set_aside[info.name])
    return proto


def _clashing_function_value_names(proto: onnx.ModelProto) -> set[str]:
    """Names of the main graph's values that read as onnx_ir's names for function values
    ('{domain}::{function}/{value}'): below IR 10 it stores function value types in the main
    graph's value_info under such names, and applies every entry so named to the function's
    value, so a main-graph value of that name would type the function, and back."""
    if not proto.functions:
        return set()
    functions = {f"{f.domain}::{f.name}" for f in proto.functions}
    graph = proto.graph
    names = {v.name for v in [*graph.input, *graph.output]}
    names |= {t.name for t in graph.initializer} | {o for n in graph.node for o in n.output}
    return {n for n in names if n.count("/") == 1 and n.split("/")[0] in functions}


def _drop_value_info(graph: onnx.GraphProto, names: set[str]) -> list[onnx.ValueInfoProto]:
    """Remove the value_info entries of `names`; returns the first entry of each name that
    is an intermediate value of `graph` (the graph's own: onnx_ir writes those before its
    functions' entries; graph inputs and outputs have none of their own)."""
    outputs = {v.name for v in graph.output}
    made = {o for node in graph.node for o in node.output} - outputs
    first: dict[str, onnx.ValueInfoProto] = {}
    kept = []
    for info in graph.value_info:
        if info.name not in names:
            kept.append(info)
        elif info.name in made and info.name not in first:
            first[info.name] = info
    if len(kept) != len(graph.value_info):
        copies = [type(i)() for i in kept]
        for copy, info in zip(copies, kept):
            copy.CopyFrom(info)
        firsts = [type(i)() for i in first.values()]
        for copy, info in zip(firsts, first.values()):
            copy.CopyFrom(info)
        del graph.value_info[:]
        graph.value_info.extend(copies)
        return firsts
    return []


def _set_aside_unreadable_types(
    proto: onnx.ModelProto, *, clear: bool = False
) -> dict[str, onnx.TypeProto]:
    """{value name: type} of the graph inputs, outputs and value_info (in every graph)
    whose type onnx_ir cannot read; with `clear`, those types are removed from `proto`
    (value_info entries dropped)."""
    found = {}
    for graph in graph_protos(proto.graph):
        for field in (graph.input, graph.output, graph.value_info):
            for info in list(field):
                if info.HasField("type") and not _readable(info.type):
                    if info.name not in found:  # a graph output's own type first
                        found[info.name] = onnx.TypeProto()
                        found[info.name].CopyFrom(info.type)
                    if clear and field is graph.value_info:
                        field.remove(info)
                    elif clear:
                        info.ClearField("type")
    return found


def _readable(type_proto: onnx.TypeProto) -> bool:
    if type_proto.WhichOneof("value") in ("tensor_type", None):  # (the common case, fast)
        return True
    try:
        return ir.serde.deserialize_type_proto_for_type(type_proto) is not None
    except ir.serde.SerdeError:
        return False


__all__ = [
    "ConversionError",
    "InvalidModelError",
    "convert",
    "convert_with_report",
    "run_job",
]
