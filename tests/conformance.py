"""The ONNX backend conformance cases of the Max family."""

from __future__ import annotations

import functools
import warnings

FAMILY_PREFIXES = ("test_max_", "test_reduce_max", "test_argmax")


@functools.cache
def family_cases() -> tuple:
    """The 41 conformance cases: test_max_* (not maxpool), test_reduce_max*, test_argmax*."""
    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = collect_testcases(None)
    return tuple(c for c in cases if c.name.startswith(FAMILY_PREFIXES) and "maxpool" not in c.name)
