"""The library's front door: `convert(model, opset)`, `lower(model, profile)` and their
friends, and `execute`, the one job that both doors run once a model is loaded.

    convert(model, 13)                    every node brought to opset 13, exactly
    lower(model, "primitives")            no Max, ReduceMax or ArgMax left anywhere
    lower(model, "onnxruntime")           every node runs on onnxruntime's CPU kernels
    lower(model, "path/to/profile.toml")  your own profile
    convert_and_lower(model, 13, "tensorrt")

`lower` keeps the opset as it is (`convert_and_lower` converts first). These run
maxlower.pipeline, as the command line does (maxlower.cli.convert calls `execute` too):
the input is checked with the full checker and shape-inferred once, converted and/or
every node the profile rejects rewritten by `passes.legalize.LegalizePass`, and the
result checked again with the full checker. The errors they raise are maxlower.errors'.
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, cast

import numpy as np
import onnx
import onnx_ir as ir

from maxlower import pipeline
from maxlower.errors import ConversionError, InvalidModelError, check_target_opset
from maxlower.options import DEFAULT_TIMEOUT
from maxlower.pipeline import Job, Outcome, Report
from maxlower.profiles import Profile, ProfilesLike, load_profiles
from maxlower.serde import deserialize, serialize
from maxlower.ui import QUIET, Progress
from maxlower.verify.report import VerifyReport

if TYPE_CHECKING:
    from maxlower.prove import ProofOptions, ProveLike
    from maxlower.prove.sites import SitesReport
    from maxlower.report import ReportFile

ModelLike = TypeVar("ModelLike", onnx.ModelProto, ir.Model)
# What maxlower.verify compares: models, or the paths of model files.
ModelInput = onnx.ModelProto | ir.Model | str | os.PathLike[str]
T = TypeVar("T")


def convert(
    model: ModelLike,
    opset: int,
    *,
    expand_functions: bool = True,
    base_dir: str | os.PathLike[str] | None = None,
    report: str | os.PathLike[str] | None = None,
    prove: ProveLike = False,
) -> ModelLike:
    """Convert `model` to `opset`, exactly; returns the same kind of object it was given.

    The input is not modified. Raises ConversionError when some node has no exact form at
    `opset`, and InvalidModelError when the input is not a usable model. This runs the
    pipeline `maxlower convert` runs (maxlower.pipeline), so both give the same model or
    the same refusal.

    An op that does not exist at `opset` (LayerNormalization below 17, say) becomes its
    ONNX function body (`expanded` in the report): the spec's definition, which a
    runtime's fused kernel may round differently in the last bits of a float
    (`maxlower.verify(..., expanded=report.expanded_ops())` tells the two apart).
    `expand_functions=False` refuses such an op instead. `base_dir` is the
    directory of a ModelProto's external data, when it was loaded without it. `report`:
    also write the HTML report `maxlower convert --report` writes (maxlower.report).
    `prove`: what `--prove` does (see `run_job`).
    """
    converted, _ = convert_with_report(
        model,
        opset,
        expand_functions=expand_functions,
        base_dir=base_dir,
        report=report,
        prove=prove,
    )
    return converted


def convert_with_report(
    model: ModelLike,
    opset: int,
    *,
    expand_functions: bool = True,
    base_dir: str | os.PathLike[str] | None = None,
    report: str | os.PathLike[str] | None = None,
    prove: ProveLike = False,
) -> tuple[ModelLike, Report]:
    """`convert`, plus the report of what it changed (what the command line prints):
    `report.rewrites` (both families), `report.conversions` (the other ops)."""
    check_target_opset(opset)
    job = Job(opset, expand_functions=expand_functions)
    return run_job(model, job, base_dir, report, prove=prove)


def run_job(
    model: ModelLike,
    job: Job,
    base_dir: str | os.PathLike[str] | None = None,
    report: str | os.PathLike[str] | None = None,
    *,
    prove: ProveLike = False,
) -> tuple[ModelLike, Report]:
    """The library's door into maxlower.pipeline: `model` (untouched) through `job`, as the
    same kind of object, and the report; with `report`, the HTML page at that path too.

    `prove` (what `--prove` does on the command line): True, a dict of
    maxlower.prove.ProofOptions' fields (max_dim, timeout, signed_zeros) or a
    ProofOptions: every rewrite site of the run is proved equal to the node it replaced
    (maxlower.prove.sites.prove_run), and the result is returned only if every site is;
    else CounterexampleFound (a site differs: `error.report.counterexample` holds the
    inputs) or ProofInconclusive (the message names the node, op and size), one line
    each, as the command line's exit codes 1 and 5."""
    from maxlower.prove import ProofOptions, require_solver

    proving = ProofOptions.of(prove)
    if proving is not None:
        require_solver()
    if report is not None:
        from maxlower.report import ReportFile

        with ReportFile(report) as file:  # vetted before any work, written last
            return _run_job(model, job, base_dir, file, proving)
    return _run_job(model, job, base_dir, None, proving)


def _run_job(
    model: ModelLike,
    job: Job,
    base_dir: str | os.PathLike[str] | None,
    file: ReportFile | None,
    proving: ProofOptions | None = None,
) -> tuple[ModelLike, Report]:
    known = base_dir is not None or isinstance(model, ir.Model)  # ir: tensors know theirs
    proto, base_dir = _as_proto(model, base_dir)
    path = pathlib.Path(base_dir) / _LABEL
    prepared = _labelled(lambda: pipeline.prepare(proto, path, directory_known=known))
    keep = file is not None or proving is not None
    done = _labelled(lambda: execute(prepared, job, base_dir, keep_before=keep))
    if proving is not None:
        error = done.prove(proving).error()
        if error is not None:
            raise error
    if file is not None:
        file.write(done.page(_LABEL, file.seconds))
    if not isinstance(model, ir.Model):
        return done.outcome.proto, done.outcome.report
    converted = deserialize(done.outcome.proto)
    if done.outcome.checked.base_dirs:
        from maxlower.external import set_base_dirs

        set_base_dirs(converted, base_dir)
    # (mypy cannot rule out a class deriving from both ModelProto and ir.Model)
    return cast(ModelLike, converted), done.outcome.report


@dataclasses.dataclass
class Done:
    """What `execute` did: the model as it started (a copy, when asked for), the pipeline's
    outcome, and --prove's verdict on every rewrite site (None without a proof)."""

    job: Job
    before: onnx.ModelProto | None
    outcome: Outcome
    proof: SitesReport | None = None
    # where the model's external data lives (the proof reads a tensor the run left external
    # on one side and `before` holds read in, to compare them)
    base_dir: str | os.PathLike[str] | None = None

    def prove(self, proving: ProofOptions) -> SitesReport:
        """--prove / prove=: every rewrite site of the run proved equal to the node it
        replaced (maxlower.prove.sites.prove_run); the verdict kept, and returned."""
        from maxlower.prove.sites import prove_run

        assert self.before is not None, "execute(keep_before=True) keeps what is proved"
        self.proof = self.outcome.report.proof = prove_run(
            self.before, self.outcome, self.job, proving, self.base_dir
        )
        return self.proof

    def page(self, label: str, seconds: float, verification: Any = None) -> str:
        """The --report page of this job (maxlower.report.job_report)."""
        from maxlower.report import job_report

        assert self.before is not None, "execute(keep_before=True) keeps what the page draws"
        return job_report(
            label, self.before, self.outcome, self.job, seconds, verification, self.proof
        )


def execute(
    prepared: onnx.ModelProto,
    job: Job,
    base_dir: str | os.PathLike[str],
    *,
    keep_before: bool = False,
    progress: Progress = QUIET,
) -> Done:
    """The one job that both doors run once the model is loaded and prepared
    (maxlower.pipeline.prepare): the pipeline, keeping a copy of the model as it started
    when `keep_before` (the pipeline changes `prepared`; --prove and the --report page
    read it). The proof of every rewrite site is `Done.prove`, which each door calls when
    it is ready for it (the command line first prints the summary and verifies). The
    library (`run_job`) and the command line (maxlower.cli.convert) both call this."""
    before = None
    if keep_before:  # (a copy: the pipeline changes `prepared`)
        from maxlower.prove.models import constants_read_in

        # with the constants a site reads in from the model's directory: the proof hands
        # site models to onnx, which would look for their files in the working directory
        before = constants_read_in(prepared, base_dir)
    outcome = pipeline.run(prepared, job, base_dir, progress=progress)
    return Done(job, before, outcome, base_dir=base_dir)


ProfileLike = str | pathlib.Path | Profile  # (several at once: ProfilesLike, a list of these)


def lower(
    model: ModelLike,
    profile: ProfilesLike,
    *,
    base_dir: str | os.PathLike[str] | None = None,
    report: str | os.PathLike[str] | None = None,
    prove: ProveLike = False,
) -> ModelLike:
    """`model` with every node `profile` rejects rewritten exactly; the same kind of object
    back, and the input untouched. `profile` may be a list: what all of them accept. A
    profile with an opset window (`opsets = [first, last]`) converts into it first.
    Raises ConversionError when some node has no exact form the profile accepts,
    ProfileError for an unknown or malformed profile, and InvalidModelError for unusable
    input. `report`: also write the HTML report `maxlower lower --report` writes.
    `prove`: what `--prove` does (maxlower.api.run_job)."""
    lowered, _ = lower_with_report(model, profile, base_dir=base_dir, report=report, prove=prove)
    return lowered


def lower_with_report(
    model: ModelLike,
    profile: ProfilesLike,
    *,
    base_dir: str | os.PathLike[str] | None = None,
    report: str | os.PathLike[str] | None = None,
    prove: ProveLike = False,
) -> tuple[ModelLike, Report]:
    """`lower`, plus the report of what it rewrote (`report.lowerings`; what the CLI
    prints)."""
    return run_job(model, Job(profile=load_profiles(profile)), base_dir, report, prove=prove)


def convert_and_lower(
    model: ModelLike,
    opset: int,
    profile: ProfilesLike,
    *,
    expand_functions: bool = True,
    base_dir: str | os.PathLike[str] | None = None,
    report: str | os.PathLike[str] | None = None,
    prove: ProveLike = False,
) -> tuple[ModelLike, Report]:
    """Convert to `opset` (maxlower.convert), then lower for `profile`, in one job (what
    `maxlower convert --opset N --profile P` does); `report.rewrites`,
    `report.conversions` and `report.lowerings` say what changed. `report`: also write
    the HTML report (`--report`)."""
    loaded = load_profiles(profile)  # a bad profile fails before any work
    check_target_opset(opset)
    return run_job(model, Job(opset, loaded, expand_functions), base_dir, report, prove=prove)


def verify(
    reference: ModelInput,
    candidate: ModelInput,
    *,
    seed: int = 0,
    trials: int | None = None,
    inputs: Mapping[str, np.ndarray] | str | os.PathLike[str] | None = None,
    ranges: Mapping[str, tuple[float, float]] | None = None,
    dims: Mapping[str, int] | None = None,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    rtol: float = 0.0,
    atol: float = 0.0,
    strict: bool = False,
    timeout: float = DEFAULT_TIMEOUT,
    report: str | os.PathLike[str] | None = None,
    expanded: Iterable[str] = (),
    expanded_ulps: int | None = None,
) -> VerifyReport:
    """Check that `candidate` computes what `reference` does; never raises on a difference.
    The options are maxlower.verify.core.verify's (its docstring says each; the signature
    is repeated here so that callers' type checkers see it); `report`: also write the
    HTML report `maxlower verify --report` writes. `expanded`: the ops the conversion
    expanded into their ONNX function bodies (`report.expanded_ops()`): the candidate is
    then held bit for bit to `reference` with those ops expanded at its own opset, and the
    reference's own kernels' difference from the bodies is measured apart, as the status
    "rounding of an expanded function", failing under `strict` or past `expanded_ulps`
    (maxlower.verify.expanded)."""
    from maxlower.verify.core import as_proto
    from maxlower.verify.core import verify as run_trials
    from maxlower.verify.expanded import verify_expanded

    def trials_of() -> VerifyReport:
        if expanded:
            return verify_expanded(
                as_proto(reference, "reference"),
                candidate,
                frozenset(expanded),
                one_comparison,
                max_ulps=expanded_ulps,
            )
        return one_comparison(reference, candidate)

    def one_comparison(reference: ModelInput, candidate: ModelInput) -> VerifyReport:
        return run_trials(
            reference,
            candidate,
            seed=seed,
            trials=trials,
            inputs=inputs,
            ranges=ranges,
            dims=dims,
            input_shapes=input_shapes,
            rtol=rtol,
            atol=atol,
            strict=strict,
            timeout=timeout,
        )

    if report is None:
        return trials_of()
    from maxlower.report import ReportFile, verify_report

    reads = {"the reference model": reference, "the candidate model": candidate}
    with ReportFile(report, {**reads, "the inputs archive": inputs}) as file:
        result = trials_of()
        sides = ((reference, "reference"), (candidate, "candidate"))
        label = " vs ".join(
            str(m) if isinstance(m, str | os.PathLike) else f"<{side}>" for m, side in sides
        )
        reference_proto, candidate_proto = (as_proto(m, side) for m, side in sides)
        file.write(verify_report(label, reference_proto, candidate_proto, file.seconds, result))
    return result


# What the pipeline's messages call a model that has no file (the command line says IN).
_LABEL = "<model>"


def _labelled(step: Callable[[], T]) -> T:
    """Run a pipeline step; its InvalidModelError names no file (there is none)."""
    try:
        return step()
    except InvalidModelError as error:
        text = str(error)
        for prefix in (f"{_LABEL}: ", f"{os.sep}{_LABEL}: "):
            at = text.find(prefix)
            if at != -1 and (at == 0 or prefix.startswith(os.sep)):
                text = text[at + len(prefix) :]
                break
        raise InvalidModelError(text) from error


def _as_proto(
    model: onnx.ModelProto | ir.Model, base_dir: str | os.PathLike[str] | None
) -> tuple[onnx.ModelProto, str]:
    """A protobuf copy of `model` and the directory of its external data."""
    if isinstance(model, ir.Model):
        from maxlower.external import ir_external_tensors, ir_read_all_in

        # every external tensor, attributes and functions too
        directories = {str(t.base_dir or "") for t in ir_external_tensors(model)}
        if len(directories) > 1 or "" in directories:
            # tensors from several places (or from one nobody named): read them in, each
            # from its own directory (base_dir where it has none)
            model = model.clone()
            ir_read_all_in(model, base_dir)
            directories = set()
        found = directories.pop() if directories else None
        return serialize(model), str(base_dir or found or os.curdir)
    if not isinstance(model, onnx.ModelProto):
        raise TypeError(f"expected onnx.ModelProto or onnx_ir.Model, got {type(model).__name__}")
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    return copy, str(base_dir or os.curdir)


__all__ = [
    "ConversionError",
    "InvalidModelError",
    "convert",
    "convert_and_lower",
    "convert_with_report",
    "execute",
    "lower",
    "lower_with_report",
    "run_job",
    "verify",
]
