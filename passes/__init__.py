"""Pure graph transformations on onnx_ir for the Max family (no onnxruntime, no I/O).

Each pass is an `onnx_ir.passes` pass, so they compose with `onnx_ir.passes.PassManager`.
"""

from passes.errors import ConversionError
from passes.version import ConvertFamilyPass, Rewrite, convert_family

__all__ = ["ConversionError", "ConvertFamilyPass", "Rewrite", "convert_family"]
