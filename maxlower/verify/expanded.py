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
    # every difference between kernel and body starts at a float output of an expanded op
    # (the runs' first differing nodes): integers that differ are downstream of its rounding
    downstream: bool = False

    @property
    def max_ulps(self) -> int:
        return max((o["max_ulps"] or 0 for o in self.outputs), default=0)

    @property
    def special(self) -> int:
        return sum(o["special"] for o in self.outputs)

    def _is_integer(self, output: dict) -> bool:
        return output["max_ulps"] is None and not output["special"]

    @property
    def integer_outputs(self) -> list[dict]:
        """Outputs with neither ulps nor special values that differ: not floats."""
        return [o for o in self.outputs if self._is_integer(o)]

    @property
    def integers_differ(self) -> bool:
        """Integer or boolean results differ where no expanded op's rounding explains it
        (a difference that does not start at an expanded op's float output): a failure
        whatever the bound."""
        return bool(self.integer_outputs) and not self.downstream

    @property
    def float_outputs(self) -> list[dict]:
        return [o for o in self.outputs if not self._is_integer(o)]

    @property
    def within_bound(self) -> bool:
        if self.integers_differ:
            return False
        # an integer changed downstream took a rounding of at least 1 ulp at its root
        least = 1 if self.integer_outputs else 0
        return self.max_ulps_bound is None or max(self.max_ulps, least) <= self.max_ulps_bound

    def headline(self, strict: bool) -> str:
        """What was seen, and, first, what failed: --strict, integers that differ apart
        from any rounding, or the ulps bound (only when one is set)."""
        ops = ", ".join(self.ops)
        head = (
            f"ROUNDING OF AN EXPANDED FUNCTION ({ops}): bit-exact to the ONNX function "
            "bodies; the original's kernels differ from them"
        )
        if self.float_outputs:
            head += f" by at most {self.max_ulps} ulps"
        if self.special:
            head += f", on {self.special} elements where NaN or ±inf differ"
        integers = self.integer_outputs
        if integers:
            count = sum(o["mismatches"] for o in integers)
            names = ", ".join(repr(o["name"]) for o in integers)
            head += (
                f", which changes {count} integer elements downstream (output {names})"
                if self.downstream
                else f"; integer or boolean outputs differ, not by rounding (output {names})"
            )
        if self.integers_differ:
            return "NOT EQUIVALENT: integer or boolean outputs differ: " + head
        if strict:
            return "NOT EQUIVALENT under --strict: " + head
        if not self.within_bound:
            return f"NOT EQUIVALENT past --expanded-ulps {self.max_ulps_bound}: " + head
        return head

    def lines(self) -> list[str]:
        ops = ", ".join(self.ops)
        bound = (
            "no bound set"
            if self.max_ulps_bound is None
            else f"bound {self.max_ulps_bound} ulps"
            + ("" if self.integers_differ or self.within_bound else ": PAST IT")
        )
        lines = [
            f"the candidate is bit-exact to the original with {ops} expanded into ONNX "
            f"function bodies at its own opset; the original's own kernels differ from "
            f"them ({bound}):"
        ]
        for output in self.outputs:
            special = f", {output['special']} where NaN or ±inf differ" if output["special"] else ""
            if not self._is_integer(output):
                apart = f"at most {output['max_ulps'] or 0} ulps apart{special}"
            elif self.downstream:
                apart = (
                    "integers or booleans changed downstream: every difference starts at "
                    f"a float output of {ops} (a near-tie that rounds the other way)"
                )
            else:
                apart = "integers or booleans that differ, not by rounding (it fails)"
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
        downstream=not kernel.untraced_runs
        and bool(kernel.roots)
        and all(r["float"] and r["op"] in op_types for r in kernel.roots),
    )
    report.status = EQUIVALENT_EXCEPT_EXPANDED
    return report
