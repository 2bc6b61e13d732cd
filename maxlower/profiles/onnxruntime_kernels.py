"""Which nodes the installed onnxruntime can run on its CPU execution provider.

Read from onnxruntime's own kernel registry
(`onnxruntime.capi._pybind_state.get_all_opkernel_def()`): a node is accepted when some CPU
kernel of its domain and op covers the node's schema version, and every type parameter the
node binds (through the ONNX schema's formal inputs and outputs) is one that kernel lists.
Constant needs no kernel (onnxruntime folds it into an initializer), and an op without any
kernel whose ONNX schema is a function is accepted, because onnxruntime inlines its body.
A type that is unknown is not checked.
"""

from __future__ import annotations

import collections
import functools

import onnx
import onnx_ir as ir

_NO_KERNEL_NEEDED = {("", "Constant")}


@functools.cache
def cpu_kernels() -> dict[tuple[str, str], list[tuple[int, int, dict[str, frozenset[str]]]]]:
    """{(domain, op): [(first version, last version, {type parameter: type strings})]}."""
    from onnxruntime.capi import _pybind_state

    table = collections.defaultdict(list)
    for kernel in _pybind_state.get_all_opkernel_def():
        if kernel.provider != "CPUExecutionProvider":
            continue
        domain = "" if kernel.domain == "ai.onnx" else kernel.domain
        low, high = kernel.version_range
        constraints = {name: frozenset(types) for name, types in kernel.type_constraints.items()}
        table[domain, kernel.op_name].append((low, high, constraints))
    return dict(table)


def kernel_rejection(node: ir.Node, opset: int) -> str | None:
    """None if an onnxruntime CPU kernel runs `node` at `opset` (default domain), else why."""
    domain = "" if node.domain == "ai.onnx" else node.domain
    if (domain, node.op_type) in _NO_KERNEL_NEEDED:
        return None
    try:
        schema = onnx.defs.get_schema(node.op_type, opset, domain)
    except onnx.defs.SchemaError:
        return f"{node.op_type} does not exist at opset {opset}"
    kernels = cpu_kernels().get((domain, node.op_type))
    if kernels is None:
        if schema.has_function or schema.has_context_dependent_function:
            return None
        return f"onnxruntime has no CPU kernel for {node.op_type}"
    version = schema.since_version
    covering = [c for low, high, c in kernels if low <= version <= high]
    if not covering:
        return f"onnxruntime has no CPU kernel for {node.op_type}-{version}"
    bound = bindings(schema, node)
    for constraints in covering:
        if all(types <= constraints[p] for p, types in bound.items() if p in constraints):
            return None
    spelled = ", ".join(f"{p}={'|'.join(sorted(_short(t) for t in ts))}" for p, ts in bound.items())
    return f"onnxruntime has no CPU kernel for {node.op_type}-{version} with {spelled}"


def bindings(schema: onnx.defs.OpSchema, node: ir.Node) -> dict[str, set[str]]:
    """{type parameter: the types the node gives it}, e.g. {"T": {"tensor(int16)"}}."""
    params = {c.type_param_str for c in schema.type_constraints}
    bound: dict[str, set[str]] = collections.defaultdict(set)
    for formals, values in ((schema.inputs, node.inputs), (schema.outputs, node.outputs)):
        for i, value in enumerate(values):
            if not formals or value is None:
                continue
            formal = formals[min(i, len(formals) - 1)]  # the last formal may be variadic
            if formal.type_str in params and (text := type_string(value)) is not None:
                bound[formal.type_str].add(text)
    return dict(bound)


def type_string(value: ir.Value) -> str | None:
    """onnxruntime's spelling of a value's type ("tensor(float)"), or None if unknown."""
    if value.type is None or value.dtype is None:
        return None
    name = onnx.helper.tensor_dtype_to_string(value.dtype.value).removeprefix("TensorProto.")
    name = {"FLOAT": "float", "DOUBLE": "double"}.get(name, name.lower())
    if isinstance(value.type, ir.TensorType):
        return f"tensor({name})"
    return None


def _short(text: str) -> str:
    return text.removeprefix("tensor(").removesuffix(")")
