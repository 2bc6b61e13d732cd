"""Every ONNX backend node case (the models onnx ships in onnx.backend.test), at every target
opset: the widest corpus of single ops that exist, each at the opset its author chose.

Converting all of them to opsets 7..latest found the classes that tests/test_fuzz_backend_
cases.py now draws: conversions that change a node's shapes (Scan 8 → 9, AveragePool-22 and
MaxPool-22 with ceil_mode, DFT 19 → 20) and control flow on sequence and optional types below
the versions that take them (If/Loop below 13 and 16). Each was an internal error (exit 4).
"""

from __future__ import annotations

import functools
import warnings

import onnx
from hypothesis import strategies as st

LATEST = onnx.defs.onnx_opset_version()
TARGETS = tuple(range(7, LATEST + 1))


@functools.cache
def backend_cases() -> tuple:
    """(name, model) of every backend node case whose model onnx's own checker accepts."""
    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = collect_testcases(None)
    return tuple(sorted((c.name, c.model) for c in cases if c.model is not None))


def backend_conversions() -> st.SearchStrategy[tuple[str, onnx.ModelProto, int]]:
    """A backend case and a target opset (the cases collected at the first draw, not when a
    test module is collected: collecting them takes seconds)."""
    cases = st.deferred(lambda: st.sampled_from(backend_cases()))
    return st.tuples(cases, st.sampled_from(TARGETS)).map(
        lambda drawn: (drawn[0][0], drawn[0][1], drawn[1])
    )
