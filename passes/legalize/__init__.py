"""LegalizePass: rewrite every node a backend profile does not accept, exactly and cheaply.

    profile without ArgMax:   ArgMax(x)      →  ReduceMax + Equal + Where + ReduceMin
    profile without Max:      Max(a, b, c)   →  Where(Or(Greater, IsNaN), ...) twice
    onnxruntime (no int16 Max kernel): Max(a: int16, b) → Cast(Max(Cast(a), Cast(b)))

For each node of the default domain that the profile rejects (main graph, subgraphs and
model-local functions), every decomposition of its op (`passes.decompose.DECOMPOSITIONS`) is
tried on a one-node scratch copy (`scratch.Scratch`). A candidate stands if its result passes
the full checker at the model's opset and every node it leaves is accepted, after the
rejected ones have been legalised the same way (recursively, so ArgMax → ReduceMax → Slice
tree → Max → Where is found). The cheapest candidate by `cost.graph_cost` (weights measured
by benchmarks/decompose_latency.py) replaces the node (one that used a decomposition marked
`last_resort` only when nothing else fits). Forms are memoised by node signature (op,
attributes, input types, shapes, constants), so a tree of equal Max nodes is planned once.
When no candidate stands, ConversionError names the node, what the profile rejects, and why
each rewrite failed.

Preconditions: types and shapes are known where rewrites need them (run shape inference
first; `maxlower.lower` does). A node whose input types are unknown is checked with what is
known (see the profile's `rejection`).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Protocol

import onnx_ir as ir

from passes.builder import FAMILY, min_ir_version
from passes.decompose import DECOMPOSITIONS
from passes.errors import ConversionError
from passes.function_attrs import (
    ResolveAttributeReferencesPass,
    copies_for_every_call,
    unresolved_reference,
)
from passes.function_types import InferFunctionTypesPass
from passes.graph_utils import containers, node_label, subgraph_places
from passes.legalize import cost
from passes.legalize.apply import apply_decomposition
from passes.legalize.rejection import Rejection, is_final, rule_of
from passes.legalize.scratch import Scratch, signature, splice
from passes.names import Namer
from passes.one_node import MIRROR, mirrors_of


class Profile(Protocol):
    """What a backend accepts. `rejection` returns None for an accepted node, else why not
    (one line, e.g. "no CPU kernel for ArgMax-13 with T=uint16")."""

    @property
    def name(self) -> str: ...  # read-only: a frozen dataclass's field fits

    def rejection(self, node: ir.Node, opset: int) -> str | None: ...


@dataclasses.dataclass(frozen=True)
class Lowering:
    """One node rewritten by the pass, for summaries."""

    where: str
    node: str
    op_type: str
    rejection: str
    steps: tuple[str, ...]  # decomposition names, outermost first
    nodes_after: int
    rule: str = ""  # the profile rule that rejects it ("[ops.ArgMax] select_last_index")
    source: str = ""  # where that rule is documented, as the profile file cites it
    cost: float = 0.0  # the planner's estimate of the form (cost.graph_cost), native op ~1


@dataclasses.dataclass(frozen=True)
class Unlowered:
    """A rejected node with no exact form (LegalizePass(keep_going=True) lists them)."""

    where: str
    node: str
    op_type: str
    rejection: str
    reason: str
    remedy: str
    rule: str = ""
    source: str = ""


@dataclasses.dataclass
class _Form:
    graph: ir.Graph  # a legal scratch graph, kept as a template and cloned for each use
    cost: float
    steps: tuple[str, ...]
    size: int
    last_resort: bool = False  # it used a last-resort decomposition somewhere

    @property
    def rank(self) -> tuple[bool, float]:
        return (self.last_resort, self.cost)


class _Cycle(Exception):
    pass


MAX_DEPTH = 12  # nested rewrites of one node; ArgMax → ReduceMax → tree → Max → ... needs 5


@dataclasses.dataclass
class LegalizeResult(ir.passes.PassResult):
    """LegalizePass's result: also each node it rewrote, why and into what."""

    lowerings: list[Lowering] = dataclasses.field(default_factory=list)
    unlowered: list[Unlowered] = dataclasses.field(default_factory=list)


class LegalizePass(ir.passes.InPlacePass):
    """Make every default-domain node acceptable to `profile`, or raise ConversionError.

    `keep_going=True` (a pre-flight check): a node without an exact form is left as it is
    and listed in `unlowered` instead, and the pass goes on with the next node.
    """

    def __init__(self, profile: Profile, *, keep_going: bool = False) -> None:
        super().__init__()
        if not callable(getattr(profile, "rejection", None)):
            # passes never import maxlower, where profiles are read: say where to go
            raise TypeError(
                f"LegalizePass takes a loaded profile, not {profile!r}: for a profile by "
                f"name or path, use maxlower.LegalizePass({profile!r}), or pass "
                f"maxlower.load_profile({profile!r})"
            )
        self.profile = profile
        self.keep_going = keep_going

    if TYPE_CHECKING:  # onnx_ir's __call__ returns what `call` returns: say so to type checkers

        def __call__(self, model: ir.Model | ir.passes.PassResult, /) -> LegalizeResult: ...

    def call(self, model: ir.Model) -> LegalizeResult:
        resolved = False
        if model.functions:
            # Attributes the calls give are values where every call agrees (first: they
            # decide types), and function inputs are untyped: their calls say what they get.
            resolved = ResolveAttributeReferencesPass()(model).modified
            InferFunctionTypesPass()(model)
        lowerings: list[Lowering] = []
        unlowered: list[Unlowered] = []
        namer = Namer.of_model(model)
        for where, container, opsets in containers(model):
            opset = opsets.get("")
            if opset is None:
                continue
            planner = _Planner(
                self.profile, opset, isinstance(container, ir.Function), model.ir_version
            )
            places = subgraph_places(where, container)  # "main graph > If 'pick' > then_branch"
            for node in list(ir.traversal.RecursiveGraphIterator(container)):
                if node.domain not in ("", "ai.onnx") or node.graph is None:
                    continue
                unresolved = _unresolved_family_reference(node)
                if unresolved is not None:  # what the profile says depends on the values
                    if not self._accepted_for_every_call(node, opset):
                        raise unresolved
                    continue
                rejection = self.profile.rejection(node, opset)
                if rejection is None:
                    continue
                place = places.get(id(node.graph), where)
                try:
                    form = planner.legal_form(node)
                except ConversionError as error:
                    if not self.keep_going:
                        raise
                    unlowered.append(_unlowered(place, node, rejection, error))
                    continue
                mirrors = mirrors_of(node)
                lowerings.append(
                    Lowering(
                        place,
                        node_label(node),
                        node.op_type,
                        str(rejection),
                        form.steps,
                        form.size,
                        *rule_of(rejection),
                        round(form.cost, 2),
                    )
                )
                splice(form.graph.clone(), mirrors, node, namer)
        if lowerings:  # IR 4 lets the initializers rewrites add stand apart from the inputs
            model.ir_version = max(model.ir_version, 4)
        return LegalizeResult(model, bool(lowerings) or resolved, lowerings, unlowered)

    def _accepted_for_every_call(self, node: ir.Node, opset: int) -> bool:
        """Whether the profile accepts a node that takes attributes from its function's
        calls, with every value they give (then it stays as it is)."""
        copies = copies_for_every_call(node, opset)
        return copies is not None and all(
            self.profile.rejection(copy.node, opset) is None for copy in copies
        )


class _Planner:
    """Finds the cheapest legal form of a node in one container (one opset)."""

    def __init__(self, profile: Profile, opset: int, in_function: bool, ir_version: int):
        self.profile = profile
        self.opset = opset
        self.in_function = in_function
        self.ir_version = max(ir_version, min_ir_version(opset), 4)
        self._memo: dict[tuple, _Form | _NoForm] = {}
        self._cycles = 0

    def legal_form(self, node: ir.Node, stack: tuple = ()) -> _Form:
        key = signature(node, self.opset, self.in_function)
        cached = self._memo.get(key)
        if isinstance(cached, _NoForm):
            raise _NoForm(
                node_label(node), node.op_type, cached.reason, cached.remedy, cached.missing
            )
        if cached is not None:
            return cached
        ops = [op for _, op in stack]
        same = any(key == outer for outer, _ in stack)  # a rewrite that gives the node back
        if same or (node.op_type in ops and ops[-1] != node.op_type) or len(stack) >= MAX_DEPTH:
            # X → Y → X never ends (Max → stacked ReduceMax → Slice tree of Max → ...);
            # X → X is a step of the same op (a chain, a widening) and always gets smaller.
            self._cycles += 1
            raise _Cycle
        cycles_before = self._cycles
        rejection = self.profile.rejection(node, self.opset)
        if is_final(rejection):  # no form can lift it: say so, with the profile's remedy
            assert isinstance(rejection, Rejection) and rejection.remedy is not None
            raise _NoForm(
                node_label(node),
                node.op_type,
                f"profile {self.profile.name!r} does not accept it ({rejection}), and no "
                "exact rewrite can change that",
                rejection.remedy,
                {rejection.remedy},
            )
        failures: list[tuple[str, str]] = []
        missing = {f"{ACCEPTS}{node.op_type} ({rejection})"}
        best: _Form | None = None
        for form in self.candidates(node, (*stack, (key, node.op_type)), failures, missing):
            if best is None or form.rank < best.rank:
                best = form
        if best is None:
            tried = "; ".join(f"{name}: {why}" for name, why in failures) or "none applies"
            error = _NoForm(
                node_label(node),
                node.op_type,
                f"profile {self.profile.name!r} does not accept it ({rejection}), and no exact "
                f"rewrite it accepts exists at opset {self.opset} (tried {tried})",
                _remedy(missing),
                missing,
            )
            if self._cycles == cycles_before:  # else the failure depends on the path here
                self._memo[key] = error
            raise error
        self._memo[key] = best
        return best

    def candidates(
        self,
        node: ir.Node,
        stack: tuple = (),
        failures: list[tuple[str, str]] | None = None,
        missing: set[str] | None = None,
    ) -> list[_Form]:
        """Every legal form of `node`, one per decomposition that stands (the planner keeps
        the one of lowest `rank`); why the others failed goes to `failures` and `missing`."""
        failures = failures if failures is not None else []
        missing = missing if missing is not None else set()
        forms = []
        for decomposition in DECOMPOSITIONS.get(node.op_type, []):
            try:
                form = self._try(node, decomposition, stack)
            except _Cycle:
                continue  # the rewrite needs an op that is being rewritten away already
            except ConversionError as error:
                failures.append((decomposition.name, _real_names(error.reason, node)))
                missing |= getattr(error, "missing", {error.remedy})
                continue
            if form is not None:
                forms.append(form)
        return forms

    def _try(self, node: ir.Node, decomposition, stack: tuple) -> _Form | None:
        scratch = Scratch(node, self.opset, self.ir_version)
        # Names only need to be unique in the scratch model: the final splice renames.
        namer = Namer.of_graph(scratch.graph)
        what = apply_decomposition(
            scratch.node, decomposition, self.opset, in_function=self.in_function, namer=namer
        )
        if what is None:
            return None
        scratch.check_and_infer()
        steps = [decomposition.name]
        last_resort = decomposition.last_resort
        for inner in list(ir.traversal.RecursiveGraphIterator(scratch.graph)):
            rejection = None if inner.graph is None else self.profile.rejection(inner, self.opset)
            if rejection is None:
                continue
            try:
                sub = self.legal_form(inner, stack)
            except ConversionError as error:
                raise _NoForm(
                    node_label(node),
                    node.op_type,
                    f"it leaves {inner.op_type} ({rejection}), which no rewrite fits either",
                    error.remedy,
                    getattr(error, "missing", {error.remedy}),
                ) from None
            splice(sub.graph.clone(), mirrors_of(inner), inner, namer)
            steps.extend(s for s in sub.steps if s not in steps)
            last_resort |= sub.last_resort
        reference = cost.reference_size(node)
        size = sum(1 for _ in ir.traversal.RecursiveGraphIterator(scratch.graph))
        total = cost.graph_cost(scratch.graph, reference)
        return _Form(scratch.graph, total, tuple(steps), size, last_resort)


@dataclasses.dataclass(frozen=True)
class Candidate:
    """One legal form of a node, as the planner costs it; `model` is the whole model with
    the node replaced by it (for measuring the forms against each other)."""

    steps: tuple[str, ...]
    cost: float
    last_resort: bool
    model: ir.Model

    @property
    def rank(self) -> tuple[bool, float]:
        return (self.last_resort, self.cost)


def candidate_forms(model: ir.Model, node_name: str, profile: Profile) -> list[Candidate]:
    """Every legal form the planner weighs for the main-graph node `node_name` of `model`
    (which is left as it is); LegalizePass picks the one of lowest `rank`, the first of equal
    ones."""
    opset = model.opset_imports[""]
    planner = _Planner(profile, opset, False, model.ir_version)
    node = next(n for n in model.graph if n.name == node_name)
    key = signature(node, opset, False)
    result = []
    for form in planner.candidates(node, ((key, node.op_type),)):
        copy = ir.serde.deserialize_model(ir.serde.serialize_model(model))
        target = next(n for n in copy.graph if n.name == node_name)
        splice(form.graph.clone(), mirrors_of(target), target, Namer.of_model(copy))
        copy.ir_version = max(copy.ir_version, 4)
        result.append(Candidate(form.steps, form.cost, form.last_resort, copy))
    return result


class _NoForm(ConversionError):
    """No legal form; `missing` lists what the profile (or the opset) would need."""

    def __init__(self, node_name, op_type, reason, remedy, missing: set[str]) -> None:
        super().__init__(node_name, op_type, reason, remedy)
        self.missing = missing


def _unlowered(where: str, node: ir.Node, rejection: str, error: ConversionError) -> Unlowered:
    rule, source = rule_of(rejection)
    return Unlowered(
        where,
        node_label(node),
        node.op_type,
        str(rejection),
        error.reason,
        error.remedy,
        rule,
        source,
    )


ACCEPTS = "accepts "  # marks, in `missing`, what the profile lacks (the rest are remedies)


def _remedy(missing: set[str]) -> str:
    accepts = sorted(m.removeprefix(ACCEPTS) for m in missing if m.startswith(ACCEPTS))
    others = sorted(m for m in missing if not m.startswith(ACCEPTS))
    return "; or: ".join(
        ([f"a profile that accepts {' or '.join(accepts)}"] if accepts else []) + others
    )


def _unresolved_family_reference(node: ir.Node) -> ConversionError | None:
    if node.domain not in ("", "ai.onnx") or node.op_type not in FAMILY:
        return None
    return unresolved_reference(node)


def _real_names(text: str, node: ir.Node) -> str:
    """Scratch copies call the node's inputs __mirror0, __mirror1, ...: say their names."""
    for k, value in reversed(list(enumerate(mirrors_of(node)))):
        text = text.replace(f"'{MIRROR}{k}'", repr(value.name))
    return text


__all__ = [
    "Candidate",
    "LegalizePass",
    "LegalizeResult",
    "Lowering",
    "Rejection",
    "Unlowered",
    "apply_decomposition",
    "candidate_forms",
]
