"""maxlower: exact opset conversion and lowering of ONNX Max, ReduceMax and ArgMax."""

from maxlower.api import ConversionError, InvalidModelError, convert, convert_with_report
from maxlower.lower import convert_and_lower, lower, lower_with_report
from maxlower.profiles import ProfileError, load_profile
from maxlower.verify import VerifyReport, verify

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
