"""`lower(model, profile)`: make a model fit a backend profile, exactly.

    lower(model, "primitives")            no Max, ReduceMax or ArgMax left anywhere
    lower(model, "onnxruntime")           every node runs on onnxruntime's CPU kernels
    lower(model, "path/to/profile.toml")  your own profile

The opset stays as it is (`convert_and_lower` converts first). The input is checked with the
full checker, shapes are inferred (also inside functions, from their call sites), every node
the profile rejects is rewritten by `passes.legalize.LegalizePass`, and the result is checked
again with the full checker.
"""

from __future__ import annotations

from pathlib import Path

import onnx
import onnx_ir as ir

from maxlower.api import (
    InvalidModelError,
    ModelLike,
    _to_ir,
    check_full,
    convert_ir_model,
)
from maxlower.profiles import Profile, ProfileError, load_profile
from passes.function_types import InferFunctionTypesPass
from passes.graph_utils import forget_generated_dim_names, infer_shapes
from passes.legalize import LegalizePass, Lowering
from passes.version.convert import Rewrite

ProfileLike = str | Path | Profile


def lower(model: ModelLike, profile: ProfileLike) -> ModelLike:
    """`model` with every node `profile` rejects rewritten exactly; the same kind of object
    back, and the input untouched. Raises ConversionError when some node has no exact form
    the profile accepts, ProfileError for an unknown or malformed profile, and
    InvalidModelError for unusable input."""
    lowered, _ = lower_with_report(model, profile)
    return lowered


def lower_with_report(model: ModelLike, profile: ProfileLike) -> tuple[ModelLike, list[Lowering]]:
    """`lower`, plus what it rewrote (what the CLI prints)."""
    ir_model = _to_ir(model)
    lowerings = lower_ir_model(ir_model, profile)
    if isinstance(model, onnx.ModelProto):
        return ir.serde.serialize_model(ir_model), lowerings
    return ir_model, lowerings


def lower_ir_model(model: ir.Model, profile: ProfileLike) -> list[Lowering]:
    """Lower an onnx_ir model in place. On error the model may be partly rewritten."""
    profile = load_profile(profile)
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
    lowerings = lower_typed_model(model, profile)
    if lowerings:
        infer_shapes(model)
        forget_generated_dim_names(model)
    check_full(model)
    return lowerings


def lower_typed_model(model: ir.Model, profile: ProfileLike) -> list[Lowering]:
    """The lowering proper, in place, for a model whose values carry the types and shapes
    shape inference gives (`maxlower.io.load_model(path, infer_shapes=True)`); the result is
    neither shape-inferred nor checked (the command line does both when it writes)."""
    profile = load_profile(profile)
    if "" not in model.opset_imports:
        raise InvalidModelError("the model imports no default-domain ('' / ai.onnx) opset")
    InferFunctionTypesPass()(model)  # function bodies get the types their calls imply
    legalize = LegalizePass(profile)
    legalize(model)
    if legalize.lowerings:
        model.ir_version = max(model.ir_version, 4)  # initializers apart from the inputs
    return legalize.lowerings


def convert_and_lower(
    model: ModelLike, opset: int, profile: ProfileLike
) -> tuple[ModelLike, list[Rewrite], list[Lowering]]:
    """Convert to `opset` (maxlower.convert), then lower for `profile`, in one step."""
    profile = load_profile(profile)  # a bad profile fails before any work
    ir_model = _to_ir(model)
    rewrites = convert_ir_model(ir_model, opset)
    lowerings = lower_ir_model(ir_model, profile)
    if isinstance(model, onnx.ModelProto):
        return ir.serde.serialize_model(ir_model), rewrites, lowerings
    return ir_model, rewrites, lowerings


__all__ = [
    "Lowering",
    "Profile",
    "ProfileError",
    "convert_and_lower",
    "load_profile",
    "lower",
    "lower_ir_model",
    "lower_typed_model",
    "lower_with_report",
]
