"""The equivalence verifier: run a model and its rewrite on the same inputs and compare.

    report = maxlower.verify(original, rewritten)
    report.ok, report.status, report.summary(), report.to_dict()

`core.verify` runs the trials, `inputs` makes them, `runner` runs a model (onnxruntime,
else onnx.reference), `compare` compares two arrays, `report` holds the result, and `cli`
holds the `maxlower verify` command and the `--verify` options of the rewriting commands.
"""

from maxlower.verify.core import verify
from maxlower.verify.report import VerifyReport

__all__ = ["VerifyReport", "verify"]
