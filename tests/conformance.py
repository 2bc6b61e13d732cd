"""The ONNX backend conformance cases of the Max family, and how to run a model on them."""

from __future__ import annotations

import functools
import warnings

import numpy as np
import onnx
import onnx.reference
import onnxruntime as ort

FAMILY_PREFIXES = ("test_max_", "test_reduce_max", "test_argmax")


@functools.cache
def family_cases() -> tuple:
    """The 41 conformance cases: test_max_* (not maxpool), test_reduce_max*, test_argmax*."""
    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = collect_testcases(None)
    return tuple(c for c in cases if c.name.startswith(FAMILY_PREFIXES)
                 and "maxpool" not in c.name)


def run_model(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> tuple[list, str]:
    """Outputs from onnxruntime CPU (optimisations off), else onnx.reference; and which ran."""
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 4
    try:
        session = ort.InferenceSession(model.SerializeToString(), options,
                                       providers=["CPUExecutionProvider"])
        return session.run(None, feeds), "onnxruntime"
    except Exception as ort_error:  # no kernel for this op/type/version
        try:
            return onnx.reference.ReferenceEvaluator(model).run(None, feeds), "reference"
        except Exception:
            raise ort_error from None


def bit_equal(expected: np.ndarray, actual: np.ndarray) -> bool:
    """Same dtype, same shape, same values; NaN equals NaN and -0.0 equals +0.0."""
    expected, actual = np.asarray(expected), np.asarray(actual)
    if expected.dtype != actual.dtype or expected.shape != actual.shape:
        return False
    if expected.dtype.kind in "fc" or expected.dtype.name == "bfloat16":
        e, a = expected.astype(np.float64), actual.astype(np.float64)
        return bool(np.all((e == a) | (np.isnan(e) & np.isnan(a))))
    return bool(np.array_equal(expected, actual))
