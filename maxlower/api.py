"""The library entry points: `convert(model, opset)` and friends."""

from __future__ import annotations

from typing import TypeVar

import onnx
import onnx_ir as ir
from onnx_ir.passes.common import CheckerPass

from passes.errors import ConversionError
from passes.function_types import InferFunctionTypesPass
from passes.graph_utils import forget_generated_dim_names, infer_shapes
from passes.version.convert import ConvertFamilyPass, Rewrite
from passes.version.other_ops import ConvertOtherOpsPass, source_opsets_of

ModelLike = TypeVar("ModelLike", onnx.ModelProto, ir.Model)

LATEST_OPSET = onnx.defs.onnx_opset_version()


class InvalidModelError(ValueError):
    """The input is not a model maxlower can work on (exit code 2 on the command line)."""


def convert(model: ModelLike, opset: int, *, expand_functions: bool = False) -> ModelLike:
    """Convert `model` to `opset`, exactly; returns the same kind of object it was given.

    The input is not modified. Raises ConversionError when some node has no exact form at
    `opset`, and InvalidModelError when the input is not a usable model.

    `expand_functions=True` lets an op that does not exist at `opset` (LayerNormalization
    below 17, say) become its ONNX function body: the spec's definition, which a runtime's
    fused kernel may round differently in the last bits of a float.
    """
    converted, _ = convert_with_report(model, opset, expand_functions=expand_functions)
    return converted


def convert_with_report(
    model: ModelLike, opset: int, *, expand_functions: bool = False
) -> tuple[ModelLike, list[Rewrite]]:
    """`convert`, plus the list of rewrites it made (what the CLI prints)."""
    ir_model = _to_ir(model)
    rewrites = convert_ir_model(ir_model, opset, expand_functions=expand_functions)
    if isinstance(model, onnx.ModelProto):
        return ir.serde.serialize_model(ir_model), rewrites
    return ir_model, rewrites


def convert_ir_model(
    model: ir.Model, opset: int, *, expand_functions: bool = False
) -> list[Rewrite]:
    """Convert an onnx_ir model in place. On error the model may be partly rewritten."""
    check_target_opset(opset)
    if "" not in model.opset_imports:
        raise InvalidModelError("the model imports no default-domain ('' / ai.onnx) opset")
    try:
        check_full(model)
    except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError) as error:
        first_line = str(error).strip().splitlines()[0]
        raise InvalidModelError(
            f"the input model fails onnx.checker (full check): {first_line}"
        ) from None
    infer_shapes(model)
    rewrites = convert_typed_model(model, opset, expand_functions=expand_functions)
    infer_shapes(model)  # types and shapes for the new values
    forget_generated_dim_names(model)
    check_full(model)
    return rewrites


def convert_typed_model(
    model: ir.Model, opset: int, *, expand_functions: bool = False
) -> list[Rewrite]:
    """The conversion proper, in place: for a model that passed the full check and whose
    values carry the types shape inference gives (`maxlower.io.load_model(path,
    infer_shapes=True)` returns one). The result is neither shape-inferred nor checked:
    `maxlower.io.save_model_atomic` and `check_result` do both on the protobuf they
    serialise anyway, which on large graphs costs a fraction of doing them in onnx_ir."""
    check_target_opset(opset)
    if "" not in model.opset_imports:
        raise InvalidModelError("the model imports no default-domain ('' / ai.onnx) opset")
    if model.functions:  # (it walks every node to find calls; without functions, for nothing)
        InferFunctionTypesPass()(model)  # function inputs are untyped; calls say what they get
    sources = source_opsets_of(model)
    family = ConvertFamilyPass(opset)
    family(model)  # first: it removes constants (axes) that only the family nodes used
    ConvertOtherOpsPass(opset, sources, expand_functions=expand_functions)(model)
    # IR 4 lets initializers (which rewrites add) stand apart from the graph inputs.
    model.ir_version = max(model.ir_version, _min_ir_version(opset), 4)
    return family.rewrites


def check_full(model: ir.Model) -> None:
    """onnx.checker with full_check. Through onnx_ir's CheckerPass, which checks large and
    external initializers as typed graph inputs, so weights are never read or copied."""
    CheckerPass(full_check=True)(model)


def check_target_opset(opset: int) -> None:
    if not 1 <= opset <= LATEST_OPSET:
        raise InvalidModelError(
            f"target opset {opset} is outside 1..{LATEST_OPSET}, the opsets this onnx "
            f"({onnx.__version__}) knows"
        )


def _min_ir_version(opset: int) -> int:
    try:
        return onnx.helper.find_min_ir_version_for([onnx.helper.make_opsetid("", opset)])
    except ValueError:  # opsets 2-4 were never released; IR 3 is what opsets 1 and 5 use
        return 3


def deserialize(proto: onnx.ModelProto, path: object = None) -> ir.Model:
    """ir.serde.deserialize_model, with what onnx_ir cannot read (and onnx.checker let
    through: a damaged function, say) an InvalidModelError; `path` names the file."""
    try:
        return ir.serde.deserialize_model(proto)
    except ir.serde.SerdeError as error:
        where = f"{path}: " if path is not None else ""
        details = [str(e).strip().splitlines()[0] for e in (error, error.__cause__) if e]
        raise InvalidModelError(
            f"{where}onnx_ir cannot read the model ({': '.join(filter(None, details))})"
        ) from None


def _to_ir(model: onnx.ModelProto | ir.Model) -> ir.Model:
    if isinstance(model, onnx.ModelProto):
        # onnx_ir's tensors wrap the proto's own TensorProtos: work on a copy, so that
        # nothing a pass does can reach the caller's model.
        copy = onnx.ModelProto()
        copy.CopyFrom(model)
        return deserialize(copy)
    if isinstance(model, ir.Model):
        return model.clone()
    raise TypeError(f"expected onnx.ModelProto or onnx_ir.Model, got {type(model).__name__}")


__all__ = [
    "ConversionError",
    "InvalidModelError",
    "convert",
    "convert_ir_model",
    "convert_typed_model",
    "convert_with_report",
]
