"""ConvertOtherOpsPass: bring every non-family default-domain node to the target opset.

    Relu-14(x: float), model moved to opset 13    →  Relu-13(x)            (relabelled)
    Reshape-14(x, s){allowzero=0}, to 13          →  Reshape-13(x, s)      (default dropped)
    Split-18(x){num_outputs=3}, to 13             →  Split-13(x, [3,3,1])  (own adapter)
    Unsqueeze-13(x, axes=const), to 11            →  Unsqueeze-11(x){axes} (version converter)
    LayerNormalization-17(x, s, b), to 13         →  its ONNX function body, at opset 13
    Trilu-14(x), to 13                            →  ConversionError (no form below 14)

For each node outside the Max and Min families whose schema version differs between the source and
the target, in the main graph, in subgraphs and in model-local functions, in this order:

1. Say at the target what the node says at the source: attributes whose default, or meaning
   when absent, changed are written out, those the target lacks dropped where it behaves
   as they say (`changed_defaults.attributes_for_target`; Split-1 without axis, which no
   schema defines, is refused); then apply the own adapters: `legacy` (the attributes of
   opsets 1 to 6: consumed_inputs, broadcast/axis, is_test, Pad-1's paddings), then those
   of `other_adapters`.
2. Relabel: the target schema accepts the node and its types, and its meaning did not
   change in between (`relabel.schema_problem`, `relabel.meaning_change`).
3. Delegate: the node alone, in a one-node model, goes through `onnx.version_converter`,
   whose result must pass the full check, and the nodes it returns take its place. Only
   this node's adapters run: the converter's faults elsewhere (dropped functions, missing
   adapters for other ops, lost names and value_info) cannot touch the rest of the model.
4. Expand: an op with a function body in `onnx.defs` is replaced by the body, itself
   converted to the target by this pass and ConvertFamilyPass (`expand`).
5. Refuse with a ConversionError naming the opsets this node can be brought to.

Nodes that carry subgraphs (If, Loop, Scan) are relabelled when their attributes allow it;
their bodies are walked like any graph, and the final full check covers their structure.
Family nodes made by an expansion are left at the opset their container declares, for
ConvertFamilyPass, which moves the opset import (before or after this pass).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import onnx
import onnx_ir as ir

from passes.builder import FAMILY, Builder, schema_version
from passes.errors import ConversionError
from passes.graph_utils import containers, infer_shapes, is_used, node_label, subgraph_places
from passes.names import Namer
from passes.one_node import OneNodeModel, small_constant
from passes.version.axes_family import AXES_ADAPTERS
from passes.version.changed_defaults import UnsaidDefault, attributes_for_target
from passes.version.compare_adapters import COMPARE_ADAPTERS
from passes.version.convert import ConvertFamilyPass
from passes.version.expand import body_opsets, expand_function_body
from passes.version.legacy import LEGACY_ADAPTERS
from passes.version.negative_axes import negative_axes_to_nonnegative
from passes.version.one_node import delegate_to_version_converter
from passes.version.other_adapters import OTHER_ADAPTERS
from passes.version.relabel import (
    control_flow_problem,
    drop_unused_outputs,
    meaning_change,
    meaning_changes_between,
    schema_problem,
)

_ADAPTERS = {**OTHER_ADAPTERS, **COMPARE_ADAPTERS}
RELABELLED = "relabelled"
DELEGATED = "converted by onnx.version_converter"
EXPANDED = "expanded into its ONNX function body"


@dataclasses.dataclass(frozen=True)
class OtherOpConversion:
    """How one non-family node was brought to the target (`how`: RELABELLED, DELEGATED,
    EXPANDED, or what an own adapter did)."""

    where: str
    node: str
    op_type: str
    from_version: int
    to_version: int | None
    how: str


@dataclasses.dataclass
class OtherOpsResult(ir.passes.PassResult):
    """ConvertOtherOpsPass's result: also how each node outside the family whose schema
    changed was brought to the target, in graph order."""

    conversions: list[OtherOpConversion] = dataclasses.field(default_factory=list)


class ConvertOtherOpsPass(ir.passes.InPlacePass):
    """Relabel, adapt, delegate one node at a time, or expand; never a node that changes
    meaning."""

    def __init__(
        self,
        target_opset: int,
        source_opsets: dict[int, int] | None = None,
        *,
        explain_refusals: bool = True,
        expand_functions: bool = False,
        own: set[int] | None = None,
        namer: Namer | None = None,
    ) -> None:
        """`source_opsets` ({id(graph or function): opset}, from `source_opsets_of`) lets the
        pass run after ConvertFamilyPass has already moved the opset imports.
        `explain_refusals` probes, for a refused node, which opsets it could go to.
        `expand_functions` allows step 4: a function body computes the spec's definition, but
        runtimes' fused kernels (onnxruntime's LayerNormalization) round differently, so the
        converted model can differ from the original in the last bits of floats."""
        super().__init__()
        self.expand_functions = expand_functions
        self.target_opset = target_opset
        self.source_opsets = source_opsets or {}
        self.explain_refusals = explain_refusals
        # ids of the model's own nodes (None: all are). Those ConvertFamilyPass adds mean
        # what they mean at the target by construction: only their spelling is converted.
        self.own = own
        self.namer = namer  # where new names come from (default: one knowing the model's)
        self._namer = namer
        self._constants: dict = {}

    if TYPE_CHECKING:  # onnx_ir's __call__ returns what `call` returns: say so to type checkers

        def __call__(self, model: ir.Model | ir.passes.PassResult, /) -> OtherOpsResult: ...

    def call(self, model: ir.Model) -> OtherOpsResult:
        conversions: list[OtherOpConversion] = []
        modified = False
        self._namer = self.namer if self.namer is not None else Namer.of_model(model)
        for where, container, opsets in containers(model):
            source = self.source_opsets.get(id(container), opsets.get(""))
            if source is None or source == self.target_opset:
                continue
            family_opset = opsets.get("", source)
            # one constant cache per container, as in ConvertFamilyPass: the adapters of
            # two nodes make an equal constant once (names are fresh through the namer)
            self._constants = {}
            in_function = isinstance(container, ir.Function)
            places = subgraph_places(where, container)  # (taken before nodes are replaced)
            for node in _constants_last(ir.traversal.RecursiveGraphIterator(container)):
                if node.graph is None:  # a Constant an adapter folded into an attribute
                    continue
                if node.domain == "" and node.op_type not in FAMILY:
                    label, op_type = node_label(node), node.op_type
                    place = places.get(id(node.graph), where)
                    how, changed = self._convert(
                        node, source, model.ir_version, in_function, family_opset
                    )
                    modified |= changed
                    if how is not None:
                        versions = (
                            schema_version(op_type, source),
                            schema_version(op_type, self.target_opset),
                        )
                        conversions.append(OtherOpConversion(place, label, op_type, *versions, how))
        return OtherOpsResult(model, modified, conversions)

    def _convert(
        self, node: ir.Node, source: int, ir_version: int, in_function: bool, family_opset: int
    ) -> tuple[str | None, bool]:
        """(how the node was brought to the target, whether the graph changed)."""
        target = self.target_opset
        old = schema_version(node.op_type, source)
        new = schema_version(node.op_type, target)
        if old == new or old is None:  # None: not an ONNX op at the source; the checker says
            return None, False
        reasons = []
        old_schema = onnx.defs.get_schema(node.op_type, old, "")
        modified = drop_unused_outputs(node, old_schema)

        def convert_small(small: ir.Model, small_opset: int) -> None:
            # A delegated node's way on from an intermediate opset expands a function body
            # only where the user allowed expansion (ReduceL2-18's body rounds unlike
            # onnxruntime's kernel).
            convert_small_model(
                small, small_opset, target, family_opset, expand_functions=self.expand_functions
            )

        if new is not None:
            try:
                said = attributes_for_target(node, old, new)
            except UnsaidDefault as error:
                remedy = f"setting {error.name!r} on the node, or keeping opset {source}"
                raise ConversionError(node_label(node), node.op_type, str(error), remedy) from None
            modified |= said.modified
            builder = Builder(
                target,
                node,
                culprit=node,
                on_family=lambda n, v: None,
                in_function=in_function,
                namer=self._namer,
                constants=self._constants,
            )
            adapted = list(said.written)  # (reported: the node is more than relabelled)
            _refuse_unread_references(node, old, new, source)
            for adapter in _adapters(node, new):
                if (what := adapter(node, old, builder)) is not None:
                    adapted.append(what)
                if node.graph is None:  # replaced by an exact form made at the target
                    return "; ".join(adapted), True
            reason = (
                meaning_change(node, old, new) if self._own(node) else None
            ) or _relabel_problem(node, old, target, ir_version)
            if reason is None:
                return ("; ".join(adapted) if adapted else RELABELLED), modified or bool(adapted)
            # an attribute the target lacks, whose value is not the target's behaviour, is
            # what the schema check trips on: say so rather than "unrecognized attribute"
            kept = [why for name, why in said.kept.items() if name in node.attributes]
            reasons.append("; ".join(kept) or reason)
            delegated = delegate_to_version_converter(
                node, source, target, in_function, convert_small, self._namer
            )
            if delegated is None:
                return DELEGATED, True
            reasons.append(f"onnx.version_converter: {delegated}")
        else:
            reasons.append(f"{node.op_type} does not exist at opset {target}")
        if not self.expand_functions:
            if body_opsets(node.op_type, old):
                reasons.append("its ONNX function body was not allowed (expand_functions=False)")
            raise self._refusal(node, old, source, "; ".join(reasons))
        expanded = expand_function_body(
            node, old, source, target, in_function, convert_small, self._namer
        )
        if expanded is None:
            return EXPANDED, True
        reasons.append(expanded)
        raise self._refusal(node, old, source, "; ".join(reasons))

    def _own(self, node: ir.Node) -> bool:
        return self.own is None or id(node) in self.own

    def _refusal(self, node: ir.Node, old: int, source: int, reason: str) -> ConversionError:
        if not self.explain_refusals:
            return ConversionError(node_label(node), node.op_type, reason, "another target opset")
        remedy = _refusal_remedy(node, source, self.target_opset, self.expand_functions)
        error = ConversionError(node_label(node), node.op_type, reason, remedy.text())
        error.refusal_remedy = remedy  # (with_model_opsets widens it to the whole model)
        return error


def _constants_last(nodes) -> list[ir.Node]:
    """The nodes in graph order, Constant nodes last: an adapter may fold a Constant into an
    attribute (Squeeze-13's axes, to 11), and one that no longer exists need not, and at
    some targets cannot (Constant-1 holds no int64), be converted."""
    nodes = list(nodes)
    return [n for n in nodes if n.op_type != "Constant"] + [
        n for n in nodes if n.op_type == "Constant"
    ]


def _refuse_unread_references(node: ir.Node, old: int, new: int, source: int) -> None:
    """A node in a function that takes an attribute from its call (`axis = @ax`) has no
    value for it here, and an own adapter, or the check of a version whose meaning changed,
    reads it (Softmax's axis across 13): refused, naming the reference, rather than read
    as absent. A step that reads no attribute (a plain relabel) keeps the reference."""
    refs = [attr for attr in node.attributes.values() if attr.is_ref()]
    if not refs or not (
        node.op_type in _ADAPTERS
        or node.op_type in AXES_ADAPTERS
        or meaning_changes_between(node.op_type, old, new)
        or (new < 11 <= old)  # negative axes made nonnegative below 11
        or old < 7  # the legacy attributes of opsets 1 to 6
    ):
        return
    said = ", ".join(f"{a.name}=@{a.ref_attr_name}" for a in refs)
    raise ConversionError(
        node_label(node),
        node.op_type,
        f"it takes {said} from its function's call, and converting it from {old} to {new} "
        "reads that value, which only each call knows",
        "inline the function into its callers first (onnx.inliner.inline_local_functions), "
        f"or keep opset {source}",
    )


def _adapters(node: ir.Node, new: int) -> list:
    """The own adapters of the node's op, in the order they run (the legacy attributes of
    opsets 1 to 6 first, which any op may carry; the axes family's last:
    they read what the others left, say the sizes Split-18's num_outputs became). The axes
    family's only respell operands, so they are left out where the target schema refuses
    the data's type anyway: the node then reaches the converter and the refusal as it is."""
    own = [*LEGACY_ADAPTERS, negative_axes_to_nonnegative, *_ADAPTERS.get(node.op_type, [])]
    if _data_type_refused(node, new):
        return own
    return own + AXES_ADAPTERS.get(node.op_type, [])


def _data_type_refused(node: ir.Node, new: int) -> bool:
    data = node.inputs[0] if node.inputs else None
    if data is None or data.dtype is None:
        return False
    schema = onnx.defs.get_schema(node.op_type, new, "")
    param = schema.inputs[0].type_str
    allowed = {c.type_param_str: c.allowed_type_strs for c in schema.type_constraints}
    return f"tensor({data.dtype.name.lower()})" not in allowed.get(param, [param])


def _relabel_problem(node: ir.Node, old: int, target: int, ir_version: int) -> str | None:
    if any(
        attr.type in (ir.AttributeType.GRAPH, ir.AttributeType.GRAPHS)
        for attr in node.attributes.values()
    ):
        # check_node cannot see outer-scope names from inside a body; the body's own nodes
        # are checked one by one, so here only what the node itself declares: output types
        # and, for If, the shapes its branches give.
        return control_flow_problem(node, target)
    problem = schema_problem(node, old, target, ir_version)
    new = schema_version(node.op_type, target)
    return None if problem is None else f"{node.op_type}-{new} does not accept it ({problem})"


def convert_small_model(
    model: ir.Model, opset: int, target: int, family_opset: int, *, expand_functions: bool = True
) -> None:
    """Convert a small model (a node alone, or an expanded body, at `opset`) for splicing:
    other ops to `target`, family nodes to `family_opset` (the opset of the graph it goes
    into). Expanding is allowed by default: a body is only converted where expansion was
    already chosen; a probe (`reachable_opsets`) says whether it was."""
    infer_shapes(model)
    sources = source_opsets_of(model)
    ConvertFamilyPass(family_opset)(model)
    ConvertOtherOpsPass(target, sources, explain_refusals=False, expand_functions=expand_functions)(
        model
    )


def refusal_remedy(node: ir.Node, source: int, target: int, expand_functions: bool) -> str:
    """What would let `node` (at opset `source`, refused at `target`) be converted, by the
    steps the pass itself takes. Never a range of opsets that holds `target`: where the node
    alone converts to `target`, what blocks it is its place in the model."""
    return _refusal_remedy(node, source, target, expand_functions).text()


@dataclasses.dataclass
class RefusalRemedy:
    """A refused node's remedy: `others` (a flag, known types), then the opsets `low..high`
    around `source` that the node alone converts to; `model` narrows that range to where
    every node of the model converts (`with_model_opsets`)."""

    others: list[str]
    low: int
    high: int
    source: int
    target: int
    expand_functions: bool
    model: ModelOpsets | None = None

    def names_a_range(self) -> bool:
        """Whether the remedy is a range of other opsets (not the node's place, not none)."""
        return self.low < self.high and not self.low <= self.target <= self.high

    def text(self) -> str:
        remedies = list(self.others)
        low, high = self.low, self.high
        if self.low <= self.target <= self.high:
            remedies.append(
                "changing what the reason names (alone in a model, with the types the model "
                "gives it, this node converts to the target)"
            )
        elif self.model is not None and self.model.low < self.model.high:
            remedies.append(f"a target opset in {self.model.low}..{self.model.high}")
        elif self.model is not None:
            blockers = "; ".join(b.text() for b in self.model.blockers)
            remedies.append(
                f"keeping opset {self.source} (no other opset converts every node of the "
                f"model: this node converts to {low}..{high}; {blockers})"
            )
        elif low < high:
            remedies.append(f"a target opset in {low}..{high}")
        else:
            remedies.append(
                f"keeping opset {self.source} (on its own it converts to no other opset)"
            )
        return ", or ".join(remedies)


def _refusal_remedy(
    node: ir.Node, source: int, target: int, expand_functions: bool
) -> RefusalRemedy:
    probe = _Probe(node, source)
    others = []
    can_expand = body_opsets(node.op_type, schema_version(node.op_type, source))
    if not expand_functions and can_expand and probe.converts(target, expand_functions=True):
        others.append("its function body (leave out --no-expand-functions; expand_functions=True)")
    if probe.proto is None:
        others.append("known input types (value_info)")
    low, high = probe.reachable(expand_functions)
    return RefusalRemedy(others, low, high, source, target, expand_functions)


@dataclasses.dataclass(frozen=True)
class NodeOpsets:
    """The opsets one node alone converts to, around its container's opset."""

    where: str
    node: str
    op_type: str
    low: int
    high: int

    def text(self) -> str:
        where = "" if self.where == "main graph" else f" in {self.where}"
        return f"node {self.node!r} ({self.op_type}){where} converts to {self.low}..{self.high}"


@dataclasses.dataclass
class ModelOpsets:
    """The opsets `low..high` in which every default-domain node of a model converts on its
    own (none where low >= high and the model's own opset is the only one), and the nodes
    that bound them (`blockers`, each with the range it converts to)."""

    low: int
    high: int
    blockers: list[NodeOpsets]


def model_opsets(
    model: ir.Model, *, expand_functions: bool = False, within: tuple[int, int] | None = None
) -> ModelOpsets:
    """Where every default-domain node of `model` (main graph, subgraphs, functions), each
    alone as `reachable_opsets` converts it, converts: the intersection of their ranges,
    searched only `within` (low, high). Nodes that convert alike (same op, attributes,
    value types, small constants) are probed once."""
    low, high = within or (1, onnx.defs.onnx_opset_version())
    known: dict[tuple, tuple[int, int]] = {}
    bounds: dict[str, tuple[str, ir.Node, int]] = {}  # side → (where, node, its source)
    for where, container, opsets in containers(model):
        source = opsets.get("")
        if source is None:
            continue
        if not low <= source <= high:  # a function at an opset outside the range so far
            return ModelOpsets(source, source, _blockers(bounds.values(), expand_functions))
        for node in ir.traversal.RecursiveGraphIterator(container):
            if node.domain not in ("", "ai.onnx"):
                continue
            if all(
                schema_version(node.op_type, v) == schema_version(node.op_type, source)
                for v in {low, high}
            ):
                continue  # one schema across the window: it converts throughout
            key = _alike_key(node, source)
            if key not in known:
                known[key] = _Probe(node, source).reachable(expand_functions, (low, high))
            node_low, node_high = known[key]
            if node_low > low:
                low = node_low
                bounds["low"] = (where, node, source)
            if node_high < high:
                high = node_high
                bounds["high"] = (where, node, source)
    return ModelOpsets(low, high, _blockers(bounds.values(), expand_functions))


def _blockers(bounds, expand_functions: bool) -> list[NodeOpsets]:
    """The nodes that bound a model's range, each with the whole range it converts to."""
    found = {}
    for where, node, source in bounds:
        if id(node) not in found:
            node_low, node_high = _Probe(node, source).reachable(expand_functions)
            found[id(node)] = NodeOpsets(where, node_label(node), node.op_type, node_low, node_high)
    return list(found.values())


def _alike_key(node: ir.Node, source: int) -> tuple:
    """What a node's conversion on its own depends on: op, attributes, the types and shapes
    of its values, its small constants, and which inputs are one value."""
    attributes = tuple(
        (name, ir.serde.serialize_attribute(attr).SerializeToString(deterministic=True))
        for name, attr in sorted(node.attributes.items())
    )
    inputs = []
    for value in node.inputs:
        if value is None:
            inputs.append(None)
            continue
        constant = small_constant(value)
        inputs.append(
            (
                node.inputs.index(value),
                str(value.type),
                str(value.shape),
                None if constant is None else (constant.dtype, constant.numpy().tobytes()),
            )
        )
    outputs = tuple((bool(v.name), str(v.type), str(v.shape)) for v in node.outputs)
    return (source, node.op_type, attributes, tuple(inputs), outputs)


def reachable_opsets(
    node: ir.Node, source: int, *, expand_functions: bool = False
) -> tuple[int, int]:
    """The widest range of opsets around `source` that `node` alone converts to, by the
    steps ConvertOtherOpsPass takes (expansion into its function body only with
    `expand_functions`). Without the types of its inputs only the opsets that keep its
    schema version are known."""
    return _Probe(node, source).reachable(expand_functions)


class _Probe:
    """`node` alone in a model at `source` (`proto`, None when its input types are
    unknown), converted to other opsets on demand."""

    def __init__(self, node: ir.Node, source: int) -> None:
        self.node, self.source = node, source
        alone = OneNodeModel(node, source)
        # an output the model does not read is none of the small model's either, so that it
        # may go as in the model (Dropout's mask, whose type changes at 10)
        unread = [
            mine
            for mine, theirs in zip(alone.node.outputs, node.outputs)
            if theirs.name and not is_used(theirs) and not theirs.is_graph_output()
        ]
        for value in unread[: len(alone.graph.outputs) - 1]:
            alone.graph.outputs.remove(value)
        try:
            self.proto: onnx.ModelProto | None = alone.proto(hold_unknown_ranks=True)
        except Exception:  # untyped inputs: only the versions that keep its schema are known
            self.proto = None

    def reachable(
        self, expand_functions: bool, within: tuple[int, int] | None = None
    ) -> tuple[int, int]:
        floor, ceiling = within or (1, onnx.defs.onnx_opset_version())
        op_type = self.node.op_type
        low = high = self.source
        while low > floor and self.converts(low - 1, expand_functions):
            low -= 1
        # Upward, an opset that keeps the op's schema of the opset below converts as that
        # one does: ops and types only grow, so the forms made there exist here too (not
        # so downward: below 9 a form without Where, say, is another form, or none).
        while high < ceiling and (
            schema_version(op_type, high + 1) == schema_version(op_type, high)
            or self.converts(high + 1, expand_functions)
        ):
            high += 1
        return low, high

    def converts(self, opset: int, expand_functions: bool) -> bool:
        op_type = self.node.op_type
        if schema_version(op_type, opset) == schema_version(op_type, self.source):
            return True
        if self.proto is None:
            return False
        model = ir.serde.deserialize_model(self.proto)
        try:
            convert_small_model(model, self.source, opset, opset, expand_functions=expand_functions)
            onnx.checker.check_model(ir.serde.serialize_model(model), full_check=True)
        except Exception:  # a refusal, an invalid result: not this opset
            return False
        return True


def source_opsets_of(model: ir.Model) -> dict[int, int]:
    """The default-domain opset of the main graph and of each function, by identity."""
    return {id(c): opsets[""] for _, c, opsets in containers(model) if "" in opsets}
