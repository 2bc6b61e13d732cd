"""Several profiles at once: `--profile rknn --profile onnxruntime` lowers a model to what
every one of them accepts, for a model that must run on all of them.

    ProfileSet.of([rknn, onnxruntime])   name "rknn+onnxruntime"; a node is rejected when
                                         any member rejects it (the first one says why);
                                         the opset window is the members' intersection
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING

import onnx_ir as ir

from passes.legalize.rejection import Rejection

if TYPE_CHECKING:
    from maxlower.profiles.rules import Profile


@dataclasses.dataclass(frozen=True)
class ProfileSet:
    """Profiles a model must satisfy together; the interface of one Profile."""

    members: tuple[Profile, ...]
    opsets: tuple[int, int] | None = None

    @classmethod
    def of(cls, profiles: list[Profile]) -> ProfileSet:
        from maxlower.errors import ProfileError

        members: list[Profile] = []
        for profile in profiles:  # a profile given twice is asked once
            if all(profile is not m and profile != m for m in members):
                members.append(profile)
        windows = [m.opsets for m in members if m.opsets is not None]
        opsets = None
        if windows:
            first, last = max(w[0] for w in windows), min(w[1] for w in windows)
            if first > last:
                said = ", ".join(
                    f"{m.name} {m.opsets[0]}-{m.opsets[1]}" for m in members if m.opsets
                )
                raise ProfileError(
                    f"profiles {' and '.join(repr(m.name) for m in members)} share no opset "
                    f"({said}); no model satisfies them all"
                )
            opsets = (first, last)
        return cls(tuple(members), opsets)

    @property
    def name(self) -> str:
        return "+".join(m.name for m in self.members)

    @property
    def description(self) -> str:
        return "what all of " + ", ".join(m.name for m in self.members) + " accept"

    @property
    def path(self) -> Path | None:
        return None

    @property
    def target(self) -> str | None:
        return None

    def rejection(self, node: ir.Node, opset: int) -> Rejection | None:
        for member in self.members:
            reason = member.rejection(node, opset)
            if reason is not None:
                return Rejection(
                    f"{member.name}: {reason}",
                    f"{member.name} {reason.rule}".strip(),
                    reason.source,
                    reason.remedy,
                )
        return None


__all__ = ["ProfileSet"]
