"""Exact version adapters for Max, ReduceMax and ArgMax and their Min twins, the passes that
apply them, and ConvertToOpsetPass, which composes them into the conversion of a whole
model."""

from passes.version.convert import ConvertFamilyPass, FamilyResult, Rewrite
from passes.version.to_opset import ConversionResult, ConvertToOpsetPass

__all__ = ["ConversionResult", "ConvertFamilyPass", "ConvertToOpsetPass", "FamilyResult", "Rewrite"]
