"""`--report FILE.html`: one self-contained HTML page of what a command did, for people.

    job_report(label, before, outcome, job, seconds, verification, proof)   the page
    verify_report(label, reference, candidate, seconds, verification)
    prove_report(label, reference, candidate, seconds, proof)

`before` is the model as `pipeline.prepare` gave it (a copy: `pipeline.run` changes it);
`outcome` is what `pipeline.run` returned. The command line (`convert`, `lower`, `verify`)
and the library (`report=` of maxlower.convert, lower, convert_and_lower, verify) call
these, so both write the same page. `sites` finds the rewrite sites, `layout` lays out
each drawing (grandalf), `drawing` makes the SVG, `page` the HTML.
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING

import onnx
import onnx_ir as ir

from maxlower.changes import Record, Stage, stages
from maxlower.report.page import Facts, render

if TYPE_CHECKING:
    from maxlower.pipeline import Job, Outcome


def job_text(job: Job) -> str:
    parts = []
    if job.opset is not None:
        parts.append(f"convert to opset {job.opset}")
    if job.profile is not None:
        parts.append(f"lower for profile {job.profile.name!r}")
    if job.expand_functions:
        parts.append("expanding functions")
    return ", then ".join(parts[:2]) + (f" ({parts[2]})" if len(parts) > 2 else "")


def job_report(
    label: str,
    before: onnx.ModelProto,
    outcome: Outcome,
    job: Job,
    seconds: float,
    verification=None,
    proof=None,
) -> str:
    """The page for `convert` or `lower`: `before` went through `job` into `outcome`;
    `proof`: the --prove verdict (maxlower.prove.sites.SitesReport), shown per site."""
    report = outcome.report
    facts = Facts(
        label, job_text(job), report.source_opset, report.target_opset, report.profile, seconds
    )
    return render(facts, stages(before, outcome, job), verification, proof)


def verify_report(
    label: str,
    reference: onnx.ModelProto | ir.Model,
    candidate: onnx.ModelProto | ir.Model,
    seconds: float,
    verification,
) -> str:
    """The page for `verify`: no rewrites, the verdict, and the diverging node drawn."""
    reference, candidate = _typed(reference), _typed(candidate)
    facts = Facts(
        label, "verify", _default_opset(reference), _default_opset(candidate), None, seconds
    )
    return render(facts, [Stage("verification", reference, candidate, [])], verification)


def prove_report(
    label: str, reference: onnx.ModelProto, candidate: onnx.ModelProto, seconds: float, proof
) -> str:
    """The page for `maxlower prove A B`: the verdict, and, for a proof by regions
    (maxlower.prove.sites.SitesReport), each region drawn with its status."""
    reference, candidate = _typed(reference), _typed(candidate)
    facts = Facts(
        label, "prove", _default_opset(reference), _default_opset(candidate), None, seconds
    )
    proofs = getattr(proof, "sites", [])
    found = [Record(p.where, p.node, p.op_type, p.kind, "-", p.status) for p in proofs]
    stage = proofs[0].stage if proofs else "proof"
    return render(facts, [Stage(stage, reference, candidate, found)], None, proof)


def _typed(model: onnx.ModelProto | ir.Model) -> onnx.ModelProto:
    """The model as a protobuf, with the value types shape inference gives where it can
    (the drawings show them; a model it fails on is drawn with the types it declares)."""
    from maxlower.serde import serialize

    proto = serialize(model) if isinstance(model, ir.Model) else model
    try:
        return onnx.shape_inference.infer_shapes(proto)
    except Exception:  # (inference is only for the labels)
        return proto


def _default_opset(model: onnx.ModelProto) -> int | None:
    return next((e.version for e in model.opset_import if e.domain in ("", "ai.onnx")), None)


class ReportFile:
    """The library's `report=` path: vetted as an output before any work (the rules of
    maxlower.files.Outputs, the command line's), written atomically at the end, nothing
    left behind when the job refuses.

        with ReportFile(path, reads={"the reference model": path_a}) as file:
            ...the job...
            file.write(page)
    """

    def __init__(self, path: str | os.PathLike[str], reads: dict | None = None) -> None:
        from maxlower.files import Outputs

        self.started = time.perf_counter()
        self._outputs = Outputs()
        for label, read in (reads or {}).items():
            if isinstance(read, str | os.PathLike):
                self._outputs.read(read, label)
        self.path = self._outputs.declare(path, "report")

    def __enter__(self) -> ReportFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self._outputs.discard()

    @property
    def seconds(self) -> float:
        return time.perf_counter() - self.started

    def write(self, page: str) -> None:
        self._outputs.stage_text(self.path, page)
        self._outputs.commit()


__all__ = ["ReportFile", "job_report", "prove_report", "records", "stages", "verify_report"]
