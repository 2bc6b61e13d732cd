"""Run one model over many trials: onnxruntime first, onnx.reference where it cannot.

The session is made once per model, as every model is run (maxlower.runtime's
`onnxruntime_session`: CPU provider, graph optimisations off, one thread), in a child
process (`isolated_session`): a kernel that traps (SIGFPE from int32 INT_MIN / -1) ends
that process, and the run is `Outcome.trapped`, never retried in onnx.reference.

When onnxruntime cannot load the model (an old opset, a type without a kernel), every trial
runs in `onnx.reference.ReferenceEvaluator`; when it loads but fails on one trial (for
example an empty bool ReduceMax), that trial runs there. `Outcome.runner` says which ran.
The verifier runs the other model of such a trial in onnx.reference too (`run_on(feeds,
REFERENCE)`): two runtimes may round one float op differently, and that is no difference
between the models.

Each run has a time budget (`--timeout`): a Loop of 2^62 trips would otherwise run until
killed. onnxruntime stops a run when its RunOptions' `terminate` is set from another thread
(it checks the flag before every node, Loop bodies included: a 2^62-trip Loop stops within
a few ms of the budget in onnxruntime 1.32, tests/test_bad_options.py). onnx.reference is
Python, so a timer raises an exception in the running thread
(`PyThreadState_SetAsyncExc`, delivered between two bytecodes). A run past its budget is
`Outcome.timed_out`, and is not retried in the other runner.
"""

from __future__ import annotations

import dataclasses
import os
import re
import signal

import numpy as np
import onnx
from onnx_ir.passes.common import InlinePass

from maxlower.runtime import onnxruntime_session, reference_evaluator
from maxlower.serde import deserialize, serialize
from maxlower.verify.budget import RunTimedOut, run_in_process
from maxlower.verify.isolated import IsolatedSession, KernelDied
from passes.errors import concise
from passes.graph_utils import graph_protos

ONNXRUNTIME, REFERENCE = "onnxruntime", "onnx.reference"


@dataclasses.dataclass
class Outcome:
    """The outputs of one run (None if it failed), the runner, and the errors met."""

    outputs: list[np.ndarray] | None
    runner: str | None
    error: str | None = None
    timed_out: bool = False
    trapped: bool = False  # onnxruntime's process died of a signal (isolated.KernelDied)
    killed: bool = False  # ... of SIGKILL: the OOM killer or a user, not the model's values
    # onnxruntime cannot load the model for want of a kernel, and onnx.reference has no
    # implementation of one of its ops either: it runs in no runtime here, so nothing can
    # be compared on it (`missing_implementation`)
    unimplemented: bool = False


# How each runtime says it has no implementation of an op version: onnxruntime when it
# loads a model (no kernel below opset 7, none for some types: Max-6 on double),
# onnx.reference when it builds its evaluator (none for Clip-1). Anchored at the start of
# the message and naming a default-domain op the model has, so that a name the model
# supplies (a node called NOT_IMPLEMENTED, a function named like the message) never passes
# for a runtime's gap (red team).
_MISSING = {
    ONNXRUNTIME: re.compile(r"Could not find an implementation for (\w+)\(\d+\) node with name "),
    REFERENCE: re.compile(r"No implementation for operator '(\w+)' domain '' and version \d+"),
}


def missing_implementation(runner: str, error: str | None, model: onnx.ModelProto) -> bool:
    """Whether `error` is `runner` saying it has no implementation of an op of `model`."""
    found = _MISSING[runner].match(error or "")
    return found is not None and found.group(1) in _default_ops(model)


def _default_ops(model: onnx.ModelProto) -> set[str]:
    nodes = [n for g in graph_protos(model.graph) for n in g.node]
    nodes += [n for f in model.functions for n in f.node]
    return {n.op_type for n in nodes if n.domain in ("", "ai.onnx")}


def run_budgeted(runnable, feeds: dict[str, np.ndarray], seconds: float) -> list:
    """`runnable.run(None, feeds)` for an onnxruntime session (in its child process, or
    here) or an onnx.reference evaluator, stopped after `seconds` (RunTimedOut)."""
    if isinstance(runnable, IsolatedSession):  # budgeted in its child
        return runnable.run(feeds, seconds)
    return run_in_process(runnable, feeds, seconds)


def isolated_session(model: onnx.ModelProto):
    """onnxruntime's session for `model` in a child process (maxlower.verify.isolated),
    where a process can fork: a kernel that traps kills the child, not maxlower. Forking
    costs little (measured: the session 8 to 130 ms slower, a run 1 to 2 ms, on models of
    0.2 to 22 MB). Elsewhere, in this process."""
    if hasattr(os, "fork"):
        return IsolatedSession(model.SerializeToString())
    return onnxruntime_session(model)


class ModelRunner:
    """One model, run over many feeds."""

    def __init__(self, model: onnx.ModelProto, timeout: float) -> None:
        self.model = model
        self.timeout = timeout
        self.load_error: str | None = None
        self.run_error: str | None = None  # the first run onnxruntime failed and reference did
        self._session = None
        self._evaluator = None
        try:
            self._session = isolated_session(model)
        except Exception as error:  # onnxruntime raises its own Fail/InvalidGraph/... kinds
            self.load_error = concise(error)

    def close(self) -> None:
        """End onnxruntime's process now, not when the runner is collected."""
        if self._session is not None and hasattr(self._session, "close"):
            self._session.close()

    def run_on(self, feeds: dict[str, np.ndarray], runner: str | None = None) -> Outcome:
        """onnxruntime, else onnx.reference; only onnx.reference when `runner` says so
        (the other side of the trial ran there: both sides run in one runtime)."""
        ort_error = self.load_error
        if self._session is not None and runner != REFERENCE:
            try:
                return Outcome(run_budgeted(self._session, feeds, self.timeout), ONNXRUNTIME)
            except RunTimedOut:
                return self._timed_out(ONNXRUNTIME)
            except KernelDied as error:  # a crash, not a missing kernel: not run elsewhere
                if error.signum == signal.SIGKILL:  # no kernel traps with SIGKILL
                    message = f"{error} (out of memory, or killed from outside)"
                    return Outcome(None, ONNXRUNTIME, message, killed=True)
                return Outcome(None, ONNXRUNTIME, str(error), trapped=True)
            except Exception as error:
                ort_error = concise(error)
        try:
            outputs = run_budgeted(self._reference(), feeds, self.timeout)
            if self._session is not None and runner != REFERENCE and self.run_error is None:
                self.run_error = ort_error
            return Outcome(outputs, REFERENCE)
        except RunTimedOut:
            return self._timed_out(REFERENCE)
        except Exception as error:
            reference_error = concise(error)
            return Outcome(
                None,
                None,
                f"onnx.reference: {reference_error}"
                if runner == REFERENCE
                else f"onnxruntime: {ort_error}; onnx.reference: {reference_error}",
                # only where onnxruntime cannot load the model at all: a trial that one
                # model runs in onnx.reference because onnxruntime failed on the other is
                # no reason to skip it (red team: that hid a difference at N=0)
                unimplemented=missing_implementation(ONNXRUNTIME, self.load_error, self.model)
                and missing_implementation(REFERENCE, reference_error, self.model),
            )

    def _timed_out(self, runner: str) -> Outcome:
        return Outcome(None, runner, f"{runner} ran past --timeout {self.timeout:g} s", True)

    def _reference(self) -> onnx.reference.ReferenceEvaluator:
        if self._evaluator is None:
            self._evaluator = reference_evaluator(self.model)
        return self._evaluator


def exposed(model: onnx.ModelProto) -> tuple[onnx.ModelProto, list[onnx.NodeProto]]:
    """The model with local functions inlined and every main-graph value as an output, and
    its nodes in order (to name the node that produced a value)."""
    ir_model = deserialize(model)
    InlinePass()(ir_model)
    proto = serialize(ir_model)
    listed = {o.name for o in proto.graph.output}
    for node in proto.graph.node:
        for name in node.output:
            if name and name not in listed:
                proto.graph.output.append(onnx.ValueInfoProto(name=name))
                listed.add(name)
    return proto, list(proto.graph.node)


class ExposedRunner:
    """A model with every main-graph value exposed (`exposed`), run with a chosen runner;
    each runner is made once."""

    def __init__(self, model: onnx.ModelProto, timeout: float) -> None:
        self.model, self.nodes = exposed(model)
        self.timeout = timeout
        self._made: dict[str, object] = {}

    def values(self, runner: str, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray] | None:
        """Every main-graph value of one run, by name (feeds included); None if it fails."""
        try:
            if runner not in self._made:
                make = isolated_session if runner == ONNXRUNTIME else reference_evaluator
                self._made[runner] = make(self.model)
            outputs = run_budgeted(self._made[runner], feeds, self.timeout)
        except Exception:  # RunTimedOut too: the difference is then not localised
            return None
        values = {o.name: np.asarray(v) for o, v in zip(self.model.graph.output, outputs)}
        return {**feeds, **values}
