"""Splitting a long parameter matrix between the two tiers (docs/testing.md): the default tier
keeps a deterministic sample that still reaches every code path the matrix does (every op,
every kind of case, every opset range), the slow tier runs the rest.

    @pytest.mark.parametrize("name", tiers.split(sorted(CASES), keep=SAMPLE.__contains__))

Test ids do not change: a value moved to the slow tier is the same parameter, marked `slow`.
"""

from __future__ import annotations

import pathlib
from collections.abc import Callable, Hashable, Iterable
from typing import Any, TypeVar

import pytest

H = TypeVar("H", bound=Hashable)
ParameterSet = type(pytest.param(None))  # what pytest.param makes

slow = pytest.mark.slow

# The whole-model fixtures from the ONNX model zoo (tests/fixtures/models/light_*.heads.onnx):
# a test that runs each of them takes seconds on most. The default tier keeps the one that
# takes least; the slow tier runs the others.
ZOO_SAMPLE = ("light_squeezenet.heads",)


def split(values: Iterable[Any], keep: Callable[[Any], bool]) -> list[Any]:
    """`values` as `pytest.mark.parametrize` takes them, each one `keep` rejects marked slow.

    A tuple is the values of several arguments (`keep` gets the tuple); a `pytest.param` keeps
    its id and marks (`keep` gets its value, or the tuple of its values)."""
    split_values = []
    for value in values:
        if isinstance(value, ParameterSet):
            raw = value.values[0] if len(value.values) == 1 else tuple(value.values)
            if not keep(raw):
                value = pytest.param(*value.values, marks=[*value.marks, slow], id=value.id)
        elif not keep(value):
            values_of = value if isinstance(value, tuple) else (value,)
            value = pytest.param(*values_of, marks=slow)
        split_values.append(value)
    return split_values


def first_of_each(values: Iterable[H], kind: Callable[[H], Hashable]) -> set[H]:
    """The first value of each kind: the default tier's sample of a matrix whose values of one
    kind take the same code path."""
    first: dict[Hashable, H] = {}
    for value in values:
        first.setdefault(kind(value), value)
    return set(first.values())


def large_network(name: str) -> bool:
    """Whether the fixture `name` (a file name, a stem or a path) is one of the zoo's networks
    that the default tier leaves out."""
    stem = pathlib.PurePath(name).name.removesuffix(".onnx")
    return stem.startswith("light_") and stem not in ZOO_SAMPLE


# Matrices the default tier thins further, to keep it within 3 minutes on 2 cores
# (docs/testing.md): {test: n}, the default tier keeps every n-th of the test's items that
# it would run (in collection order, the first included); the slow tier runs the others.
# Each is a matrix of cases that take one code path in turn (a case by a door, a fixture by
# a profile), whose every case the slow tier still runs.
THINNED = {
    "tests/test_report.py::test_every_site_is_the_cone_that_computes_its_outputs": 3,
    "tests/test_lower_conformance.py::test_primitives_profile_leaves_no_family_op": 3,
    "tests/test_lower_conformance.py::test_onnxruntime_profile_runs_in_onnxruntime": 3,
    "tests/test_prove_semantics.py::test_every_op_matches_onnx_reference_at_every_length": 2,
    "tests/test_prove_semantics.py::test_binary_ops_match_onnx_reference": 4,
    "tests/test_bad_paths.py::test_path_row_is_refused_with_one_line": 2,
    "tests/test_doors.py::test_every_door_gives_the_same_answer": 2,
    "tests/test_doors.py::test_one_opset_import_per_domain": 2,
    "tests/test_doors.py::test_lower_gives_the_same_answer_through_both_doors": 2,
    "tests/test_verify_conformance.py::test_convert_verify_passes_every_conversion": 2,
    "tests/test_verify_conformance.py::test_case_model_is_equivalent_to_itself_over_20_seeds": 2,
    "tests/test_external_everywhere.py::test_external_data_comes_from_the_model_directory_only": 2,
    "tests/test_cost_model.py::test_planner_picks_the_measured_fastest_form": 3,
    "tests/test_check.py::test_cli_and_library_give_the_same_report": 3,
    "tests/test_bad_inputs.py::test_huge_declared_dims_are_handled_on_shapes_alone": 2,
    "tests/test_prove_cli.py::test_bad_options_are_one_line_refusals": 2,
    "tests/test_axes_family_numeric.py::test_reduction_constant_axes_both_ways": 2,
    "tests/test_hostile_graphs.py::test_names_like_generated_ones_are_avoided": 3,
    "tests/test_decompose_golden.py::test_golden_numerics_validity_and_idempotence": 2,
    "tests/test_accel_conformance.py::test_fixtures": 2,
    "tests/test_prove_redteam3.py::test_prove_a_b_does_not_prove_it": 3,
    "tests/test_prove_soundness.py::"
    "test_a_region_difference_that_no_model_input_shows_is_no_refutation": 2,
    "tests/test_prove_soundness.py::"
    "test_a_split_input_is_proved_only_at_its_values_and_the_verdict_says_so": 2,
    "tests/test_bad_paths.py::test_sigterm_and_sighup_mid_write_leave_nothing": 2,
    "tests/test_fast_forms_numeric.py::test_runtime_axes": 2,
}


def thin(items: list[pytest.Item]) -> None:
    """Mark slow every item of a THINNED test but each n-th of its default-tier items."""
    seen: dict[str, int] = {}
    for item in items:
        test = item.nodeid.split("[")[0]
        n = THINNED.get(test)
        if n is None or item.get_closest_marker("slow"):
            continue
        index = seen[test] = seen.get(test, -1) + 1
        if index % n:
            item.add_marker(slow)
