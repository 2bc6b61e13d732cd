"""What two models share: the main-graph nodes that compute the same in both.

    shared = shared_nodes(reference, candidate, ref_nodes, cand_nodes)  # ids, either model
    retyped = differing_sources(reference, candidate, names)            # inputs, constants

Proof by regions (maxlower.prove.sites.prove_regions) proves only the nodes that are not
shared, and takes the shared ones as equal. That is sound only if a shared node reads
nothing that differs between the models, so a node is shared when everything that gives
it its meaning is the same in both (`node_key`):

- its own fields (op, domain, overload, attributes, inputs, outputs; not its name), its
  subgraphs (If, Loop, Scan bodies) included;
- the meaning of every op it and its subgraphs run: the schema the model's opset import
  gives a default-domain op, the imported version of any other domain, and the definition
  of a model-local function it calls (its body and its opset imports, recursively);
- every name it reads from outside itself (its inputs, and the outer values its subgraphs
  read by name): an initializer's type and value, a graph input's type (the signature) and
  default value. A value another node makes needs no more: either that node is shared
  too, or it is in a region, whose proof makes its value equal in both models;
- the types inference gives its outputs, alike in both models where both say
  (`typed_alike`).

A default-domain op means the same at two versions where conversion relabels between them
(passes.version.relabel, the rule `--prove` takes a relabel by): no version between them
changed its meaning (MEANING_CHANGES), and every attribute the node leaves out means the
same at both (changed_defaults.absent_value). So Relu-14 in one model and Relu-13 in the
other are one node; RoiAlign-16 and RoiAlign-10 without coordinate_transformation_mode are
not (half_pixel against output_half_pixel). The verdict lists the pairs of versions so
assumed (`relabelled_pairs`).
"""

from __future__ import annotations

import functools

import onnx

from passes.graph_utils import op_versions
from passes.version.changed_defaults import absent_value
from passes.version.relabel import meaning_changes_between

DEFAULT_DOMAINS = ("", "ai.onnx")
MADE_BY_A_NODE = b"-"


def reads(nodes: list[onnx.NodeProto]) -> list[str]:
    """The names `nodes` (and their subgraphs) read but do not make, in order."""
    made: set[str] = set()
    read: list[str] = []
    for node in nodes:
        for name in [*node.input, *captured(node)]:
            if name and name not in made and name not in read:
                read.append(name)
        made.update(o for o in node.output if o)
    return read


def captured(node: onnx.NodeProto) -> list[str]:
    """The outer values the subgraphs of `node` read."""
    found: list[str] = []
    for body in _bodies(node):
        defined = {v.name for v in body.input} | {t.name for t in body.initializer}
        defined |= {t.values.name for t in body.sparse_initializer}
        for inner in body.node:
            found += [n for n in [*inner.input, *captured(inner)] if n and n not in defined]
            defined.update(inner.output)
        found += [o.name for o in body.output if o.name not in defined]
    return found


def _bodies(node: onnx.NodeProto) -> list[onnx.GraphProto]:
    bodies: list[onnx.GraphProto] = []
    for attr in node.attribute:
        bodies += [attr.g] if attr.type == onnx.AttributeProto.GRAPH else list(attr.graphs)
    return bodies


def shared_nodes(
    reference: onnx.ModelProto,
    candidate: onnx.ModelProto,
    ref_nodes: list[onnx.NodeProto],
    cand_nodes: list[onnx.NodeProto],
    pairs: list[tuple[onnx.NodeProto, onnx.NodeProto]] | None = None,
) -> set[int]:
    """ids of the main-graph nodes (of either model) that are the same in both: each
    reference node paired with one candidate node of the same key (appended to `pairs`)."""
    ref, cand = _Meanings(reference), _Meanings(candidate)
    by_key: dict[bytes, list[onnx.NodeProto]] = {}
    for node in cand_nodes:
        by_key.setdefault(cand.node_key(node), []).append(node)
    shared: set[int] = set()
    for node in ref_nodes:
        twins = by_key.get(ref.node_key(node))
        if twins and typed_alike(ref.types, cand.types, node.output):
            twin = twins.pop()
            shared |= {id(node), id(twin)}
            if pairs is not None:
                pairs.append((node, twin))
    return shared


def relabelled_pairs(
    reference: onnx.ModelProto,
    candidate: onnx.ModelProto,
    pairs: list[tuple[onnx.NodeProto, onnx.NodeProto]],
) -> list[str]:
    """'Relu-13/Relu-14' for each op of the shared pairs whose schema versions differ
    (default domain; their subgraphs' ops are not listed), sorted."""
    ref, cand = (
        {_domain(i.domain): i.version for i in m.opset_import}.get("")
        for m in (reference, candidate)
    )
    found = set()
    for was, now in pairs:
        if _domain(was.domain) != "":
            continue
        a, b = _schema_since(was.op_type, ref), _schema_since(now.op_type, cand)
        if a != b:
            found.add(f"{was.op_type}-{a}/{now.op_type}-{b}")
    return sorted(found)


def differing_sources(reference: onnx.ModelProto, candidate: onnx.ModelProto, names) -> list[str]:
    """Those of `names` that no node makes in one of the models (graph inputs,
    initializers) and that are not the same there in both: of another type, shape, value
    or default, or made by a node in one model only."""
    ref, cand = sources(reference), sources(candidate)
    return [n for n in names if (n in ref or n in cand) and ref.get(n) != cand.get(n)]


def sources(model: onnx.ModelProto) -> dict[str, bytes]:
    """{name: what it is} for the main graph's names that no node makes: a graph input's
    type (and default value), an initializer's type, shape and value."""
    graph = model.graph
    out = {t.name: b"tensor:" + _tensor_bytes(t) for t in graph.initializer}
    for sparse in graph.sparse_initializer:
        out[sparse.values.name] = b"sparse:" + sparse.SerializeToString(deterministic=True)
    for value in graph.input:
        kind = b"input:" + value.type.SerializeToString(deterministic=True)
        out[value.name] = kind + (b"=" + out[value.name] if value.name in out else b"")
    return out


def _tensor_bytes(tensor: onnx.TensorProto) -> bytes:
    array = onnx.numpy_helper.to_array(tensor)
    return f"{tensor.data_type}:{list(array.shape)}:".encode() + array.tobytes()


class _Meanings:
    """One model's keys: what its nodes and functions mean, beyond their own fields."""

    def __init__(self, model: onnx.ModelProto) -> None:
        self.imports = {_domain(i.domain): i.version for i in model.opset_import}
        self.sources = sources(model)
        graph = model.graph
        self.types = {v.name: v.type for v in (*graph.value_info, *graph.output)}
        self.functions = {(_domain(f.domain), f.name, f.overload): f for f in model.functions}
        self.function_keys: dict[tuple[str, str, str], bytes] = {}

    def node_key(self, node: onnx.NodeProto) -> bytes:
        """Two main-graph nodes are the same when their keys are (see the module's
        docstring)."""
        ops = b",".join(self.op_meanings(node, self.imports, frozenset()))
        read = b"".join(b"|" + self.sources.get(name, MADE_BY_A_NODE) for name in reads([node]))
        return _stripped(node).SerializeToString(deterministic=True) + b"|ops:" + ops + read

    def op_meanings(self, node: onnx.NodeProto, imports: dict, calling: frozenset) -> list[bytes]:
        """What the op of `node` and those of its subgraphs mean under `imports`."""
        found = [self.op_meaning(node, imports, calling)]
        for body in _bodies(node):
            for inner in body.node:
                found += self.op_meanings(inner, imports, calling)
        return found

    def op_meaning(self, node: onnx.NodeProto, imports: dict, calling: frozenset) -> bytes:
        domain = _domain(node.domain)
        ident = (domain, node.op_type, node.overload)
        if ident in self.functions:  # a model-local function shadows any schema
            return b"function:" + self.function_key(ident, calling)
        if domain == "":
            meaning = relabel_class(node, _schema_since(node.op_type, imports.get("")))
            if node.op_type in OPSET_SENSITIVE:  # (onnxruntime's kernel follows the opset)
                meaning += f"@opset{imports.get('')}"
            return meaning.encode()
        return f"{domain}.{node.op_type}@{imports.get(domain)}".encode()

    def function_key(self, ident: tuple[str, str, str], calling: frozenset) -> bytes:
        """A function's definition: its body, attributes and opset imports, and what the
        ops of its body mean under those imports (functions it calls, recursively)."""
        if ident in calling:  # recursion, which ONNX forbids: its name is all there is
            return f"recursive {ident}".encode()
        if ident not in self.function_keys:
            function = self.functions[ident]
            imports = {
                **self.imports,
                **{_domain(i.domain): i.version for i in function.opset_import},
            }
            inner = calling | {ident}
            ops = [m for node in function.node for m in self.op_meanings(node, imports, inner)]
            self.function_keys[ident] = (
                _stripped(function).SerializeToString(deterministic=True)
                + b"|ops:"
                + b",".join(ops)
            )
        return self.function_keys[ident]


def stripped_key(node: onnx.NodeProto) -> bytes:
    """What a node is, its name and doc strings aside (`_stripped`), as bytes."""
    return _stripped(node).SerializeToString(deterministic=True)


def _stripped(proto):
    """A copy of a node or function without the names and doc strings of it and of the
    nodes it holds (subgraphs included), which change nothing it computes."""
    copy = type(proto)()
    copy.CopyFrom(proto)
    copy.ClearField("doc_string")
    _strip(list(copy.node) if isinstance(copy, onnx.FunctionProto) else [copy])
    return copy


def _strip(nodes) -> None:
    for node in nodes:
        node.ClearField("name")
        node.ClearField("doc_string")
        for body in _bodies(node):
            body.ClearField("doc_string")
            _strip(body.node)


def typed_alike(ref: dict, cand: dict, names) -> bool:
    """Whether inference types each of `names` alike in both models, where it says: one
    element type, one rank, and one size of each dim both know (an op whose shape formula
    changed between the versions, as AveragePool's with ceil_mode at 22, makes another
    shape of the same inputs)."""
    for name in names:
        a, b = ref.get(name), cand.get(name)
        if a is None or b is None or not (a.HasField("tensor_type") and b.HasField("tensor_type")):
            continue
        a, b = a.tensor_type, b.tensor_type
        if a.elem_type and b.elem_type and a.elem_type != b.elem_type:
            return False
        if not (a.HasField("shape") and b.HasField("shape")):
            continue
        if len(a.shape.dim) != len(b.shape.dim):
            return False
        for x, y in zip(a.shape.dim, b.shape.dim):
            if x.HasField("dim_value") and y.HasField("dim_value") and x.dim_value != y.dim_value:
                return False
    return True


# Versions at which onnxruntime's kernel computes other bits than the version before,
# though the spec defines one function: a PROVED is held to runtimes (the tests judge every
# pair the prover takes in onnxruntime), so the prover takes no relabel across them.
# AveragePool's kernels of 19 and 22 round apart from those of 7 to 11 (1,605 of 3,969
# elements 1 ulp apart: red team of de7dff6).
KERNELS_APART = {"AveragePool": (19, 22)}
# Ops whose onnxruntime kernel follows the model's opset, not only the schema (float16
# ReduceLogSumExp gives inf at 18 and 20 where 13 gives 1.001e+04: red team of aed5c82):
# never shared across two opsets (canonical.KERNELS_APART_FOR_TYPE keeps them from the
# schemas' argument)
OPSET_SENSITIVE = frozenset({"ReduceLogSumExp"})


def changes_between(op_type: str, old: int, new: int) -> list[int]:
    """The versions between `old` and `new` at which the op's meaning changed
    (passes.version.relabel.MEANING_CHANGES), or onnxruntime's kernel (KERNELS_APART)."""
    low, high = sorted((old, new))
    apart = [v for v in KERNELS_APART.get(op_type, ()) if low < v <= high]
    return sorted({*meaning_changes_between(op_type, old, new), *apart})


def relabel_class(node: onnx.NodeProto, since: int | None) -> str:
    """What a default-domain node's op means at schema version `since`, in words equal at
    two versions exactly where the module docstring's rule takes them as one function:
    the span between two changes of meaning that `since` lies in, and the absent value of
    every attribute (of any version) that the node leaves out."""
    op = node.op_type
    if since is None:
        return f"{op}-?"
    span = max(changes_between(op, 0, since), default=0)
    given = {a.name for a in node.attribute}
    absent = [f"{n}={absent_value(op, n, since)!r}" for n in _attribute_names(op) - given]
    return f"{op}@{span}[{';'.join(sorted(absent))}]"


@functools.cache
def _attribute_names(op_type: str) -> frozenset[str]:
    """Every attribute name of any version of the op."""
    return frozenset(
        name
        for version in op_versions(op_type)
        for name in onnx.defs.get_schema(op_type, version, "").attributes
    )


def _domain(domain: str) -> str:
    return "" if domain in DEFAULT_DOMAINS else domain


@functools.cache
def _schema_since(op_type: str, version: int | None) -> int | None:
    if version is None:
        return None
    try:
        return onnx.defs.get_schema(op_type, version, "").since_version
    except onnx.defs.SchemaError:
        return None


__all__ = [
    "captured",
    "changes_between",
    "differing_sources",
    "reads",
    "relabel_class",
    "relabelled_pairs",
    "shared_nodes",
    "sources",
    "stripped_key",
    "typed_alike",
]
