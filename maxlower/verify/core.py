"""`verify(reference, candidate)`: run both models on the same trials and compare.

For each trial (`inputs.generate_trials`) the reference runs first; a trial it cannot run
(say, a size 0 that its Reshape rejects) is skipped and noted. Then the candidate runs and
every output is compared (`compare.compare`). A failure of the candidate where the
reference ran is a difference.

When a trial differs, both models run again with their local functions inlined and every
main-graph value exposed as an output. Values present in both under the same name are
compared in the reference's node order; a *root* is a differing value whose inputs all
match (values only one model has inherit their inputs' state). The first root is the
first diverging node. A root that an If computes is looked for inside: when both models'
If took the same branch, that branch runs on its own (the values it reads from outside,
equal on both sides, fed as inputs) and its roots replace the If's, placed as
"main graph > If 'cond' > then_branch" (Ifs nested up to _MAX_DEPTH; Loop and Scan bodies
are not looked into). If every root is a ReduceMax, ArgMax, ReduceMin or ArgMin whose data
input holds a NaN (and, for the reductions, only elements with NaN on one side differ), the
trial differs only in
what ONNX leaves unspecified: reported as such, and a failure only under `strict`.
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
from collections.abc import Collection, Mapping, Sequence

import numpy as np
import onnx
import onnx_ir as ir

from maxlower.errors import InvalidModelError, KernelTrapped
from maxlower.external import external_protos, inlined, ir_external_tensors, ir_read_all_in
from maxlower.options import DEFAULT_TIMEOUT, check_input_shapes, check_options
from maxlower.pipeline import load_proto
from maxlower.serde import deserialize, serialize
from maxlower.verify.accepts import accepts, skip_reason
from maxlower.verify.compare import Comparison, compare, equal_elements, is_float
from maxlower.verify.inputs import (
    Trial,
    axes_inputs,
    generate_trials,
    input_specs,
    load_npz,
    shape_dims,
)
from maxlower.verify.models import check_verifiable
from maxlower.verify.report import (
    DIFFERENT,
    EQUIVALENT,
    EQUIVALENT_EXCEPT_NAN,
    INCONCLUSIVE,
    NAME_CHARS,
    NOT_ACCEPTED,
    NOT_COMPARED,
    NOT_RUN,
    Divergence,
    Mismatch,
    OutputResult,
    TrialResult,
    VerifyReport,
    short,
)
from maxlower.verify.runner import ONNXRUNTIME, REFERENCE, ExposedRunner, ModelRunner
from passes.errors import concise
from passes.extremum import FAMILIES
from passes.graph_utils import node_label, subgraph_place

ModelInput = onnx.ModelProto | ir.Model | str | os.PathLike[str]
# Ops whose result on a NaN ONNX leaves open: both families' reductions and arg ops.
_NAN_UNSPECIFIED = {op for f in FAMILIES for op in (f.reduce, f.arg)}
_ARG_OPS = {f.arg for f in FAMILIES}


def verify(
    reference: ModelInput,
    candidate: ModelInput,
    *,
    seed: int = 0,
    trials: int | None = None,
    inputs: Mapping[str, np.ndarray] | str | os.PathLike[str] | None = None,
    ranges: Mapping[str, tuple[float, float]] | None = None,
    dims: Mapping[str, int] | None = None,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    rtol: float = 0.0,
    atol: float = 0.0,
    strict: bool = False,
    timeout: float = DEFAULT_TIMEOUT,
) -> VerifyReport:
    """Check that `candidate` computes what `reference` does; never raises on a difference.

    Models are `onnx.ModelProto`, `onnx_ir.Model` or paths. `trials` is the number of data
    trials (default: the whole built-in schedule, 7 plus one per symbolic dim); `inputs`
    fixes some inputs (a mapping or an .npz path), `ranges` draws an input from `[low,
    high)`, `dims` fixes symbolic dim sizes, `input_shapes` whole inputs' shapes
    ({"x": (1, 3, 224, 224)}: the free dims among them take those sizes). Inputs none of
    these fix are what the model accepts (maxlower.verify.accepts). `rtol`/`atol` relax
    float comparisons; `strict` makes NaN differences at ReduceMax/ArgMax fail. `timeout`
    is the budget in seconds of one model on one trial: a trial that runs past it is
    skipped, and if every trial is skipped the report is INCONCLUSIVE ("not verified").
    Raises InvalidModelError for unusable models or options (maxlower.options; exit code
    2 on the command line), and for inputs too large to generate
    (maxlower.verify.models.check_verifiable).
    (`maxlower.verify`, the library's door, also writes the HTML page with `report=`.)
    """
    options = dict(seed=seed, trials=trials, inputs=inputs, ranges=ranges, dims=dims)
    options.update(input_shapes=input_shapes)
    options.update(rtol=rtol, atol=atol, strict=strict, timeout=timeout)
    return _verify(reference, candidate, **options)


def _verify(
    reference,
    candidate,
    *,
    seed,
    trials,
    inputs,
    ranges,
    dims,
    input_shapes,
    rtol,
    atol,
    strict,
    timeout,
) -> VerifyReport:
    ranges, dims = check_options(
        seed=seed, trials=trials, rtol=rtol, atol=atol, timeout=timeout, ranges=ranges, dims=dims
    )
    input_shapes = check_input_shapes(input_shapes)
    reference_proto = as_proto(reference, "reference")
    candidate_proto = as_proto(candidate, "candidate")
    fixed = _load_inputs(inputs, reference_proto)
    reference_ir = deserialize(reference_proto)
    axes = axes_inputs(reference_ir)
    # an input with a default (an initializer) runs with it, unless it reaches an axes
    # input or the caller gives it a range: then it is generated like the others
    overridden = {*axes, *(ranges or {})}
    specs = input_specs(reference_proto, fixed, overridden)  # refuses what it cannot make
    dims = shape_dims([s for s in specs if s.name not in fixed], input_shapes, dims)
    check_verifiable(reference_proto, dims, set(fixed))
    for name in ranges or {}:
        if name not in {s.name for s in specs}:
            raise InvalidModelError(f"--range {name}: the model has no input of that name")
    names = [o.name for o in reference_proto.graph.output]
    report = VerifyReport(
        EQUIVALENT, seed, strict, rtol, atol, [OutputResult(n) for n in names], [], []
    )
    interface = _interface_differences(reference_proto, candidate_proto, fixed, overridden)
    if interface:
        report.status = DIFFERENT
        report.notes += interface
        return report

    runners = ModelRunner(reference_proto, timeout), ModelRunner(candidate_proto, timeout)
    invalid = _invalid(candidate_proto) if runners[1].load_error else None
    if invalid is not None and _invalid(reference_proto) is None:
        # onnx.reference runs what the spec forbids (an attribute Max-7 lacks, say): a
        # candidate onnxruntime refuses because it is invalid ONNX is no pass there
        for runner in runners:
            runner.close()
        report.status = DIFFERENT
        report.notes.append(
            f"the candidate is not valid ONNX, and the reference is ({invalid}); onnxruntime "
            f"cannot load it ({runners[1].load_error})"
        )
        return report
    for side, runner in zip(("reference", "candidate"), runners):
        if runner.load_error:
            report.notes.append(
                f"onnxruntime cannot load the {side} model ({runner.load_error});"
                " both models ran in onnx.reference"
            )
    session = _Session(report, runners, reference_proto, candidate_proto, rtol, atol, timeout)
    session.fixed = set(fixed)
    accepted = accepts(reference_ir, (d for s in specs for d in s.dims if isinstance(d, str)))
    session.equalled = {name: constants for name, (_, constants) in accepted.equalled.items()}
    try:  # sizes the graph needs (a Reshape to 2^24 x 64 elements) are bounded like --dim's
        check_verifiable(reference_proto, {**accepted.sizes, **dims}, set(fixed))
    except InvalidModelError as error:
        accepted.sizes = {}
        report.notes.append(f"sizes derived from the model not used: {error}")
    for trial in generate_trials(
        specs,
        seed=seed,
        trials=trials,
        fixed=fixed,
        ranges=ranges,
        dims=dims,
        axes=axes,
        accepted=accepted,
    ):
        session.run_trial(trial)
    session.finish()
    return report


class _Session:
    """The state of one verification while its trials run."""

    def __init__(
        self, report, runners, reference_proto, candidate_proto, rtol, atol, timeout
    ) -> None:
        self.report = report
        self.runners = runners
        self.protos = reference_proto, candidate_proto
        self.rtol, self.atol, self.timeout = rtol, atol, timeout
        self._exposed = None
        self._branches: dict[tuple, list | None] = {}  # If branches run on their own
        self.skipped: list[tuple[Trial, str]] = []
        self.timed_out: list[tuple[Trial, str]] = []
        self.unpaired: list[tuple[Trial, str]] = []  # no runtime ran both sides
        self.unimplemented = False  # ... at least once for want of the candidate's ops
        self.trapped: list[tuple[Trial, str]] = []  # onnxruntime died on the reference
        self.killed: list[tuple[Trial, str]] = []  # onnxruntime's process got SIGKILL
        self.fixed: set[str] = set()  # the inputs given with --inputs
        self.not_accepted: list[tuple[Trial, str]] = []  # a dim at 0 the model refuses
        self.equalled: dict[str, list] = {}  # inputs only Equal reads: {name: its constants}

    def run_trial(self, trial: Trial) -> None:
        ref_runner, cand_runner = self.runners
        # (a candidate onnxruntime cannot load runs in onnx.reference: so does the reference)
        expected = ref_runner.run_on(trial.feeds, REFERENCE if cand_runner.load_error else None)
        record = TrialResult(trial.index, trial.label, "equal", expected.runner)
        self.report.trials.append(record)
        if expected.timed_out or expected.killed:
            self._skip_timed_out(record, trial, "reference", expected)
            return
        if expected.trapped:
            self._skip_trapped(record, trial, expected.error)
            return
        outside = self._outside_the_model(trial) if expected.outputs is None else None
        if outside:
            record.status = NOT_ACCEPTED
            record.note = f"the model does not accept {outside}: {expected.error}"
            self.not_accepted.append((trial, record.note))
            return
        if expected.outputs is None:
            reason = skip_reason(expected.error, trial)  # names the flag that fixes it
            record.status = "skipped"
            record.note = f"the reference model does not run on it: {reason}"
            self.skipped.append((trial, reason))
            return
        # both sides of a trial run in one runtime: onnxruntime and onnx.reference may round
        # a float op (a Conv's sums) differently, which is no difference between the models
        actual = cand_runner.run_on(trial.feeds, expected.runner)
        record.candidate_runner = actual.runner
        if actual.timed_out or actual.killed:
            self._skip_timed_out(record, trial, "candidate", actual)
            return
        if actual.runner == REFERENCE and expected.runner == ONNXRUNTIME:
            # onnxruntime failed on the candidate only: the reference runs there too
            expected = ref_runner.run_on(trial.feeds, REFERENCE)
            record.reference_runner = expected.runner
            if expected.timed_out or expected.killed:
                self._skip_timed_out(record, trial, "reference", expected)
                return
            if expected.outputs is None:
                record.status = "skipped"
                record.note = (
                    "onnxruntime fails on the candidate and onnx.reference on the reference, "
                    f"so the two cannot run in one runtime: {expected.error}"
                )
                self.unpaired.append((trial, record.note))
                return
        if actual.trapped:  # the reference ran: the candidate crashing is a difference
            actual.error += " running the candidate: " + _trap_site(
                self.protos[1], trial.feeds, self.timeout
            )
        if actual.unimplemented:  # a runtime's gap, not the candidate's fault: not compared
            record.status = "skipped"
            record.note = f"no runtime here implements every op of the candidate: {actual.error}"
            self.unpaired.append((trial, record.note))
            self.unimplemented = True
            return
        if actual.outputs is None:
            record.status = "different"
            record.note = actual.error
            for output in self.report.outputs:
                self._add_real(output, trial, Comparison("error"), actual.error)
            return
        comparisons = [
            compare(e, a, self.rtol, self.atol) for e, a in zip(expected.outputs, actual.outputs)
        ]
        for output, comparison in zip(self.report.outputs, comparisons):
            output.elements += comparison.elements
            output.runs += 1
        if all(c.equal for c in comparisons):
            if not any(c.elements for c in comparisons):
                record.status = NOT_COMPARED  # dtypes and shapes matched; no element to compare
            return
        divergence = self._localise(trial, expected.runner, actual.runner)
        unspecified = (
            divergence is not None
            and all(d.unspecified for d in divergence)
            and all(c.kind in ("equal", "values") for c in comparisons)
        )
        record.status = "unspecified" if unspecified else "different"
        for output, comparison in zip(self.report.outputs, comparisons):
            if comparison.equal:
                continue
            if unspecified:
                output.unspecified_runs += 1
                if output.first_unspecified is None:
                    output.first_unspecified = _mismatch(trial, comparison)
            else:
                self._add_real(output, trial, comparison)
        if not unspecified:
            self._note_roots(divergence)
        if divergence:
            attribute = "unspecified_divergence" if unspecified else "divergence"
            # A real difference is shown at its first real root, not at a NaN one before it.
            shown = next((d for d in divergence if not d.unspecified), divergence[0])
            if getattr(self.report, attribute) is None:
                setattr(self.report, attribute, shown)

    def _note_roots(self, divergence: list[Divergence] | None) -> None:
        """Which nodes the differences of one run start at (maxlower.verify.expanded reads
        them: a difference that starts only at an expanded function's float output)."""
        real = [d for d in divergence or [] if not d.unspecified]
        if not real:
            self.report.untraced_runs += 1
        for d in real:
            root = {"op": d.reference_op, "float": d.kind == "values" and _is_float_value(d)}
            if root not in self.report.roots:
                self.report.roots.append(root)

    def _skip_trapped(self, record: TrialResult, trial: Trial, error: str) -> None:
        """onnxruntime's process died on the reference (int32 INT_MIN / -1 traps): the
        model's result is not defined there. On a trial made only of the values of
        --inputs, the caller asked for exactly that: an error naming the node; on a
        generated one, the trial is skipped (the generator must not be what fails)."""
        site = _trap_site(self.protos[0], trial.feeds, self.timeout)
        if trial.feeds and set(trial.feeds) <= self.fixed:
            given = ", ".join(repr(name) for name in trial.feeds)
            raise KernelTrapped(
                f"{error} running the reference model on the values of --inputs "
                f"({short(given, 2 * NAME_CHARS)}): {site}; ONNX does not define that "
                "result: give inputs that avoid it"
            )
        record.status = "skipped"
        record.note = f"{error} running the reference model: {site}"
        self.trapped.append((trial, record.note))

    def _outside_the_model(self, trial: Trial) -> str | None:
        """What a generated trial that the original runs on in neither runtime probes
        outside the model, if it is an edge rather than a bad pick: a dim at 0 (a Reshape
        with -1 of an empty tensor), or a control input at a value equal to none of the
        constants the model compares it with (silero-vad raises on a rate it does not
        know). Not a skip: no flag would make the model run there. None otherwise."""
        if set(trial.feeds) & self.fixed:
            return None
        edges = [f"{d}=0" for d, size in trial.sizes.items() if size == 0]
        for name, constants in self.equalled.items():
            value = trial.feeds.get(name)
            if value is not None and value.size == 1 and value.item() not in constants:
                edges.append(f"{name}={value.item()} (it compares {name} with "
                             f"{', '.join(map(str, sorted(set(constants))[:4]))})")  # fmt: skip
        return " and ".join(edges) or None

    def _skip_timed_out(self, record: TrialResult, trial: Trial, side: str, outcome) -> None:
        """A run past --timeout, or killed (SIGKILL: out of memory, or from outside), tells
        nothing either way: the trial is skipped."""
        record.status = "skipped"
        if outcome.killed:
            record.note = f"{outcome.error} running the {side} model"
            self.killed.append((trial, record.note))
            return
        record.note = f"the {side} model {outcome.error}"
        self.timed_out.append((trial, record.note))

    def _add_real(
        self, output: OutputResult, trial: Trial, comparison: Comparison, message: str | None = None
    ) -> None:
        output.runs_differing += 1
        output.mismatches += comparison.mismatches
        output.special_mismatches += comparison.special
        if comparison.max_ulps is not None:
            output.max_ulps = max(output.max_ulps or 0, comparison.max_ulps)
        if comparison.kind == "values" and not _is_nan(comparison.max_difference):
            if output.max_difference is None or _is_nan(output.max_difference):
                output.max_difference = comparison.max_difference
            else:
                output.max_difference = max(output.max_difference, comparison.max_difference)
        elif comparison.kind == "values" and output.max_difference is None:
            output.max_difference = comparison.max_difference
        if output.first is None:
            output.first = _mismatch(trial, comparison, message)

    def _localise(self, trial: Trial, ref_runner: str, cand_runner: str) -> list[Divergence] | None:
        """The roots of the differences of one trial, in the reference's node order."""
        if self._exposed is None:
            self._exposed = [ExposedRunner(p, self.timeout) for p in self.protos]
        reference, candidate = self._exposed
        ref_values = reference.values(ref_runner, trial.feeds)
        cand_values = candidate.values(cand_runner, trial.feeds)
        if ref_values is None or cand_values is None:
            return None
        # Constant axes live in initializers, which no node outputs: add the small ones.
        ref_values = {**_small_initializers(self.protos[0].graph), **ref_values}
        scope = _Scope(
            "main graph",
            (reference.model, candidate.model),
            (reference.nodes, candidate.nodes),
            (ref_values, cand_values),
        )
        return self._roots(trial, scope, (ref_runner, cand_runner), 0) or None

    def _roots(self, trial: Trial, scope: _Scope, runners, depth: int) -> list[Divergence]:
        """The roots in one graph: its differing values whose inputs all match. A root that
        an If computes is looked for inside the branch both sides took (`_inside`)."""
        ref_nodes, cand_nodes = scope.nodes
        ref_values, cand_values = scope.values
        producers = {name: node for node in cand_nodes for name in node.output if name}
        tainted: set[str] = set()
        roots: list[Divergence] = []
        opened: set[int] = set()  # the If nodes whose branch was searched
        for node in ref_nodes:
            upstream = any(name in tainted for name in _inputs_of(node))
            for name in filter(None, node.output):
                if name in ref_values and name in cand_values:
                    comparison = compare(ref_values[name], cand_values[name], self.rtol, self.atol)
                    if comparison.equal:
                        continue
                    tainted.add(name)
                    if upstream or id(node) in opened:
                        continue
                    inner = self._inside(trial, scope, node, producers.get(name), runners, depth)
                    if inner:
                        opened.add(id(node))
                        roots += inner
                        continue
                    roots.append(
                        _divergence(
                            trial,
                            node,
                            producers.get(name),
                            name,
                            comparison,
                            ref_values,
                            cand_values,
                            self.rtol,
                            self.atol,
                            scope.where,
                        )
                    )
                elif upstream:
                    tainted.add(name)
        return roots

    def _inside(
        self, trial: Trial, scope: _Scope, node, candidate, runners, depth: int
    ) -> list[Divergence] | None:
        """The roots inside the branch an If took, when both models' If took the same one
        and its values can be run on their own (the values it reads from outside, which
        match on both sides, become inputs): an If's own text is its whole subgraph, and
        only the node inside says what differs (a NaN reaching a ReduceMax, say). None
        when it cannot be looked into (Loop and Scan bodies are not)."""
        if depth >= _MAX_DEPTH or candidate is None or not (_is_if(node) and _is_if(candidate)):
            return None
        conditions = [values.get(n.input[0]) for n, values in zip((node, candidate), scope.values)]
        if any(c is None or np.asarray(c).size != 1 for c in conditions):
            return None
        taken = {bool(np.asarray(c).reshape(-1)[0]) for c in conditions}
        if len(taken) != 1:
            return None
        branch = "then_branch" if taken.pop() else "else_branch"
        key = (id(node), id(candidate), branch)
        if key not in self._branches:
            built = [
                _branch_model(n, branch, values, model)
                for n, values, model in zip((node, candidate), scope.values, scope.models)
            ]
            try:
                self._branches[key] = (
                    None
                    if None in built
                    else [(ExposedRunner(m, self.timeout), free) for m, free in built]
                )
            except Exception:  # (a branch onnx_ir cannot read on its own: not looked into)
                self._branches[key] = None
        sides = self._branches[key]
        if sides is None:
            return None
        values = []
        for (runner, free), outer, name, n in zip(sides, scope.values, runners, (node, candidate)):
            found = runner.values(name, {k: outer[k] for k in free})
            if found is None or not _reproduces(found, outer, n, branch):
                return None
            values.append(found)
        inner = _Scope(
            subgraph_place(scope.where, node, branch),
            (sides[0][0].model, sides[1][0].model),
            (sides[0][0].nodes, sides[1][0].nodes),
            ({**_small_initializers(sides[0][0].model.graph), **values[0]}, values[1]),
        )
        return self._roots(trial, inner, runners, depth + 1) or None

    def finish(self) -> None:
        report = self.report
        for output in report.outputs:
            if output.first is not None:
                output.status = "different"
            elif output.first_unspecified is not None:
                output.status = "unspecified"
            elif output.elements == 0:
                output.status = NOT_COMPARED  # never "identical" when nothing was compared
        ran = [t for t in report.trials if t.status not in NOT_RUN]
        for side, runner in zip(("reference", "candidate"), self.runners):
            if runner.run_error:
                report.notes.append(
                    f"onnxruntime failed on some trials of the {side} model (first: "
                    f"{runner.run_error}); both models ran those trials in onnx.reference"
                )
        if self.trapped:
            trial, note = self.trapped[0]
            report.notes.append(
                f"{len(self.trapped)} run(s) skipped because onnxruntime's process died "
                f"running the reference on them (a result ONNX does not define); first: "
                f"{trial.label}: {note}"
            )
        if self.killed:
            trial, note = self.killed[0]
            report.notes.append(
                f"{len(self.killed)} run(s) skipped because onnxruntime's process was killed "
                f"(SIGKILL: out of memory, or from outside); first: {trial.label}: {note}"
            )
        if self.unpaired:
            trial, note = self.unpaired[0]
            report.notes.append(
                f"{len(self.unpaired)} run(s) skipped because no runtime runs both models on "
                f"them; first: {trial.label}: {note}"
            )
        if self.skipped:
            trial, error = self.skipped[0]
            report.notes.append(
                f"{len(self.skipped)} run(s) skipped because the reference model does not run "
                f"on them (sizes or values it rejects); first: {trial.label}: {error}"
            )
        if self.not_accepted:
            trial, note = self.not_accepted[0]
            report.notes.append(
                f"{len(self.not_accepted)} run(s) not compared because they probe an edge "
                f"(a dim at 0, a control value the model compares with no constant) that "
                f"the original model runs on in no runtime; first: {trial.label}: {note}"
            )
        if self.timed_out:
            trial, note = self.timed_out[0]
            report.notes.append(
                f"{len(self.timed_out)} run(s) skipped because a model ran past the time "
                f"budget (--timeout {self.timeout:g} s); first: {trial.label}: {note}"
            )
        if any(o.status == "different" for o in report.outputs):
            report.status = DIFFERENT
        elif not ran or self.unimplemented:  # (a trial skipped so is never a pass)
            report.status = INCONCLUSIVE
            report.notes.append(
                "no trial was compared, so nothing is verified: "
                + (
                    "no runtime here implements every op version of the candidate; check it "
                    "in the runtime it is for"
                    if self.unimplemented
                    else "give inputs the reference accepts with --inputs, --range, --dim or "
                    "--input-shapes" + (", or a longer --timeout" if self.timed_out else "")
                )
            )
        elif not any(o.elements for o in report.outputs) and not _declared_empty(self.protos[0]):
            # dtypes and shapes matched, but no element of any output was compared: the
            # trials that ran were all empty (a dim at 0), so no value was checked
            report.status = INCONCLUSIVE
            report.notes.append(
                "no element of any output was compared (every trial that ran gave empty "
                "outputs), so no value is verified: give sizes that are not 0 with --dim, "
                "or inputs with --inputs or --range"
            )
        elif any(o.status == "unspecified" for o in report.outputs):
            report.status = EQUIVALENT_EXCEPT_NAN  # (ok unless strict: VerifyReport.ok)
            report.notes.append(
                "some outputs differ only where NaN reaches ReduceMax/ArgMax/ReduceMin/ArgMin, "
                "whose result ONNX leaves unspecified (onnxruntime's depends on the NaN's "
                "position); "
                + (
                    "--strict counts that as a difference"
                    if report.strict
                    else "pass --strict to count that as a difference"
                )
            )


def _divergence(
    trial: Trial,
    node: onnx.NodeProto,
    candidate: onnx.NodeProto | None,
    name: str,
    comparison: Comparison,
    values: dict,
    cand_values: dict,
    rtol: float,
    atol: float,
    where: str = "main graph",
) -> Divergence:
    unspecified = False
    if comparison.kind == "values":
        reached = _nan_reached(node, values)
        if reached is not None and reached.shape == values[name].shape:
            same = equal_elements(values[name], cand_values[name], rtol, atol)
            unspecified = bool(np.all(same | reached))
    return Divergence(
        trial=trial.index,
        trial_label=trial.label,
        value=name,
        reference_node=node_label(node),
        reference_op=node.op_type,
        candidate_node=node_label(candidate) if candidate is not None else None,
        candidate_op=candidate.op_type if candidate is not None else None,
        mismatches=comparison.mismatches,
        elements=comparison.elements,
        index=list(comparison.index) if comparison.index is not None else None,
        expected=comparison.expected,
        actual=comparison.actual,
        kind=comparison.kind,
        unspecified=unspecified,
        where=where,
    )


def _invalid(model: onnx.ModelProto) -> str | None:
    """Why onnx.checker rejects the model (full check), or None."""
    try:
        onnx.checker.check_model(model, full_check=True)
    except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError) as error:
        return short(concise(error), 2 * NAME_CHARS)
    except Exception:  # (a model over 2 GiB, say: the checker cannot tell)
        return None
    return None


def _trap_site(model: onnx.ModelProto, feeds: dict, timeout: float) -> str:
    """The integer Div or Mod node of the main graph (functions inlined) whose operands, as
    onnx.reference computes them on `feeds`, hold INT_MIN over -1 or a 0 divisor: the
    kernels that trap. Else the integer divisions the model has, if any."""
    divisions = [
        n for n in _all_nodes(model) if n.domain in ("", "ai.onnx") and n.op_type in ("Div", "Mod")
    ]
    try:
        exposed = ExposedRunner(model, timeout)
        values = exposed.values(REFERENCE, feeds) or {}
    except Exception:  # (onnx.reference cannot run it either: name the candidates only)
        exposed, values = None, {}
    for node in exposed.nodes if exposed is not None else []:
        if node.domain not in ("", "ai.onnx") or node.op_type not in ("Div", "Mod"):
            continue
        a, b = (values.get(name) for name in node.input[:2])
        if a is None or b is None or np.asarray(a).dtype.kind not in "iu":
            continue
        a, b = np.broadcast_arrays(np.asarray(a), np.asarray(b))
        overflow = (a == np.iinfo(a.dtype).min) & (b == -1) if a.dtype.kind == "i" else b != b
        for bad, what in ((overflow, f"which overflows {a.dtype}"), (b == 0, "a division by 0")):
            if bad.any():
                index = tuple(int(i) for i in np.unravel_index(np.flatnonzero(bad)[0], a.shape))
                return (
                    f"{node.op_type} node {short(repr(node_label(node)))} (inputs "
                    f"{short(repr(node.input[0]))}, {short(repr(node.input[1]))}) divides "
                    f"{a[index]} by {b[index]} at index {index}, {what}"
                )
    integer = [short(repr(node_label(n))) for n in divisions[:3]]
    if not integer:
        return "no Div or Mod node was found to blame"
    more = f" and {len(divisions) - 3} more" if len(divisions) > 3 else ""
    return f"likely an integer Div or Mod node: {', '.join(integer)}{more}"


def _all_nodes(model: onnx.ModelProto):
    """Every node of the model: its graph, subgraphs and local functions."""

    def walk(nodes):
        for node in nodes:
            yield node
            for attribute in node.attribute:
                for graph in [attribute.g] if attribute.HasField("g") else attribute.graphs:
                    yield from walk(graph.node)

    yield from walk(model.graph.node)
    for function in model.functions:
        yield from walk(function.node)


def _declared_empty(model: onnx.ModelProto) -> bool:
    """Whether every output of the model is empty by its declared shape (a dim that is 0):
    then no input gives an element to compare, and matching dtypes and shapes are all
    there is to check."""
    for output in model.graph.output:
        if output.type.WhichOneof("value") != "tensor_type":
            return False
        shape = output.type.tensor_type
        if not shape.HasField("shape"):
            return False
        if not any(d.HasField("dim_value") and d.dim_value == 0 for d in shape.shape.dim):
            return False
    return bool(model.graph.output)


def _small_initializers(graph: onnx.GraphProto, limit: int = 64) -> dict[str, np.ndarray]:
    """Initializers of at most `limit` elements (axes and the like), never the weights."""
    return {
        t.name: onnx.numpy_helper.to_array(t)
        for t in graph.initializer
        if int(np.prod(t.dims)) <= limit and t.data_location != onnx.TensorProto.EXTERNAL
    }


_MAX_DEPTH = 4  # Ifs inside If branches looked into


@dataclasses.dataclass
class _Scope:
    """One graph being searched for roots: its place, and per side (reference, candidate)
    the model that exposes its values, its nodes and the values of one run."""

    where: str
    models: tuple[onnx.ModelProto, onnx.ModelProto]
    nodes: tuple[list[onnx.NodeProto], list[onnx.NodeProto]]
    values: tuple[dict, dict]


def _is_if(node: onnx.NodeProto) -> bool:
    return node.op_type == "If" and node.domain in ("", "ai.onnx")


def _subgraph(node: onnx.NodeProto, name: str) -> onnx.GraphProto:
    return next(a.g for a in node.attribute if a.name == name)


def _branch_model(
    node: onnx.NodeProto, branch: str, values: dict, model: onnx.ModelProto
) -> tuple[onnx.ModelProto, list[str]] | None:
    """The branch `branch` of the If `node` as a model of its own: the names it reads from
    outside become inputs (typed by their values in this run) or, for initializers of the
    model's graph, initializers; with the names fed. None if some name it reads is neither."""
    graph = _subgraph(node, branch)
    defined: set[str] = set()
    read: set[str] = set()

    def walk(g: onnx.GraphProto) -> None:
        defined.update(v.name for v in g.input)
        defined.update(t.name for t in g.initializer)
        for inner in g.node:
            defined.update(o for o in inner.output if o)
            read.update(i for i in inner.input if i)
            for attribute in inner.attribute:
                for sub in [attribute.g] if attribute.HasField("g") else list(attribute.graphs):
                    walk(sub)

    walk(graph)
    initializers = {t.name: t for t in model.graph.initializer}
    free, inputs, tensors = [], [], []
    for name in sorted(read - defined):
        value = values.get(name)
        if isinstance(value, np.ndarray) and value.dtype != object:
            try:
                elem = onnx.helper.np_dtype_to_tensor_dtype(value.dtype)
            except (KeyError, TypeError, ValueError):
                return None
            # rank only: with known dims onnxruntime may pick another kernel (_reproduces)
            inputs.append(onnx.helper.make_tensor_value_info(name, elem, [None] * value.ndim))
            free.append(name)
        elif name in initializers:
            tensors.append(initializers[name])
        else:
            return None
    own = onnx.GraphProto()
    own.CopyFrom(graph)
    own.name = graph.name or branch
    del own.input[:]
    own.input.extend(inputs)
    own.initializer.extend(tensors)
    proto = onnx.ModelProto()
    proto.ir_version = model.ir_version
    proto.opset_import.extend(model.opset_import)
    proto.functions.extend(model.functions)
    proto.graph.CopyFrom(own)
    return proto, free


def _reproduces(inner: dict, outer: dict, node: onnx.NodeProto, branch: str) -> bool:
    """Whether the branch run on its own gave the outputs the If gave in the whole model
    (onnxruntime's kernels may take another path on another graph: then what differs
    inside is not looked for there)."""
    outputs = [o.name for o in _subgraph(node, branch).output]
    for mine, theirs in zip(outputs, node.output):
        if not theirs or theirs not in outer:
            continue
        if mine not in inner or not compare(outer[theirs], inner[mine]).equal:
            return False
    return True


def _nan_reached(node: onnx.NodeProto, values: dict) -> np.ndarray | None:
    """For a ReduceMax/ArgMax/ReduceMin/ArgMin node: which output elements reduce a set
    holding a NaN (as
    bools in the output's shape); None for other nodes or when that cannot be told."""
    if node.domain not in ("", "ai.onnx") or node.op_type not in _NAN_UNSPECIFIED:
        return None
    data = values.get(node.input[0]) if node.input else None
    if data is None or not is_float(data.dtype) or data.ndim == 0:
        return None
    attributes = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
    keepdims = bool(attributes.get("keepdims", 1))
    if node.op_type in _ARG_OPS:
        axes = [attributes.get("axis", 0)]
    elif len(node.input) > 1 and node.input[1]:
        axes = values.get(node.input[1])
        if axes is None:
            return None
        axes = [int(a) for a in np.asarray(axes).reshape(-1)]
        if not axes and attributes.get("noop_with_empty_axes", 0):
            return None  # the identity: nothing is reduced, so nothing is unspecified
    else:
        axes = list(attributes.get("axes", []))
    axes = tuple(a % data.ndim for a in axes) if axes else tuple(range(data.ndim))
    return np.isnan(data.astype(np.float64)).any(axis=axes, keepdims=keepdims)


def _inputs_of(node: onnx.NodeProto) -> set[str]:
    """The node's inputs, and the outer-scope names its subgraphs read."""
    names = {n for n in node.input if n}
    for attribute in node.attribute:
        graphs = [attribute.g] if attribute.HasField("g") else list(attribute.graphs)
        for graph in graphs:
            for inner in graph.node:
                names |= _inputs_of(inner)
    return names


def _mismatch(trial: Trial, comparison: Comparison, message: str | None = None) -> Mismatch:
    return Mismatch(
        trial=trial.index,
        trial_label=trial.label,
        seed=trial.seed,
        kind=comparison.kind,
        index=list(comparison.index) if comparison.index is not None else None,
        expected=comparison.expected,
        actual=comparison.actual,
        message=message,
    )


def _is_float_value(divergence: Divergence) -> bool:
    return isinstance(divergence.expected, float) and isinstance(divergence.actual, float)


def _is_nan(value) -> bool:
    return isinstance(value, float) and np.isnan(value)


def _interface_differences(
    reference: onnx.ModelProto,
    candidate: onnx.ModelProto,
    given: dict[str, np.ndarray],
    overridden: Collection[str] = (),
) -> list[str]:
    """Differences in what a caller feeds and reads: these fail before any trial runs."""
    notes = []
    ref_inputs = {s.name: s.dtype for s in input_specs(reference, given, overridden)}
    try:
        cand_inputs = {s.name: s.dtype for s in input_specs(candidate, given, overridden)}
    except InvalidModelError as error:
        return [f"the candidate's inputs cannot be fed: {error}"]
    for name in ref_inputs.keys() - cand_inputs.keys():
        notes.append(f"input {name!r} of the reference is not an input of the candidate")
    for name in cand_inputs.keys() - ref_inputs.keys():
        notes.append(f"the candidate needs an input {name!r} that the reference does not have")
    for name in ref_inputs.keys() & cand_inputs.keys():
        if ref_inputs[name] != cand_inputs[name]:
            notes.append(
                f"input {name!r} is {ref_inputs[name]} in the reference and "
                f"{cand_inputs[name]} in the candidate"
            )
    ref_outputs = [o.name for o in reference.graph.output]
    cand_outputs = [o.name for o in candidate.graph.output]
    if ref_outputs != cand_outputs:
        notes.append(f"the outputs differ: reference {ref_outputs}, candidate {cand_outputs}")
    return notes


def as_proto(model: ModelInput, side: str) -> onnx.ModelProto:
    """The model as a protobuf with every external tensor read in: onnxruntime and
    onnx.reference would resolve a relative location against the working directory. A
    path's tensors lie beside it; an onnx_ir model's know their directory; a ModelProto
    has none to give (maxlower.external)."""
    if isinstance(model, str | os.PathLike):  # read and prepared once, as the pipeline does
        return inlined(load_proto(model), pathlib.Path(model).parent)
    if isinstance(model, onnx.ModelProto):
        return inlined(model, None) if external_protos(model) else model
    if not isinstance(model, ir.Model):
        raise TypeError(
            f"the {side} model must be an onnx.ModelProto, an onnx_ir.Model or a "
            f"path, not {type(model).__name__}"
        )
    if ir_external_tensors(model):
        model = model.clone()
        ir_read_all_in(model)  # each tensor from its own directory
    return serialize(model)


def _load_inputs(inputs, model: onnx.ModelProto) -> dict[str, np.ndarray]:
    if inputs is None:
        return {}
    if isinstance(inputs, str | os.PathLike):
        inputs = load_npz(inputs)
    declared = {
        v.name: np.dtype(onnx.helper.tensor_dtype_to_np_dtype(v.type.tensor_type.elem_type))
        for v in model.graph.input
        if v.type.WhichOneof("value") == "tensor_type" and v.type.tensor_type.elem_type
    }
    arrays = {}
    for name, value in inputs.items():
        array = np.asarray(value)
        dtype = declared.get(name)
        # np.savez stores bfloat16 as raw 2-byte records: read them as what the model declares.
        if dtype is not None and array.dtype.kind == "V" and array.dtype.itemsize == dtype.itemsize:
            array = array.view(dtype)
        arrays[name] = array
    return arrays
