"""maxlower: exact opset conversion and lowering of ONNX Max, ReduceMax and ArgMax."""

import importlib
import sys
import types

from maxlower.api import ConversionError, InvalidModelError, convert, convert_with_report
from maxlower.lower import convert_and_lower, lower, lower_with_report
from maxlower.profiles import ProfileError, load_profile

# The verifier (onnxruntime, onnx.reference) is imported when first used, not by
# `maxlower convert`: `maxlower.verify` and `maxlower.VerifyReport` are loaded on access.
_LAZY = {"verify": "verify", "VerifyReport": "VerifyReport"}


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module("maxlower.verify"), _LAZY[name])
    globals()[name] = value
    return value


class _Package(types.ModuleType):
    """`maxlower.verify` is the function, as `from maxlower.verify import verify` once made
    it: importing the subpackage does not rebind it to the module."""

    def __setattr__(self, name: str, value) -> None:
        if name in _LAZY and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package

__all__ = [
    "ConversionError",
    "InvalidModelError",
    "ProfileError",
    "VerifyReport",
    "convert",
    "convert_and_lower",
    "convert_with_report",
    "load_profile",
    "lower",
    "lower_with_report",
    "verify",
]
__version__ = "0.1.0"
