"""What `verify` found: a verdict, per-output figures, the first diverging node, as text
for people (`summary`) and as JSON for machines (`to_dict`, `write_json`)."""

from __future__ import annotations

import dataclasses
import json
import math
import os
from collections import Counter
from typing import Any

EQUIVALENT, DIFFERENT, INCONCLUSIVE = "equivalent", "different", "inconclusive"
# Outputs differ, but only where NaN reaches ReduceMax/ArgMax/ReduceMin/ArgMin, whose result
# ONNX leaves unspecified: a pass by default, a failure under `strict`.
EQUIVALENT_EXCEPT_NAN = "equivalent_except_unspecified_nan"
# Bit-exact to the original with its expanded function ops as their ONNX bodies; the
# original's fused kernels differ from those bodies (maxlower.verify.expanded): a pass by
# default, a failure under `strict` or past the ulps bound.
EQUIVALENT_EXCEPT_EXPANDED = "equivalent_except_expanded_function_rounding"
NOT_COMPARED = "not compared"  # an output's status when none of its elements was compared
# a trial's status when it probes an edge (a dim at 0, a control input at a value equal to
# none of the model's constants) and the original model runs on it in no runtime: the edge
# is outside what the model accepts, so there is nothing to compare (not a skip: no flag
# would make the model run on it)
NOT_ACCEPTED = "not accepted"
NOT_RUN = ("skipped", NOT_ACCEPTED)
NAME_CHARS = 80  # a name in a one-line message is cut past this (the JSON has it whole)
MESSAGE_CHARS = 300  # an error message in a one-line message


def short(text: str, limit: int = NAME_CHARS) -> str:
    """`text` on one line, cut to `limit` characters (a hostile or huge name stays a line)."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


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
            return f"the candidate failed to run at {where}: {short(self.message, MESSAGE_CHARS)}"
        return f"{self.kind} differs at {where}: reference {self.expected}, candidate {self.actual}"


@dataclasses.dataclass
class OutputResult:
    name: str
    # "equal", "different", "unspecified" (NaN at ReduceMax/ArgMin...), or "not compared"
    # (no element of it was compared: no trial ran, or it was empty in every run)
    status: str = "equal"
    elements: int = 0  # elements compared, over all trials
    runs: int = 0  # runs in which it was compared (its dtype and shape, then its elements)
    mismatches: int = 0  # mismatching elements, over the trials with a real difference
    max_difference: float | int | None = None
    runs_differing: int = 0
    first: Mismatch | None = None
    unspecified_runs: int = 0
    first_unspecified: Mismatch | None = None
    max_ulps: int | None = None  # floats: the largest distance in ulps between finite values
    special_mismatches: int = 0  # floats: mismatching elements where either is NaN or ±inf

    def text(self) -> str:
        name = short(repr(self.name))
        if self.status == "equal" and self.elements:
            return f"output {name}: identical ({self.elements} elements compared)"
        if self.status in (NOT_COMPARED, "equal"):  # "equal" of nothing: a verdict before runs
            if not self.runs:
                return f"output {name}: no elements compared (no run compared it)"
            return (
                f"output {name}: no elements compared (empty in each of {self.runs} run(s); "
                "its dtype and shape matched)"
            )
        if self.status == "unspecified":
            return (
                f"output {name}: differs only where NaN reaches "
                "ReduceMax/ArgMax/ReduceMin/ArgMin (unspecified by ONNX) in "
                f"{self.unspecified_runs} run(s); "
                f"{self.first_unspecified.text()}"
            )
        head = f"output {name}: "
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
    reference_node: str  # the node's name (node_label: "<unnamed Op>" for a nameless one)
    reference_op: str
    candidate_node: str | None  # None: no candidate node outputs it (made inside another)
    candidate_op: str | None
    mismatches: int
    elements: int
    index: list[int] | None
    expected: object
    actual: object
    kind: str
    unspecified: bool  # the node is ReduceMax/ArgMax and NaN reaches it
    # the graph the node is in: "main graph", or the branch of an If both models took
    # ("main graph > If 'cond' > then_branch"), run on its own to find the node inside
    where: str = "main graph"

    def line(self) -> str:
        """One bounded line: the value, the node making it on each side, where, the index
        and the two values (never a node's text: an If's is its whole subgraph)."""
        made = f"output of {self.reference_op} node {short(repr(self.reference_node))}"
        if self.candidate_node is None:
            made += "; in the candidate, computed inside another node"
        elif (self.candidate_op, self.candidate_node) != (self.reference_op, self.reference_node):
            made += f"; candidate: {self.candidate_op} node {short(repr(self.candidate_node))}"
        if self.where != "main graph":
            made += f"; in {short(self.where, 2 * NAME_CHARS)}"
        head = f"first diverging value {short(repr(self.value))} ({made}) at {self.trial_label}"
        if self.kind == "values":
            line = (
                f"{head}, index {tuple(self.index)}: reference {_number(self.expected)}, "
                f"candidate {_number(self.actual)} ({self.mismatches} of {self.elements} "
                "elements differ)"
            )
        else:
            line = (
                f"{head}: {self.kind} differs: reference {short(str(self.expected))}, "
                f"candidate {short(str(self.actual))}"
            )
        if self.unspecified:
            line += "; NaN reaches this node, and ONNX does not specify its result then"
        return line

    def lines(self) -> list[str]:
        return [self.line()]


@dataclasses.dataclass
class TrialResult:
    index: int
    label: str
    status: str  # "equal", "different", "unspecified", "not compared", "skipped", NOT_ACCEPTED
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
    expanded: Any = None  # maxlower.verify.expanded.ExpandedRounding, with that status
    # every distinct first differing node over the runs with a real difference, as
    # {"op", "float"} (whether the value it gives is a float); and the runs where the
    # difference could not be traced to such a node
    roots: list[dict] = dataclasses.field(default_factory=list)
    untraced_runs: int = 0

    @property
    def ok(self) -> bool:
        if self.status == EQUIVALENT_EXCEPT_EXPANDED:
            return not self.strict and self.expanded.within_bound
        return self.status == EQUIVALENT or (
            self.status == EQUIVALENT_EXCEPT_NAN and not self.strict
        )

    @property
    def reference_only(self) -> bool:
        """Every run of both models was in onnx.reference: onnxruntime ran nothing."""
        runners = {*self.runners("reference"), *self.runners("candidate")}
        return self.runs > 0 and runners == {"onnx.reference"}

    def headline(self) -> str:
        """The verdict in one line, saying what was seen (stdout, --json, the page)."""
        if self.status == EQUIVALENT:
            compared = sum(o.elements for o in self.outputs)
            head = (
                "EQUIVALENT: no difference"
                if compared
                else "EQUIVALENT: no difference in dtypes and shapes; no elements compared "
                "(every output is empty by its declared shape)"
            )
        elif self.status == EQUIVALENT_EXCEPT_NAN:
            head = (
                "NOT EQUIVALENT under --strict: the outputs differ where ONNX leaves NaN "
                "unspecified"
                if self.strict
                else "EQUIVALENT EXCEPT WHERE ONNX LEAVES NaN UNSPECIFIED: the outputs differ "
                "only where NaN reaches ReduceMax/ArgMax/ReduceMin/ArgMin"
            )
        elif self.status == EQUIVALENT_EXCEPT_EXPANDED:
            head = self.expanded.headline(self.strict)
        elif self.status == DIFFERENT:
            head = "DIFFERENT: a difference was found"
        elif self.runs:
            head = (
                "NOT VERIFIED (INCONCLUSIVE): no elements compared (every output was empty "
                "in every trial that ran)"
            )
        else:
            head = "NOT VERIFIED (INCONCLUSIVE): every trial was skipped"
        if self.reference_only:
            verb = "found" if self.status == DIFFERENT else "verified"
            head += f"; {verb} in onnx.reference only (onnxruntime ran no trial)"
        return head

    @property
    def runs(self) -> int:
        return sum(1 for t in self.trials if t.status not in NOT_RUN)

    def not_accepted(self) -> int:
        """The runs at an edge (a dim at 0, an unmatched control value) that the original
        model runs on in no runtime."""
        return sum(1 for t in self.trials if t.status == NOT_ACCEPTED)

    def runners(self, side: str) -> Counter:
        return Counter(
            getattr(t, f"{side}_runner") for t in self.trials if getattr(t, f"{side}_runner")
        )

    def summary(self) -> str:
        data_trials = len({t.index for t in self.trials})
        skipped = sum(1 for t in self.trials if t.status == "skipped")
        outside = self.not_accepted()
        exactness = (
            "bit-exact"
            if not (self.rtol or self.atol)
            else f"rtol={self.rtol:g}, atol={self.atol:g}"
        )
        head = self.headline()
        strict = "; strict" if self.strict else ""
        lines = [
            f"{head} ({exactness}; seed {self.seed}, {data_trials} trials, "
            f"{self.runs} runs compared, {skipped} skipped"
            + (f", {outside} at an edge the model does not accept" if outside else "")
            + f"{strict})"
        ]
        lines.append(f"  runners: {self._runner_text()}")
        lines += [f"  {o.text()}" for o in self.outputs]
        for divergence in (self.divergence, self.unspecified_divergence):
            if divergence is not None:
                lines += [f"  {line}" for line in divergence.lines()]
        if self.expanded is not None:
            lines += [f"  {line}" for line in self.expanded.lines()]
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
        data["headline"] = self.headline()
        data["reference_only"] = self.reference_only
        if self.divergence is not None:
            data["divergence"]["line"] = self.divergence.line()
        if self.unspecified_divergence is not None:
            data["unspecified_divergence"]["line"] = self.unspecified_divergence.line()
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
