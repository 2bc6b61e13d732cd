"""Every error the driver raises to its callers, and the checks every door shares.

The bottom of maxlower's layers: it imports nothing of maxlower, so every module can
raise these. The command line maps each class to its exit code (maxlower.cli.main's
EXIT_CODES table); the library raises them as they are.

    InvalidModelError    the input (model, option, path, profile) is unusable: exit 2
      ProfileError       a profile that does not exist or does not follow the schema
      KernelTrapped      onnxruntime's process died (SIGFPE) on the values of --inputs
    ConversionError      a node has no exact form (passes.errors): exit 3
    ProofFailed          `--prove` / `prove=`: some site was not proved
      CounterexampleFound  a site differs on some input: exit 1
      ProofInconclusive    a site could not be proved (op, size, budget): exit 5
    Interrupted          SIGTERM or SIGHUP, raised like SIGINT's KeyboardInterrupt
"""

from __future__ import annotations

import signal
from typing import Any

import onnx

from passes.errors import ConversionError

# The newest opset this onnx knows: the upper end of every target opset.
LATEST_OPSET = onnx.defs.onnx_opset_version()

# What onnx's checker and its shape inference raise for a model they refuse.
CHECKER_ERRORS = (onnx.checker.ValidationError, onnx.shape_inference.InferenceError)


class InvalidModelError(ValueError):
    """The input is not a model maxlower can work on (exit code 2 on the command line)."""


class KernelTrapped(InvalidModelError):
    """onnxruntime's process died of a signal running the reference model on the values
    given with --inputs (`inputs=`): int32 Div of INT_MIN by -1 raises SIGFPE, a result
    ONNX does not define. The message names the node and the values; exit code 2, as for
    other inputs the model cannot run on. (Generated trials that trap are skipped.)"""


class ProfileError(InvalidModelError):
    """A profile that does not exist, cannot be read or does not follow the schema (bad
    input, like an unusable model: exit code 2 on the command line)."""


class ProofFailed(Exception):
    """`prove=` on convert / lower / run_job (and `--prove`): the rewrite sites of the run
    were not all proved; `report` is the maxlower.prove.sites.SitesReport. One line."""

    exit_code = 1

    def __init__(self, message: str, report: Any = None) -> None:
        super().__init__(message)
        self.report = report


class CounterexampleFound(ProofFailed):
    """A site's replacement differs from its node on some input (exit code 1); the
    report's `counterexample` holds those inputs, replayed in onnx.reference."""

    exit_code = 1


class ProofInconclusive(ProofFailed):
    """Some site could not be proved: an op or size outside the prover's fragment, or the
    solver timed out (exit code 5); the message names the node, op and size."""

    exit_code = 5


class Interrupted(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised like SIGINT's KeyboardInterrupt, so that every `finally`
    (temporary files, onnx_ir's temporary directory) runs before the process ends."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


class OpsetOutOfRange(InvalidModelError, RuntimeError):
    """A target opset this onnx does not know: bad input (exit code 2), and a RuntimeError,
    as onnx.version_converter's refusal of such a target is (maxlower.convert_version)."""


def check_target_opset(opset: int) -> None:
    """OpsetOutOfRange unless `opset` is one this onnx knows (1..LATEST_OPSET)."""
    if not 1 <= opset <= LATEST_OPSET:
        raise OpsetOutOfRange(
            f"target opset {opset} is outside 1..{LATEST_OPSET}, the opsets this onnx "
            f"({onnx.__version__}) knows"
        )


__all__ = [
    "CHECKER_ERRORS",
    "LATEST_OPSET",
    "ConversionError",
    "CounterexampleFound",
    "Interrupted",
    "InvalidModelError",
    "KernelTrapped",
    "OpsetOutOfRange",
    "ProfileError",
    "ProofFailed",
    "ProofInconclusive",
    "check_target_opset",
]
