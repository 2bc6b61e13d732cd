"""Running a model and comparing outputs exactly: the ground the verifier stands on.

Every model maxlower, its tests and its benchmarks run goes through `onnxruntime_session`
(or, for what onnxruntime cannot run, `reference_evaluator`), so that all of them run it the
same way: onnxruntime's CPU execution provider, graph optimisations off (onnxruntime's own
rewrites could hide or cause a difference), only fatal messages logged, and ONE thread, intra-
and inter-op (THREADS): results must not depend on how the work is split (the NaN result of
onnxruntime's ReduceMax depends on where the NaN sits, microsoft/onnxruntime#10514), and
timings not on how busy the machine's other cores are.
"""

from __future__ import annotations

import os

import numpy as np
import onnx
import onnx.reference
import onnxruntime as ort
from onnx.reference.op_run import OpRun

THREADS = 1


def onnxruntime_session(
    model: onnx.ModelProto | bytes | str | os.PathLike, *, optimized: bool = False
) -> ort.InferenceSession:
    """A session for `model` (a ModelProto or its bytes, or a path, which keeps external
    data where it lies), run as the module docstring says; `optimized` turns onnxruntime's
    default graph optimisations on (for latency measurements, which should see what users
    get)."""
    options = ort.SessionOptions()
    if not optimized:
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.intra_op_num_threads = THREADS
    options.inter_op_num_threads = THREADS
    options.log_severity_level = 4
    if isinstance(model, onnx.ModelProto):
        source = model.SerializeToString()
    else:
        source = model if isinstance(model, bytes) else str(model)
    return ort.InferenceSession(source, options, providers=["CPUExecutionProvider"])


def reference_evaluator(model: onnx.ModelProto) -> onnx.reference.ReferenceEvaluator:
    """onnx.reference's evaluator for `model`, which also reads Cast-1's `to` as a name."""
    return onnx.reference.ReferenceEvaluator(model, new_ops=[_CastWithTypeName])


def run_model(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> tuple[list, str]:
    """Outputs from onnxruntime (`onnxruntime_session`), else from onnx.reference (for ops,
    types or opsets onnxruntime has no kernel for); plus which one ran."""
    try:
        return onnxruntime_session(model).run(None, feeds), "onnxruntime"
    except Exception as ort_error:
        try:
            return reference_evaluator(model).run(None, feeds), "reference"
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
