"""ConvertToOpsetPass: bring a whole model to a target default-domain opset, exactly.

    model at opset 18: ReduceMax-18(x, axes), Relu-14(x), Split-18{num_outputs}
        → model at opset 13: ReduceMax-13(x){axes}, Relu-13(x), Split-13(x, split)

The one conversion pass: it runs, in this order,

1. when the model has functions: ResolveAttributeReferencesPass (a family node in a
   function that takes an attribute from its call gets the value, where every call gives
   the same one), then InferFunctionTypesPass (function inputs are untyped, and the
   adapters need dtypes and ranks);
2. ConvertFamilyPass: Max, ReduceMax, ArgMax and their Min twins, one schema version at a
   time. It goes first because it removes constants (axes) that only family nodes used;
3. ConvertOtherOpsPass: every other default-domain node (relabel, own adapter, one node
   through onnx.version_converter, function body, or refusal);

and owns the opset import: one entry per domain ('' and 'ai.onnx' are one domain, written
''), the default domain at the target in the main graph and every function, and the IR
version raised to what the target opset needs (at least 4, so that initializers the
rewrites add may stand apart from the graph inputs).

Preconditions: the model passed `onnx.checker` (full check) and its values carry the types
shape inference gives (`passes.graph_utils.infer_shapes`); `maxlower.pipeline` ensures
both. The result is neither shape-inferred nor checked: the caller serialises it and does
both there once.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

import onnx_ir as ir

from passes.builder import min_ir_version
from passes.errors import ConversionError
from passes.function_attrs import ResolveAttributeReferencesPass
from passes.function_types import InferFunctionTypesPass
from passes.graph_utils import containers
from passes.names import Namer
from passes.version.convert import ConvertFamilyPass, Rewrite
from passes.version.other_ops import (
    RELABELLED,
    ConvertOtherOpsPass,
    OtherOpConversion,
    RefusalRemedy,
    model_opsets,
    source_opsets_of,
)

DEFAULT_DOMAINS = ("", "ai.onnx")


@dataclasses.dataclass
class ConversionResult(ir.passes.PassResult):
    """ConvertToOpsetPass's result: the family rewrites and the other ops' conversions."""

    rewrites: list[Rewrite] = dataclasses.field(default_factory=list)
    conversions: list[OtherOpConversion] = dataclasses.field(default_factory=list)


class ConvertToOpsetPass(ir.passes.InPlacePass):
    """Convert every node of the default domain to `target_opset`, or raise
    ConversionError naming the node that has no exact form there."""

    def __init__(
        self,
        target_opset: int,
        *,
        expand_functions: bool = False,
        reserved_names: Callable[[], Iterable[str]] | None = None,
    ) -> None:
        """`reserved_names`: names held outside `model` that new names must avoid too (the
        rest of the protobuf when the model is a part of it, as in maxlower.sparse)."""
        super().__init__()
        self.target_opset = target_opset
        self.expand_functions = expand_functions
        self.reserved_names = reserved_names

    def requires(self, model: ir.Model) -> None:
        if not _imports_default(model.opset_imports) and any(
            _imports_default(f.opset_imports) for f in model.functions.values()
        ):
            raise ir.passes.PreconditionError(
                "the model imports no default-domain opset, but some function does"
            )

    if TYPE_CHECKING:  # onnx_ir's __call__ returns what `call` returns: say so to type checkers

        def __call__(self, model: ir.Model | ir.passes.PassResult, /) -> ConversionResult: ...

    def call(self, model: ir.Model) -> ConversionResult:
        modified = normalise_opset_imports(model)
        if "" not in model.opset_imports:  # no default-domain node to convert (ai.onnx.ml only)
            model.opset_imports[""] = self.target_opset
            modified = True
        modified |= _function_types(model)
        sources = source_opsets_of(model)
        # The nodes the family's adapters add mean what they mean at the target by
        # construction: the other-op pass converts only their spelling (the list keeps
        # the model's own nodes alive, so their ids stay unique).
        own = [n for _, c, _ in containers(model) for n in ir.traversal.RecursiveGraphIterator(c)]
        namer = Namer.of_model(model, self.reserved_names)  # one for both: names never repeat
        family = ConvertFamilyPass(self.target_opset, namer=namer)(model)
        others = ConvertOtherOpsPass(
            self.target_opset,
            sources,
            expand_functions=self.expand_functions,
            own={id(n) for n in own},
            namer=namer,
        )(model)
        ir_version = max(model.ir_version, min_ir_version(self.target_opset), 4)
        modified |= family.modified or others.modified or ir_version != model.ir_version
        model.ir_version = ir_version
        relabelled = [
            OtherOpConversion(r.where, r.node, r.op_type, r.from_version, r.to_version, RELABELLED)
            for r in family.relabelled
        ]
        return ConversionResult(model, modified, family.rewrites, relabelled + others.conversions)


def _function_types(model: ir.Model) -> bool:
    """Give function bodies the types their calls decide (the adapters need dtypes and
    ranks); whether attribute references were resolved."""
    if not model.functions:  # (it walks every node to find calls; without functions, for nothing)
        return False
    modified = ResolveAttributeReferencesPass()(model).modified  # (they decide types)
    InferFunctionTypesPass()(model)
    return modified


def with_model_opsets(
    error: ConversionError, model: ir.Model, *, expand_functions: bool
) -> ConversionError:
    """`error`, a refusal of ConvertOtherOpsPass on `model` (as it was before the pass),
    with a remedy that names the opsets in which every node of the model converts, not only
    the refused one; or, where there are none but the model's own, says so and names the
    nodes that bound it. Other errors are returned as they are."""
    remedy = getattr(error, "refusal_remedy", None)
    if not isinstance(remedy, RefusalRemedy) or not remedy.names_a_range():
        return error
    normalise_opset_imports(model)
    _function_types(model)  # as ConvertToOpsetPass gives them, so that the probes see them
    found = model_opsets(model, expand_functions=expand_functions, within=(remedy.low, remedy.high))
    narrowed = dataclasses.replace(remedy, model=found)
    wider = ConversionError(
        error.node_name, error.op_type, error.detail or error.reason, narrowed.text()
    )
    wider.refusal_remedy = narrowed
    wider.__cause__ = error.__cause__
    return wider


def _imports_default(opsets: dict[str, int]) -> bool:
    return "" in opsets or "ai.onnx" in opsets


def normalise_opset_imports(model: ir.Model) -> bool:
    """Fold 'ai.onnx' into '' in the model's and every function's opset imports, keeping the
    version onnx's checker reads ('' over 'ai.onnx'); whether anything changed."""
    changed = False
    for opsets in [model.opset_imports, *(f.opset_imports for f in model.functions.values())]:
        if "ai.onnx" in opsets:
            version = opsets.pop("ai.onnx")
            opsets.setdefault("", version)
            changed = True
    return changed


__all__ = ["ConversionResult", "ConvertToOpsetPass"]
