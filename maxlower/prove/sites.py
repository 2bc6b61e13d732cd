"""Proofs per rewrite site: each node a run rewrote, proved equal to what replaced it.

    report = prove_stages(stages, ProofOptions(max_dim=4, timeout=60.0))
    report.status, report.sites[k].line(), report.counterexample

A site (maxlower.changes: the node before, the nodes after that compute its outputs
from values that existed before) becomes two small models: the reference is the node at
the source opset, the candidate the replacement at the target opset. Each reads the same
free inputs (the values the site shares with the rest of its graph, captured outer values
of a subgraph or function included, each typed as the model types it); initializers and
Constant nodes the site reads stay constants. Then:

- `semilattice`: both sides made only of the family's op and element moves (max-only) are
  compared as sets of input elements, exact at any size (maxlower.prove.semilattice);
- `full`: otherwise, when the site's free inputs hold at most FULL_ELEMENTS elements (a
  symbolic dim counted at --max-dim) and each output element reads at most FULL_FAN_IN
  of them, the SMT proof of maxlower.prove.core;
- else the site is inconclusive, and the reason names the node, op and size (or the op
  outside the fragment, checked first).

The sites of every stage proved, each stage computes what its input computed, so the run
does: the report's method is "sites". A relabelled node keeps its node, so it is no site.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import json
import time
from collections.abc import Iterable
from dataclasses import replace

import numpy as np
import onnx

from maxlower.changes import RELABELLED as RELABELLED_KIND
from maxlower.changes import Record, Scope, Site, node_label, scopes, sites
from maxlower.errors import CounterexampleFound, ProofFailed, ProofInconclusive
from maxlower.external import is_external, read_all_in
from maxlower.prove import ProofOptions
from maxlower.prove import budget as budgets
from maxlower.prove.budget import OverBudget
from maxlower.prove.canonical import (
    constant_outputs_agree,
    constants_and_nodes,
    inferred_types,
    nodes_model,
    one_node,
    same_by_schema,
    same_node_relabelled,
)
from maxlower.prove.core import (
    COUNTEREXAMPLE,
    INCONCLUSIVE,
    PROVED,
    Counterexample,
    Policy,
    ProofReport,
    counterexample_of,
    finish_report,
    first_output,
    interface_refutation,
    invalid_candidate,
    model_witness,
    prove,
    shape_refutation,
)
from maxlower.prove.expansion import ExpansionUnproved, function_node, prove_expansion
from maxlower.prove.models import differing_defaults, interface_differences
from maxlower.prove.semilattice import semilattice_equal, semilattice_witness
from maxlower.prove.shared import (
    changes_between,
    differing_sources,
    reads,
    relabelled_pairs,
    shared_nodes,
)
from passes.graph_utils import graph_protos, with_reshape_ranks

# What the full SMT proof takes on, measured on this machine (tests/test_prove_sites.py
# and docs/proof.md, "Proof of a run's sites", give the figures): a float32 ReduceMax's
# select tree over a row of 6 elements proves in 3.4 s, of 8 in 65 s; ArgMax over 6 in
# 9.6 s; an elementwise Max over 64 elements in 0.5 s. The cost is the elements each output element
# reads (the fan-in: input elements per output element of the node), and, more mildly,
# the total. Past these the site is inconclusive unless the semilattice method applies.
FULL_FAN_IN = 6
FULL_ELEMENTS = 64
REMEDY = "check it by testing instead (--verify)"
RULES_REMEDY = (
    "; `maxlower prove --rules` proves the rules of Max, ReduceMax and ArgMax (and the Min "
    "twins) themselves at n <= --max-dim"
)
FAMILY = frozenset({"Max", "ReduceMax", "ArgMax", "Min", "ReduceMin", "ArgMin"})


@dataclasses.dataclass
class SiteProof:
    """The verdict on one site."""

    stage: str
    where: str
    node: str
    op_type: str
    kind: str  # rewritten, adapted, delegated, expanded, lowered (several: joined by ", ")
    method: str  # semilattice, full, or "-" (not attempted)
    status: str
    seconds: float
    elements: int
    reason: str | None = None
    proof: ProofReport | None = None

    @property
    def counterexample(self) -> Counterexample | None:
        return self.proof.counterexample if self.proof is not None else None

    def label(self) -> str:
        return f"node {self.node!r} ({self.op_type}) in {self.where}"

    def line(self) -> str:
        text = f"{self.status.upper()}: {self.label()}, {self.kind} ({self.stage})"
        # (the schemas' argument holds at any size: no count, which may be unknown)
        size = "any size" if self.method == "schema" else f"{self.elements} input elements"
        text += f", method {self.method}, {size}, {self.seconds:.2f} s"
        if self.status == PROVED and self.proof is not None:  # the bound it was proved at
            text += f", {self.proof.coverage_text()}"
        return text + (f": {self.reason}" if self.reason else "")

    def to_dict(self) -> dict:
        out = {
            k: getattr(self, k)
            for k in ("stage", "where", "node", "op_type", "kind", "method", "status", "elements")
        }
        out["seconds"] = round(self.seconds, 4)
        out["reason"] = self.reason
        if self.proof is not None:
            out["proof"] = self.proof.to_dict()
        return out


@dataclasses.dataclass
class SitesReport:
    """Every site's verdict; the run is proved when every site is ("sites" composes)."""

    sites: list[SiteProof]
    policy: Policy
    seconds: float = 0.0
    method: str = "sites"
    assumptions: list[str] = dataclasses.field(default_factory=list)

    @property
    def status(self) -> str:
        statuses = {s.status for s in self.sites}
        for status in (COUNTEREXAMPLE, INCONCLUSIVE):
            if status in statuses:
                return status
        return PROVED

    @property
    def ok(self) -> bool:
        return self.status == PROVED

    @property
    def first_failure(self) -> SiteProof | None:
        """The site that decides the status (the first counterexample, else the first
        inconclusive site)."""
        for status in (COUNTEREXAMPLE, INCONCLUSIVE):
            found = next((s for s in self.sites if s.status == status), None)
            if found is not None:
                return found
        return None

    @property
    def counterexample(self) -> Counterexample | None:
        failure = self.first_failure
        return failure.counterexample if failure is not None else None

    @property
    def coverage(self) -> dict:
        """What the composed proof covers: the sizes of the symbolic dims and the split
        values the full solver's sites were proved at (semilattice sites hold at any size);
        `complete` when no site was bounded by either."""
        dims: dict[str, set[int]] = {}
        split: dict[str, list[int]] = {}
        unproved: list[str] = []  # sites with inputs where their reference breaks its shapes
        for site in self.sites:
            if site.status != PROVED or site.proof is None:
                continue
            coverage = site.proof.coverage
            for name, sizes in coverage["dims"].items():
                dims.setdefault(name, set()).update(sizes)
            for element, values in coverage["split"].items():
                split[f"{element} (site {site.node!r})"] = values
            if coverage["unproved"] or coverage["unproved_bindings"]:
                unproved.append(site.node)
        return {
            "complete": not dims and not split and not unproved,
            "dims": {k: sorted(v) for k, v in dims.items()},
            "split": split,
            "unproved": unproved,
        }

    def coverage_text(self) -> str:
        """'' for a proof at every size and value, else how far it goes (always named)."""
        coverage = self.coverage
        parts = []
        if coverage["dims"]:
            largest = max(max(v) for v in coverage["dims"].values())
            names = ", ".join(coverage["dims"])
            parts.append(f"symbolic dims ({names}) <= {largest}")
        if coverage["split"]:
            splits = "; ".join(f"{k} in {v}" for k, v in coverage["split"].items())
            parts.append(f"the inputs with {splits} (case-split values)")
        text = " for " + " and ".join(parts) + " only" if parts else ""
        if coverage["unproved"]:
            sites = ", ".join(repr(n) for n in coverage["unproved"])
            text += (
                f", except inputs where the reference of site(s) {sites} breaks its own "
                "declared shapes (not proved there)"
            )
        return text

    def headline(self) -> str:
        """One line: the verdict, and the site that decides it."""
        count = len(self.sites)
        proved = sum(s.status == PROVED for s in self.sites)
        if self.ok:
            return (
                f"PROVED: {count} site{'s' if count != 1 else ''} proved, composing into a "
                f"proof of the whole model{self.coverage_text()} (method {self.method}; "
                f"{self.policy.text()}; {self.seconds:.2f} s)"
            )
        failure = self.first_failure
        assert failure is not None
        if failure.status == COUNTEREXAMPLE:
            return f"COUNTEREXAMPLE at {failure.label()}: {failure.reason}"
        return f"INCONCLUSIVE at {failure.label()} ({proved} of {count} sites proved): " + (
            f"{failure.reason}"
        )

    def lines(self, *, every: bool = False) -> list[str]:
        """The headline, then one line per site (`every`), or per site not proved."""
        lines = [self.headline()]
        shown = [s for s in self.sites if every or s.status != PROVED]
        lines += ["  " + s.line() for s in shown]
        hidden = len(self.sites) - len(shown)
        if hidden:
            methods = sorted({s.method for s in self.sites if s.status == PROVED})
            other = "other " if shown else ""
            lines.append(f"  {hidden} {other}site(s) proved (methods: {', '.join(methods)})")
        for assumption in self.assumptions:
            lines.append(f"  assumes: {assumption}")
        cex = self.counterexample
        if cex is not None:
            lines.extend("  " + line for line in cex.lines())
        return lines

    def summary(self) -> str:
        return "\n".join(self.lines(every=True))

    def to_dict(self) -> dict:
        return {
            "status": self.status,
            "method": self.method,
            "policy": self.policy.text(),
            "seconds": round(self.seconds, 4),
            "assumptions": self.assumptions,
            "coverage": self.coverage,
            "sites": [s.to_dict() for s in self.sites],
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2) + "\n"

    def error(self) -> ProofFailed | None:
        """The one-line error for a run that was not proved (CounterexampleFound, exit 1;
        ProofInconclusive, exit 5), None when it was; the library raises it, the command
        line prints it and exits with its code."""
        if self.ok:
            return None
        kind = CounterexampleFound if self.status == COUNTEREXAMPLE else ProofInconclusive
        return kind(f"proof: {self.headline()}", self)


def prove_stages(stages: Iterable, options: ProofOptions, base_dir=None) -> SitesReport:
    """Prove every rewrite site of every stage (maxlower.changes.Stage: `stages` gives them
    for a run); `base_dir`: where the models' external data lives."""
    start = time.perf_counter()
    policy = Policy(signed_zeros=options.signed_zeros)
    proofs: list[SiteProof] = []
    for stage in stages:
        before, after = _typed_scopes(stage.before), _typed_scopes(stage.after)
        records, unpaired = _relabels_checked(stage.records, before, after)
        found, unplaced = sites(stage.before, stage.after, records)
        for site in found:
            proofs.append(
                prove_site(stage.name, site, stage.before, stage.after, before, after, options)
            )
        proofs += [_unplaced_proof(stage.name, record) for record in [*unpaired, *unplaced]]
        read = _names_read(stage.after)
        proofs += _unrecorded_changes(stage.name, before, after, found, read, base_dir)
    assumptions = sorted({a for p in proofs if p.proof for a in p.proof.assumptions})
    return SitesReport(proofs, policy, time.perf_counter() - start, "sites", assumptions)


CHANGED_RELABEL = "relabelled, but changed"
ACROSS_A_CHANGE = "relabelled across a change of meaning"


def _typed_scopes(model: onnx.ModelProto) -> dict[str, Scope]:
    """The model's scopes, their values typed by what holds in every run (`_typed`), not by
    the types the run inferred, which a declared value_info or a default a caller may
    override decided (red team of de7dff6). Each keeps its graph's declared output types
    apart (`declared_outputs`), for a site's outputs where inference gives none
    (`_value_info`)."""
    typed, declared = scopes(_typed(model)), scopes(model)
    for where, scope in typed.items():
        own = declared.get(where)
        outputs = {} if own is None else {n: own.type_protos.get(n) for n in own.outputs}
        scope.declared_outputs = {n: t for n, t in outputs.items() if t is not None}
    return typed


def _shaped(type_proto: onnx.TypeProto | None) -> bool:
    return type_proto is not None and type_proto.tensor_type.HasField("shape")


def _names_read(model: onnx.ModelProto) -> set[str]:
    """Every value name something in the model reads: a node (in any graph, a function's
    included) or a graph's outputs."""
    graphs = [g for top in [model.graph] for g in graph_protos(top)]
    bodies = [*graphs, *model.functions]
    names = {name for body in bodies for node in body.node for name in node.input}
    for function in model.functions:  # (a function body's subgraphs)
        for node in function.node:
            for attribute in node.attribute:
                for sub in [attribute.g] * attribute.HasField("g") + list(attribute.graphs):
                    for g in graph_protos(sub):
                        names |= {n for node2 in g.node for n in node2.input}
                        names |= {o.name for o in g.output}
    names |= {o.name for g in graphs for o in g.output}
    names |= {o for f in model.functions for o in f.output}
    return names


def _unrecorded_changes(
    stage: str, before, after, found, read: set[str], base_dir=None
) -> list[SiteProof]:
    """What a stage changed that no site covers: the sites prove the nodes the run's
    records name, so each graph's other nodes (their subgraphs compared as graphs of their
    own), its inputs and outputs (a subgraph's or a function's: the main graph's are the
    interface) and its initializers must be the same before and after; any other change
    is unproved (inconclusive, named), never taken as proved."""
    covered = {where: ([], []) for where in before}
    for site in found:
        was, now = covered.setdefault(site.where, ([], []))
        was += [_shallow(n) for n in site.before]
        now += [_shallow(n) for n in site.after]
    proofs = []
    for where in before:
        if where not in after:  # (a subgraph of a node a site rewrote: in that site)
            continue
        was, now = before[where], after[where]
        site_was, site_now = covered[where]
        left = collections.Counter(_shallow(n) for n in was.nodes)
        right = collections.Counter(_shallow(n) for n in now.nodes)
        left.subtract(collections.Counter(site_was))
        right.subtract(collections.Counter(site_now))
        # a node whose outputs nothing reads after the run is no change of what it computes
        # (a Constant of axes that became an attribute, left behind or removed)
        live = lambda key: any(name in read for name in key[3] if name)  # noqa: E731
        changed = [k for k in (+left - +right) if live(k)] or [
            k for k in (+right - +left) if live(k)
        ]
        what = None
        if changed:
            _, op_type, _, outputs, _ = changed[0]
            what = f"the {op_type} node that makes {', '.join(map(repr, outputs))} changed"
        elif where != "main graph" and (was.inputs, was.outputs) != (now.inputs, now.outputs):
            what = "its inputs or outputs changed"
        else:
            tensors = [n for n in was.constants & now.constants if _differs(was, now, n, base_dir)]
            what = f"initializer {sorted(tensors)[0]!r} changed" if tensors else None
        if what is not None:
            reason = (
                f"{what} in {where}, but the run recorded no rewrite of it: no site "
                f"covers it, so nothing proves it; {REMEDY}"
            )
            site = (stage, where, "<unrecorded change>", "-", "unrecorded", "-")
            proofs.append(SiteProof(*site, INCONCLUSIVE, 0.0, 0, reason, None))
    return proofs


def _shallow(node: onnx.NodeProto) -> tuple:
    """What the node computes, as a key: its domain, op, inputs, outputs and attribute
    values (a tensor by its type, shape and bytes), without its name, its doc string or
    how a writer spelled the protobuf (an empty field written or left out), and without
    its subgraphs' bodies, each compared as a scope of its own."""
    attributes = []
    for attribute in sorted(node.attribute, key=lambda a: a.name):
        if attribute.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS):
            value: object = "subgraph"
        elif attribute.ref_attr_name:
            value = ("ref", attribute.ref_attr_name)
        else:
            value = _attribute_key(onnx.helper.get_attribute_value(attribute))
        attributes.append((attribute.name, attribute.type, value))
    return (node.domain or "", node.op_type, tuple(node.input), tuple(node.output),
            tuple(attributes))  # fmt: skip


def _attribute_key(value) -> object:
    if isinstance(value, onnx.TensorProto):
        if value.data_location == onnx.TensorProto.EXTERNAL:  # (its bytes are elsewhere)
            return ("external", value.SerializeToString(deterministic=True))
        array = onnx.numpy_helper.to_array(value)
        return ("tensor", value.data_type, tuple(array.shape), array.tobytes())
    if isinstance(value, list):
        return tuple(_attribute_key(v) for v in value)
    if isinstance(value, float):
        return ("float", np.float32(value).tobytes())  # (NaN equal to itself)
    if isinstance(value, (int, bytes, str)):
        return value
    return repr(value)


def _differs(was, now, name: str, base_dir=None) -> bool:
    """Whether initializer `name` differs between the scopes. A tensor read in on one side
    (the model before the run holds its small external tensors read in:
    maxlower.prove.models.constants_read_in) and left external on the other (the run keeps
    external data external) is compared by its bytes, read from `base_dir`; with no
    base_dir they count as different."""
    a, b = was.tensors.get(name), now.tensors.get(name)
    if a is None or b is None:
        return True
    if is_external(a) != is_external(b):
        if base_dir is None:
            return True
        try:
            a, b = (_read_in_copy(t, base_dir) for t in (a, b))
        except Exception:  # (unreadable where the model says: not shown the same)
            return True
    return a.SerializeToString() != b.SerializeToString()


def _read_in_copy(tensor: onnx.TensorProto, base_dir) -> onnx.TensorProto:
    copy = onnx.TensorProto()
    copy.CopyFrom(tensor)
    if is_external(copy):
        read_all_in([copy], str(base_dir))
    return copy


def _relabels_checked(
    records: list[Record], before: dict[str, Scope], after: dict[str, Scope]
) -> tuple[list[Record], list[Record]]:
    """The records, with each relabelled node checked: a relabelling keeps the node as it
    is, so one that changed it (an attribute dropped or pinned, say) is a site to prove
    (kind CHANGED_RELABEL); the second list holds those that cannot be paired with their
    node (several nodes of that label changed)."""
    protos: dict[tuple[str, str], list[list[bytes]]] = {}

    def serialized(where: str, label: str) -> list[list[bytes]]:
        key = (where, label)
        if key not in protos:
            protos[key] = [_by_label(scope, where, label) for scope in (before, after)]
        return protos[key]

    kept, unpaired = [], []
    for record in records:
        if record.kind != RELABELLED_KIND:
            kept.append(record)
            continue
        was, now = serialized(record.where, record.node)
        if was and len(was) == len(now) == 1 and _across_a_change(record):
            # the conversion's own types decided it (a Softmax over the last axis of a
            # rank the converter's inference gave): the site is proved with the prover's
            kept.append(dataclasses.replace(record, kind=ACROSS_A_CHANGE))
            continue
        if not was or sorted(was) == sorted(now):
            # unchanged: nothing to prove; or made by an earlier step of this stage (a
            # family rewrite's helper nodes), and so proved as part of that rewrite's site
            continue
        if len(was) == len(now) == 1:
            kept.append(dataclasses.replace(record, kind=CHANGED_RELABEL))
        else:
            unpaired.append(record)
    return kept, unpaired


def _across_a_change(record: Record) -> bool:
    """Whether a relabel crosses a version at which its op's meaning (or onnxruntime's
    kernel) changed (maxlower.prove.shared.changes_between): Softmax-11 to 13, whose
    meaning is one only for the last axis alone."""
    versions = record.step.split("→")
    if len(versions) != 2 or not all(v.isdigit() for v in versions):
        return False
    return bool(changes_between(record.op_type, int(versions[0]), int(versions[1])))


def _by_label(scopes_of: dict[str, Scope], where: str, label: str) -> list[bytes]:
    """The nodes of that label in that graph, each as what it computes (`_shallow`), for
    comparison: a relabelled If, Loop or Scan whose branches hold converted nodes is
    unchanged itself; its bodies are scopes of their own, whose changes are their own
    sites (and `_unrecorded_changes` compares the rest of them)."""
    scope = scopes_of.get(where)
    if scope is None:
        return []
    labelled = getattr(scope, "_all_by_label", None)
    if labelled is None:
        labelled = {}
        for node in scope.nodes:
            labelled.setdefault(node_label(node), []).append(node)
        scope._all_by_label = labelled  # type: ignore[attr-defined]
    return [repr(_shallow(n)).encode() for n in labelled.get(label, [])]


def _unplaced_proof(stage: str, record: Record) -> SiteProof:
    """An inconclusive verdict for a change that no site holds: nothing may pass unproved."""
    return SiteProof(
        stage,
        record.where,
        record.node,
        record.op_type,
        record.kind,
        "-",
        INCONCLUSIVE,
        0.0,
        0,
        f"the run changed this node ({record.message}) but no rewrite site holds the change "
        f"(several nodes share its name); {REMEDY}",
        None,
    )


def prove_run(
    before: onnx.ModelProto, outcome, job, options: ProofOptions, base_dir=None
) -> SitesReport:
    """Prove the sites of one pipeline run: `before` (the model `pipeline.prepare` gave,
    copied before `run` changed it) went through `job` into `outcome`; the model's external
    data lives in `base_dir`. The command line's `--prove` and the library's `prove=` both
    call this."""
    from maxlower.changes import stages

    report = prove_stages(stages(before, outcome, job), options, base_dir)
    changed = _interface_proof(before, outcome.proto)
    if changed is not None:
        report.sites.append(changed)
    return report


def _interface_proof(before: onnx.ModelProto, after: onnx.ModelProto) -> SiteProof | None:
    """A refutation of a run that changed the model's interface (its inputs' or outputs'
    names, order, element types, declared shapes or defaults: maxlower.prove.models, the
    rule every door applies), else None. The sites prove values by name, so a run that
    reorders, renames or retypes the graph's inputs or outputs would compose out of proved
    sites; no input is needed to show that a caller sees the difference."""
    differences = interface_differences(before, after)
    if not differences:
        return None
    reason = f"the run changed the model's interface: {'; '.join(differences)}"
    return SiteProof(
        "interface", "main graph", "<graph interface>", "-", "interface", "-",
        COUNTEREXAMPLE, 0.0, 0, reason, None,
    )  # fmt: skip


def prove_site(
    stage: str,
    site: Site,
    before_model: onnx.ModelProto,
    after_model: onnx.ModelProto,
    before: dict[str, Scope],
    after: dict[str, Scope],
    options: ProofOptions,
    dims=None,
) -> SiteProof:
    """One site's verdict (see the module docstring for the methods); `dims` fixes
    symbolic dims by name, as `maxlower prove --dim` does."""
    start = time.perf_counter()
    remedy = REMEDY + (RULES_REMEDY if site.op_type in FAMILY else "")
    try:
        scopes = before[site.where], after[site.where]
        try:
            reference, candidate = site_models(site, before_model, after_model, *scopes)
        except SiteOutside:
            # values inference gave no shape (a Reshape to a shape computed at run time):
            # the schemas' argument needs none, the solver does
            typed = site_models(site, before_model, after_model, *scopes, shapes=False)
            if same_by_schema(*typed) is None and function_node(typed[0]) is None:
                raise
            reference, candidate = typed
        reader = None
        if not options.signed_zeros:
            reader = _zero_sign_reader(site, before[site.where], after[site.where])
        assumption = same_by_schema(reference, candidate)
        shaped = all(v.type.tensor_type.HasField("shape") for v in reference.graph.input)
        elements = _elements(reference.graph.input, options.max_dim) if shaped else 0
        policy = Policy(signed_zeros=options.signed_zeros)
        if assumption is not None:  # one function by the spec: every size, bit for bit
            by_schema = ProofReport(PROVED, policy, [], [assumption], "schema")
            decided = (PROVED, "schema", elements, None, by_schema)
        elif (by_body := _by_body(site, reference, candidate, options, policy)) is not None:
            proved = by_body if by_body.ok else None
            decided = (by_body.status, "expansion", elements, by_body.reason, proved)
        elif (by_parts := _by_parts(reference, candidate, options, policy)) is not None:
            decided = (PROVED, "parts", elements, None, by_parts)
        elif reader is None:
            decided = _decide(reference, candidate, options, dims, remedy)
        else:
            decided = _decide_signed_zeros(reference, candidate, options, dims, remedy, reader)
        status, method, elements, reason, proof = decided
    except SiteOutside as error:
        status, method, elements, reason, proof = INCONCLUSIVE, "-", 0, f"{error}; {remedy}", None
    except OverBudget as error:  # (the semilattice run of a huge Loop, say)
        status, method, elements, reason, proof = INCONCLUSIVE, "-", 0, str(error), None
    kind = ", ".join(dict.fromkeys(site.kinds))
    seconds = time.perf_counter() - start
    return SiteProof(
        stage,
        site.where,
        site.node,
        site.op_type,
        kind,
        method,
        status,
        seconds,
        elements,
        reason,
        proof,
    )


def _by_body(site: Site, reference, candidate, options: ProofOptions, policy):
    """The `expansion` method's report where it decides the site: proved, or for a site
    the run expanded, inconclusive with why; None where the other methods decide (the
    reference is no function op, or the candidate is not its body: a Relu-14, whose schema
    has a body, relabelled to 13)."""
    if function_node(reference) is None:
        return None
    if options.signed_zeros:  # a body may give the other zero (Relu-14's is Max(x, 0))
        if "expanded" not in site.kinds:
            return None
        reason = f"a function body may give -0.0 where the op gives +0.0 (--signed-zeros); {REMEDY}"
        return ProofReport(INCONCLUSIVE, policy, [], [], "expansion", reason=reason)
    try:
        assumptions = prove_expansion(reference, candidate, options, prove_run)
    except ExpansionUnproved as error:
        if "expanded" not in site.kinds:
            return None
        reason = f"{error}; {REMEDY}"
        return ProofReport(INCONCLUSIVE, policy, [], [], "expansion", reason=reason)
    return ProofReport(PROVED, policy, [], assumptions, "expansion")


# Ops whose result is the same whichever zero an input holds: they compare, or read a
# magnitude or a shape. A site whose outputs only these read (or the model's outputs,
# where the ±0 policy applies) may be proved with -0.0 and +0.0 counted equal.
ZERO_SIGN_BLIND = frozenset(
    {
        "Equal", "Greater", "Less", "GreaterOrEqual", "LessOrEqual", "Abs", "IsNaN", "IsInf",
        "Shape", "Size", "ArgMax", "ArgMin",
    }
)  # fmt: skip


def _by_parts(reference, candidate, options: ProofOptions, policy) -> ProofReport | None:
    """A region proved node by node of the reference: each node, with the candidate's
    nodes that make its outputs from what it reads (and constants), one function by the
    schemas' argument, as the same node at versions conversion relabels between, or as
    its function body (the expansion method). In the order the nodes run, every value the
    reference makes is then the same in the candidate, the region's outputs included
    (a `prove A B` region where an expanded LayerNormalization feeds a relabelled
    Reshape). Else None, and the other methods decide."""
    ref_constants, ref_nodes = constants_and_nodes(reference)
    cand_constants, cand_nodes = constants_and_nodes(candidate)
    if len(ref_nodes) < 2 or options.signed_zeros:
        return None
    if not constant_outputs_agree(reference, candidate):
        return None
    ref_types, cand_types = inferred_types(reference), inferred_types(candidate)
    maker = {o: n for n in cand_nodes for o in n.output if o}
    order = {id(n): k for k, n in enumerate(cand_nodes)}
    assumptions: list[str] = []
    covered: set[int] = set()
    for node in ref_nodes:
        part = _part_making(node, maker, cand_constants)
        if part is None:
            return None
        covered |= {id(n) for n in part}
        one = one_node(reference, node, ref_types, ref_constants)
        many = nodes_model(
            candidate, sorted(part, key=lambda n: order[id(n)]), cand_types, cand_constants,
            outputs_of=[o for o in node.output if o],
        )  # fmt: skip
        found = same_by_schema(one, many)
        if found is None and len(part) == 1:
            found = same_node_relabelled(one, many)
        if found is None and function_node(one) is not None:
            try:
                found = "; ".join(prove_expansion(one, many, options, prove_run))
            except ExpansionUnproved:
                return None
        if found is None:
            return None
        assumptions += [found] if found else []
    if len(covered) != len(cand_nodes):  # a node of no part still runs, and may fail
        return None  # (red team of aed5c82: a Gather out of bounds that nothing reads)
    return ProofReport(PROVED, policy, [], list(dict.fromkeys(assumptions)), "parts")


def _part_making(node: onnx.NodeProto, maker: dict, constants: dict) -> list | None:
    """The candidate's nodes that make `node`'s outputs from what `node` reads (its inputs
    and constants), or None where they read anything else or hold a body (whose captured
    values no input list names)."""
    reads = {n for n in node.input if n}
    part: dict[int, onnx.NodeProto] = {}
    stack = [o for o in node.output if o]
    while stack:
        name = stack.pop()
        if name in reads or name in constants:
            continue
        made_by = maker.get(name)
        if made_by is None:
            return None  # (a value `node` does not read)
        if id(made_by) in part:
            continue
        if any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
               for a in made_by.attribute):  # fmt: skip
            return None
        part[id(made_by)] = made_by
        stack += [n for n in made_by.input if n]
    return list(part.values()) if part else None


def _zero_sign_reader(site: Site, before: Scope, after: Scope) -> str | None:
    """What reads one of the site's outputs and may tell -0.0 from +0.0 (a node of another
    op, or a subgraph's or function's output, whose readers are elsewhere), in words; None
    when only the main graph's outputs and ZERO_SIGN_BLIND nodes read them. The ±0 policy
    is about the model's outputs: a region equal only up to the sign of zero, read by a
    Reciprocal or a Div, gives ±inf downstream (red team 3, F1 and F2)."""
    for scope in (after, before):
        final = set(scope.outputs) if scope.where == "main graph" else set()
        for name in site.outputs:
            if name in scope.outputs and name not in final:
                return f"output {name!r} of {scope.where}"
            for node in scope.nodes:
                if node in site.after or node in site.before:
                    continue
                if name in node.input or name in reads([node]):
                    if node.domain in ("", "ai.onnx") and node.op_type in ZERO_SIGN_BLIND:
                        continue
                    return f"{node.op_type} node {node_label(node)!r}"
    return None


def _decide_signed_zeros(reference, candidate, options: ProofOptions, dims, remedy, reader):
    """`_decide` for a site whose outputs `reader` may tell -0.0 from +0.0: proved with
    the zeros distinct; where only the ±0 policy proves it, inconclusive, saying why."""
    strict = _decide(reference, candidate, replace(options, signed_zeros=True), dims, remedy)
    if strict[0] == PROVED:
        return strict
    loose = _decide(reference, candidate, options, dims, remedy)
    if loose[0] != PROVED:
        return loose
    reason = (
        f"it is equal only with -0.0 and +0.0 counted equal, and its value reaches {reader}, "
        "which may tell them apart (1/x is -inf or +inf): the ±0 policy holds at the "
        f"model's outputs, not inside it; {remedy}"
    )
    return INCONCLUSIVE, loose[1], loose[2], reason, None


def _decide(reference, candidate, options: ProofOptions, dims, remedy: str):
    """(status, method, input elements, reason, ProofReport or None) of one site."""
    elements = _elements(reference.graph.input, options.max_dim)
    outside = _outside_ops(reference) + _outside_ops(candidate)
    if outside:  # named first: no size would make these provable
        ops = ", ".join(dict.fromkeys(outside))
        return (
            INCONCLUSIVE,
            "-",
            elements,
            f"op {ops} is outside the prover's fragment; {remedy}",
            None,
        )
    # the set argument counts -0.0 and +0.0 equal: it proves nothing under --signed-zeros
    same = None if options.signed_zeros else semilattice_equal(reference, candidate)
    if same:
        return PROVED, "semilattice", elements, None, None
    # the sets differ: an input at the top value shows it, at any size; where no element
    # is apart (the outputs' shapes differ, say), the full method decides
    proof = _semilattice_counterexample(reference, candidate, options) if same is False else None
    if proof is not None:
        reason = proof.counterexample.lines()[0] if proof.counterexample else None
        return COUNTEREXAMPLE, "semilattice", elements, reason, proof
    fan_in = _fan_in(reference, elements, options.max_dim)
    if elements > FULL_ELEMENTS or fan_in > FULL_FAN_IN:
        reason = (
            f"its inputs hold {elements} elements, each output element reading about "
            f"{fan_in}, past what the full solver proves in seconds ({FULL_ELEMENTS} "
            f"elements, {FULL_FAN_IN} per output element), and the semilattice method "
            f"does not apply (the {'replacement' if _max_only(reference) else 'node'} is "
            f"not max-only); {remedy}"
        )
        return INCONCLUSIVE, "-", elements, reason, None
    policy = Policy(signed_zeros=options.signed_zeros)
    proof = prove(
        reference,
        candidate,
        dims=dims,
        max_dim=options.max_dim,
        timeout=options.timeout,
        policy=policy,
    )
    reason = None
    if proof.status == INCONCLUSIVE:
        cannot_run = str(proof.reason).startswith(("reference: ", "candidate: "))
        why = f"{proof.reason}: outside the prover's fragment" if cannot_run else proof.reason
        # (a budget's reason names its remedy already)
        reason = why if "check it by testing" in str(why) else f"{why}; {remedy}"
    else:  # a counterexample's first line, or why the candidate is refuted without one
        found = proof.counterexample
        reason = found.lines()[0] if found is not None else proof.reason
    return proof.status, "full", elements, reason, proof


def _semilattice_counterexample(reference, candidate, options) -> ProofReport | None:
    """The counterexample of two max-only graphs whose sets differ, replayed in
    onnx.reference (maxlower.prove.semilattice.semilattice_witness); None when no input
    element is in one output element's set and not the other's (a site whose outputs
    differ in shape: the campaign's exit 4, onnx.reference run with no inputs fed)."""
    from maxlower.prove.core import Case

    policy = Policy(signed_zeros=options.signed_zeros)
    inputs = semilattice_witness(reference, candidate)
    if inputs is None:
        return None
    found = counterexample_of(reference, candidate, {}, inputs, policy, True)
    case = Case({}, COUNTEREXAMPLE, 0.0)
    return ProofReport(COUNTEREXAMPLE, policy, [case], [], "semilattice", found)


def _max_only(model: onnx.ModelProto) -> bool:
    return semilattice_equal(model, model) is not None


def _elements(values, max_dim: int, known: set[str] | None = None) -> int:
    """Elements of `values` (ValueInfoProtos), a symbolic dim counted at `max_dim`; with
    `known`, a dim not named in it (one the node computes) at 1, the worst case."""
    total = 0
    for value in values:
        sizes = [
            d.dim_value
            if d.HasField("dim_value")
            else max_dim
            if known is None or d.dim_param in known
            else 1
            for d in value.type.tensor_type.shape.dim
        ]
        total += int(np.prod(sizes, dtype=np.int64))
    return total


def _fan_in(reference: onnx.ModelProto, elements: int, max_dim: int) -> int:
    """Input elements per output element of the node (a reduction's row length)."""
    named = {d.dim_param for v in reference.graph.input for d in v.type.tensor_type.shape.dim}
    outputs = _elements(reference.graph.output, max_dim, named)
    return -(-elements // max(outputs, 1))


# --- a site as two models -------------------------------------------------------------------
class SiteOutside(Exception):
    """A site that cannot be rebuilt as a model of its own (a free value of unknown type, a
    node that reads its function's attributes)."""


def site_models(
    site: Site,
    before_model: onnx.ModelProto,
    after_model: onnx.ModelProto,
    before: Scope,
    after: Scope,
    *,
    shapes: bool = True,
) -> tuple[onnx.ModelProto, onnx.ModelProto]:
    """(reference, candidate): the node before at the source opset and the replacement at
    the target opset, reading the same free inputs. Without `shapes`, a value whose shape
    inference does not give is typed without one (for the schemas' argument only)."""
    ref_nodes, ref_consts, ref_free = _closed(site.before, before)
    cand_nodes, cand_consts, cand_free = _closed(site.after, after)
    free = list(dict.fromkeys([*ref_free, *cand_free]))
    inputs = [_value_info(name, before, after, "input", shapes) for name in free]
    # each side's outputs typed as its own model has them: a value that the two models
    # shape differently inside is a difference of the region, never of its typing
    ref_outputs = [_value_info(name, before, after, "output", shapes) for name in site.outputs]
    cand_outputs = [_value_info(name, after, before, "output", shapes) for name in site.outputs]
    name = f"site {site.node}"
    reference = _model(name, ref_nodes, ref_consts, inputs, ref_outputs, before_model, site.where)
    candidate = _model(name, cand_nodes, cand_consts, inputs, cand_outputs, after_model, site.where)
    return reference, candidate


def _closed(nodes: list[onnx.NodeProto], scope: Scope):
    """The nodes with the Constant nodes they read prepended, the initializers they read,
    and the names of the free values they read (graph inputs, other nodes' outputs,
    captured outer values)."""
    constants: list[onnx.NodeProto] = []
    tensors: list[onnx.TensorProto] = []
    free: list[str] = []
    for name in reads(nodes):
        producer = scope.producer.get(name)
        if name in scope.tensors and name not in scope.overridable:
            if scope.tensors[name].data_location == onnx.TensorProto.EXTERNAL:
                # a free value of its type: what is proved for every value holds for the
                # one stored (the same on both sides: _unrecorded_changes compares it)
                free.append(name)
                continue
            tensors.append(scope.tensors[name])
        elif producer is not None and producer.op_type == "Constant" and not producer.domain:
            constants.append(producer)
        else:
            free.append(name)
    for node in nodes:
        if any(a.ref_attr_name for a in node.attribute):
            raise SiteOutside(
                f"node {node_label(node)!r} ({node.op_type}) reads an attribute of its "
                "function, so the site is not a model of its own"
            )
    return [*constants, *nodes], tensors, free


def _value_info(
    name: str, first: Scope, then: Scope, what: str, shapes: bool = True
) -> onnx.ValueInfoProto:
    """The value's type in `first`, else in `then` (with `shapes`, only with a shape); an
    initializer's (one stored as external data is a free value of a site) by its tensor;
    a site's output that is a graph's output, where inference gives it no shape, as the
    graph declares it (`_typed_scopes`: a condition of the proof, never a site's input's
    type: red team of 6fe6590)."""
    type_proto = first.type_protos.get(name) or then.type_protos.get(name)
    if what == "output" and not _shaped(type_proto):
        for scope in (first, then):
            declared = scope.declared_outputs.get(name)
            if _shaped(declared):
                type_proto = declared
                break
    stored = first.tensors.get(name) or then.tensors.get(name)
    if type_proto is None and stored is not None:
        type_proto = onnx.helper.make_tensor_type_proto(stored.data_type, stored.dims)
    if type_proto is None or not type_proto.HasField("tensor_type"):
        raise SiteOutside(f"the site's {what} {name!r} has no known tensor type")
    if shapes and not type_proto.tensor_type.HasField(
        "shape"
    ):  # (a declared shape is no fact: _typed)
        raise SiteOutside(
            f"the site's {what} {name!r} has no shape that inference gives from the graph "
            "inputs and constants"
        )
    info = onnx.ValueInfoProto(name=name)
    info.type.CopyFrom(type_proto)
    return info


def _model(name, nodes, tensors, inputs, outputs, model: onnx.ModelProto, where: str):
    graph = onnx.helper.make_graph(nodes, name, inputs, outputs, initializer=tensors)
    imports = {i.domain: i.version for i in model.opset_import}
    if where.startswith("function "):  # a function's own imports, in its subgraphs too
        function = next(f for f in model.functions if _in_function(where, f))
        imports.update({i.domain: i.version for i in function.opset_import})
    opsets = [onnx.helper.make_opsetid(d, v) for d, v in imports.items()]
    return onnx.helper.make_model(graph, opset_imports=opsets, ir_version=model.ir_version)


def _in_function(where: str, function: onnx.FunctionProto) -> bool:
    """Whether `where` (a scope's name) is the function's body or a subgraph in it."""
    body = f"function {function.domain}::{function.name}"
    return where == body or where.startswith(body + " > ")


__all__ = [
    "FULL_ELEMENTS",
    "SiteProof",
    "SitesReport",
    "prove_models",
    "prove_regions",
    "prove_run",
    "prove_site",
    "prove_stages",
    "site_models",
]


# --- `maxlower prove A B`: the differing regions of two models ------------------------------
def prove_models(
    reference: onnx.ModelProto,
    candidate: onnx.ModelProto,
    *,
    dims=None,
    max_dim: int = 4,
    timeout: float = 60.0,
    policy: Policy | None = None,
) -> ProofReport | SitesReport:
    """The whole-model proof (maxlower.prove.core.prove) when both models are inside the
    fragment and small enough; otherwise, or when it is inconclusive, the proof by
    regions: the nodes that are not the same in both models (op, domain, attributes,
    inputs, outputs), grouped by the values that link them, each region proved as a site.
    The shared nodes are taken as equal, which across opsets holds only where the node's
    schema did not change: a node whose schema did is a region of its own, and the
    report states the assumption."""
    policy = policy or Policy()
    refused = interface_refutation(reference, candidate, policy, time.perf_counter())
    if refused is not None:
        return refused
    start = time.perf_counter()
    # one deadline for the whole-model proof and the regions after it (--timeout)
    with budgets.current().tighter(start + timeout, timeout).active():
        return _prove_models(reference, candidate, dims, max_dim, timeout, policy)


def _prove_models(reference, candidate, dims, max_dim, timeout, policy):
    whole = None
    if _in_fragment(reference) and _in_fragment(candidate):
        small = max(_elements(reference.graph.input, max_dim), 1) <= FULL_ELEMENTS
        if small:
            whole = prove(
                reference, candidate, dims=dims, max_dim=max_dim, timeout=timeout, policy=policy
            )
            if whole.status != INCONCLUSIVE or budgets.current().remaining() <= 0:
                return whole  # (past the deadline, regions have no time left either)
    regions = _prove_by_regions(reference, candidate, dims, max_dim, timeout, policy)
    if whole is not None and regions.status == INCONCLUSIVE:
        return whole  # (what stopped the whole model's proof says more than a region's)
    return regions


def _prove_by_regions(reference, candidate, dims, max_dim, timeout, policy):
    start = time.perf_counter()
    undecided = finish_report(PROVED, policy, [], set(), start)
    shapes = shape_refutation(reference, candidate, undecided, start)
    if shapes.status == COUNTEREXAMPLE:  # (regions prove values, not the declared shapes)
        return shapes
    # Regions prove values where the models differ; an invalid candidate is refuted as
    # a whole first (as `prove` does), whatever its regions compute.
    invalid = invalid_candidate(reference, candidate)
    if invalid is not None:
        return finish_report(COUNTEREXAMPLE, policy, [], set(), time.perf_counter(), reason=invalid)
    differing = differing_defaults(reference, candidate)
    if differing:  # a region reads such an input as free, for all values, never the defaults
        reason = (
            f"inputs {differing} have different defaults in the two models, and the proof "
            "by regions takes each as a free input, not as its default; the whole-model "
            "proof, which tries both, did not decide"
        )
        return finish_report(INCONCLUSIVE, policy, [], set(), time.perf_counter(), reason=reason)
    report = prove_regions(
        reference, candidate, dims=dims, max_dim=max_dim, timeout=timeout, policy=policy
    )
    return _refuted_only_where_the_models_differ(report, reference, candidate, policy)


def _refuted_only_where_the_models_differ(report, reference, candidate, policy):
    """A region that differs refutes the models only where they differ: its counterexample
    stands only with inputs of the whole models on which onnx.reference shows them differ
    (the region's own, when they are the models' inputs, else drawn: core.model_witness).
    A difference no such input shows (a value only a dead branch reads, a value the two
    models shape differently but use alike, a region's inner values, a runtime that has no
    kernel for the candidate) leaves that site inconclusive, with what the region showed:
    never a REFUTED that does not reproduce. The search runs the whole models, within the
    proof's deadline (--timeout): out of time, the site is inconclusive."""
    for site in report.sites:
        if site.status != COUNTEREXAMPLE:
            continue
        found = site.counterexample
        dims = found.dims if found is not None else {}
        given = found.inputs if found is not None else {}
        what = found.lines()[0] if found is not None else site.reason
        try:
            witness = model_witness(reference, candidate, dims, given, policy)
        except OverBudget as error:
            _not_shown(
                site,
                f"the region differs ({what}), and {error} before inputs of "
                "the whole models showing it were found",
            )
            continue
        if witness is not None:
            shown, how, outputs = witness
            if site.proof is None:  # (a verdict without a proof: its reason stands)
                continue
            if how.startswith("cannot run: "):
                site.proof.counterexample = Counterexample(
                    dims,
                    shown,
                    first_output(reference),
                    None,
                    "a result",
                    f"onnx.reference checking shape annotations fails: {how[12:]}",
                    "cannot run",
                    True,
                    replay="onnx.reference checking shape annotations runs the reference "
                    "and fails on the candidate",
                )
            else:  # the models' own counterexample, on their inputs, replayable as written
                site.proof.counterexample = counterexample_of(
                    reference, candidate, dims, shown, policy, True, outputs
                )
            site.reason = site.proof.counterexample.lines()[0]
            continue
        _not_shown(
            site,
            f"the region differs ({what}), but onnx.reference shows the two "
            "models' outputs equal on the region's inputs and on drawn inputs: its "
            "difference may not reach an output, and no input found shows that it does",
        )
    return report


def _not_shown(site: SiteProof, reason: str) -> None:
    """The region's refutation, not shown on the whole models: inconclusive, saying why."""
    site.status, site.reason = INCONCLUSIVE, reason
    if site.proof is not None:  # no inputs to write: the region's are not the models'
        site.proof.status, site.proof.reason = INCONCLUSIVE, reason
        site.proof.counterexample = None


def prove_regions(
    reference: onnx.ModelProto,
    candidate: onnx.ModelProto,
    *,
    dims=None,
    max_dim: int = 4,
    timeout: float = 60.0,
    policy: Policy | None = None,
) -> SitesReport:
    """Prove the differing regions of two models' main graphs; see `prove_models`."""
    policy = policy or Policy()
    start = time.perf_counter()
    _same_interface(reference, candidate)
    reference, candidate = _typed(reference), _typed(candidate)
    ref_scope, cand_scope = scopes(reference)["main graph"], scopes(candidate)["main graph"]
    versions = (_default_opset(reference), _default_opset(candidate))
    pairs: list = []
    shared = shared_nodes(reference, candidate, ref_scope.nodes, cand_scope.nodes, pairs)
    regions, unmatched = _regions(ref_scope, cand_scope, shared)
    options = ProofOptions(max_dim, timeout, policy.signed_zeros)
    scoped = ({"main graph": ref_scope}, {"main graph": cand_scope})
    retyped = _retyped_inputs(reference, candidate)
    proofs = [
        _reads_retyped(site, retyped)
        or prove_site("regions", site, reference, candidate, *scoped, options, dims)
        for site in regions
    ]
    proofs += [_unmatched_proof(nodes, read=_read(nodes, cand_scope)) for nodes in unmatched]
    proofs += [_unmatched_proof([], f"graph input {n!r} is {why}") for n, why in retyped.items()]
    if differing_sources(reference, candidate, [o.name for o in reference.graph.output]):
        what = "a graph output no node makes that the models give as different constants or inputs"
        proofs.append(_unmatched_proof([], what))
    assumptions = sorted({a for p in proofs if p.proof for a in p.proof.assumptions})
    if versions[0] != versions[1]:
        assumptions.append(
            f"the {len(shared) // 2} node(s) the models share compute the same at opsets "
            f"{versions[0]} and {versions[1]} (each one's schema is the same at both, or "
            "its versions differ only where conversion relabels)"
        )
        relabelled = relabelled_pairs(reference, candidate, pairs)
        if relabelled:
            assumptions.append(
                "shared across versions, as conversion relabels (no change of meaning "
                "between them; every attribute left out means the same at both): "
                + ", ".join(relabelled)
            )
    return SitesReport(proofs, policy, time.perf_counter() - start, "sites", assumptions)


def _typed(model: onnx.ModelProto) -> onnx.ModelProto:
    """The model with the value types shape inference gives (a region's free inputs are
    values inside the graph, proved at those types only), inferred from what holds in
    every run: the graph inputs' declared types and the true constants. Neither the
    model's own value_info nor the shapes its graph outputs and subgraph outputs declare
    (nothing checks them at run time: onnxruntime and onnx.reference run a model that
    breaks them) nor an overridable default (an initializer a caller may
    feed: data propagation would fold its value into a shape) is taken as a fact; a value
    inference cannot type is left untyped (its region inconclusive)."""
    from maxlower.prove.models import defaults

    bare = onnx.ModelProto()
    bare.CopyFrom(model)
    for graph in graph_protos(bare.graph):
        _drop_declared_shapes(graph)
    overridable = set(defaults(model))
    kept = [t for t in bare.graph.initializer if t.name not in overridable]
    del bare.graph.initializer[:]
    bare.graph.initializer.extend(kept)
    try:
        infer = functools.partial(onnx.shape_inference.infer_shapes, data_prop=True)
        # Reshapes to shapes computed at run time ranked (a fact of Reshape's definition)
        inferred = with_reshape_ranks(infer(bare), infer)
    except (onnx.shape_inference.InferenceError, onnx.checker.ValidationError):
        inferred = bare
    typed = onnx.ModelProto()
    typed.CopyFrom(model)
    del typed.graph.value_info[:]
    typed.graph.value_info.extend(inferred.graph.value_info)
    for declared, found in zip(typed.graph.output, inferred.graph.output):
        declared.type.CopyFrom(found.type)  # (the interface was checked on the models)
    return typed


def _drop_declared_shapes(graph: onnx.GraphProto) -> None:
    """Forget the shapes a graph declares for what it computes: its value_info and its
    outputs' shapes (a graph output's, or an If branch's, declared [2] is no fact about
    the value: neither runtime checks it), keeping the element types."""
    del graph.value_info[:]
    for output in graph.output:
        if output.type.HasField("tensor_type"):
            output.type.tensor_type.ClearField("shape")


def _in_fragment(model: onnx.ModelProto) -> bool:
    return not model.functions and not _outside_ops(model)


def _outside_ops(model: onnx.ModelProto) -> list[str]:
    """The ops of `model` (subgraphs included) the interpreter has no semantics for."""
    from maxlower.prove.semantics import Interpreter

    found = []
    for graph in graph_protos(model.graph):
        for node in graph.node:
            default = node.domain in ("", "ai.onnx")
            if not default:
                found.append(f"{node.domain}.{node.op_type}")
            elif not hasattr(Interpreter, f"op_{node.op_type}"):
                found.append(node.op_type)
    return found


def _default_opset(model: onnx.ModelProto) -> int | None:
    return next((i.version for i in model.opset_import if i.domain in ("", "ai.onnx")), None)


def _same_interface(reference: onnx.ModelProto, candidate: onnx.ModelProto) -> None:
    """The models must have the same interface (maxlower.prove.models, the one rule every
    door applies; `prove_models` refutes a pair that has not)."""
    from maxlower.errors import InvalidModelError

    differences = interface_differences(reference, candidate)
    if differences:
        raise InvalidModelError(f"the models' interfaces differ: {differences[0]}")


def _retyped_inputs(reference: onnx.ModelProto, candidate: onnx.ModelProto) -> dict[str, str]:
    """{graph input: how the models differ there ("float32[N] in the reference and ...")}
    for the inputs of another type, shape or default value in each model (a region's free
    input takes one type in both)."""
    from maxlower.changes import type_text

    found = {}
    names = [v.name for v in reference.graph.input]
    for name in differing_sources(reference, candidate, names):
        a, b = (next(v for v in m.graph.input if v.name == name) for m in (reference, candidate))
        found[name] = (
            f"{type_text(a.type)} in the reference and {type_text(b.type)} in the candidate"
            if a.type != b.type
            else "of another default value (initializer) in each model"
        )
    return found


def _reads_retyped(site: Site, retyped: dict[str, str]) -> SiteProof | None:
    """An inconclusive verdict for a region that reads a graph input the models type
    differently (its models would take the reference's type on both sides); else None."""
    name = next((n for n in reads([*site.before, *site.after]) if n in retyped), None)
    if name is None:
        return None
    return SiteProof(
        "regions",
        site.where,
        site.node,
        site.op_type,
        ", ".join(site.kinds),
        "-",
        INCONCLUSIVE,
        0.0,
        0,
        f"it reads graph input {name!r}, {retyped[name]}, and a region's models take one "
        f"type of each input; {REMEDY}",
        None,
    )


def _unmatched_proof(
    nodes: list[onnx.NodeProto], what: str | None = None, read: bool = True
) -> SiteProof:
    """An inconclusive verdict for what regions cannot pair: nodes only the candidate has
    (whose values are read: the reference holds those values otherwise; or that nothing
    reads), or a constant graph output."""
    label = node_label(nodes[0]) if nodes else "<graph outputs>"
    op_type = ", ".join(dict.fromkeys(n.op_type for n in nodes)) or "-"
    reason = what or (
        "the candidate computes values here that the reference does not compute in any "
        "node (an initializer or a graph input there), so no region pairs them"
        if read
        else "the candidate has nodes here that the reference has not and whose values "
        "nothing reads: whether they run at every input (a node that fails makes the whole "
        "candidate fail) is not proved by regions"
    )
    return SiteProof(
        "regions",
        "main graph",
        label,
        op_type,
        "candidate only",
        "-",
        INCONCLUSIVE,
        0.0,
        0,
        f"{reason}; {REMEDY}",
        None,
    )


def _regions(
    ref: Scope, cand: Scope, shared: set[int]
) -> tuple[list[Site], list[list[onnx.NodeProto]]]:
    """The differing nodes of both models, grouped by the values they make (a region's
    nodes link through values made inside it), as sites; and the groups of candidate
    nodes with no reference node. Such a group is never dropped as dead code, even when
    nothing reads its values: onnx.reference and onnxruntime run every node, so one that
    fails (an Unsqueeze axis out of range, say) makes the candidate fail where the
    reference runs."""
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    differing = {
        "ref": [n for n in ref.nodes if id(n) not in shared],
        "cand": [n for n in cand.nodes if id(n) not in shared],
    }
    for side in ("ref", "cand"):
        made = {o for n in differing[side] for o in n.output if o}
        for node in differing[side]:
            linked = [o for o in node.output if o] + [i for i in reads([node]) if i in made]
            for name in linked[1:]:
                parent[find(name)] = find(linked[0])
    groups: dict[str, dict[str, list[onnx.NodeProto]]] = {}
    for side in ("ref", "cand"):
        for node in differing[side]:
            outputs = [o for o in node.output if o]
            if not outputs:
                continue
            groups.setdefault(find(outputs[0]), {"ref": [], "cand": []})[side].append(node)
    sites = [_region_site(g["ref"], g["cand"], ref, cand) for g in groups.values() if g["ref"]]
    unmatched = [g["cand"] for g in groups.values() if not g["ref"]]
    return sites, unmatched


def _read(nodes: list[onnx.NodeProto], scope: Scope) -> bool:
    """Whether a value `nodes` make is read outside them, or is a graph output."""
    own = {id(n) for n in nodes}
    made = {o for n in nodes for o in n.output if o}
    reads = {i for n in scope.nodes if id(n) not in own for i in n.input}
    return bool(made & (reads | set(scope.outputs)))


def _region_site(ref_nodes, cand_nodes, ref: Scope, cand: Scope) -> Site:
    inside = {id(n) for n in ref_nodes}
    read_elsewhere = {i for n in ref.nodes if id(n) not in inside for i in reads([n])}
    made = dict.fromkeys(o for n in ref_nodes for o in n.output if o)
    outputs = [o for o in made if o in read_elsewhere or o in ref.outputs]
    return Site(
        where="main graph",
        node=node_label(ref_nodes[0]),
        op_type=", ".join(dict.fromkeys(n.op_type for n in ref_nodes)),
        kinds=[f"differs ({len(ref_nodes)} node(s) → {len(cand_nodes)})"],
        messages=[],
        before=ref_nodes,
        after=cand_nodes,
        before_types={},
        after_types={},
        inputs=reads(ref_nodes),
        outputs=outputs,
        new_constants=[],
    )
