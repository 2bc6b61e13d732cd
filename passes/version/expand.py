"""Expand an op into its ONNX function body, for targets where the op does not exist.

    LayerNormalization-17(x, scale, bias), target 13
        →  body from onnx.defs at opset 17 (ReduceMean, Sub, Sqrt, Div, ...)
        →  the body's nodes converted 17 → 13 like any others
        →  spliced where the node was

ONNX defines many newer ops by a function body (`OpSchema.has_function`, or a body built
for the node's attributes and input types, `has_context_dependent_function`), which is
their meaning in the spec. The body is taken at the opset closest to the target among
those onnx provides, inlined into a one-node model (passes.one_node; `onnx.inliner`), and
that model is converted to the target by the caller's pipeline (family adapters included),
then spliced in. Preconditions: the node's input types are known (context-dependent bodies depend on
them). Returns a reason instead when the op has no body.
"""

from __future__ import annotations

import onnx
import onnx.inliner
import onnx_ir as ir
from onnx_ir.passes.common import RemoveUnusedNodesPass

from passes.errors import error_text
from passes.names import Namer
from passes.one_node import OneNodeModel, mirrors_of
from passes.version.one_node import ConvertModel, splice

_EXPAND_DOMAIN = "maxlower.expand"


def body_opsets(op_type: str, version: int) -> list[int]:
    """The opsets at which onnx can give a function body for `op_type`-`version`."""
    schema = onnx.defs.get_schema(op_type, version, "")
    if schema.has_context_dependent_function:
        return list(schema.context_dependent_function_opset_versions)
    if schema.has_function:
        return list(schema.function_opset_versions)
    return []


def expand_function_body(
    node: ir.Node,
    version: int,
    source: int,
    target: int,
    in_function: bool,
    convert: ConvertModel,
    namer: Namer,
) -> str | None:
    """Replace `node` (schema `version`, in a graph at opset `source`) by its function body
    converted to `target`. Returns None on success, else why not (node untouched)."""
    opsets = body_opsets(node.op_type, version)
    if not opsets:
        return f"{node.op_type}-{version} has no function body in onnx.defs to expand"
    body_opset = body_opset_for(opsets, target)
    try:
        small, _ = inlined_body(node, version, source, body_opset)
    except Exception as error:  # no body for these attributes/types, inliner failure
        return f"its function body could not be built ({error_text(error)})"
    convert(small, body_opset)
    splice(node, small, in_function, namer)
    return None


def body_opset_for(opsets: list[int], target: int) -> int:
    """The opset to take a body at: the one closest to the target (the lower of two)."""
    return min(opsets, key=lambda o: (abs(o - target), o))


def inlined_body(
    node: ir.Node, version: int, source: int, body_opset: int
) -> tuple[ir.Model, list[ir.Value]]:
    """`node`'s function body at `body_opset`, inlined into a one-node model
    (passes.one_node: input k is `__mirror<k>`, standing for the k-th value of the
    returned list; output i is `__output<i>`). The prover builds it again to check an
    expansion (maxlower.prove.expansion)."""
    return _inlined_model(node, version, source, body_opset), mirrors_of(node)


def _inlined_model(node: ir.Node, version: int, source: int, body_opset: int) -> ir.Model:
    model = OneNodeModel(node, source).proto()
    call = model.graph.node[0]
    schema = onnx.defs.get_schema(node.op_type, version, "")
    function = onnx.FunctionProto()
    if schema.has_context_dependent_function:
        input_types = [_input_type(model, name).SerializeToString() for name in call.input if name]
        function.ParseFromString(
            schema.get_context_dependent_function_with_opset_version(
                body_opset, call.SerializeToString(), input_types
            )
        )
    else:
        function.ParseFromString(schema.get_function_with_opset_version(body_opset))
    function.domain, function.name = _EXPAND_DOMAIN, node.op_type
    for name in call.attribute:  # a static body refers to the call's attributes by name
        if name.name not in function.attribute:
            function.attribute.append(name.name)
    _add_attribute_defaults(function, schema, call)
    call.domain = _EXPAND_DOMAIN
    del model.opset_import[:]
    model.opset_import.extend(
        [onnx.helper.make_opsetid("", body_opset), onnx.helper.make_opsetid(_EXPAND_DOMAIN, 1)]
    )
    model.functions.append(function)
    inlined = onnx.inliner.inline_local_functions(model)
    inlined.ClearField("functions")
    del inlined.opset_import[:]
    inlined.opset_import.append(onnx.helper.make_opsetid("", body_opset))
    model = ir.serde.deserialize_model(inlined)
    RemoveUnusedNodesPass()(model)  # what only the node's absent outputs (Mean, ...) needed
    return model


def _add_attribute_defaults(function: onnx.FunctionProto, schema, call: onnx.NodeProto) -> None:
    """Attributes the call leaves out take the schema's default inside the body."""
    given = {a.name for a in call.attribute}
    declared = {a.name for a in function.attribute_proto}
    for name, attribute in schema.attributes.items():
        default = attribute.default_value
        if name in given or name in declared or default is None or not default.name:
            continue
        if name in function.attribute:
            function.attribute.remove(name)
        function.attribute_proto.append(default)


def _input_type(model: onnx.ModelProto, name: str) -> onnx.TypeProto:
    for value in model.graph.input:
        if value.name == name:
            return value.type
    for tensor in model.graph.initializer:
        if tensor.name == name:
            return onnx.helper.make_tensor_type_proto(tensor.data_type, list(tensor.dims))
    raise ValueError(f"no type for input {name!r}")
