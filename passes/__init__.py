"""Pure graph transformations on onnx_ir for the Max and Min families (no onnxruntime, no I/O).

Each pass is an `onnx_ir.passes` pass, so they compose with `onnx_ir.passes.PassManager`;
each returns what it did in its PassResult (a documented subclass). ConvertToOpsetPass
converts a whole model; LegalizePass (passes.legalize) lowers it for a backend profile.
"""

from passes.errors import ConversionError
from passes.version import ConversionResult, ConvertFamilyPass, ConvertToOpsetPass, Rewrite

__all__ = [
    "ConversionError",
    "ConversionResult",
    "ConvertFamilyPass",
    "ConvertToOpsetPass",
    "Rewrite",
]
