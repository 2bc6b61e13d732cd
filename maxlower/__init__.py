"""maxlower: exact opset conversion of ONNX Max, ReduceMax and ArgMax."""

from maxlower.api import ConversionError, InvalidModelError, convert, convert_with_report
from maxlower.verify import VerifyReport, verify

__all__ = [
    "ConversionError",
    "InvalidModelError",
    "VerifyReport",
    "convert",
    "convert_with_report",
    "verify",
]
__version__ = "0.1.0"
