"""Translation validation of two ONNX models at bounded shapes, with z3.

    report = prove(reference, candidate, dims={"N": 3}, max_dim=4, timeout=60.0)
    report.status in {PROVED, COUNTEREXAMPLE, INCONCLUSIVE}

For every binding of the models' symbolic dims (given by `dims`, else each of 0..max_dim)
both models are run by the symbolic interpreter (`semantics`) on the same input terms, and
z3 is asked for an input on which the reference is defined and the candidate is undefined
or gives another output (shape, dtype or value, under the comparison policy). None: the
binding is proved. One: it is a counterexample, turned into numpy inputs and replayed in
onnx.reference, which must reproduce the difference.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import time
from collections.abc import Mapping

import numpy as np
import onnx
import z3
from onnx import TensorProto as TP

from maxlower.prove import budget as budgets
from maxlower.prove import solving
from maxlower.prove.budget import OverBudget
from maxlower.prove.semantics import (
    ERRORS,
    EVERY,
    FLOAT_SORTS,
    INT_BITS,
    OPAQUE_SUM,
    SUPPORTED,
    BreaksDeclaredShape,
    Interpreter,
    NeedsValue,
    NotRunnable,
    OutsideFragment,
    Tensor,
    bits_of,
    concrete_int,
    constant_term,
    fp_sort,
)

PROVED, COUNTEREXAMPLE, INCONCLUSIVE = "proved", "counterexample", "inconclusive"
DEFAULT_MAX_DIM = 4
DEFAULT_TIMEOUT = 60.0


@dataclasses.dataclass(frozen=True)
class Policy:
    """How outputs are compared: NaN equals NaN (any payload); ±0 equal unless
    `signed_zeros` (then +0.0 and -0.0 differ). `nan_unspecified` (--strict): a NaN reaching
    ReduceMax/ReduceMin/ArgMax/ArgMin gives an unspecified result, as ONNX leaves it, instead
    of onnx.reference's (NaN, the first NaN's index); a candidate whose reduction meets a NaN
    the reference's output does not depend on that way is then refuted."""

    signed_zeros: bool = False
    nan_unspecified: bool = False

    def text(self) -> str:
        zeros = "-0.0 and +0.0 distinct" if self.signed_zeros else "-0.0 equal to +0.0"
        strict = "; NaN in a reduction unspecified" if self.nan_unspecified else ""
        return f"NaN equal to NaN, {zeros}{strict}"


class CannotRun(OutsideFragment):
    """The candidate cannot run at these shapes (broadcasting fails, an index is out of
    range) where the reference can: a counterexample, whatever the input values."""


class Undefined(OutsideFragment):
    """The reference is undefined at this binding for every input (ArgMax on an empty axis)."""


class Unproved(Undefined):
    """The reference breaks its own declared shapes here (semantics.BreaksDeclaredShape):
    by the annotation rules it has no run, but onnxruntime and onnx.reference run it, so
    these inputs are left unproved and named as such in the coverage (never "all inputs")."""


@dataclasses.dataclass
class Counterexample:
    dims: dict[str, int]
    inputs: dict[str, np.ndarray]
    output: str
    index: tuple[int, ...] | None
    reference: object  # the reference's value there (onnx.reference)
    candidate: object
    kind: str  # "values", "shape", "dtype", "undefined" or "cannot run" (the candidate's)
    reproduced: bool  # onnx.reference gives the difference too (see `replay`)
    path: str | None = None  # where the inputs were written (.npz)
    # "cannot run": which runner reproduced the failure (onnx.reference tolerates some
    # invalid models; onnxruntime or the checker then shows it), or that none did
    replay: str | None = None

    def lines(self) -> list[str]:
        where = ", ".join(f"{k}={v}" for k, v in self.dims.items()) or "static shapes"
        if self.kind == "values":
            what = (
                f"output {self.output!r} at index {self.index}: reference "
                f"{_number(self.reference)}, candidate {_number(self.candidate)}"
            )
        elif self.kind == "undefined":
            what = (
                f"output {self.output!r}: the candidate is undefined on this input (a float "
                "→ integer Cast of NaN or out of range, or a division by zero) where the "
                "reference is defined"
            )
        elif self.kind == "unspecified":
            what = (
                f"output {self.output!r}: a NaN reaches the candidate's ReduceMax/ArgMax, whose "
                "result ONNX leaves unspecified (onnxruntime drops the NaN), and the "
                "reference's output does not leave it open"
            )
        elif self.kind == "cannot run":
            what = f"the candidate cannot run where the reference runs: {self.candidate}"
        else:
            what = f"output {self.output!r}: {self.kind} differs: reference {self.reference}, "
            what += f"candidate {self.candidate}"
        lines = [f"counterexample at {where}: {what}"]
        for name, value in self.inputs.items():
            lines.append(
                f"  input {name!r} ({value.dtype}, shape {list(value.shape)}): "
                f"{np.array2string(value, threshold=16, max_line_width=90)}"
            )
        if self.replay is not None:
            lines.append(f"  replayed: {self.replay}")
        else:
            lines.append(
                "  replayed in onnx.reference: "
                + ("the difference is reproduced" if self.reproduced else "NOT reproduced")
            )
        if self.path:
            lines.append(f"  inputs written to {self.path}")
        return lines


@dataclasses.dataclass
class Case:
    dims: dict[str, int]
    status: str
    seconds: float
    note: str = ""
    # input elements case-split over values that are not all of theirs: {element: the
    # values proved}; nothing is claimed at the others
    split: dict[str, list[int]] = dataclasses.field(default_factory=dict)
    # split values at which the reference cannot run ({element: value} each): no
    # obligation there, and the binding's other values were still proved
    undefined: list[dict[str, int]] = dataclasses.field(default_factory=list)
    # split values at which the reference breaks its declared shapes (Unproved): the
    # runtimes run it there, and nothing is proved
    unproved: list[dict[str, int]] = dataclasses.field(default_factory=list)


def _values_text(values: list[int]) -> str:
    ordered = sorted(values)
    if len(ordered) > 2 and ordered == list(range(ordered[0], ordered[-1] + 1)):
        return f"{ordered[0]}..{ordered[-1]}"
    return "{" + ", ".join(map(str, values)) + "}"


def _leaf_text(leaf: dict[str, int]) -> str:
    return ", ".join(f"{k}={v}" for k, v in leaf.items())


# A binding left unproved (Unproved), and the words for it; both kinds of skipped binding
UNPROVED = "unproved"
SKIPPED = ("undefined", UNPROVED)
BREAKS = (
    "the reference breaks its own declared shapes there, which onnxruntime and "
    "onnx.reference do not check, so nothing is proved there"
)


@dataclasses.dataclass
class ProofReport:
    status: str
    policy: Policy
    cases: list[Case]
    assumptions: list[str]
    method: str = "full"
    counterexample: Counterexample | None = None
    reason: str | None = None  # inconclusive: what was outside the fragment or timed out
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.status == PROVED

    @property
    def coverage(self) -> dict:
        """What a PROVED covers: the dims' sizes proved, the input elements proved only at
        their split values (`split`), the split values and bindings skipped because the
        reference cannot run there (no obligation), and those left unproved because the
        reference breaks its declared shapes there (`unproved`); `complete` is False when
        a split or an unproved value leaves inputs of the proved sizes unproved."""
        proved = [c for c in self.cases if c.status == PROVED]
        names = sorted({k for c in self.cases for k in c.dims})
        split: dict[str, set[int]] = {}
        for case in proved:  # a value counts where every binding that split it proved it
            for element, values in case.split.items():
                split[element] = split.get(element, set(values)) & set(values)
        unproved = [{"dims": c.dims, "values": leaf} for c in proved for leaf in c.unproved]
        unproved_bindings = [c.dims for c in self.cases if c.status == UNPROVED]
        return {
            "complete": not split and not unproved and not unproved_bindings,
            "dims": {k: sorted({c.dims[k] for c in proved}) for k in names},
            "split": {k: sorted(v) for k, v in split.items()},
            "undefined": [{"dims": c.dims, "values": leaf} for c in proved for leaf in c.undefined],
            "undefined_bindings": [c.dims for c in self.cases if c.status == "undefined"],
            "unproved": unproved,
            "unproved_bindings": unproved_bindings,
        }

    def coverage_text(self) -> str:
        """'for all inputs' or 'for the inputs with r[0] in 0..4', with the dims' sizes."""
        coverage = self.coverage
        dims = ", ".join(f"{k} in {_values_text(v)}" for k, v in coverage["dims"].items())
        at = f"at {dims}" if dims else "at the models' static shapes"
        return f"{self._inputs_text()} {at}"

    def _inputs_text(self) -> str:
        """'for all inputs', or the split values, when some input was not split over all,
        and the inputs left unproved where the reference breaks its declared shapes."""
        coverage = self.coverage
        split = coverage["split"]
        text = "for all inputs"
        if split:
            values = " and ".join(f"{k} in {_values_text(v)}" for k, v in split.items())
            text = (
                f"for the inputs with {values} only (case-split values; other values of "
                "those elements are not proved),"
            )
        if coverage["unproved"] or coverage["unproved_bindings"]:
            text += (
                " except those where the reference breaks its own declared shapes (not "
                "proved: onnxruntime and onnx.reference run them; listed below),"
            )
        return text

    def summary(self) -> str:
        bindings = len([c for c in self.cases if c.status not in SKIPPED])
        proved_head = f"PROVED {self._inputs_text()} at {bindings} shape binding(s)"
        sizes = self.coverage["dims"]
        if sizes:  # the sizes bound it: named in the verdict itself
            named = ", ".join(f"{k} in {_values_text(v)}" for k, v in sizes.items())
            proved_head += f", {named} only"
        head = {
            PROVED: proved_head,
            COUNTEREXAMPLE: f"REFUTED: {self.reason}"
            if self.reason
            else "COUNTEREXAMPLE: the models differ",
            INCONCLUSIVE: f"INCONCLUSIVE: {self.reason}",
        }[self.status]
        lines = [f"{head} ({self.policy.text()}; {self.seconds:.2f} s, method {self.method})"]
        shown = [c for c in self.cases if c.status not in SKIPPED]
        dims = sorted({k for c in shown for k in c.dims})
        if dims:
            sizes = {k: sorted({c.dims[k] for c in shown}) for k in dims}
            lines.append("  dims: " + ", ".join(f"{k} in {v}" for k, v in sizes.items()))
        for case in self.cases:
            where = _leaf_text(case.dims) or "static shapes"
            if case.status == "undefined":
                lines.append(f"  skipped {where}: the reference cannot run there")
            if case.status == UNPROVED:
                lines.append(f"  NOT PROVED at {where}: {BREAKS} ({case.note})")
            for leaf in case.undefined:
                lines.append(
                    f"  skipped {_leaf_text(leaf)} at {where}: the reference cannot run there "
                    "(the binding's other values are proved)"
                )
            for leaf in case.unproved:
                lines.append(f"  NOT PROVED at {_leaf_text(leaf)}, {where}: {BREAKS}")
        for assumption in self.assumptions:
            lines.append(f"  assumes: {assumption}")
        if self.counterexample is not None:
            lines.extend("  " + line for line in self.counterexample.lines())
        return "\n".join(lines)

    def to_dict(self) -> dict:
        out = {
            "status": self.status,
            "policy": self.policy.text(),
            "method": self.method,
            "seconds": round(self.seconds, 4),
            "assumptions": self.assumptions,
            "reason": self.reason,
            "coverage": self.coverage,
            "cases": [dataclasses.asdict(c) for c in self.cases],
        }
        if self.counterexample is not None:
            c = self.counterexample
            out["counterexample"] = {
                "replay": c.replay,
                "dims": c.dims,
                "output": c.output,
                "kind": c.kind,
                "index": list(c.index) if c.index is not None else None,
                "reference": _jsonable(c.reference),
                "candidate": _jsonable(c.candidate),
                "reproduced": c.reproduced,
                "inputs_path": c.path,
                "inputs": {k: _jsonable(v.tolist()) for k, v in c.inputs.items()},
            }
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2) + "\n"


def prove(
    reference: onnx.ModelProto,
    candidate: onnx.ModelProto,
    *,
    dims: Mapping[str, int] | None = None,
    max_dim: int = DEFAULT_MAX_DIM,
    timeout: float = DEFAULT_TIMEOUT,
    policy: Policy | None = None,
) -> ProofReport:
    """Prove `candidate` equal to `reference` for every input at every binding of their
    symbolic dims (`dims`, else each of 0..`max_dim`). A model with external references
    is refused (InvalidModelError: nothing says which directory holds them); a candidate
    a caller cannot use as the reference is refuted by its interface (method "interface")."""
    policy = policy or Policy()
    start = time.perf_counter()
    refused = interface_refutation(reference, candidate, policy, start)
    if refused is not None:
        return refused
    budget = budgets.current().tighter(start + timeout, timeout)
    with budget.active():
        invalid = invalid_candidate(reference, candidate)
        try:
            report = _prove_every_call(reference, candidate, dims, max_dim, timeout, policy, start)
        except Exception:  # the interpreter assumes a valid model; an invalid one may break
            if invalid is None:  # it anywhere, and is refuted by the check below all the same
                raise
            report = finish_report(INCONCLUSIVE, policy, [], set(), start)
    if invalid is not None and report.status != COUNTEREXAMPLE:
        # (a) found no input the candidate fails on; (b) the spec's own check refutes it
        report.status, report.reason, report.counterexample = COUNTEREXAMPLE, invalid, None
    if report.status != COUNTEREXAMPLE:
        return shape_refutation(reference, candidate, report, start)
    return report


def interface_refutation(reference, candidate, policy: Policy, start: float):
    """The refutation of a candidate whose interface differs (names, order, element types
    and defaults of its inputs and outputs: maxlower.prove.models), naming what differs;
    None when it is the same. Every door of the prover calls it first; models with
    external references are refused before anything reads them. Declared shapes are left
    to the proof, which refutes them with inputs (the interpreter checks every declared
    shape), and then to `shape_refutation`."""
    from maxlower.prove.models import interface_differences, refuse_external

    refuse_external(reference, "reference")
    refuse_external(candidate, "candidate")
    differences = interface_differences(reference, candidate, shapes=False)
    return _interface_report(differences, policy, start)


def shape_refutation(reference, candidate, report, start: float):
    """`report` (not a refutation), unless the models declare shapes of an input or output
    a caller would find different: then refuted by the interface, naming the shape."""
    from maxlower.prove.models import interface_differences

    refused = _interface_report(interface_differences(reference, candidate), report.policy, start)
    return report if refused is None else refused


def _interface_report(differences: list[str], policy: Policy, start: float):
    if not differences:
        return None
    more = f" (and {len(differences) - 1} more: {'; '.join(differences[1:])})"
    reason = "the models' interfaces differ: " + differences[0]
    report = finish_report(
        COUNTEREXAMPLE, policy, [], set(), start, reason=reason + (more if differences[1:] else "")
    )
    report.method = "interface"
    return report


# Inputs whose defaults differ are proved at every choice of which of them a caller feeds:
# at most this many (2**n proofs).
DIFFERING_DEFAULTS_LIMIT = 3


def _prove_every_call(reference, candidate, dims, max_dim, timeout, policy, start):
    """The proof with every input a caller may feed as a variable (an overridable default
    too: the default is one of its values); where the models give an input two different
    defaults, again for each choice of those inputs left unfed (each model then runs with
    its own default), all within one deadline."""
    from maxlower.prove.models import differing_defaults

    differing = differing_defaults(reference, candidate)
    if len(differing) > DIFFERING_DEFAULTS_LIMIT:
        reason = (
            f"{len(differing)} inputs have different defaults in the two models "
            f"({differing[:5]}): past the {DIFFERING_DEFAULTS_LIMIT} whose every choice of "
            "fed and unfed the prover tries"
        )
        return finish_report(INCONCLUSIVE, policy, [], set(), start, reason=reason)
    cases: list[Case] = []
    report = None
    for unfed in _subsets(differing):
        pair = (_unfed(reference, unfed), _unfed(candidate, unfed))
        report = _prove_within(*pair, dims, max_dim, timeout, policy, start)
        note = f"inputs {unfed} left at their defaults" if unfed else ""
        cases += [dataclasses.replace(c, note=c.note or note) for c in report.cases]
        if report.status != PROVED:
            if unfed and report.reason is None and report.status == COUNTEREXAMPLE:
                report.reason = f"the models differ when a caller leaves {unfed} unfed"
            break
    assert report is not None
    report.cases = cases
    return report


def _subsets(names: list[str]) -> list[list[str]]:
    return [list(c) for k in range(len(names) + 1) for c in itertools.combinations(names, k)]


def _unfed(model: onnx.ModelProto, names: list[str]) -> onnx.ModelProto:
    """The model as a caller who does not feed `names` runs it: those inputs are their
    defaults, constants."""
    if not names:
        return model
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    kept = [v for v in copy.graph.input if v.name not in names]
    del copy.graph.input[:]
    copy.graph.input.extend(kept)
    return copy


def _prove_within(reference, candidate, dims, max_dim, timeout, policy, start) -> ProofReport:
    """_prove, over budget (maxlower.prove.budget) inconclusive with the limit named."""
    try:
        return _prove(reference, candidate, dims, max_dim, timeout, policy, start)
    except OverBudget as error:
        reason = str(error)
    except MemoryError:
        reason = str(budgets.current().memory_exhausted())
    except z3.Z3Exception as error:
        if "memory" not in str(error).lower():
            raise
        reason = str(budgets.current().memory_exhausted())
    return finish_report(INCONCLUSIVE, policy, [], set(), start, reason=reason)


def invalid_candidate(reference, candidate) -> str | None:
    """'the candidate is not a valid model at opset N: ...' (the full check's one line) when
    the reference is valid and the candidate is not; None when the candidate is valid. An
    invalid candidate cannot run where the reference runs, so it is refuted, never proved
    (exit 1); if the reference is invalid too there is nothing to compare (exit 2)."""
    from maxlower.errors import InvalidModelError

    problem = _check(candidate)
    if problem is None:
        return None
    reference_problem = _check(reference)
    if reference_problem is not None:
        raise InvalidModelError(f"the reference is not a valid model ({reference_problem})")
    opset = next((o.version for o in candidate.opset_import if o.domain in ("", "ai.onnx")), 0)
    return f"the candidate is not a valid model at opset {opset}: {problem}"


def _check(model: onnx.ModelProto) -> str | None:
    """The full check's one-line message (as `maxlower` words it for an input), or None.
    onnx's own check: the models prove takes are small, and it runs on every proof."""
    from maxlower.errors import CHECKER_ERRORS as _CHECK_ERRORS
    from maxlower.safety import describe_invalid

    try:
        onnx.checker.check_model(model, full_check=True)
    except (*_CHECK_ERRORS, ValueError) as error:  # ValueError: a type onnx does not know
        return describe_invalid(model, error)
    return None


def _prove(reference, candidate, dims, max_dim, timeout, policy, start) -> ProofReport:
    try:
        signature = signature_of(reference, candidate)
    except OutsideFragment as error:  # an input the prover cannot make terms for
        return finish_report(INCONCLUSIVE, policy, [], set(), start, reason=str(error))
    names = dim_names_of(signature)
    fixed = dict(dims or {})
    choices = [[fixed[n]] if n in fixed else list(range(max_dim + 1)) for n in names]
    cases: list[Case] = []
    assumptions: set[str] = set()
    deadline = start + timeout
    for sizes in itertools.product(*choices):
        binding = dict(zip(names, sizes))
        case_start = time.perf_counter()
        covered = Covered()
        try:
            outcome = _prove_binding(
                reference, candidate, signature, binding, policy, deadline, assumptions, covered
            )
        except OutsideFragment as error:
            if isinstance(error, Undefined):
                status = UNPROVED if isinstance(error, Unproved) else "undefined"
                seconds = time.perf_counter() - case_start
                cases.append(
                    Case(binding, status, seconds, str(error) if status == UNPROVED else "")
                )
                continue
            return finish_report(INCONCLUSIVE, policy, cases, assumptions, start, reason=str(error))
        seconds = time.perf_counter() - case_start
        if isinstance(outcome, Counterexample):
            cases.append(Case(binding, COUNTEREXAMPLE, seconds))
            return finish_report(COUNTEREXAMPLE, policy, cases, assumptions, start, outcome)
        if outcome is not None:  # a reason: timed out
            cases.append(Case(binding, INCONCLUSIVE, seconds, outcome))
            return finish_report(INCONCLUSIVE, policy, cases, assumptions, start, reason=outcome)
        split = {k: sorted(v) for k, v in covered.split.items()}
        cases.append(
            Case(
                binding,
                PROVED,
                seconds,
                split=split,
                undefined=covered.undefined,
                unproved=covered.unproved,
            )
        )
    if cases and all(c.status in SKIPPED for c in cases):
        reason = "the reference is undefined at every binding of the dims (--dim, --max-dim)"
        if any(c.status == UNPROVED for c in cases):
            reason = (
                "the reference breaks its own declared shapes, or cannot run, at every "
                "binding of the dims (--dim, --max-dim): nothing is proved"
            )
        return finish_report(INCONCLUSIVE, policy, cases, assumptions, start, reason=reason)
    return finish_report(PROVED, policy, cases, assumptions, start)


def finish_report(status, policy, cases, assumptions, start, counterexample=None, reason=None):
    return ProofReport(
        status,
        policy,
        cases,
        sorted(assumptions),
        counterexample=counterexample,
        reason=reason,
        seconds=time.perf_counter() - start,
    )


# --- one binding ---------------------------------------------------------------------------
@dataclasses.dataclass
class Covered:
    """What one binding's case splits covered: {element: the values tried} for the splits
    that leave valid values untried (the intersection over the paths that split it), and
    the split values at which the reference cannot run."""

    split: dict[str, set[int]] = dataclasses.field(default_factory=dict)
    undefined: list[dict[str, int]] = dataclasses.field(default_factory=list)
    unproved: list[dict[str, int]] = dataclasses.field(default_factory=list)  # see Unproved
    leaves: int = 0  # split values (paths) proved

    def note_split(self, element: str, need: NeedsValue, side: str) -> None:
        """A split covers every value when it tried them all, or when each other value is
        an error of the reference's own op (the reference cannot run there); values that
        the candidate alone cannot run with may be where the reference runs."""
        rest = need.split.rest
        if rest == EVERY or (rest == ERRORS and side == "reference"):
            return
        values = set(need.split.values)
        self.split[element] = self.split.get(element, values) & values


def _prove_binding(
    reference, candidate, signature, binding, policy, deadline, assumptions, covered
):
    """None (proved), a Counterexample, or a reason (str) why it is inconclusive; case-splits
    the values that decide shapes (NeedsValue) over their domains, recording in `covered`
    what the splits cover. A split value at which the reference cannot run is skipped alone
    (the other values are still tried); Undefined when it runs at none."""
    pending: list[dict[str, int]] = [{}]
    while pending:
        chosen = pending.pop()
        budgets.current().check_time()
        inputs, variables = symbolic_inputs(signature, binding, chosen)
        side = "reference"
        try:
            ref_run = _run(reference, inputs, "reference", policy)
            side = "candidate"
            try:
                cand_run = _run(candidate, inputs, "candidate", policy)
            except CannotRun as error:  # the candidate fails where the reference runs
                inputs_np = _concretise(True, signature, binding, chosen, variables)
                return _cannot_run(reference, candidate, binding, inputs_np, str(error))
        except Undefined as error:
            if not chosen:  # no split: the reference cannot run at this binding at all
                raise
            (covered.unproved if isinstance(error, Unproved) else covered.undefined).append(chosen)
            continue
        except NeedsValue as need:
            name = _variable_name(need.term, variables)
            if name is None:
                raise OutsideFragment(
                    f"{need.why} is computed at run time from the inputs, not split"
                ) from None
            covered.note_split(name, need, side)
            pending.extend({**chosen, name: value} for value in need.domain)
            continue
        assumptions |= cand_run.assumptions | ref_run.assumptions
        outcome = _solve(ref_run, cand_run, signature, policy, deadline, variables)
        if outcome is None:
            covered.leaves += 1
            continue
        if isinstance(outcome, str):
            return outcome
        inputs_np = _concretise(outcome, signature, binding, chosen, variables)
        found = counterexample_of(reference, candidate, binding, inputs_np, policy, outcome)
        if not found.reproduced and OPAQUE_SUM in assumptions:
            # the solver chose the unknown sum (semantics.OPAQUE_SUM), not numpy's
            return f"no proof, and no counterexample that onnx.reference shows: {OPAQUE_SUM}"
        return found
    if not covered.leaves:
        if covered.unproved:
            raise Unproved("the reference breaks its declared shapes at every value it runs at")
        raise Undefined("the reference cannot run at any value of the split inputs")
    return None


def _run(model, inputs, side, policy: Policy):
    try:
        return _interpreter(policy, side).interpret(model, inputs)
    except BreaksDeclaredShape as error:
        kind = CannotRun if side == "candidate" else Unproved
        raise kind(f"{side}: {error}") from None
    except NotRunnable as error:  # the spec of the op's version rejects it
        # (the reference at a binding where it breaks its own declared shapes, say: no
        # run of it exists there, so the binding is skipped as undefined; a reference
        # that runs at no binding is inconclusive, never vacuously proved)
        kind = CannotRun if side == "candidate" else Undefined
        raise kind(f"{side}: {error}") from None
    except OutsideFragment as error:
        if side == "reference" and isinstance(error, Undefined):
            raise
        if "empty axis" in str(error) and side == "reference":
            raise Undefined(str(error)) from None
        raise OutsideFragment(f"{side}: {error}") from None
    except (ValueError, IndexError, KeyError, ArithmeticError) as error:
        # the reference has no result at these shapes (its inputs do not broadcast, say):
        # ONNX defines nothing there, so the binding is skipped as undefined
        kind = CannotRun if side == "candidate" else Undefined
        raise kind(f"{side}: cannot run at these shapes ({error})") from None


SOLVER_SHARE = 0.9  # of the time left, for one call of z3; the rest to report


def _solve(ref_run, cand_run, signature, policy, deadline, variables):
    """None when no input separates the runs, a solving.Verdict (sat, with the values of
    the inputs' bits) when one does, a str on timeout. z3 runs in a child process killed at
    the deadline (maxlower.prove.solving): it runs past its own timeout on float problems."""
    budget = budgets.current()
    remaining = min(deadline - time.perf_counter(), budget.remaining())
    if remaining <= 0:
        return "timed out (--timeout)"
    differences = _differences(ref_run, cand_run, policy)
    if not differences:  # every element the same term: no need to ask z3
        return None
    solver = z3.Solver()
    solver.add(*ref_run.errors)  # where the reference fails, there is nothing to match
    solver.add(z3.Or(*differences))
    verdict = solving.check(solver, remaining * SOLVER_SHARE)
    if verdict.status == "unsat":
        return None
    if verdict.status == "unknown":
        if "memory" in verdict.reason:
            raise budget.memory_exhausted()
        return f"the solver gave up ({verdict.reason})"
    return verdict


def _differences(ref_run, cand_run, policy: Policy) -> list:
    """The ways the candidate may fail the reference, one term each: it fails to run, or
    an output element the reference defines is undefined or another value in the
    candidate. Definedness is per element (Run.defined_at): an element the reference
    leaves undefined (an out-of-range Cast) frees that element only."""
    if len(ref_run.outputs) != len(cand_run.outputs):
        return [z3.BoolVal(True)]
    differs = [z3.Not(z3.And(*cand_run.errors))] if cand_run.errors else []
    for ref, cand in zip(ref_run.outputs, cand_run.outputs):
        if ref.shape != cand.shape or ref.dtype != cand.dtype:
            return [z3.BoolVal(True)]
        for a, b in zip(ref.arr.reshape(-1), cand.arr.reshape(-1)):
            budgets.current().tick()
            if a.eq(b) and z3.is_true(cand_run.defined_at(b)):
                continue  # one term, defined in the candidate: the same value (NaN too)
            wrong = z3.Or(
                z3.Not(cand_run.defined_at(b)),
                z3.Not(same_under_policy(ref.dtype, a, b, policy)),
            )
            differs.append(z3.And(ref_run.defined_at(a), wrong))
    return differs


def same_under_policy(dtype, a, b, policy: Policy):
    if dtype in FLOAT_SORTS:
        both_nan = z3.And(z3.fpIsNaN(a), z3.fpIsNaN(b))
        return z3.Or(both_nan, a == b if policy.signed_zeros else z3.fpEQ(a, b))
    return a == b


# --- inputs --------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class InputSig:
    name: str
    dtype: int
    dims: tuple  # int or str (a symbolic dim's name)


def signature_of(reference: onnx.ModelProto, candidate: onnx.ModelProto) -> list[InputSig]:
    """The inputs a caller feeds the reference (an overridable default among them: the
    proof is for all its values), checked against the candidate's. An input only the
    candidate has keeps its default: the reference's callers never feed it."""
    from maxlower.errors import InvalidModelError
    from maxlower.prove.models import caller_inputs, defaults

    def sig(model, fed=None):
        optional = defaults(model)
        out = []
        for value in caller_inputs(model):
            if fed is not None and value.name in optional and value.name not in fed:
                continue
            out.append(_input_sig(value))
        return out

    ref = sig(reference)
    cand = sig(candidate, {s.name for s in ref})
    if {s.name: s.dtype for s in ref} != {s.name: s.dtype for s in cand}:
        raise InvalidModelError(
            "the models' inputs differ in names or element types: "
            f"reference {[s.name for s in ref]}, candidate {[s.name for s in cand]}"
        )
    return ref


def _input_sig(value: onnx.ValueInfoProto) -> InputSig:
    t = value.type.tensor_type
    if not value.type.HasField("tensor_type") or not t.HasField("shape"):
        raise OutsideFragment(f"input {value.name!r} is not a tensor of known rank")
    if t.elem_type not in SUPPORTED:
        raise OutsideFragment(f"input {value.name!r} of type {TP.DataType.Name(t.elem_type)}")
    dims = tuple(
        d.dim_value if d.HasField("dim_value") else d.dim_param or f"?{value.name}:{i}"
        for i, d in enumerate(t.shape.dim)
    )
    return InputSig(value.name, t.elem_type, dims)


def dim_names_of(signature: list[InputSig]) -> list[str]:
    return list(dict.fromkeys(d for s in signature for d in s.dims if isinstance(d, str)))


def value_shape(sig: InputSig, binding: Mapping[str, int]) -> tuple[int, ...]:
    return tuple(binding[d] if isinstance(d, str) else d for d in sig.dims)


def symbolic_inputs(signature, binding, chosen):
    """{name: Tensor} of fresh variables (an element fixed in `chosen` is that constant),
    and {variable name: (input, flat index)}."""
    inputs, variables = {}, {}
    for sig in signature:
        shape = value_shape(sig, binding)
        budgets.current().elements(
            int(np.prod(shape, dtype=object)), f"input {sig.name!r} of shape {list(shape)}"
        )
        terms = []
        for i in range(int(np.prod(shape, dtype=np.int64))):
            var = f"{sig.name}[{i}]"
            variables[var] = (sig, i)
            if var in chosen:
                terms.append(constant_term(sig.dtype, chosen[var]))
            else:
                terms.append(_variable(var, sig.dtype))
        arr = np.empty(len(terms), dtype=object)
        arr[:] = terms
        inputs[sig.name] = Tensor(sig.dtype, arr.reshape(shape))
    return inputs, variables


def _variable(name: str, dtype: int) -> z3.ExprRef:
    if dtype == TP.BOOL:
        return z3.Bool(name)
    if dtype in INT_BITS:
        return z3.BitVec(name, INT_BITS[dtype][0])
    # the bits are the variable, so a model gives the input's exact bit pattern
    return z3.fpBVToFP(z3.BitVec(name, bits_of(dtype)), fp_sort(dtype))


def _variable_name(term: z3.ExprRef, variables) -> str | None:
    name = str(term)
    return name if name in variables else None


def _concretise(model, signature, binding, chosen, variables) -> dict[str, np.ndarray]:
    out = {}
    for sig in signature:
        shape = value_shape(sig, binding)
        count = int(np.prod(shape, dtype=np.int64))
        dtype = onnx.helper.tensor_dtype_to_np_dtype(sig.dtype)
        values = []
        for i in range(count):
            var = f"{sig.name}[{i}]"
            if var in chosen:
                values.append(np.array(chosen[var]).astype(dtype))
                continue
            values.append(_value(model, var, sig.dtype))
        array = np.array(values, dtype=dtype) if values else np.zeros(0, dtype)
        out[sig.name] = array.reshape(shape)
    return out


def _value(model, var: str, dtype: int) -> np.ndarray:
    """Input element `var`'s value in `model`, a solving.Verdict (True: any input, zeros)."""
    np_dtype = onnx.helper.tensor_dtype_to_np_dtype(dtype)
    if model is True:
        return np.zeros((), np_dtype)
    if dtype == TP.BOOL:
        return np.array(bool(model.value(var, False)))
    width = bits_of(dtype)
    raw = int(model.value(var, 0))
    return np.array(raw, dtype=f"u{width // 8}").view(np_dtype)


def counterexample_of(
    reference, candidate, binding, inputs, policy, outcome, outputs=None
) -> Counterexample:
    """Replay `inputs` in onnx.reference and describe the first difference it shows
    (`outputs`: the two models' onnx.reference outputs on them, already computed, the
    candidate's an exception where it failed)."""
    from onnx.reference import ReferenceEvaluator

    if outputs is not None:
        ref_out, cand_out = outputs
    else:
        ref_out = ReferenceEvaluator(reference).run(None, inputs)
    try:
        if outputs is None:
            cand_out = ReferenceEvaluator(candidate).run(None, inputs)
        elif isinstance(cand_out, Exception):
            raise cand_out
    except Exception as error:  # the candidate fails where the reference runs
        name = first_output(reference)
        text = (str(error).strip().splitlines() or [type(error).__name__])[0][:300]
        return Counterexample(binding, inputs, name, None, "a result", text, "cannot run", True)
    names = [o.name for o in reference.graph.output]
    for name, r, c in zip(names, ref_out, cand_out):
        r, c = np.asarray(r), np.asarray(c)
        if r.dtype != c.dtype:
            return Counterexample(binding, inputs, name, None, r.dtype, c.dtype, "dtype", True)
        if r.shape != c.shape:
            return Counterexample(
                binding, inputs, name, None, list(r.shape), list(c.shape), "shape", True
            )
        differ = ~_equal_arrays(r, c, policy)
        if differ.any():
            index = tuple(int(i) for i in np.argwhere(differ)[0])
            return Counterexample(
                binding, inputs, name, index, r[index].item(), c[index].item(), "values", True
            )
    # no difference in onnx.reference: an unspecified result (--strict), the candidate's
    # undefinedness, or a semantics gap
    if outcome is not True and _nan_reaches_reduction(candidate, inputs, policy):
        return Counterexample(
            binding,
            inputs,
            names[0],
            None,
            None,
            None,
            "unspecified",
            False,
            replay=_replay_unspecified(reference, candidate, inputs),
        )
    undefined = outcome is not True and _candidate_undefined(candidate, inputs, policy)
    return Counterexample(
        binding,
        inputs,
        names[0],
        None,
        None,
        None,
        "undefined" if undefined else "values",
        undefined,
        replay=UNDEFINED_REPLAY if undefined else None,
    )


UNDEFINED_REPLAY = (
    "onnx.reference gives no difference (it picks a value where the candidate is undefined); "
    "the interpreter, run on these concrete inputs, confirms that the candidate is undefined"
)


def first_output(model: onnx.ModelProto) -> str:
    """The name a counterexample without one output of its own is told by: the model's first
    output, or, for a region whose values nothing reads (no outputs), a sentence saying so."""
    if model.graph.output:
        return model.graph.output[0].name
    return "(none: nothing reads the region's values)"


def _cannot_run(reference, candidate, binding, inputs, reason: str) -> Counterexample:
    """The candidate cannot run on `inputs` (`reason`, the interpreter's): replayed in
    onnx.reference, then onnxruntime, then the checker, as onnx.reference runs some models
    the spec rejects (a Loop body with an extra output, If-1 branches of two shapes)."""
    name = first_output(reference)
    reason = reason.removeprefix("candidate: ")
    replay = _replay_failure(reference, candidate, inputs)
    return Counterexample(
        binding,
        inputs,
        name,
        None,
        "a result",
        reason,
        "cannot run",
        replay is not None,
        replay=replay
        or "NOT reproduced by onnx.reference, onnxruntime or onnx.checker "
        "(the spec's rule, in the message, decides)",
    )


def _replay_failure(reference, candidate, inputs) -> str | None:
    """Which runners fail on the candidate with these inputs (each counts only where it
    runs the reference), with their messages; None if none does."""
    from onnx.reference import ReferenceEvaluator

    from maxlower.runtime import onnxruntime_session

    runners = {
        "onnx.reference": lambda m: ReferenceEvaluator(m).run(None, inputs),
        "onnx.reference checking shape annotations": lambda m: ReferenceEvaluator(
            m, check_shape_annotations=True
        ).run(None, inputs),
        "onnxruntime": lambda m: onnxruntime_session(m).run(None, inputs),
    }
    seen = []
    for name, runner in runners.items():
        if _fails(runner, reference) is not None:
            seen.append(f"{name} cannot run the reference either")
            continue
        error = _fails(runner, candidate)
        if error is not None:
            return "; ".join([*seen, f"{name} fails: {error}"])
        seen.append(f"{name} runs it")
    problem = _check(candidate)
    if problem is not None:
        return "; ".join([*seen, f"onnx.checker rejects it: {problem}"])
    return None


def models_differ_on(reference, candidate, inputs, policy: Policy) -> bool | None:
    """Whether onnx.reference shows the two whole models differ on `inputs` (values under
    the policy, a shape or dtype, or the candidate failing where the reference runs, its
    declared shapes included); None when the inputs are not the models' own (a region's
    inner values), so that nothing can be replayed."""
    shown = shown_difference(reference, candidate, inputs, policy, _Paced())
    return None if shown is None else bool(shown)


class _Paced:
    """Runs of onnx.reference on the whole models within the active budget (--timeout): a
    run cannot be interrupted, so one starts only while the time left exceeds the longest
    run so far (OverBudget otherwise)."""

    def __init__(self) -> None:
        self.longest = 0.0
        self.outputs = None  # (reference's, candidate's or its error) of the last difference

    def run(self, model, inputs, **options):
        from onnx.reference import ReferenceEvaluator

        budget = budgets.current()
        budget.check_time()
        if budget.remaining() <= self.longest:
            raise OverBudget(
                f"timed out (--timeout {budget.timeout:g}): running the whole models in "
                f"onnx.reference takes {self.longest:.1f} s, more than the time left"
            )
        began = time.perf_counter()
        try:
            with np.errstate(all="ignore"):
                return ReferenceEvaluator(model, **options).run(None, inputs)
        finally:
            self.longest = max(self.longest, time.perf_counter() - began)


def shown_difference(reference, candidate, inputs, policy: Policy, paced: _Paced):
    """How onnx.reference shows the two whole models differ on `inputs`: "outputs" (values
    under the policy, a shape or dtype, or the candidate failing where the reference
    runs), "cannot run: ..." (the candidate breaks its declared shapes where the reference
    keeps its own: onnx.reference checking shape annotations), "" when it shows none, None
    when the inputs are not the models' own. Only onnx.reference decides (the stated
    base): a runtime's missing kernel is no difference of the models. OverBudget when the
    time is spent."""
    names = {v.name for v in reference.graph.input}
    required = names - {i.name for i in reference.graph.initializer}
    if not required <= set(inputs) <= names:
        return None
    try:
        expected = paced.run(reference, inputs)
    except OverBudget:
        raise
    except Exception:  # the reference cannot run there: nothing to show
        return ""
    try:
        actual = paced.run(candidate, inputs)
    except OverBudget:
        raise
    except Exception as error:  # the candidate fails where the reference runs
        paced.outputs = (expected, error)
        return "outputs"
    for a, b in zip(expected, actual, strict=True):
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape or a.dtype != b.dtype or not _equal_arrays(a, b, policy).all():
            paced.outputs = (expected, actual)
            return "outputs"
    checked = {"check_shape_annotations": True}
    try:
        paced.run(reference, inputs, **checked)
    except OverBudget:
        raise
    except Exception:  # the reference breaks its own declared shapes: nothing shown
        return ""
    try:
        paced.run(candidate, inputs, **checked)
    except OverBudget:
        raise
    except Exception as error:
        text = str(error).strip().splitlines()
        return "cannot run: " + (text[0] if text else type(error).__name__)[:300]
    return ""


# What a region's difference is tested with on the whole models (`model_witness`): each
# kind of draw, in order; random draws vary the values, ties make Max and Min meet.
WITNESS_DRAWS = ("region", "zeros", "ones", "random", "random", "extremes", "random", "random")


def model_witness(reference, candidate, dims, given, policy: Policy, seed: int = 0):
    """(inputs, how, outputs) of the whole models (the region's `given` values where they are the
    models' own, the rest drawn at `dims`, an unnamed dim at 1) on which onnx.reference
    shows the models differ (`how`: shown_difference's; `outputs`: the two models'
    onnx.reference outputs there, for counterexample_of), or None when no draw does: a
    region's difference refutes the models only with inputs of theirs that show it.
    OverBudget when the time runs out first."""
    initializers = {i.name for i in reference.graph.initializer}
    wanted = [v for v in reference.graph.input if v.name not in initializers]
    rng = np.random.default_rng(seed)
    paced = _Paced()
    for draw in WITNESS_DRAWS:
        feeds = {}
        for value in wanted:
            known = given.get(value.name) if draw == "region" else None
            feeds[value.name] = known if known is not None else _drawn(value, dims, draw, rng)
        how = shown_difference(reference, candidate, feeds, policy, paced)
        if how:
            return feeds, how, paced.outputs
    return None


def _drawn(value: onnx.ValueInfoProto, dims, draw: str, rng) -> np.ndarray:
    tensor = value.type.tensor_type
    dtype = onnx.helper.tensor_dtype_to_np_dtype(tensor.elem_type)
    shape = tuple(
        d.dim_value if d.HasField("dim_value") else int(dims.get(d.dim_param, 1))
        for d in tensor.shape.dim
    )
    if draw in ("zeros", "region"):
        return np.zeros(shape, dtype)
    if draw == "ones":
        return np.ones(shape, dtype)
    if dtype == np.bool_:
        return rng.integers(0, 2, shape).astype(dtype)
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        if draw == "extremes":
            return rng.choice(
                np.array([info.min, info.max, 0, 1, -1 % (info.max + 1)], dtype), shape
            )
        return rng.integers(max(info.min, -4), min(info.max, 5), shape, endpoint=True).astype(dtype)
    if draw == "extremes":
        pool = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, 1.0], dtype)
        return rng.choice(pool, shape)
    return rng.standard_normal(shape).astype(dtype)


def _fails(runner, model) -> str | None:
    """The first line of the runner's error on `model`, or None if it runs."""
    try:
        runner(model)
    except Exception as error:  # any failure of the runner is its answer
        text = str(error).strip().splitlines()
        return (text[0] if text else type(error).__name__)[:300]
    return None


def _interpreter(policy: Policy, side: str) -> Interpreter:
    """Under nan_unspecified the candidate's reduction of a NaN is any value, and the
    reference's undefined (nothing to match)."""
    zeros = policy.signed_zeros
    if not policy.nan_unspecified:
        return Interpreter(signed_zeros=zeros)
    nan = "undefined" if side == "reference" else "any"
    return Interpreter(nan_in_reduction=nan, signed_zeros=zeros)


def _nan_reaches_reduction(candidate, inputs, policy: Policy) -> bool:
    """Under nan_unspecified: whether these concrete inputs bring a NaN to a reduction."""
    if not policy.nan_unspecified:
        return False
    interpreter = _interpreter(policy, "candidate")
    interpreter.interpret(candidate, _concrete(inputs))
    return any(z3.is_true(z3.simplify(c)) for c in interpreter.unspecified)


def _concrete(inputs) -> dict[str, Tensor]:
    return {
        name: Tensor(onnx.helper.np_dtype_to_tensor_dtype(value.dtype), _terms(value))
        for name, value in inputs.items()
    }


def _replay_unspecified(reference, candidate, inputs) -> str:
    """onnx.reference keeps the NaN; onnxruntime, where it runs both, may show the other
    choice ONNX allows."""
    from maxlower.runtime import onnxruntime_session

    try:
        expected, actual = (
            onnxruntime_session(m).run(None, inputs) for m in (reference, candidate)
        )
    except Exception as error:  # onnxruntime runs nothing below opset 7, say
        message = (str(error).strip().splitlines() or [type(error).__name__])[0][:200]
        return (
            "onnx.reference keeps the NaN, so shows no difference; onnxruntime cannot run the "
            f"models to show the other choice ({message})"
        )
    for e, a in zip(expected, actual):
        if not np.array_equal(e, a, equal_nan=e.dtype.kind == "f"):
            return f"onnxruntime reproduces it: reference {e.tolist()}, candidate {a.tolist()}"
    return "onnx.reference and onnxruntime both keep the NaN here; ONNX does not require it"


def _candidate_undefined(candidate, inputs, policy: Policy) -> bool:
    """Whether the candidate's definedness conditions fail on these concrete inputs."""
    run = _interpreter(policy, "candidate").interpret(candidate, _concrete(inputs))
    conditions = [*run.errors, *(run.defined_at(t) for o in run.outputs for t in o.arr.flat)]
    return any(z3.is_false(z3.simplify(c)) for c in conditions)


def _terms(value: np.ndarray) -> np.ndarray:
    dtype = onnx.helper.np_dtype_to_tensor_dtype(value.dtype)
    arr = np.empty(value.size, dtype=object)
    arr[:] = [constant_term(dtype, v) for v in value.reshape(-1)]
    return arr.reshape(value.shape)


def _equal_arrays(a: np.ndarray, b: np.ndarray, policy: Policy) -> np.ndarray:
    if a.dtype.kind == "f" or str(a.dtype) == "bfloat16":
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        same = (a64 == b64) | (np.isnan(a64) & np.isnan(b64))
        if policy.signed_zeros:
            same &= np.signbit(a64) == np.signbit(b64)
        return same
    return a == b


def _number(value) -> str:
    return repr(value)


def _jsonable(value):
    if isinstance(value, float) and not np.isfinite(value):
        return repr(value)
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.dtype):
        return str(value)
    if isinstance(value, (np.generic,)):
        return _jsonable(value.item())
    return value


def concrete_outputs(
    model: onnx.ModelProto, inputs: dict[str, np.ndarray], *, spec_checks: bool = False
) -> list[np.ndarray]:
    """The interpreter's outputs on concrete inputs, as numpy arrays (for the differential
    test against onnx.reference). NaN comes out as the canonical NaN of its type. Without
    `spec_checks`, the element semantics of every dtype, whether the op's schema at the
    model's opset takes it or not (onnx.reference computes them all)."""
    tensors = {
        name: Tensor(onnx.helper.np_dtype_to_tensor_dtype(v.dtype), _terms(v))
        for name, v in inputs.items()
    }
    run = Interpreter(spec_checks=spec_checks).interpret(model, tensors)
    if OPAQUE_SUM in run.assumptions:  # no value to give: numpy's order is not modelled
        raise OutsideFragment(OPAQUE_SUM)
    return [_numpy_of(t) for t in run.outputs]


def _numpy_of(tensor: Tensor) -> np.ndarray:
    np_dtype = onnx.helper.tensor_dtype_to_np_dtype(tensor.dtype)
    values = []
    for term in tensor.arr.reshape(-1):
        if tensor.dtype in FLOAT_SORTS:
            width = bits_of(tensor.dtype)
            if z3.is_true(z3.simplify(z3.fpIsNaN(term))):
                values.append(np.array(np.nan).astype(np_dtype))
                continue
            bits = z3.simplify(z3.fpToIEEEBV(term))
            raw = bits.as_long() if z3.is_bv_value(bits) else None
            if raw is None:
                raise ValueError(f"not a constant: {term}")
            values.append(np.array(raw, dtype=f"u{width // 8}").view(np_dtype))
        elif tensor.dtype == TP.BOOL:
            values.append(np.array(z3.is_true(z3.simplify(term))))
        else:
            number = concrete_int(term, tensor.dtype)
            if number is None:
                raise ValueError(f"not a constant: {term}")
            values.append(np.array(number).astype(np_dtype))
    array = np.array(values, dtype=np_dtype) if values else np.zeros(0, np_dtype)
    return array.reshape(tensor.shape)


__all__ = [
    "COUNTEREXAMPLE",
    "INCONCLUSIVE",
    "PROVED",
    "Counterexample",
    "Policy",
    "ProofReport",
    "concrete_outputs",
    "prove",
]
