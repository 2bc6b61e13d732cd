"""The one error a pass raises when it cannot rewrite a node exactly."""

from __future__ import annotations


class ConversionError(Exception):
    """No exact rewrite exists for a node.

    The message always names the node, the op, the reason, and what would make the
    rewrite possible, so that a user can act on it without reading our source.
    """

    def __init__(self, node_name: str, op_type: str, reason: str, remedy: str) -> None:
        self.node_name = node_name
        self.op_type = op_type
        self.reason = reason
        self.remedy = remedy
        super().__init__(f"node {node_name!r} ({op_type}): {reason}. To make it possible: {remedy}")
