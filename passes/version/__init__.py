"""Exact version adapters for Max, ReduceMax and ArgMax, and the pass that applies them."""

from passes.version.convert import ConvertFamilyPass, Rewrite, convert_family
from passes.version.registry import ADAPTERS, schema_versions, version_path

__all__ = [
    "ADAPTERS",
    "ConvertFamilyPass",
    "Rewrite",
    "convert_family",
    "schema_versions",
    "version_path",
]
