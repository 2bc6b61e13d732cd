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


def case_kind(case) -> tuple:
    """What decides the code path a case takes, its family aside: the op (elementwise,
    reduce or arg), the element type, how many inputs a float elementwise case has, whether
    the axes are an input, the reduced set is empty, an axis is negative, the reduced axes
    are kept, and whether an arg op picks the last index. The data and the value of a
    non-negative axis are left out (the cases that differ only there take the same path)."""
    node = case.model.graph.node[0]
    op = next(i for f in FAMILIES for i, o in enumerate(f.ops) if o == node.op_type)
    dtype = case.model.graph.input[0].type.tensor_type.elem_type
    inputs, _ = case.data_sets[0]
    attributes = {a.name: a.i for a in node.attribute}
    axes = inputs[1] if op == 1 and len(inputs) > 1 else [attributes.get("axis", 0)]
    return (
        ("elementwise", "reduce", "arg")[op],
        dtype,
        len(node.input) if op == 0 and dtype == 1 else None,  # float Max of 1, 2, 3 inputs
        op == 1 and len(node.input) > 1,  # run-time axes
        any(0 in x.shape for x in inputs),  # an empty tensor
        op > 0 and any(a < 0 for a in axes),
        attributes.get("keepdims", 1) if op > 0 else None,
        attributes.get("select_last_index", 0),
    )


def coarse_kind(case) -> tuple:
    """`case_kind` without the kinds of elementwise case (how many inputs), of axis (negative
    or not) and of keepdims: for matrices whose every case costs seconds."""
    op, dtype, _, runtime_axes, empty, _, _, last_index = case_kind(case)
    return op, dtype, runtime_axes, empty, last_index


@functools.cache
def representative_names(family: Extremum | None = None, coarse: bool = False) -> frozenset[str]:
    """One case of each kind (`case_kind`, or `coarse_kind`), of `family` or of both: the
    default tier's sample of a matrix over the conformance cases (docs/testing.md). Over both
    families, the kinds alternate between Max's case and its Min twin, so that both families
    are in the sample."""
    families = [family] if family else list(FAMILIES)
    kind = coarse_kind if coarse else case_kind
    by_kind: dict[tuple, dict] = {}
    for f in families:
        for case in family_cases(f):
            by_kind.setdefault(kind(case), {}).setdefault(f.name, case.name)
    names = set()
    for k, first in enumerate(by_kind.values()):
        preferred = families[k % len(families)].name
        names.add(first.get(preferred, next(iter(first.values()))))
    return frozenset(names)
