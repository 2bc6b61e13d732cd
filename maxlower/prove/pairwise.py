"""The compositional argument for a fold of one two-input form: prove it once on scalars.

ONNX's reference computes Max(x0, x1, ..., xk) elementwise as numpy does, a fold from the
left of the two-input max: R(...R(R(x0, x1), x2)..., xk), where R(a, b) is the max of one
element each (broadcasting only chooses which elements meet). A rewrite that builds the
same fold of another two-input form B (the chain of exact comparisons and selects of
passes/version/max.py, say) equals the reference for every input, at every size and arity,
once the lemma

    for all scalars a, b:  B(a, b) = R(a, b)    (bit for bit: the sign of zero counts too)

holds. By induction on the term: replacing each B(s, t) in the candidate's output term by
R(s, t) keeps its value, and leaves the reference's term. The equality must be exact, not
up to ±0, so that it is a congruence (a -0.0 where the reference has +0.0 could change what
a later step does).

`pairwise_lemma` proves the lemma with the solver on the one-element two-input instance of
the rule; `composed_equal` checks an instance without a solver: it runs both graphs on
the same symbolic inputs, rewrites the candidate's output terms bottom-up (each match of B,
its two arguments bound consistently, becomes R) and asks whether they are then the
reference's terms, node for node (z3 hash-conses terms, so `eq` is identity). Both sides
must be defined everywhere (no float → integer Cast whose range the run depends on).
"""

from __future__ import annotations

import dataclasses
import time

import onnx
import z3

from maxlower.prove import solving
from maxlower.prove.semantics import Interpreter, OutsideFragment

# Bit-blasting: the lemma of the opset 7-8 form of 64-bit Max (three int64 → float64
# conversions, rounded) is proved this way in seconds, where z3's default strategy for
# floating point gives up after minutes.
BIT_BLAST = ("simplify", "fpa2bv", "simplify", "bit-blast", "sat")


@dataclasses.dataclass(frozen=True)
class Lemma:
    """B(a, b) = R(a, b) for all a, b: `candidate` is B's term, `reference` R's."""

    a: z3.ExprRef
    b: z3.ExprRef
    reference: z3.ExprRef
    candidate: z3.ExprRef
    seconds: float


def _runs(before: onnx.ModelProto, after: onnx.ModelProto):
    """Both models' runs on the same symbolic inputs (None: a symbolic dim, or a run that
    is defined only under conditions)."""
    from maxlower.prove.core import dim_names_of, signature_of, symbolic_inputs

    signature = signature_of(before, after)
    if dim_names_of(signature):
        return None
    inputs, _ = symbolic_inputs(signature, {}, {})
    runs = [Interpreter().interpret(model, inputs) for model in (before, after)]
    if any(not z3.is_true(z3.simplify(z3.And(*run.defined))) for run in runs):
        return None
    return inputs, runs


def pairwise_lemma(before: onnx.ModelProto, after: onnx.ModelProto, timeout: float) -> Lemma | None:
    """The lemma from a two-input instance with one element per input, proved; None when
    it is not that instance, or the lemma is refuted or not proved within `timeout`."""
    start = time.perf_counter()
    try:
        found = _runs(before, after)
    except OutsideFragment:
        return None
    if found is None:
        return None
    inputs, (ref, cand) = found
    if len(inputs) != 2 or any(t.arr.size != 1 for t in inputs.values()):
        return None
    if len(ref.outputs) != 1 or len(cand.outputs) != 1:
        return None
    r, c = ref.outputs[0], cand.outputs[0]
    if r.dtype != c.dtype or r.arr.size != 1 or r.shape != c.shape:
        return None
    a, b = (t.arr.reshape(-1)[0] for t in inputs.values())
    r_term, c_term = r.arr.reshape(-1)[0], c.arr.reshape(-1)[0]
    solver = z3.Then(*BIT_BLAST).solver()
    solver.add(r_term != c_term)
    if solving.check(solver, timeout).status != "unsat":
        return None
    return Lemma(a, b, r_term, c_term, time.perf_counter() - start)


def composed_equal(lemma: Lemma, before: onnx.ModelProto, after: onnx.ModelProto) -> bool:
    """Whether `after`'s outputs are, term for term, `before`'s once every instance of the
    lemma's candidate form is replaced by its reference form (True proves them equal for
    every input; False proves nothing)."""
    try:
        found = _runs(before, after)
    except OutsideFragment:
        return False
    if found is None:
        return False
    _, (ref, cand) = found
    if len(ref.outputs) != len(cand.outputs):
        return False
    rewrite = _Rewriter(lemma)
    for r, c in zip(ref.outputs, cand.outputs):
        if r.dtype != c.dtype or r.shape != c.shape:
            return False
        try:
            if not all(rewrite(q).eq(p) for p, q in zip(r.arr.reshape(-1), c.arr.reshape(-1))):
                return False
        except z3.Z3Exception:  # a term z3 cannot rebuild from its parts: no claim
            return False
    return True


class _Rewriter:
    """Top-down: a term that matches B(s, t) becomes R(rewrite(s), rewrite(t)); any other
    term keeps its operator over its rewritten arguments."""

    def __init__(self, lemma: Lemma) -> None:
        self.lemma = lemma
        self.memo: dict[int, z3.ExprRef] = {}

    def __call__(self, term: z3.ExprRef) -> z3.ExprRef:
        key = term.get_id()
        if key not in self.memo:
            self.memo[key] = self._rewrite(term)
        return self.memo[key]

    def _rewrite(self, term: z3.ExprRef) -> z3.ExprRef:
        lemma = self.lemma
        binding: dict[int, z3.ExprRef] = {}
        if _match(lemma.candidate, term, (lemma.a, lemma.b), binding):
            s, t = (binding.get(v.get_id(), v) for v in (lemma.a, lemma.b))
            return z3.substitute(lemma.reference, (lemma.a, self(s)), (lemma.b, self(t)))
        if not z3.is_app(term) or term.num_args() == 0:
            return term
        return term.decl()(*[self(child) for child in term.children()])


def _match(pattern, term, holes, binding: dict[int, z3.ExprRef]) -> bool:
    """Whether `term` is `pattern` with each hole replaced by one term throughout."""
    for hole in holes:
        if pattern.eq(hole):
            bound = binding.setdefault(hole.get_id(), term)
            return bound.eq(term)
    if not (z3.is_app(pattern) and z3.is_app(term)):
        return pattern.eq(term)
    if pattern.num_args() != term.num_args() or not pattern.decl().eq(term.decl()):
        return False
    if pattern.num_args() == 0:  # a constant (its value is its declaration for numerals)
        return pattern.eq(term)
    return all(_match(p, t, holes, binding) for p, t in zip(pattern.children(), term.children()))


__all__ = ["Lemma", "composed_equal", "pairwise_lemma"]
