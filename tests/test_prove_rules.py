"""`maxlower prove --rules` in CI: every registered version adapter and decomposition, per
dtype, at n = 1..4, proved through the real code path (maxlower.prove.rules).

The rules are read from the registries, so a rule added later (the Min family, say) is
covered here without a change; each chunk fails if one of its rules has no instance that
the templates reach. The rules are split into chunks by their position in the registry
(`_chunks`, a partition of every rule), so pytest-xdist runs them on both workers; a chunk
is a test of its own, and `test_the_chunks_cover_every_registered_rule` checks that the
partition is total.

The proofs of the chunks take minutes: they are in the slow tier; the default tier proves a
few rows through the same path (SAMPLE_ROWS), and checks the partition and the compositional
argument's scaling.
"""

from __future__ import annotations

import time

import pytest

pytest.importorskip("z3", reason="the prover needs z3-solver: pip install -e '.[prove]'")

from maxlower.prove.core import PROVED
from maxlower.prove.rules import prove_rules, registered_rules, table
from passes.decompose import BY_NAME
from passes.version.registry import ADAPTERS

TIMEOUT = 60.0  # per instance; the slowest proof is the int64 lemma of Max 12→8, 15-25 s
# on an idle core, more on loaded ones, and it gets five timeouts (rules.LEMMA_TIMEOUTS)
CHUNKS = 8
METHODS = {"full", "semilattice", "unchanged", "lemma", "order"}
# Rows whose method matters: the full-precision proof cannot do them in CI time (the
# opset 7-8 form of 64-bit Max and Min: the lemma), or took most of the time before the
# order method (ArgMax through ReduceMax, the halving Loop over a run-time length).
EXPECTED_METHODS = {
    ("Max 12→8", "int64"): "lemma",
    ("Max 12→8", "uint64"): "lemma",
    ("Min 12→8", "int64"): "lemma",
    ("Min 12→8", "uint64"): "lemma",
    ("arg_max_to_reduce_max", "float64"): "order",
    ("arg_min_to_reduce_min", "float32"): "order",
    ("reduce_max_halving_loop", "float64"): "order",
    ("reduce_max_slice_tree", "float32"): "semilattice",
}


def _chunks() -> list[list[str]]:
    """Every registered rule in exactly one chunk. The two rules whose 64-bit lemma costs
    most (Max and Min 12→8) are put first, in different chunks."""
    rules = registered_rules()
    heavy = [r for r in rules if r.endswith("12→8")]
    ordered = heavy + [r for r in rules if r not in heavy]
    return [ordered[k::CHUNKS] for k in range(CHUNKS)]


@pytest.mark.slow
@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_every_rule_of_the_chunk_is_proved_in_every_dtype(chunk):
    rules = set(_chunks()[chunk])
    start = time.perf_counter()
    rows = prove_rules(4, TIMEOUT, only=lambda rule, dtype: rule in rules)
    print(f"\n{table(rows)}\n{time.perf_counter() - start:.1f} s")
    open_rows = [r.cells() for r in rows if r.result != PROVED]
    assert not open_rows, open_rows
    assert all(r.methods and r.methods <= METHODS for r in rows)
    methods = {(r.rule, r.dtype): r.methods for r in rows}
    for key, method in EXPECTED_METHODS.items():
        if key[0] in rules:
            assert method in methods[key], (key, methods[key])
    # a rule that applies to no template at any opset would be proved nowhere, unless no
    # type the op takes can use it (bool → uint8 for Max and ArgMax, which take no bool)
    missing = {rule for rule in rules - {r.rule for r in rows} if not _never_applies(rule)}
    assert not missing, missing


# The default tier's share of the proofs: rows that take under a second and need between
# them four of the methods (every row: the chunks above, in the slow tier).
SAMPLE_ROWS = {
    ("ArgMax 12→11", "float32"),  # order, unchanged
    ("Max 12→8", "int32"),  # lemma, semilattice
    ("reduce_max_slice_tree", "float32"),  # semilattice
    ("arg_max_to_reduce_max", "float64"),  # order
}


def test_a_sample_of_the_rules_is_proved_through_the_same_path():
    rows = prove_rules(4, TIMEOUT, only=lambda rule, dtype: (rule, dtype) in SAMPLE_ROWS)
    assert {(r.rule, r.dtype) for r in rows} == SAMPLE_ROWS
    assert [r.cells() for r in rows if r.result != PROVED] == [], table(rows)
    methods = {(r.rule, r.dtype): r.methods for r in rows}
    for key, method in EXPECTED_METHODS.items():
        if key in methods:
            assert method in methods[key], (key, methods[key])
    assert set().union(*methods.values()) >= {"order", "unchanged", "lemma", "semilattice"}


def test_the_chunks_cover_every_registered_rule():
    chunked = [rule for chunk in _chunks() for rule in chunk]
    adapters = {f"{op} {a}→{b}" for op, a, b in ADAPTERS}
    assert len(chunked) == len(set(chunked))
    assert set(chunked) == adapters | set(BY_NAME)


def _never_applies(name: str) -> bool:
    import onnx_ir as ir

    from maxlower.prove.rules import LATEST, _accepts
    from passes.decompose.common import EXACT_WIDENINGS

    if "_widen_to_" not in name:
        return False
    wide = ir.DataType[name.rsplit("_widen_to_", 1)[1].upper()]
    narrow = [t for t, wides in EXACT_WIDENINGS.items() if wide in wides]
    op = BY_NAME[name].op_type
    return not any(_accepts(op, LATEST, int(t)) for t in narrow)


def test_semilattice_proves_a_slice_tree_of_4096_and_refutes_a_dropped_element():
    """The compositional argument scales where the solver cannot: the Slice tree of a
    ReduceMax over 4096 elements (12 levels) is proved without a solver, and the same tree
    with one element left out of a Slice is refuted."""
    import onnx
    from onnx import TensorProto as TP

    from maxlower.prove.rules import apply_decomposition_to, templates
    from maxlower.prove.semilattice import semilattice_equal

    instance = next(
        i for i in templates("ReduceMax", TP.FLOAT, 4096, 13) if i.label.startswith("axes=[1],")
    )
    after = apply_decomposition_to(instance, BY_NAME["reduce_max_slice_tree"])
    start = time.perf_counter()
    assert semilattice_equal(instance.model, after) is True
    seconds = time.perf_counter() - start
    assert seconds < 30, seconds
    first_slice = next(n for n in after.graph.node if n.op_type == "Slice")
    values = {i.name: onnx.numpy_helper.to_array(i) for i in after.graph.initializer}
    for k, name in ((1, "moved_starts"), (2, "moved_ends")):  # the low half, one along
        moved = values[first_slice.input[k]] + 1
        after.graph.initializer.append(onnx.numpy_helper.from_array(moved, name))
        first_slice.input[k] = name
    assert semilattice_equal(instance.model, after) is False  # element 0 is in no set


def test_the_sizes_proved_column_says_all_only_where_the_node_is_left_as_it_is():
    from maxlower.prove.rules import Row, compact_table, sizes_proved

    assert sizes_proved({"unchanged"}, [1, 2, 3, 4]).startswith("all")
    for methods in ({"semilattice"}, {"order", "full"}, {"unchanged", "lemma"}):
        assert sizes_proved(methods, [1, 2, 3, 4]).startswith("n ≤ 4"), methods
    rows = [
        Row("Max 6→8", "float32", [1, 2], 2, {"unchanged"}),
        Row("X", "int8", [0, 3], 2, {"order"}),
    ]
    text = compact_table(rows)
    assert "| Max 6→8 | float32 | 1..2 | all" in text and "| X | int8 | 0..3 | n ≤ 3" in text
