"""Attribute references in model-local functions: resolved where every call agrees.

    function F <ax> (x) => (y) { y = ArgMax <axis: int = @ax> (x) }
    called only as F <ax = -1> (x)          →  y = ArgMax <axis = -1> (x) in F's body

A node inside a function may take an attribute from its call (`ref_attr_name`, written
`@ax`). Adapters and decompositions need the value (a negative axis becomes axis + rank
below opset 11, select_last_index=1 is rewritten below 12), and a reference has none. Where
every call of the function gives the same value (a call that leaves the attribute out gives
the function's default, or none: then the op's own default applies), the reference is
replaced by that value, which changes nothing any call computes. A reference is resolved
on the family's nodes, and on calls of other local functions, so that a value passed down
through nested functions (`G <ax = @ax>`) resolves too.

Where calls disagree, one passes on its own caller's attribute, or there is no call, the
reference stays. Conversion keeps such a node as it is when its steps leave it unchanged for
every value the calls give (`unchanged_for_every_call`), lowering when the profile accepts
it with every such value; else they refuse it with the reason `unresolved_reference` gives
(passes.version.convert, passes.legalize).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import onnx_ir as ir

from passes.builder import FAMILY, Builder
from passes.errors import ConversionError
from passes.graph_utils import node_label
from passes.names import Namer
from passes.one_node import OneNodeModel

_ABSENT = ("absent",)  # a call that gives no value and a function without a default
_WHY = "maxlower.unresolved_references"  # node.meta: {attribute: why it stays a reference}
_VALUES = "maxlower.reference_values"  # node.meta: {attribute: the values the calls give}


class ResolveAttributeReferencesPass(ir.passes.InPlacePass):
    """Replace attribute references of family nodes (and of calls of local functions) in
    function bodies by the one value every call gives, where there is one."""

    def call(self, model: ir.Model) -> ir.passes.PassResult:
        modified = False
        changed = True
        while changed:  # a resolved call may resolve the function it calls in turn
            changed = False
            calls = _calls(model)
            for node, attr, values in _references(model, calls):
                if isinstance(values, str) or len(values) != 1:
                    continue
                (value,) = values
                if value == _ABSENT:
                    del node.attributes[attr.name]
                else:
                    node.attributes[attr.name] = ir.Attr(attr.name, *value)
                changed = modified = True
        for node, attr, values in _references(model, _calls(model)):  # left: say why
            node.meta.setdefault(_WHY, {})[attr.name] = (
                values if isinstance(values, str) else _differ(attr, values)
            )
            if not isinstance(values, str):
                node.meta.setdefault(_VALUES, {})[attr.name] = sorted(values, key=repr)
        return ir.passes.PassResult(model, modified)


def unresolved_reference(node: ir.Node) -> ConversionError | None:
    """The refusal for a family node that still reads an attribute from its function's call
    (None if it reads none), for a step that needs the attribute's value."""
    refs = [attr for attr in node.attributes.values() if attr.is_ref()]
    if not refs:
        return None
    why = node.meta.get(_WHY, {})
    reasons = "; ".join(
        f"it takes {a.name}=@{a.ref_attr_name} from its function's call, and "
        f"{why.get(a.name, 'the calls were not read')}"
        for a in refs
    )
    return ConversionError(
        node_label(node),
        node.op_type,
        f"{reasons}, so no one exact form fits every call",
        "give every call of the function the same value, or inline the function into its "
        "callers first (onnx.inliner.inline_local_functions)",
    )


def copies_for_every_call(node: ir.Node, opset: int) -> list[OneNodeModel] | None:
    """`node` alone (passes.one_node), once for every combination of the values its calls
    give its referenced attributes, the references replaced by the values; None when the
    values cannot be known (a call passes on its own caller's attribute, or none calls)."""
    refs = [attr for attr in node.attributes.values() if attr.is_ref()]
    choices = node.meta.get(_VALUES, {})
    if any(attr.name not in choices for attr in refs):
        return None
    copies = []
    for combination in itertools.product(*(choices[attr.name] for attr in refs)):
        copy = OneNodeModel(node, opset)
        for attr, value in zip(refs, combination):
            if value == _ABSENT:
                del copy.node.attributes[attr.name]
            else:
                copy.node.attributes[attr.name] = ir.Attr(attr.name, *value)
        copies.append(copy)
    return copies


def unchanged_for_every_call(
    node: ir.Node, steps: list[Callable[[ir.Node, Builder], str | None]], opset: int
) -> bool:
    """Whether the adapter `steps` leave `node` as it is for every value its calls give its
    referenced attributes (then the node may keep its references: ArgMax-11 with @axis
    going to 10, where every call gives a non-negative axis)."""
    copies = copies_for_every_call(node, opset)
    return copies is not None and all(_unchanged(copy, steps, opset) for copy in copies)


def _unchanged(copy: OneNodeModel, steps, opset: int) -> bool:
    builder = Builder(
        opset,
        copy.node,
        culprit=copy.node,
        on_family=lambda n, v: None,
        in_function=True,
        namer=Namer.of_graph(copy.graph),
    )
    before = ir.serde.serialize_node(copy.node)
    try:
        if any(step(copy.node, builder) is not None for step in steps):
            return False
    except ConversionError:
        return False
    return (
        copy.node.graph is not None
        and len(copy.graph) == 1
        and (ir.serde.serialize_node(copy.node) == before)
    )


def _references(model: ir.Model, calls: dict[tuple, list[ir.Node]]):
    """(node, attribute, the values its calls give or why they cannot be known) for every
    attribute reference on a family node or a local call in a function body."""
    for identifier, function in model.functions.items():
        for node in ir.traversal.RecursiveGraphIterator(function):
            if not _resolvable_kind(node, model):
                continue
            for attr in list(node.attributes.values()):
                if attr.is_ref():
                    yield node, attr, _values_given(function, attr.ref_attr_name, calls[identifier])


def _differ(attr: ir.Attr, values: set) -> str:
    shown = sorted(
        "(left out: the op's default)"
        if v == _ABSENT
        else str(list(v[1]) if isinstance(v[1], tuple) else v[1])
        for v in values
    )
    return f"the calls give @{attr.ref_attr_name} different values ({', '.join(shown)})"


def _resolvable_kind(node: ir.Node, model: ir.Model) -> bool:
    if node.domain in ("", "ai.onnx"):
        return node.op_type in FAMILY
    return node.op_identifier() in model.functions


def _calls(model: ir.Model) -> dict[tuple, list[ir.Node]]:
    """{function identifier: the nodes that call it}, in the main graph, its subgraphs and
    every function body."""
    calls: dict[tuple, list[ir.Node]] = {identifier: [] for identifier in model.functions}
    for scope in [model.graph, *model.functions.values()]:
        for node in ir.traversal.RecursiveGraphIterator(scope):
            identifier = node.op_identifier()
            if identifier in calls:
                calls[identifier].append(node)
    return calls


def _values_given(function: ir.Function, name: str, calls: list[ir.Node]) -> set | str:
    """The distinct values the calls give attribute `name` (hashable: (type, value), or
    _ABSENT), or why they cannot be known: some call passes on a reference, or none."""
    where = f"{function.domain}::{function.name}"
    if not calls:
        return f"nothing calls {where}"
    default = function.attributes.get(name)
    values = set()
    for call in calls:
        attr = call.attributes.get(name)
        if attr is None:
            attr = default if default is not None and default.value is not None else None
        if attr is None:
            values.add(_ABSENT)
        elif attr.is_ref():
            return f"a call of {where} passes on its own function's attribute @{attr.ref_attr_name}"
        else:
            value = attr.value
            values.add((attr.type, tuple(value) if isinstance(value, list | tuple) else value))
    return values


__all__ = [
    "ResolveAttributeReferencesPass",
    "copies_for_every_call",
    "unchanged_for_every_call",
    "unresolved_reference",
]
