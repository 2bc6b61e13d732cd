"""An expanded function op, proved by its definition (the `expansion` method of a site).

    LayerNormalization-17(x, scale, bias)  at 17     the site's reference
      ≡  its function body in onnx.defs    at 17     by the spec: the body is the op's meaning
      ≡  that body converted to 13                   a run of the converter, every site proved
      ≅  the site's candidate              at 13     the same nodes, up to value names

ONNX defines LayerNormalization, Gelu, HardSwish, GreaterOrEqual and many more by a function
body (`OpSchema.has_function`, or one built for the node's attributes and input types), so
a node that passes.version.expand replaced by its body is proved in three steps, none of
them a solver's:

1. the body is built again from onnx.defs, at the opset the expansion takes it from, for
   this node's attributes and input types, and inlined by onnx.inliner
   (passes.version.expand.inlined_body): by the spec it computes what the node does;
2. the body is converted to the target by the pipeline, and every site of that run is
   proved (maxlower.prove.sites.prove_run: relabels, the schemas' argument, the solver; a
   function op inside the body is expanded and proved the same way, to MAX_DEPTH);
3. the site's candidate is that converted body node for node: the same ops, attributes
   and constants, wired alike, its outputs the node's (`_same_graph`).

The verdict lists the first step as an assumption, with the steps' own assumptions. The
body is the spec's function, and onnxruntime's fused kernel for an op may round apart from
it (`--verify` reports that apart: maxlower.verify.expanded).
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable

import onnx
import onnx_ir as ir

from maxlower.prove import ProofOptions
from maxlower.prove.canonical import constants_and_nodes
from maxlower.sparse import default_opset

MAX_DEPTH = 4  # function bodies inside function bodies, proved one within another
_depth = contextvars.ContextVar("expansion_depth", default=0)


class NotAnExpansion(Exception):
    """The site is not one function op against a body (the other methods decide)."""


# Ops whose outputs are drawn at random: no two runs agree, so no body is "the same"
# (and onnx.defs' body of Bernoulli-15 draws 1 with probability 1 - p, its doc says p)
RANDOM_OPS = frozenset(
    {"Bernoulli", "Multinomial", "RandomNormal", "RandomNormalLike", "RandomUniform",
     "RandomUniformLike"}
)  # fmt: skip


def function_node(model: onnx.ModelProto) -> onnx.NodeProto | None:
    """The one non-Constant node of a site's reference, when its op has a function body
    in onnx.defs at the model's opset, is not random, and its Constants feed it alone (a
    Constant that makes an output of its own is compared by no body); else None."""
    from passes.version.expand import body_opsets

    _, nodes = constants_and_nodes(model)
    opset = default_opset(model)
    if len(nodes) != 1 or nodes[0].domain not in ("", "ai.onnx") or opset is None:
        return None
    outputs = {o.name for o in model.graph.output}
    if not outputs <= set(nodes[0].output) or nodes[0].op_type in RANDOM_OPS:
        return None
    try:
        since = onnx.defs.get_schema(nodes[0].op_type, opset, "").since_version
    except onnx.defs.SchemaError:
        return None
    return nodes[0] if body_opsets(nodes[0].op_type, since) else None


def prove_expansion(
    reference: onnx.ModelProto,
    candidate: onnx.ModelProto,
    options: ProofOptions,
    prove_run: Callable,
) -> list[str]:
    """The assumptions under which `candidate` computes what `reference`'s function op
    does (see the module docstring); raises NotAnExpansion when `reference` is not one
    function op, ExpansionUnproved (with the reason) when a step does not hold.
    `prove_run` proves the body's conversion (maxlower.prove.sites.prove_run, which calls
    this: passed in rather than imported, so the modules form no circle)."""
    from maxlower import pipeline
    from passes.version.expand import body_opset_for, body_opsets, inlined_body

    node = function_node(reference)
    source, target = default_opset(reference), default_opset(candidate)
    if node is None or source is None or target is None:
        raise NotAnExpansion
    version = onnx.defs.get_schema(node.op_type, source, "").since_version
    if _depth.get() >= MAX_DEPTH:
        raise ExpansionUnproved(f"function bodies nested past {MAX_DEPTH} levels")
    body_opset = body_opset_for(body_opsets(node.op_type, version), target)
    job = pipeline.Job(opset=target)
    before = onnx.ModelProto()
    token = _depth.set(_depth.get() + 1)
    try:
        body = _body_model(reference, node, version, source, body_opset, inlined_body)
        _check_comparable(body)
        prepared = pipeline.prepare(body, "<function body>", directory_known=False)
        before.CopyFrom(prepared)
        outcome = pipeline.run(prepared, job, ".")
        report = prove_run(before, outcome, job, options)
    except ExpansionUnproved:
        raise
    except Exception as error:  # no body, or it does not convert here: not shown the same
        raise ExpansionUnproved(
            f"its function body was not built and converted to {target}: {error}"
        ) from None
    finally:
        _depth.reset(token)
    if not report.ok:
        failure = report.first_failure
        raise ExpansionUnproved(
            f"a step of its function body's conversion is {failure.status} "
            f"({failure.op_type} {failure.node}: {failure.reason})"
        )
    difference = _same_graph(outcome.proto, candidate)
    if difference is not None:
        raise ExpansionUnproved(
            f"the candidate is not the function body converted to {target}: {difference}"
        )
    defined = (
        f"{node.op_type}-{version} computes its function body in onnx.defs (taken at opset "
        f"{body_opset} for its attributes and input types, inlined by onnx.inliner)"
    )
    return [defined, *report.assumptions]


class ExpansionUnproved(Exception):
    """A step of the expansion's proof did not hold; the message says which."""


def _body_model(reference, node, version, source, body_opset, inlined_body) -> onnx.ModelProto:
    """The function body of the reference's node at `body_opset`, as a model whose inputs
    and outputs carry the node's value names (the candidate's), with the reference's
    constants as its constants."""
    model = ir.serde.deserialize_model(reference)
    ir_node = next(n for n in model.graph if n.op_type == node.op_type)
    small, mirrors = inlined_body(ir_node, version, source, body_opset)
    proto = ir.serde.serialize_model(small)
    names = {f"__mirror{k}": value.name for k, value in enumerate(mirrors)}
    names.update({f"__output{i}": name for i, name in enumerate(node.output) if name})
    _rename(proto.graph, names)
    for index, body_node in enumerate(proto.graph.node):  # (the run's records name nodes:
        body_node.name = body_node.name or f"{body_node.op_type}__{index}"  # one each)
    return proto


def _check_comparable(body: onnx.ModelProto) -> None:
    """A body the comparison can read: no subgraph (their outer reads are not traced:
    red team of f098390) and no random op."""
    for n in body.graph.node:
        if any(a.HasField("g") or a.graphs for a in n.attribute):
            raise ExpansionUnproved(f"its function body holds a subgraph ({n.op_type})")
        if n.op_type in RANDOM_OPS:
            raise ExpansionUnproved(f"its function body draws at random ({n.op_type})")


def _rename(graph: onnx.GraphProto, names: dict[str, str]) -> None:
    for value in [*graph.input, *graph.output, *graph.value_info]:
        value.name = names.get(value.name, value.name)
    for tensor in graph.initializer:
        tensor.name = names.get(tensor.name, tensor.name)
    for n in graph.node:
        n.input[:] = [names.get(i, i) for i in n.input]
        n.output[:] = [names.get(o, o) for o in n.output]


def _same_graph(converted: onnx.ModelProto, candidate: onnx.ModelProto) -> str | None:
    """Why `candidate`'s nodes are not `converted`'s up to the names of the values they
    make, or None. Constants (initializers, Constant nodes) are read by their bytes; the
    graph inputs and outputs by name; each other value by the node and position that
    make it. Nodes are compared in order (the expansion splices the converted body's
    nodes as they are)."""
    sides = [_listing(model) for model in (converted, candidate)]
    (conv_nodes, conv_const), (cand_nodes, cand_const) = sides
    if len(conv_nodes) != len(cand_nodes):
        return f"{len(cand_nodes)} nodes where the converted body has {len(conv_nodes)}"
    made: list[dict[str, tuple]] = [{}, {}]
    for index, pair in enumerate(zip(conv_nodes, cand_nodes, strict=True)):
        keys = []
        for side, (n, constants) in enumerate(zip(pair, (conv_const, cand_const), strict=True)):
            reads = tuple(_ref(name, constants, made[side]) for name in n.input)
            keys.append((n.domain or "", n.op_type, reads, len(n.output), _attributes(n)))
            for position, name in enumerate(n.output):
                if name:
                    made[side][name] = ("made", index, position)
        if keys[0] != keys[1]:
            return f"node {index} ({pair[1].op_type}) differs from the body's ({pair[0].op_type})"
    outputs = [[o.name for o in model.graph.output] for model in (converted, candidate)]
    if outputs[0] != outputs[1]:
        return f"outputs {outputs[1]} where the converted body has {outputs[0]}"
    for name in outputs[1]:
        if _ref(name, conv_const, made[0]) != _ref(name, cand_const, made[1]):
            return f"output {name!r} is made otherwise"
    return None


def _listing(model: onnx.ModelProto) -> tuple[list[onnx.NodeProto], dict[str, tuple]]:
    tensors, nodes = constants_and_nodes(model)
    for n in nodes:
        if any(a.HasField("g") or a.graphs for a in n.attribute):
            raise ExpansionUnproved(f"the candidate holds a subgraph ({n.op_type})")
    return nodes, {name: _bytes(tensor) for name, tensor in tensors.items()}


def _bytes(tensor: onnx.TensorProto) -> tuple:
    """A constant by its ONNX element type (float8 kinds share numpy's 'V1'), dims and
    bytes."""
    array = onnx.numpy_helper.to_array(tensor)
    return ("constant", tensor.data_type, tuple(tensor.dims), array.tobytes())


def _ref(name: str, constants: dict, made: dict) -> tuple:
    if not name:
        return ("absent",)
    if name in made:
        return made[name]
    if name in constants:
        return constants[name]
    return ("input", name)


def _attributes(n: onnx.NodeProto) -> bytes:
    copy = onnx.NodeProto()  # (no subgraph: _listing refuses them)
    copy.attribute.extend(n.attribute)
    for attribute in copy.attribute:
        attribute.ClearField("doc_string")
    return copy.SerializeToString(deterministic=True)
