"""The adapters between neighbouring schema versions, keyed by (op, from, to).

Every neighbouring pair of versions of Max, ReduceMax and ArgMax, and of their Min twins,
has an entry in both
directions, even where nothing changes, so that coverage can be checked against
`onnx.defs` rather than assumed (tests/test_round_trips_and_scopes.py,
test_every_neighbouring_version_pair_has_an_adapter_both_ways).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import onnx
import onnx_ir as ir

from passes.builder import Builder, op_versions
from passes.version import arg_max, reduce_max
from passes.version import max as max_adapters

# An adapter rewrites one node from one schema version to the neighbouring one, in place or
# by replacing it, and returns a one-line description of what it did (None: nothing).
# What it does depends on the node's op, attributes, value types and shapes, constant
# inputs and output uses, never on names, except to name what it creates; the description
# names no value or node. maxlower.replay relies on this to copy one node's conversion
# onto nodes of the same signature.
Adapter = Callable[[ir.Node, Builder], "str | None"]

ADAPTERS: dict[tuple[str, int, int], Adapter] = {
    **max_adapters.ADAPTERS,
    **reduce_max.ADAPTERS,
    **arg_max.ADAPTERS,
}


def schema_versions(op_type: str) -> tuple[int, ...]:
    """All since_versions of a default-domain op, from onnx.defs."""
    return op_versions(op_type)


def version_path(op_type: str, source: int, target: int) -> list[tuple[int, int]]:
    """The neighbouring (from, to) steps that lead from schema version source to target."""
    versions = schema_versions(op_type)
    i, j = versions.index(source), versions.index(target)
    if i <= j:
        return [(versions[k], versions[k + 1]) for k in range(i, j)]
    return [(versions[k], versions[k - 1]) for k in range(i, j, -1)]


@functools.cache
def _admitted_types(op_type: str, version: int) -> tuple[list[set[str]], list[set[str]]]:
    """Per formal input and output of the schema: the type strings it admits."""
    schema = onnx.defs.get_schema(op_type, version, "")
    constraints = {c.type_param_str: set(c.allowed_type_strs) for c in schema.type_constraints}

    def admitted(params) -> list[set[str]]:
        return [constraints.get(p.type_str, {p.type_str}) for p in params]

    return admitted(schema.inputs), admitted(schema.outputs)


def _admits(
    op_type: str, version: int, inputs: list[str | None], outputs: list[str] | None
) -> bool:
    formal_inputs, formal_outputs = _admitted_types(op_type, version)

    def fits(formals: list[set[str]], actual: list[str | None]) -> bool:
        if not formals:
            return not actual
        # variadic last parameter (Max's data_0) admits what it admits for every extra value
        return all(
            t is None or t in formals[min(i, len(formals) - 1)] for i, t in enumerate(actual)
        )

    return fits(formal_inputs, inputs) and (outputs is None or fits(formal_outputs, outputs))


def kept_as_is(
    op_type: str, source: int, target: int, inputs: list[str | None], outputs: list[str] | None
) -> bool:
    """Whether converting a family node of schema version `source` to `target` leaves it as
    it is, judged from its types alone: every step's adapter is type-only (see
    common.type_only) and every step's destination schema admits the node's input and
    output types, given as type strings ('tensor(float)'; None for an omitted input).
    `outputs` may be None for a checked node, whose output types follow from its inputs'."""
    steps = version_path(op_type, source, target)
    return all(
        getattr(ADAPTERS[op_type, a, b], "type_only", False)
        and _admits(op_type, b, inputs, outputs)
        for a, b in steps
    )
