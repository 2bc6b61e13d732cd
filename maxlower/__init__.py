"""maxlower: exact opset conversion of ONNX Max, ReduceMax and ArgMax."""

from maxlower.api import ConversionError, InvalidModelError, convert, convert_with_report

__all__ = ["ConversionError", "InvalidModelError", "convert", "convert_with_report"]
__version__ = "0.1.0"
