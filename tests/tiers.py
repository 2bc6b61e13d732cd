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
