"""What `verify` found: a verdict, per-output figures, the first diverging node, as text
for people (`summary`) and as JSON for machines (`to_dict`, `write_json`)."""

from __future__ import annotations

import dataclasses
import json
import math
import os
from collections import Counter

EQUIVALENT, DIFFERENT, INCONCLUSIVE = "equivalent", "different", "inconclusive"


@dataclasses.dataclass
class Mismatch:
    """The first element (or shape, dtype, run) of one output that differed."""

    trial: int
    trial_label: str
    seed: int
    kind: str  # "values", "shape", "dtype" or "error" (the candidate failed to run)
    index: list[int] | None = None
    expected: object = None  # the reference's value there (its dtype / shape for those kinds)
    actual: object = None  # the candidate's
    message: str | None = None

    def text(self) -> str:
        where = f"{self.trial_label}, seed {self.seed}"
        if self.kind == "values":
            return (
                f"first at {where}, index {tuple(self.index)}: reference "
                f"{_number(self.expected)}, candidate {_number(self.actual)}"
            )
        if self.kind == "error":
            return f"the candidate failed to run at {where}: {self.message}"
        return f"{self.kind} differs at {where}: reference {self.expected}, candidate {self.actual}"


@dataclasses.dataclass
class OutputResult:
    name: str
    status: str = "equal"  # "equal", "different", or "unspecified" (NaN at ReduceMax/ArgMin...)
    elements: int = 0  # elements compared, over all trials
    mismatches: int = 0  # mismatching elements, over the trials with a real difference
    max_difference: float | int | None = None
    runs_differing: int = 0
    first: Mismatch | None = None
    unspecified_runs: int = 0
    first_unspecified: Mismatch | None = None

    def text(self) -> str:
        if self.status == "equal":
            return f"output {self.name!r}: identical ({self.elements} elements compared)"
        if self.status == "unspecified":
            return (
                f"output {self.name!r}: differs only where NaN reaches "
                "ReduceMax/ArgMax/ReduceMin/ArgMin (unspecified by ONNX) in "
                f"{self.unspecified_runs} run(s); "
                f"{self.first_unspecified.text()}"
            )
        head = f"output {self.name!r}: "
        if self.first.kind == "values":
            head += (
                f"{self.mismatches} of {self.elements} elements differ over "
                f"{self.runs_differing} run(s); max difference "
                f"{_number(self.max_difference)}; "
            )
        else:
            head += f"differs in {self.runs_differing} run(s); "
        return head + self.first.text()


@dataclasses.dataclass
class Divergence:
    """The first value, in the reference's node order, that differs while every value it
    depends on matches; and the nodes that compute it on each side."""

    trial: int
    trial_label: str
    value: str
    reference_node: str  # the node in onnx text form
    reference_op: str
    candidate_node: str | None
    candidate_op: str | None
    mismatches: int
    elements: int
    index: list[int] | None
    expected: object
    actual: object
    kind: str
    unspecified: bool  # the node is ReduceMax/ArgMax and NaN reaches it

    def lines(self) -> list[str]:
        lines = [f"first diverging value {self.value!r} at {self.trial_label}:"]
        lines.append(f"  reference: {self.reference_node}")
        lines.append(f"  candidate: {self.candidate_node or '(computed inside another node)'}")
        if self.kind == "values":
            lines.append(
                f"  {self.mismatches} of {self.elements} elements differ; first at index "
                f"{tuple(self.index)}: reference {_number(self.expected)}, candidate "
                f"{_number(self.actual)}"
            )
        else:
            lines.append(
                f"  {self.kind} differs: reference {self.expected}, candidate {self.actual}"
            )
        if self.unspecified:
            lines.append("  NaN reaches this node, and ONNX does not specify its result then")
        return lines


@dataclasses.dataclass
class TrialResult:
    index: int
    label: str
    status: str  # "equal", "different", "unspecified" or "skipped"
    reference_runner: str | None = None
    candidate_runner: str | None = None
    note: str | None = None


@dataclasses.dataclass
class VerifyReport:
    """The verdict of `maxlower.verify`. `ok` is True when the models are equivalent on
    every trial (differences unspecified by ONNX count only under `strict`)."""

    status: str
    seed: int
    strict: bool
    rtol: float
    atol: float
    outputs: list[OutputResult]
    trials: list[TrialResult]
    notes: list[str]
    divergence: Divergence | None = None
    unspecified_divergence: Divergence | None = None

    @property
    def ok(self) -> bool:
        return self.status == EQUIVALENT

    @property
    def runs(self) -> int:
        return sum(1 for t in self.trials if t.status != "skipped")

    def runners(self, side: str) -> Counter:
        return Counter(
            getattr(t, f"{side}_runner") for t in self.trials if getattr(t, f"{side}_runner")
        )

    def summary(self) -> str:
        data_trials = len({t.index for t in self.trials})
        skipped = sum(1 for t in self.trials if t.status == "skipped")
        exactness = (
            "bit-exact"
            if not (self.rtol or self.atol)
            else f"rtol={self.rtol:g}, atol={self.atol:g}"
        )
        head = {
            EQUIVALENT: "EQUIVALENT: no difference",
            DIFFERENT: "DIFFERENT: a difference was found",
            INCONCLUSIVE: "NOT VERIFIED (INCONCLUSIVE): every trial was skipped",
        }[self.status]
        strict = "; strict" if self.strict else ""
        lines = [
            f"{head} ({exactness}; seed {self.seed}, {data_trials} trials, "
            f"{self.runs} runs compared, {skipped} skipped{strict})"
        ]
        lines.append(f"  runners: {self._runner_text()}")
        lines += [f"  {o.text()}" for o in self.outputs]
        for divergence in (self.divergence, self.unspecified_divergence):
            if divergence is not None:
                lines += [f"  {line}" for line in divergence.lines()]
        lines += [f"  note: {note}" for note in self.notes]
        return "\n".join(lines)

    def _runner_text(self) -> str:
        parts = []
        for side in ("reference", "candidate"):
            counts = self.runners(side)
            parts.append(
                f"{side} " + (", ".join(f"{k} ({v} runs)" for k, v in counts.items()) or "(none)")
            )
        return "; ".join(parts)

    def to_dict(self) -> dict:
        data = _json_safe(dataclasses.asdict(self))
        data["ok"] = self.ok
        data["runners"] = {side: dict(self.runners(side)) for side in ("reference", "candidate")}
        return data

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, allow_nan=False) + "\n"

    def write_json(self, path: str | os.PathLike) -> None:
        """Through a temporary file and a rename: an earlier report stays whole on failure."""
        from maxlower.files import atomic_write_text

        atomic_write_text(path, self.to_json())


def _number(value) -> str:
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if value == 0.0 and math.copysign(1.0, value) < 0:
            return "-0.0"
        return repr(value)
    return str(value)


def _json_safe(value):
    """NaN and ±inf as the strings "nan", "inf", "-inf" (JSON has no such numbers)."""
    if isinstance(value, float) and not math.isfinite(value):
        return _number(value)
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    return value
