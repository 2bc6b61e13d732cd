"""maxlower: exact opset conversion and lowering of ONNX Max, ReduceMax and ArgMax, and
Min, ReduceMin and ArgMin."""

import importlib
import importlib.util
import sys
import types
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what __getattr__ returns, for type checkers (at run time: on first use)
    from maxlower.api import convert as convert
    from maxlower.api import convert_and_lower as convert_and_lower
    from maxlower.api import convert_with_report as convert_with_report
    from maxlower.api import lower as lower
    from maxlower.api import lower_with_report as lower_with_report
    from maxlower.api import verify as verify
    from maxlower.check import CheckReport as CheckReport
    from maxlower.check import check as check
    from maxlower.dropin import ConvertVersionPass as ConvertVersionPass
    from maxlower.dropin import LegalizePass as LegalizePass
    from maxlower.dropin import convert_version as convert_version
    from maxlower.errors import ConversionError as ConversionError
    from maxlower.errors import CounterexampleFound as CounterexampleFound
    from maxlower.errors import InvalidModelError as InvalidModelError
    from maxlower.errors import ProfileError as ProfileError
    from maxlower.errors import ProofFailed as ProofFailed
    from maxlower.errors import ProofInconclusive as ProofInconclusive
    from maxlower.profiles import load_profile as load_profile
    from maxlower.profiles import load_profiles as load_profiles
    from maxlower.prove import ProofOptions as ProofOptions
    from maxlower.verify import VerifyReport as VerifyReport

# Every name is loaded on first access (PEP 562), so that `import maxlower` is cheap and the
# `maxlower` command (maxlower.launch) can arrange its imports before onnx_ir comes in; the
# verifier (onnxruntime, onnx.reference) is loaded only when used.
_LAZY = {
    "ConversionError": "maxlower.errors",
    "InvalidModelError": "maxlower.errors",
    "convert": "maxlower.api",
    "convert_with_report": "maxlower.api",
    "check": "maxlower.check",
    "CheckReport": "maxlower.check",
    "ConvertVersionPass": "maxlower.dropin",
    "LegalizePass": "maxlower.dropin",
    "convert_version": "maxlower.dropin",
    "convert_and_lower": "maxlower.api",
    "lower": "maxlower.api",
    "lower_with_report": "maxlower.api",
    "ProfileError": "maxlower.errors",
    "CounterexampleFound": "maxlower.errors",
    "ProofFailed": "maxlower.errors",
    "ProofInconclusive": "maxlower.errors",
    "ProofOptions": "maxlower.prove",
    "load_profile": "maxlower.profiles",
    "load_profiles": "maxlower.profiles",
    "verify": "maxlower.api",
    "VerifyReport": "maxlower.verify",
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        # `import maxlower; maxlower.api.run_job(...)`: a submodule, on first use
        if importlib.util.find_spec(f"{__name__}.{name}") is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        return importlib.import_module(f"{__name__}.{name}")
    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


class _Package(types.ModuleType):
    """`maxlower.lower` and `maxlower.verify` are the functions, not the submodules of the
    same names: importing a submodule does not rebind them."""

    def __setattr__(self, name: str, value: object) -> None:
        if name in _LAZY and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package

__all__ = sorted(_LAZY)
__version__ = "0.1.0"
