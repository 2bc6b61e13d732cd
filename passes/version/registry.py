"""The adapters between neighbouring schema versions, keyed by (op, from, to).

Every neighbouring pair of versions of Max, ReduceMax and ArgMax has an entry in both
directions, even where nothing changes, so that coverage can be checked against
`onnx.defs` (tests/test_registry.py does) rather than assumed.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import onnx
import onnx_ir as ir

from passes.builder import Builder
from passes.version import arg_max, reduce_max
from passes.version import max as max_adapters

# An adapter rewrites one node from one schema version to the neighbouring one, in place or
# by replacing it, and returns a one-line description of what it did (None: nothing).
Adapter = Callable[[ir.Node, Builder], "str | None"]

ADAPTERS: dict[tuple[str, int, int], Adapter] = {
    **max_adapters.ADAPTERS,
    **reduce_max.ADAPTERS,
    **arg_max.ADAPTERS,
}


@functools.cache
def schema_versions(op_type: str) -> tuple[int, ...]:
    """All since_versions of a default-domain op, from onnx.defs."""
    return tuple(
        sorted(
            {
                s.since_version
                for s in onnx.defs.get_all_schemas_with_history()
                if s.name == op_type and s.domain == ""
            }
        )
    )


def version_path(op_type: str, source: int, target: int) -> list[tuple[int, int]]:
    """The neighbouring (from, to) steps that lead from schema version source to target."""
    versions = schema_versions(op_type)
    i, j = versions.index(source), versions.index(target)
    if i <= j:
        return [(versions[k], versions[k + 1]) for k in range(i, j)]
    return [(versions[k], versions[k - 1]) for k in range(i, j, -1)]
