"""The ONNX backend conformance cases of the Max family and of its mirror, the Min family."""

from __future__ import annotations

import functools
import warnings

from passes.extremum import FAMILIES, MAX, Extremum


def family_prefixes(family: Extremum) -> tuple[str, ...]:
    """test_max_*, test_reduce_max*, test_argmax* (test_min_*, ... for Min)."""
    return (f"test_{family.name}_", f"test_reduce_{family.name}", f"test_arg{family.name}")


FAMILY_PREFIXES = family_prefixes(MAX)


@functools.cache
def family_cases(family: Extremum = MAX) -> tuple:
    """One family's conformance cases: for Max the 41 test_max_* (not maxpool),
    test_reduce_max*, test_argmax*; for Min the 40 test_min_*, test_reduce_min*, test_argmin*
    (onnx 1.23: no empty bool ReduceMin case).

    Only the family's three modules of onnx.backend.test.case.node are imported (in the order
    `collect_testcases` imports them): importing all of them computes every op's expected
    outputs, 8 s of every test run's collection."""
    import importlib

    from onnx.backend.test.case import node

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            for module in sorted(op.lower() for op in family.ops):  # argmax, max, reducemax
                importlib.import_module(f"{node.__name__}.{module}")
            cases = list(node._NodeTestCases)  # what the imported modules' cases recorded
        except (ImportError, AttributeError):  # onnx laid its cases out otherwise
            cases = node.collect_testcases(None)
    prefixes = family_prefixes(family)
    pooling = f"{family.name}pool"  # test_maxpool_*, test_minpool_* are other ops
    return tuple(c for c in cases if c.name.startswith(prefixes) and pooling not in c.name)


def both_families_cases() -> tuple:
    """The 81 cases of both families, Max's first."""
    return tuple(c for family in FAMILIES for c in family_cases(family))
