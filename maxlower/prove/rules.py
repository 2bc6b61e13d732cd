"""`maxlower prove --rules`: prove every registered rewrite rule, per dtype, at small sizes.

The rules are read from the registries, so a rule added later is covered without a change
here: every version adapter of `passes.version.registry.ADAPTERS` (op, from, to) and every
decomposition of `passes.decompose.DECOMPOSITIONS`. An instance of a rule is a one-node
model of its op (`templates`: the forms each kind of op is tried in, at size n), rewritten
by the real code path (`passes.legalize.apply_decomposition` for a decomposition, the
pipeline's `ConvertToOpsetPass` for an adapter, the path of every conversion), and the
before and after models are proved equal (`maxlower.prove.core.prove`). A rule that does not
apply to an instance (returns None) or refuses it (no exact form there: ConversionError) has
nothing to prove there.

Methods, chosen per instance (the table says which proved each row):
- `unchanged`: the rewrite left the node as it was (a type-only adapter): nothing to prove.
- `semilattice`: both graphs are max-only (Max/Min, ReduceMax/ReduceMin, Slice, Concat,
  Squeeze/Unsqueeze, Identity and the like on one data type). max is a NaN-propagating
  semilattice (associative, commutative, idempotent), so each output element is the max of
  a *set* of input elements; the graphs are equal, under ±0 counted equal, exactly when
  the sets are, which is checked without a solver, at any n.
- `lemma`: a Max/Min rule whose form is a fold of one two-input form: that form is proved
  equal to the reference's two-input max bit for bit, once, on two scalars (the solver,
  bit-blasting), and each instance is checked to be the same fold of it, term for term,
  without a solver (`maxlower.prove.pairwise`). This proves the opset 7-8 form of 64-bit
  Max (its int64 -> float64 roundings are minutes of solver time per instance otherwise).
- `order`: both graphs only compare, select and move the data (ArgMax through ReduceMax,
  Equal, IsNaN, Where and ReduceMin, say), so their results depend only on the order type
  of the inputs, and the proof runs on small ranks instead of IEEE floats or 64-bit
  integers (`maxlower.prove.order`; ±0 counted equal, so not under --signed-zeros for
  floats).
- `full`: the SMT proof at full precision.

They are tried in that order (unchanged, semilattice, lemma, order, full); each of the
first four proves only what it covers and otherwise hands the instance on.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterator

import numpy as np
import onnx
import onnx_ir as ir
from onnx import TensorProto as TP

from maxlower.prove.core import COUNTEREXAMPLE, INCONCLUSIVE, PROVED, Policy, prove
from maxlower.prove.order import order_equal
from maxlower.prove.pairwise import Lemma, composed_equal, pairwise_lemma
from maxlower.prove.semantics import FLOAT_SORTS
from maxlower.prove.semilattice import semilattice_equal
from passes.decompose.common import schema_accepts

DTYPES = [
    TP.FLOAT16,
    TP.BFLOAT16,
    TP.FLOAT,
    TP.DOUBLE,
    TP.INT8,
    TP.INT16,
    TP.INT32,
    TP.INT64,
    TP.UINT8,
    TP.UINT16,
    TP.UINT32,
    TP.UINT64,
    TP.BOOL,
]
LATEST = onnx.defs.onnx_opset_version()
LEMMA_TIMEOUTS = 5
INVALID = (onnx.checker.ValidationError, onnx.shape_inference.InferenceError)


@dataclasses.dataclass
class Row:
    rule: str  # decomposition name, or "Op from→to" for an adapter
    dtype: str
    sizes: list[int] = dataclasses.field(default_factory=list)
    instances: int = 0
    methods: set[str] = dataclasses.field(default_factory=set)
    result: str = PROVED
    seconds: float = 0.0
    note: str = ""

    def cells(self) -> list[str]:
        sizes = f"{min(self.sizes)}..{max(self.sizes)}" if self.sizes else "-"
        return [
            self.rule,
            self.dtype,
            sizes,
            sizes_proved(self.methods, self.sizes),
            "+".join(sorted(self.methods)) or "-",
            self.result + (f" ({self.note})" if self.note else ""),
            f"{self.seconds:.2f}",
        ]


@dataclasses.dataclass(frozen=True)
class Instance:
    label: str
    model: onnx.ModelProto
    opset: int


def _model(op, opset, inputs, attrs, constants=None, outputs=1) -> onnx.ModelProto:
    """A one-node model: `inputs` [(name, dtype, shape)], `constants` {name: array} given as
    initializers (constant inputs such as axes), outputs typed by shape inference."""
    constants = constants or {}
    infos = [onnx.helper.make_tensor_value_info(n, t, s) for n, t, s in inputs]
    inits = [onnx.numpy_helper.from_array(v, k) for k, v in constants.items()]
    names = [n for n, _, _ in inputs] + list(constants)
    node = onnx.helper.make_node(op, names, [f"y{i}" for i in range(outputs)], **attrs)
    outs = [onnx.helper.make_empty_tensor_value_info(f"y{i}") for i in range(outputs)]
    graph = onnx.helper.make_graph([node], "rule", infos, outs, inits)
    model = onnx.helper.make_model_gen_version(
        graph, opset_imports=[onnx.helper.make_opsetid("", opset)]
    )
    # the output types the interpreter gives (ONNX inference has no function for some old
    # versions, Max-1 say)
    inferred = onnx.shape_inference.infer_shapes(model)
    types = {v.name: v for v in inferred.graph.output if v.type.HasField("tensor_type")}
    if len(types) < outputs:
        interpreted = _interpreted(model)
        types = {
            o.name: onnx.helper.make_tensor_value_info(o.name, v.dtype, v.shape)
            for o, v in zip(model.graph.output, interpreted)
        }
    for out in model.graph.output:
        out.CopyFrom(types[out.name])
        if not out.type.tensor_type.HasField("shape"):  # run-time axes, keepdims=1: the rank
            rank = len(inputs[0][2])
            out.type.tensor_type.shape.dim.extend([onnx.TensorShapeProto.Dimension()] * rank)
    onnx.checker.check_model(model, full_check=True)
    return model


def _interpreted(model: onnx.ModelProto) -> list:
    from maxlower.prove.core import signature_of, symbolic_inputs
    from maxlower.prove.semantics import Interpreter

    inputs, _ = symbolic_inputs(signature_of(model, model), {}, {})
    return Interpreter().interpret(model, inputs).outputs


def _accepts(op: str, opset: int, dtype: int, index: int = 0) -> bool:
    """`passes.decompose.common.schema_accepts` for a TensorProto type number."""
    return schema_accepts(op, opset, ir.DataType(dtype), index)


def templates(op: str, dtype: int, n: int, opset: int) -> Iterator[Instance]:
    """One-node models of `op` on `dtype` at size n, valid at `opset` (none if the op does
    not take the type there)."""
    from passes.extremum import FAMILY_OF

    if op == "Where":
        if _accepts("Where", opset, dtype, 1):
            inputs = [("c", TP.BOOL, [n]), ("a", dtype, [n]), ("b", dtype, [n])]
            yield Instance("Where", _model("Where", opset, inputs, {}), opset)
        return
    family = FAMILY_OF.get(op)
    if family is None or not _accepts(op, opset, dtype):
        return
    version = _version(op, opset)
    # From n = 3 on, only the forms whose cost grows with n in the reduced or compared
    # length: the others (all axes, two axes, broadcasting to n x n, run-time axes) add
    # nothing that n <= 2 does not reach, and would put CI's run past its budget.
    small = n <= 2
    if op == family.elementwise:
        old = {"consumed_inputs": [0, 0]} if version < 6 else {}
        for count in (1, 2, 3) if small else (2, 3):
            inputs = [(f"x{k}", dtype, [n]) for k in range(count)]
            attrs = {"consumed_inputs": [0] * count} if old else {}
            yield Instance(f"{count}-ary", _model(op, opset, inputs, attrs), opset)
        if version >= 8 and small:
            inputs = [("a", dtype, [n, 1]), ("b", dtype, [n])]
            yield Instance("broadcast", _model(op, opset, inputs, {}), opset)
    elif op == family.reduce:
        for keepdims in (0, 1):
            for axes in ([1], [0, 1], None) if small else ([1],):
                inputs = [("x", dtype, [2, n])]
                attrs, constants = {"keepdims": keepdims}, {}
                if axes is not None and version >= 18:
                    constants = {"axes": np.array(axes, np.int64)}
                elif axes is not None:
                    attrs["axes"] = [a - 2 for a in axes] if version >= 11 else axes
                label = f"axes={axes},keepdims={keepdims}"
                yield Instance(label, _model(op, opset, inputs, attrs, constants), opset)
        if n == 1:  # an axis whose length is known only at run time: the prover takes
            # each length from 0 to its max-dim (the halving Loop's case)
            attrs = {"keepdims": 1}
            constants = {"axes": np.array([1], np.int64)} if version >= 18 else {}
            if version < 18:
                attrs["axes"] = [1]
            inputs = [("x", dtype, [2, "length"])]
            yield Instance("run-time length", _model(op, opset, inputs, attrs, constants), opset)
        if version >= 18 and small:
            inputs = [("x", dtype, [2, n]), ("axes", TP.INT64, [1])]
            yield Instance("run-time axes", _model(op, opset, inputs, {"keepdims": 1}), opset)
            attrs = {"keepdims": 1, "noop_with_empty_axes": 1}
            constants = {"axes": np.zeros(0, np.int64)}
            yield Instance(
                "noop", _model(op, opset, [("x", dtype, [2, n])], attrs, constants), opset
            )
    elif op == family.arg and n > 0:
        lasts = (0, 1) if version >= 12 else (0,)
        for last in lasts:
            for keepdims in (0, 1) if small else (1,):
                attrs = {"axis": -1 if version >= 11 else 1, "keepdims": keepdims}
                if version >= 12:
                    attrs["select_last_index"] = last
                label = f"axis=1,keepdims={keepdims},last={last}"
                yield Instance(label, _model(op, opset, [("x", dtype, [2, n])], attrs), opset)
        if small:
            attrs = {"axis": 0, "keepdims": 0}
            yield Instance("rank 1", _model(op, opset, [("x", dtype, [n])], attrs), opset)


def _version(op: str, opset: int) -> int:
    return onnx.defs.get_schema(op, opset, "").since_version


# --- applying a rule through the real code path ----------------------------------------
def apply_decomposition_to(instance: Instance, decomposition) -> onnx.ModelProto | None:
    """The instance rewritten by `decomposition` (None: it does not apply)."""
    from maxlower.serde import deserialize, serialize
    from passes.legalize import apply_decomposition

    model = deserialize(instance.model)
    node = next(iter(model.graph))
    if apply_decomposition(node, decomposition, instance.opset) is None:
        return None
    ir.passes.common.RemoveUnusedNodesPass()(model)
    return _checked(serialize(model))


def apply_adapter_to(instance: Instance, target: int) -> onnx.ModelProto:
    """The instance converted to opset `target` by the pipeline's converter."""
    from maxlower.io import check_result
    from maxlower.pipeline import whole_graph
    from passes.version.to_opset import ConvertToOpsetPass

    prepared = onnx.shape_inference.infer_shapes(instance.model)
    model, declared = whole_graph(prepared, ".")
    ConvertToOpsetPass(target)(model)
    return check_result(model, declared=declared).proto


def _checked(model: onnx.ModelProto) -> onnx.ModelProto:
    onnx.checker.check_model(model, full_check=True)
    return model


# --- the table ------------------------------------------------------------------------------
def rule_instances(max_n: int) -> Iterator[tuple[str, str, int, int, object]]:
    """(rule name, op, dtype, n, how to apply) for every rule, dtype and size."""
    from passes.decompose import DECOMPOSITIONS
    from passes.version.registry import ADAPTERS

    for (op, source, target), _adapter in ADAPTERS.items():
        for dtype in DTYPES:
            for n in range(1, max_n + 1):
                yield f"{op} {source}→{target}", op, dtype, n, ("adapter", source, target)
    for op, decompositions in DECOMPOSITIONS.items():
        for decomposition in decompositions:
            for dtype in DTYPES:
                for n in range(1, max_n + 1):
                    yield decomposition.name, op, dtype, n, ("decomposition", decomposition)


def registered_rules() -> list[str]:
    """Every rule's name, in registry order (adapters, then decompositions)."""
    return list(dict.fromkeys(rule for rule, *_ in rule_instances(1)))


def prove_rules(
    max_n: int = 4,
    timeout: float = 60.0,
    policy: Policy | None = None,
    progress=None,
    skip: frozenset[tuple[str, str]] = frozenset(),
    only: Callable[[str, str], bool] | None = None,
) -> list[Row]:
    """One row per (rule, dtype) that has an instance at some n <= max_n; the (rule,
    dtype) pairs in `skip` get a row that says so, and are not tried; with `only`, the
    (rule, dtype) pairs it accepts alone."""
    from passes.errors import ConversionError

    policy = policy or Policy()
    rows: dict[tuple[str, str], Row] = {}
    lemmas: dict[tuple[tuple[str, str], int], Lemma | None] = {}
    for rule, op, dtype, n, how in rule_instances(max_n):
        key = (rule, onnx.helper.tensor_dtype_to_np_dtype(dtype).name)
        if only is not None and not only(*key):
            continue
        if key in skip:
            rows.setdefault(key, Row(*key, result="skipped"))
            continue
        if how[0] == "adapter":
            opsets = [how[1]]
        else:
            # n >= 3 at the latest opset only (the forms that depend on the opset are
            # already met at n <= 2)
            opsets = sorted({13, LATEST} | ({20} if dtype == TP.BOOL else set()))
            opsets = opsets if n <= 2 else opsets[-1:]
        decided = rows.get(key)
        if decided is not None and decided.result != PROVED:
            continue  # the row's verdict is in: one counterexample or give-up is enough
        for opset in opsets:
            for instance in templates(op, dtype, n, opset):
                start = time.perf_counter()
                try:
                    after = _apply(how, instance)
                except (ConversionError, *INVALID):
                    # no exact form here (a refusal), or a form the legaliser's scratch check
                    # rejects as invalid ONNX at this opset: nothing is emitted to prove
                    continue
                if after is None:
                    continue
                row = rows.setdefault(key, Row(*key))
                if (key, opset) not in lemmas:
                    lemma_start = time.perf_counter()
                    lemmas[key, opset] = _lemma(how, op, dtype, opset, timeout)
                    start += time.perf_counter() - lemma_start  # counted below, once
                    row.seconds += time.perf_counter() - lemma_start
                lemma = lemmas[key, opset]
                method, result, note = _prove_instance(
                    instance.model, after, timeout, policy, lemma, dtype, max_n
                )
                row.seconds += time.perf_counter() - start
                row.instances += 1
                # a run-time length is proved at each length 0..max_n: those are its sizes
                sizes = range(max_n + 1) if _run_time_length(instance.model) else [n]
                row.sizes.extend(k for k in sizes if k not in row.sizes)
                row.methods.add(method)
                if result != PROVED and row.result == PROVED:
                    row.result, row.note = result, f"{instance.label}, n={n}: {note}"
        if progress is not None:
            progress(rule)
    return list(rows.values())


def _run_time_length(model: onnx.ModelProto) -> bool:
    dims = [d for v in model.graph.input for d in v.type.tensor_type.shape.dim]
    return any(not d.HasField("dim_value") for d in dims)


def _apply(how, instance: Instance) -> onnx.ModelProto | None:
    if how[0] == "adapter":
        return apply_adapter_to(instance, how[2])
    return apply_decomposition_to(instance, how[1])


def _lemma(how, op: str, dtype: int, opset: int, timeout: float) -> Lemma | None:
    """The rule's two-input form proved equal to the reference's on scalars (see
    maxlower.prove.pairwise), for an elementwise family op (Max, Min); else None."""
    from passes.errors import ConversionError
    from passes.extremum import FAMILY_OF

    family = FAMILY_OF.get(op)
    if family is None or op != family.elementwise:
        return None
    # one proof stands for every instance of the row: it gets five instances' time
    timeout = LEMMA_TIMEOUTS * timeout
    pair = next((i for i in templates(op, dtype, 1, opset) if i.label == "2-ary"), None)
    if pair is None:
        return None
    try:
        after = _apply(how, pair)
    except (ConversionError, *INVALID):
        return None
    if after is None or _same_graph(pair.model, after):
        return None
    return pairwise_lemma(pair.model, after, timeout)


def _prove_instance(
    before, after, timeout, policy, lemma=None, dtype=None, max_dim=4
) -> tuple[str, str, str]:
    """(method, result, note); a symbolic dim (the run-time length) takes 0..max_dim."""
    if _same_graph(before, after):
        return "unchanged", PROVED, ""
    if not policy.signed_zeros:
        verdict = semilattice_equal(before, after)
        if verdict is not None:
            return "semilattice", PROVED if verdict else COUNTEREXAMPLE, ""
    if lemma is not None and composed_equal(lemma, before, after):
        return "lemma", PROVED, ""
    # the order type merges -0.0 and +0.0: not for floats under --signed-zeros
    orderable = dtype is not None and not (policy.signed_zeros and dtype in FLOAT_SORTS)
    if orderable and order_equal(before, after, dtype, timeout, max_dim):
        return "order", PROVED, ""
    report = prove(before, after, max_dim=max_dim, timeout=timeout, policy=policy)
    note = report.reason or ""
    if report.counterexample is not None:
        note = report.counterexample.lines()[0]
    return "full", report.status if report.status != INCONCLUSIVE else INCONCLUSIVE, note


def _same_graph(before: onnx.ModelProto, after: onnx.ModelProto) -> bool:
    a, b = before.graph, after.graph
    return [(n.op_type, list(n.input), list(n.output), list(n.attribute)) for n in a.node] == [
        (n.op_type, list(n.input), list(n.output), list(n.attribute)) for n in b.node
    ] and list(a.initializer) == list(b.initializer)


# The methods whose proof of an instance holds at every size of it: the rule leaves the
# node as it is. Every other method proves the instance built at one n (the semilattice
# and order methods at any n quickly, the solver at small ones), so a row proved by them
# holds for the sizes run: no argument here covers every n of a rule's generator.
ALL_SIZES_METHODS = frozenset({"unchanged"})


def sizes_proved(methods: set[str], sizes: list[int]) -> str:
    """The 'sizes proved' cell: 'all' where every instance was proved by a method that
    holds at every size, else 'n ≤ N' and why."""
    if methods and methods <= ALL_SIZES_METHODS:
        return "all (the node is left as it is)"
    if not sizes:
        return "-"
    return f"n ≤ {max(sizes)} (each n built and proved: no all-sizes argument)"


def table(rows: list[Row]) -> str:
    header = ["rule", "dtype", "n", "sizes proved", "method", "result", "time (s)"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row.cells()) + " |" for row in rows]
    return "\n".join(lines)


def compact_table(rows: list[Row]) -> str:
    """One line per rule: its dtypes, sizes, methods, results and total time."""
    header = ["rule", "dtypes", "n", "sizes proved", "method", "result", "time (s)"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    by_rule: dict[str, list[Row]] = {}
    for row in rows:
        by_rule.setdefault(row.rule, []).append(row)
    for rule, group in by_rule.items():
        sizes = [n for r in group for n in r.sizes]
        results = sorted({r.result for r in group})
        open_rows = [f"{r.dtype}: {r.result}" for r in group if r.result != PROVED]
        lines.append(
            "| "
            + " | ".join(
                [
                    rule,
                    " ".join(r.dtype for r in group),
                    f"{min(sizes)}..{max(sizes)}" if sizes else "-",
                    sizes_proved({m for r in group for m in r.methods}, sizes),
                    "+".join(sorted({m for r in group for m in r.methods})),
                    "; ".join(open_rows) if open_rows else "/".join(results),
                    f"{sum(r.seconds for r in group):.2f}",
                ]
            )
            + " |"
        )
    return "\n".join(lines)


__all__ = ["Row", "compact_table", "prove_rules", "registered_rules", "table", "templates"]
