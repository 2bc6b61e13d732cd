"""Drop-in replacements for the converters and passes people already call: one changed
import line, and the same calls go through maxlower's exact conversion.

    # onnx:      from onnx.version_converter import convert_version
    from maxlower import convert_version
    converted = convert_version(model, 13)          # a new ModelProto, as onnx's

    # onnxscript: from onnxscript.version_converter import ConvertVersionPass
    from maxlower import ConvertVersionPass
    ConvertVersionPass(target_version=13)(ir_model)   # in place, as onnxscript's

    from maxlower import LegalizePass
    LegalizePass("tensorrt")(ir_model)               # a profile by name, path or object

Each runs maxlower.api's pipeline (the full checker before and after, one conversion), so
the model it gives is the one `maxlower convert` writes. Refusals are ConversionError, a
RuntimeError as onnx's converter's are, so `except RuntimeError` written for onnx's catches
them; a model that is not usable is InvalidModelError (a ValueError).
"""

from __future__ import annotations

import os
from typing import cast

import onnx
import onnx_ir as ir

from maxlower.api import convert_with_report
from maxlower.profiles import ProfilesLike, load_profiles
from passes import legalize


def convert_version(
    model: onnx.ModelProto,
    target_version: int,
    *,
    expand_functions: bool = True,
    base_dir: str | os.PathLike[str] | None = None,
) -> onnx.ModelProto:
    """`onnx.version_converter.convert_version`'s signature and return type: `model`
    converted to opset `target_version`, exactly, as a new ModelProto (`model` is not
    changed). Raises ConversionError (a RuntimeError) naming the node that has no exact form
    at `target_version`, and TypeError for arguments of the wrong type, as onnx's does.
    `expand_functions` and `base_dir` are maxlower.convert's (an op missing at the target
    becomes its ONNX function body; the directory of a model loaded without its external
    data, which maxlower reads, and never from the working directory)."""
    if not isinstance(model, onnx.ModelProto):
        raise TypeError(
            f"convert_version takes an onnx.ModelProto as model, not {type(model).__name__} "
            "(for an onnx_ir.Model: maxlower.convert, or maxlower.ConvertVersionPass)"
        )
    _require_int_target("convert_version", target_version)
    converted, _ = convert_with_report(
        model, target_version, expand_functions=expand_functions, base_dir=base_dir
    )
    return converted


class ConvertVersionPass(ir.passes.InPlacePass):
    """onnxscript's `ConvertVersionPass(target_version, fallback=False)`, in place on an
    onnx_ir.Model: every node brought to opset `target_version` exactly, or ConversionError
    (the model then unchanged). `fallback` is taken for onnxscript's signature: maxlower
    always hands an op it has no adapter for to onnx's converter, one node at a time, and
    keeps the result only where it is exact, so there is nothing to fall back to.
    `expand_functions` is maxlower.convert's."""

    def __init__(
        self, target_version: int, fallback: bool = False, *, expand_functions: bool = True
    ) -> None:
        super().__init__()
        _require_int_target("ConvertVersionPass", target_version)
        self.target_version = target_version
        self.fallback = fallback
        self.expand_functions = expand_functions

    def call(self, model: ir.Model) -> ir.passes.PassResult:
        converted, report = convert_with_report(
            model, self.target_version, expand_functions=self.expand_functions
        )
        modified = (
            bool(report.rewrites or report.conversions)
            or model.opset_imports != converted.opset_imports
            or model.ir_version != converted.ir_version
        )
        if modified:  # unchanged: the caller's graph, nodes and values stay the model's
            _take_contents(model, converted)
        return ir.passes.PassResult(model, modified=modified)


class LegalizePass(legalize.LegalizePass):
    """passes.legalize.LegalizePass with the profile given as maxlower.lower takes it: a
    name ("tensorrt"), a path to a TOML file, a loaded profile, or a list of them (what all
    accept). Like passes.legalize.LegalizePass (and unlike maxlower.lower, which infers
    them), it needs the value types shape inference gives: run
    onnx_ir.passes.common.ShapeInferencePass first on a model without them."""

    def __init__(self, profile: ProfilesLike, *, keep_going: bool = False) -> None:
        loaded: legalize.Profile
        if callable(getattr(profile, "rejection", None)):  # a loaded or a custom profile
            loaded = cast(legalize.Profile, profile)
        elif isinstance(profile, str | os.PathLike | list | tuple):
            loaded = load_profiles(profile)
        else:
            raise TypeError(
                "LegalizePass takes a profile name, a path to a .toml file, a list of them, "
                f"or a profile object, not {type(profile).__name__}"
            )
        super().__init__(loaded, keep_going=keep_going)


def _require_int_target(door: str, target_version: object) -> None:
    """onnx's converter takes an int (a bool is no opset number here)."""
    if not isinstance(target_version, int) or isinstance(target_version, bool):
        raise TypeError(
            f"{door} takes an int as target_version, not {type(target_version).__name__}"
        )


# What a model holds besides its functions (ir.Model's attributes): moved as they are.
_MODEL_FIELDS = (
    "graph",
    "ir_version",
    "producer_name",
    "producer_version",
    "domain",
    "model_version",
    "doc_string",
    "device_configurations",
)


def _take_contents(model: ir.Model, source: ir.Model) -> None:
    """`model` made to hold what `source` holds (an in-place pass changes the object it
    was given; the caller's references to the model stay valid, while a graph, node or value
    taken from it before a conversion that changed it belongs to the old graph)."""
    for field in _MODEL_FIELDS:
        setattr(model, field, getattr(source, field))
    model.functions.clear()
    model.functions.update(source.functions)
    model.metadata_props.clear()
    model.metadata_props.update(source.metadata_props)


__all__ = ["ConvertVersionPass", "LegalizePass", "convert_version"]
