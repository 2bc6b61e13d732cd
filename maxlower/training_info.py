"""A model's `training_info` (the graphs that initialise and train it), through the pipeline.

    check_unchanged_at(proto, source, target)   ConversionError (exit code 3) if a node of
                                                training_info changes schema between the
                                                two opsets
    set_aside(proto) / put_back(checked, ...)   onnx_ir reads no training_info: the
                                                whole-graph path keeps it aside and puts
                                                it back into the result

maxlower converts the inference graph and its functions, not training_info. onnx's checker
does not look at training_info either, so a training graph left at the source opset would
be written into a model that imports the target one, invalid there. A node whose schema is
the same at both opsets means the same, so training_info that holds only such nodes is kept
as it is; otherwise the conversion is refused, the same through the command line and the
library (both run maxlower.pipeline).
"""

from __future__ import annotations

import os

import onnx

from maxlower.external import location_dirs
from maxlower.io import CheckedModel
from passes.builder import schema_version
from passes.errors import ConversionError
from passes.graph_utils import graph_protos

_DEFAULT_DOMAINS = ("", "ai.onnx")


def check_unchanged_at(proto: onnx.ModelProto, source: int, target: int) -> None:
    """Refuse a conversion from `source` to `target` that would leave a training_info node
    at a schema the target does not give it."""
    for where, node in _training_nodes(proto):
        if node.domain not in _DEFAULT_DOMAINS:
            continue  # other domains keep their own opset imports
        before, after = schema_version(node.op_type, source), schema_version(node.op_type, target)
        if before == after:
            continue
        at_target = (
            f"{node.op_type}-{after} at opset {target}"
            if after is not None
            else f"absent at opset {target}"
        )
        raise ConversionError(
            node.name or f"#{where[1]}",
            node.op_type,
            f"it sits in {where[0]}, which maxlower does not convert: it is "
            f"{node.op_type}-{before} at opset {source} but {at_target}, so the written "
            "training graph would not be valid at the target opset",
            _remedy(node.op_type, before),
        )


def _remedy(op_type: str, version: int | None) -> str:
    same = [
        opset
        for opset in range(1, onnx.defs.onnx_opset_version() + 1)
        if schema_version(op_type, opset) == version
    ]
    span = f"target an opset in {same[0]}..{same[-1]}, where it stays {op_type}-{version}, or "
    return (
        (span if same and version is not None else "")
        + "remove training_info before converting (del model.training_info[:]) and "
        "rebuild it at the target opset"
    )


def _training_nodes(proto: onnx.ModelProto):
    """(where, index), node for every node of every training_info graph, subgraphs too."""
    for index, training in enumerate(proto.training_info):
        for field in ("initialization", "algorithm"):
            if not training.HasField(field):
                continue
            for graph in graph_protos(getattr(training, field)):
                for position, node in enumerate(graph.node):
                    yield (f"training_info[{index}].{field}", position), node


def set_aside(proto: onnx.ModelProto) -> list[onnx.TrainingInfoProto]:
    """Copies of `proto`'s training_info, for `put_back` (onnx_ir drops it)."""
    saved = []
    for training in proto.training_info:
        copy = onnx.TrainingInfoProto()
        copy.CopyFrom(training)
        saved.append(copy)
    return saved


def put_back(
    checked: CheckedModel, saved: list[onnx.TrainingInfoProto], base_dir: str | os.PathLike
) -> None:
    """The training_info `set_aside` kept, back into the result; its external tensors lie
    in `base_dir` (the input's directory) for the writer."""
    if not saved or checked.proto.training_info:
        return
    checked.proto.training_info.extend(saved)
    holder = onnx.ModelProto()
    holder.training_info.extend(saved)
    for location, directory in location_dirs(holder, base_dir).items():
        checked.base_dirs.setdefault(location, directory)


__all__ = ["check_unchanged_at", "put_back", "set_aside"]
