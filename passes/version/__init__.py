"""Exact version adapters for Max, ReduceMax and ArgMax, the passes that apply them, and
ConvertToOpsetPass, which composes them into the conversion of a whole model."""

from passes.version.convert import ConvertFamilyPass, FamilyResult, Rewrite
from passes.version.registry import ADAPTERS, schema_versions, version_path
from passes.version.to_opset import ConversionResult, ConvertToOpsetPass

__all__ = [
    "ADAPTERS",
    "ConversionResult",
    "ConvertFamilyPass",
    "ConvertToOpsetPass",
    "FamilyResult",
    "Rewrite",
    "schema_versions",
    "version_path",
]
