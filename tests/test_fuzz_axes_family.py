"""Fuzzing the axes-family adapters: one random axes-family node (tests/strategies_axes_family.py),
often behind stripped shapes, converted to a random opset, most often across the op's
attribute/input boundary.

Per case: the conversion is refused with a ConversionError that names the op and a remedy
that is not the refused target itself, or it gives a model that passes the full checker
and gives the original's outputs bit for bit (NaN equals NaN, -0.0 equals +0.0) in the
runtime that ran the original (onnxruntime, else onnx.reference, for both).

Budget: the slow tier runs EXAMPLES cases, the default tier a small share (tests/budget.py),
the same ones every run (derandomised). To fuzz longer, on fresh cases:

    python -m pytest -m slow --hypothesis-profile=long tests/test_fuzz_axes_family.py
"""

from __future__ import annotations

import re

import numpy as np
import onnx
from hypothesis import event, given, note

import maxlower
from maxlower.runtime import bit_equal, onnxruntime_session, reference_evaluator
from passes.errors import ConversionError
from tests import budget
from tests.strategies_axes_family import axes_family_cases

EXAMPLES = 60


def _run_both(source: onnx.ModelProto, converted: onnx.ModelProto, feeds: dict):
    """Both models in onnxruntime, or both in onnx.reference when it cannot run either."""
    try:
        return (
            onnxruntime_session(source).run(None, feeds),
            onnxruntime_session(converted).run(None, feeds),
            "onnxruntime",
        )
    except Exception:
        with np.errstate(all="ignore"):
            return (
                reference_evaluator(source).run(None, feeds),
                reference_evaluator(converted).run(None, feeds),
                "reference",
            )


@budget.fuzz(
    EXAMPLES,
    derandomize=True,
    database=None,
)
@given(axes_family_cases())
def test_axes_family_conversion_is_exact_or_refused(case):
    model, feeds, target = case
    onnx.checker.check_model(model, full_check=True)  # the strategy's own promise
    source_opset = model.opset_import[0].version
    op = model.graph.node[-1].op_type
    note(f"{onnx.printer.to_text(model)}\n-> opset {target}\nfeeds={feeds}")
    try:
        converted = maxlower.convert(model, target)
    except ConversionError as error:
        assert error.op_type in str(error) and "To make it possible:" in str(error)
        assert not re.search(rf"\btarget opset {target}\b(?! or later)", error.remedy), error
        event(f"{op} {source_opset}->{target}: refused")
        return
    onnx.checker.check_model(converted, full_check=True)
    expected, actual, runner = _run_both(model, converted, feeds)
    event(f"{op}: converted, compared in {runner}")
    for e, a in zip(expected, actual, strict=True):
        assert bit_equal(e, a), f"{runner}: expected {e!r}, got {a!r}"
