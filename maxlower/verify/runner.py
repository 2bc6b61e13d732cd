"""Run one model over many trials: onnxruntime first, onnx.reference where it cannot.

The session is made once per model, as every model is run (maxlower.runtime's
`onnxruntime_session`: CPU provider, graph optimisations off, one thread).

When onnxruntime cannot load the model (an old opset, a type without a kernel), every trial
runs in `onnx.reference.ReferenceEvaluator`; when it loads but fails on one trial (for
example an empty bool ReduceMax), that trial runs there. `Outcome.runner` says which ran.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import onnx
from onnx_ir.passes.common import InlinePass

from maxlower.api import deserialize, serialize
from maxlower.runtime import onnxruntime_session, reference_evaluator
from passes.errors import concise

ONNXRUNTIME, REFERENCE = "onnxruntime", "onnx.reference"


@dataclasses.dataclass
class Outcome:
    """The outputs of one run (None if it failed), the runner, and the errors met."""

    outputs: list[np.ndarray] | None
    runner: str | None
    error: str | None = None


class ModelRunner:
    """One model, run over many feeds."""

    def __init__(self, model: onnx.ModelProto) -> None:
        self.model = model
        self.load_error: str | None = None
        self.run_error: str | None = None  # the first run onnxruntime failed and reference did
        self._session = None
        self._evaluator = None
        try:
            self._session = onnxruntime_session(model)
        except Exception as error:  # onnxruntime raises its own Fail/InvalidGraph/... kinds
            self.load_error = concise(error)

    def run(self, feeds: dict[str, np.ndarray]) -> Outcome:
        ort_error = self.load_error
        if self._session is not None:
            try:
                return Outcome(self._session.run(None, feeds), ONNXRUNTIME)
            except Exception as error:
                ort_error = concise(error)
        try:
            with np.errstate(all="ignore"):  # NaN and inf are what the trials are made of
                outputs = self._reference().run(None, feeds)
            if self._session is not None and self.run_error is None:
                self.run_error = ort_error
            return Outcome(outputs, REFERENCE)
        except Exception as error:
            return Outcome(
                None,
                None,
                f"onnxruntime: {ort_error}; onnx.reference: {concise(error)}",
            )

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

    def __init__(self, model: onnx.ModelProto) -> None:
        self.model, self.nodes = exposed(model)
        self._made: dict[str, object] = {}

    def values(self, runner: str, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray] | None:
        """Every main-graph value of one run, by name (feeds included); None if it fails."""
        try:
            if runner not in self._made:
                make = onnxruntime_session if runner == ONNXRUNTIME else reference_evaluator
                self._made[runner] = make(self.model)
            with np.errstate(all="ignore"):
                outputs = self._made[runner].run(None, feeds)
        except Exception:
            return None
        values = {o.name: np.asarray(v) for o, v in zip(self.model.graph.output, outputs)}
        return {**feeds, **values}
