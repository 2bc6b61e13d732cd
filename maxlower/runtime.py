"""Running a model and comparing outputs exactly: the ground the verifier stands on."""

from __future__ import annotations

import numpy as np
import onnx
import onnx.reference
import onnxruntime as ort
from onnx.reference.op_run import OpRun


def run_model(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> tuple[list, str]:
    """Outputs from onnxruntime CPU with graph optimisations off, else from onnx.reference
    (for ops, types or opsets onnxruntime has no kernel for); plus which one ran."""
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 4
    try:
        session = ort.InferenceSession(
            model.SerializeToString(), options, providers=["CPUExecutionProvider"]
        )
        return session.run(None, feeds), "onnxruntime"
    except Exception as ort_error:
        try:
            evaluator = onnx.reference.ReferenceEvaluator(model, new_ops=[_CastWithTypeName])
            return evaluator.run(None, feeds), "reference"
        except Exception:
            raise ort_error from None


class _CastWithTypeName(OpRun):
    """Cast that also reads Cast-1's `to` as a type name ("FLOAT"), which onnx.reference
    (1.23) does not; numeric conversion as in onnx.reference's own Cast."""

    op_domain = ""

    def _run(self, x, to=None, saturate=None, round_mode=None):
        if isinstance(to, bytes | str):
            to = onnx.TensorProto.DataType.Value(to.decode() if isinstance(to, bytes) else to)
        return (np.asarray(x).astype(onnx.helper.tensor_dtype_to_np_dtype(to)),)


_CastWithTypeName.__name__ = "Cast"


def bit_equal(expected: np.ndarray, actual: np.ndarray) -> bool:
    """Same dtype, same shape, same values; NaN equals NaN and -0.0 equals +0.0."""
    expected, actual = np.asarray(expected), np.asarray(actual)
    if expected.dtype != actual.dtype or expected.shape != actual.shape:
        return False
    if expected.dtype.kind in "fc" or expected.dtype.name == "bfloat16":
        e, a = expected.astype(np.float64), actual.astype(np.float64)
        return bool(np.all((e == a) | (np.isnan(e) & np.isnan(a))))
    return bool(np.array_equal(expected, actual))
