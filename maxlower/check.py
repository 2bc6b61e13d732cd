"""`check(model, profile)`: a pre-flight report of what a deployment target would reject.

    report = check(model, "qnn-htp")                   one target
    report = check(model, ["rknn", "onnxruntime"])     what all of them accept
    report = check(model, "coreml", opset=13)          after converting to opset 13
    report.accepted        True when the target takes the model as it is
    report.exit_code()     0 accepted or fixable, 3 some node has no exact form,
                           1 with strict=True when anything would change

It runs the pipeline `maxlower lower` runs (maxlower.pipeline, `Job(keep_going=True)`), so
each node it lists is one `lower` would rewrite, with the form `lower` would choose, its
node count and the planner's own cost estimate (passes.legalize.cost: 1 is an Add over the
node's largest input); a node without an exact form is listed with the reason and a remedy
instead of stopping the run. Nothing is written. `maxlower check` prints `lines()` and
writes `to_dict()` with --json.
"""

from __future__ import annotations

import collections
import dataclasses
import os
from typing import Any

import onnx
import onnx_ir as ir

from maxlower.api import ModelLike, run_job
from maxlower.errors import check_target_opset
from maxlower.pipeline import Job, Report
from maxlower.profiles import Profile, ProfileSet, ProfilesLike, load_profiles
from passes.builder import FAMILY
from passes.legalize import Lowering, Unlowered


@dataclasses.dataclass
class CheckReport:
    """What a target rejects in a model and what `lower` would do about each node."""

    profile: str
    targets: dict[str, str]  # profile name -> the target version its file describes
    source_opset: int | None
    target_opset: int | None  # the opset `lower` converts to first (None: it stays)
    converted: int  # nodes that conversion to target_opset changes
    lowerings: list[Lowering]  # nodes rejected that have an exact form
    unlowered: list[Unlowered]  # nodes rejected that have none
    # profile name -> the model's ops (domain::op, or op in the default domain) that the
    # profile says nothing about: neither the family, nor a rule of its file, nor kernels
    unchecked: dict[str, list[str]] = dataclasses.field(default_factory=dict)

    @classmethod
    def of(
        cls, report: Report, profile: Profile | ProfileSet, model: onnx.ModelProto | None = None
    ) -> CheckReport:
        converting = report.target_opset not in (None, report.source_opset)
        ops = op_counts(model) if model is not None else collections.Counter()
        unchecked = {
            m.name: [op for op in sorted(ops) if not _judges(m, op)] for m in profile.members
        }
        return cls(
            profile.name,
            {m.name: m.target or "(no target version stated)" for m in profile.members},
            report.source_opset,
            report.target_opset if converting else None,
            len(report.rewrites) + len(report.conversions) if converting else 0,
            list(report.lowerings),
            list(report.unlowered),
            {name: found for name, found in unchecked.items() if found},
        )

    @property
    def accepted(self) -> bool:
        """The target takes the model as it is."""
        return not (self.lowerings or self.unlowered or self.target_opset is not None)

    def exit_code(self, *, strict: bool = False) -> int:
        if self.unlowered:
            return 3
        return 1 if strict and not self.accepted else 0

    def lines(self) -> list[str]:
        lines = [f"  {name}: {target}" for name, target in self.targets.items()]
        if self.target_opset is not None:
            lines.append(
                f"  opset {self.source_opset} is outside what {self.profile!r} accepts: "
                f"`lower` converts to opset {self.target_opset} first "
                f"({_count(self.converted, 'node')} change)"
            )
        if self.lowerings:
            lines.append(f"  rejected, with an exact form: {_count(len(self.lowerings), 'node')}")
            lines += [line for x in self.lowerings for line in _lowering_lines(x)]
        if self.unlowered:
            lines.append(f"  rejected, no exact form: {_count(len(self.unlowered), 'node')}")
            lines += [line for x in self.unlowered for line in _unlowered_lines(x)]
        for name, ops in self.unchecked.items():
            lines.append(
                f"  not checked against {name!r}: {_count(len(ops), 'other op')} "
                f"({_listed(ops)}) in the model `lower` would write: the profile has no rule "
                "for them"
            )
        lines.append(f"  verdict: {self.verdict()}")
        return lines

    def verdict(self) -> str:
        return self._verdict() + self._unchecked_text()

    def _verdict(self) -> str:
        if self.unlowered:
            return (
                f"{_count(len(self.unlowered), 'node')} cannot be made acceptable exactly "
                "(exit code 3)"
            )
        if self.accepted and self.unchecked:
            return f"the Max/Min family fits {self.profile!r} as it is"
        if self.accepted:
            return f"{self.profile!r} accepts the model as it is"
        done = [f"convert to opset {self.target_opset}"] if self.target_opset else []
        if self.lowerings:
            done.append(f"rewrite {_count(len(self.lowerings), 'node')}")
        return f"`maxlower lower` would {' and '.join(done)}, exactly"

    def _unchecked_text(self) -> str:
        count = len({op for ops in self.unchecked.values() for op in ops})
        if not count:
            return ""
        were = "was" if count == 1 else "were"
        return f"; {_count(count, 'other op')} {were} not checked against this profile"

    def to_dict(self) -> dict[str, Any]:
        return {
            "profile": self.profile,
            "targets": self.targets,
            "source_opset": self.source_opset,
            "target_opset": self.target_opset,
            "converted_nodes": self.converted,
            "accepted": self.accepted,
            "rejected": [dataclasses.asdict(x) for x in self.lowerings],
            "no_exact_form": [dataclasses.asdict(x) for x in self.unlowered],
            "unchecked_ops": self.unchecked,
            "verdict": self.verdict(),
        }


def check(
    model: ModelLike,
    profile: ProfilesLike,
    *,
    opset: int | None = None,
    base_dir: str | os.PathLike[str] | None = None,
) -> CheckReport:
    """What `profile` (one, or a list: all of them) rejects in `model`, at `opset` if given
    (else the model's, or the profile's opset window), and what `lower` would do about it.
    Raises ProfileError / InvalidModelError for bad input, and ConversionError when the
    model cannot be converted to the opset at all."""
    loaded = load_profiles(profile)
    if opset is not None:
        check_target_opset(opset)
    result, report = run_job(model, Job(opset, loaded, keep_going=True), base_dir)
    proto = ir.to_proto(result) if isinstance(result, ir.Model) else result
    return CheckReport.of(report, loaded, proto)


def op_counts(model: onnx.ModelProto) -> collections.Counter[str]:
    """Nodes per op (domain::op outside the default domain), in every graph of `model`:
    the main graph, subgraphs at any depth, and local functions (whose calls are not ops)."""
    counts: collections.Counter[str] = collections.Counter()
    local = {(f.domain, f.name) for f in model.functions}  # a call: its body is counted
    graphs: list[Any] = [model.graph, *model.functions]
    while graphs:
        for node in graphs.pop().node:
            if (node.domain, node.op_type) in local:
                continue
            domain = "" if node.domain in ("", "ai.onnx") else node.domain
            counts[f"{domain}::{node.op_type}" if domain else node.op_type] += 1
            for attribute in node.attribute:
                graphs += [attribute.g] if attribute.HasField("g") else []
                graphs += list(attribute.graphs)
    return counts


def _judges(profile: Profile, op: str) -> bool:
    """Whether `profile` says anything about `op`: the family (its files are written for
    it: an op they do not list is accepted as it is), a rule, or a kernel registry."""
    return op in FAMILY or op in profile.ops or profile.kernels is not None


def _listed(ops: list[str], most: int = 8) -> str:
    shown = ", ".join(ops[:most])
    return shown + (f", and {len(ops) - most} more" if len(ops) > most else "")


def _lowering_lines(x: Lowering) -> list[str]:
    return [
        f"    {x.where}: node {x.node!r} {x.op_type}: {x.rejection}",
        f"      rule: {_rule(x.rule, x.source)}",
        f"      lower: {' → '.join(x.steps)}; {_count(x.nodes_after, 'node')}, "
        f"estimated cost {x.cost:g} (an Add over its input: 1)",
    ]


def _unlowered_lines(x: Unlowered) -> list[str]:
    return [
        f"    {x.where}: node {x.node!r} {x.op_type}: {x.rejection}",
        f"      rule: {_rule(x.rule, x.source)}",
        f"      no exact form: {x.reason}",
        f"      to make it possible: {x.remedy}",
    ]


def _rule(rule: str, source: str) -> str:
    return f"{rule or '(unnamed)'}; source: {source or '(none cited)'}"


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


__all__ = ["CheckReport", "check"]
