"""Verifying a conversion that expanded function ops into their ONNX function bodies
(issue 29): the conversion is held to the spec's body bit for bit, and the runtime's own
kernel's difference from that body is measured apart.

    spec      = the original with the same ops expanded at the original's own opset
    verdict   = verify(spec, candidate)          the conversion: bit-exact, or DIFFERENT
    kernel    = verify(original, spec)           onnxruntime's fused kernel against the body

When the verdict is EQUIVALENT and the kernel differs, the status is "rounding of an
expanded function" (EQUIVALENT_EXCEPT_EXPANDED): the expanded ops, each output's largest
distance in ulps between finite values, and the elements where the kernel and the body
disagree on NaN or ±inf. It passes unless --strict, or unless the ulps pass a bound
(`max_ulps`, unbounded by default). A comparison, a selection or an integer op expanded
so is held bit-exact all the same: only float outputs can differ, and only where the
original's kernel does.
"""

from __future__ import annotations

import dataclasses

import onnx
import onnx_ir as ir

from maxlower.verify.report import (
    DIFFERENT,
    EQUIVALENT,
    EQUIVALENT_EXCEPT_EXPANDED,
    VerifyReport,
)
from passes.builder import schema_version
from passes.function_types import InferFunctionTypesPass
from passes.graph_utils import containers, infer_shapes
from passes.names import Namer
from passes.version.expand import expand_function_body
from passes.version.other_ops import convert_small_model


def spec_reference(model: onnx.ModelProto, op_types: frozenset[str]) -> onnx.ModelProto:
    """The model with every node of `op_types` replaced by its ONNX function body at the
    model's own opset (the expansion conversion does where the target lacks the op,
    passes.version.expand): what a conversion that expanded them must reproduce exactly."""
    ir_model = ir.serde.deserialize_model(model)
    infer_shapes(ir_model)
    InferFunctionTypesPass()(ir_model)
    namer = Namer.of_model(ir_model)
    for _, container, opsets in containers(ir_model):
        opset = opsets[""]

        def convert(small: ir.Model, body_opset: int, opset: int = opset) -> None:
            convert_small_model(small, body_opset, opset, opset)

        for node in list(ir.traversal.RecursiveGraphIterator(container)):
            if node.domain == "" and node.op_type in op_types:
                version = schema_version(node.op_type, opset)
                in_function = isinstance(container, ir.Function)
                failure = expand_function_body(
                    node, version, opset, opset, in_function, convert, namer
                )
                if failure is not None:
                    raise ValueError(f"{node.op_type} {node.name!r}: {failure}")
    return ir.serde.serialize_model(ir_model)


@dataclasses.dataclass
class ExpandedRounding:
    """How the original's kernels differ from the function bodies the conversion used."""

    ops: list[str]
    outputs: list[dict]  # {"name", "mismatches", "max_ulps", "special"} per differing output
    max_ulps_bound: int | None = None

    @property
    def max_ulps(self) -> int:
        return max((o["max_ulps"] or 0 for o in self.outputs), default=0)

    @property
    def special(self) -> int:
        return sum(o["special"] for o in self.outputs)

    @property
    def integers_differ(self) -> bool:
        """An output with neither ulps nor special values differs: not a float. Integer
        and boolean results are held bit-exact whatever the bound."""
        return any(o["max_ulps"] is None and not o["special"] for o in self.outputs)

    @property
    def within_bound(self) -> bool:
        if self.integers_differ:
            return False
        return self.max_ulps_bound is None or self.max_ulps <= self.max_ulps_bound

    def lines(self) -> list[str]:
        ops = ", ".join(self.ops)
        bound = (
            "no bound set"
            if self.max_ulps_bound is None
            else f"bound {self.max_ulps_bound} ulps{'' if self.within_bound else ': PAST IT'}"
        )
        lines = [
            f"the candidate is bit-exact to the original with {ops} expanded into ONNX "
            f"function bodies at its own opset; the original's own kernels differ from "
            f"them ({bound}):"
        ]
        for output in self.outputs:
            special = f", {output['special']} where NaN or ±inf differ" if output["special"] else ""
            apart = (
                "integers or booleans that differ (never rounding: it fails)"
                if output["max_ulps"] is None and not output["special"]
                else f"at most {output['max_ulps'] or 0} ulps apart{special}"
            )
            lines.append(f"  output {output['name']!r}: {output['mismatches']} elements, {apart}")
        return lines


def verify_expanded(
    original, candidate, op_types: frozenset[str], verify, *, max_ulps: int | None = None
) -> VerifyReport:
    """The verdict on a conversion that expanded `op_types` (see the module docstring).
    `verify(reference, candidate)` runs one comparison with the caller's options."""
    spec = spec_reference(original, op_types)
    report = verify(spec, candidate)
    ops = sorted(op_types)
    compared = (
        f"compared with the original with {', '.join(ops)} expanded into ONNX function "
        "bodies at its own opset (the conversion expanded them)"
    )
    if report.status != EQUIVALENT:
        report.notes.append(compared)
        return report
    kernel = verify(original, spec)
    if kernel.status == EQUIVALENT:
        report.notes.append(compared + "; the original's own kernels give the same")
        return report
    if kernel.status != DIFFERENT:  # NaN at a reduction, or every trial skipped: say so
        report.notes.append(compared + f"; the original against them: {kernel.headline()}")
        return report
    differing = [o for o in kernel.outputs if o.status == "different"]
    report.expanded = ExpandedRounding(
        ops,
        [
            {
                "name": o.name,
                "mismatches": o.mismatches,
                "max_ulps": o.max_ulps,
                "special": o.special_mismatches,
            }
            for o in differing
        ],
        max_ulps,
    )
    report.status = EQUIVALENT_EXCEPT_EXPANDED
    return report
