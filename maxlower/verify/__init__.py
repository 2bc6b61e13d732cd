"""The equivalence verifier: run a model and its rewrite on the same inputs and compare.

    report = maxlower.verify(original, rewritten)
    report.ok, report.status, report.summary(), report.to_dict()

`core.verify` runs the trials, `inputs` makes them, `runner` runs a model (onnxruntime,
else onnx.reference), `compare` compares two arrays, `report` holds the result, and
`models` checks the two models `maxlower verify` compares. The command and the --verify
options of the rewriting commands are maxlower/cli/verify.py; the library's
`maxlower.verify` (maxlower.api.verify) also draws the HTML page, which this package
never does.
"""

import importlib
from typing import TYPE_CHECKING, Any

from maxlower.verify.report import VerifyReport

if TYPE_CHECKING:  # at run time, on first use (below)
    from maxlower.verify.core import verify


def __getattr__(name: str) -> Any:
    # `core` (onnxruntime, onnx.reference) loads on first use: the rewriting commands import
    # `maxlower.cli.verify` for their --verify options, and most runs never verify.
    if name == "verify":
        return importlib.import_module("maxlower.verify.core").verify
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["VerifyReport", "verify"]
