"""`maxlower convert` and `maxlower lower`: options read, then the one job of maxlower.api
(`execute`), then --verify, --prove, --json, --report and OUT, all written together."""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
import sys
import time
from typing import TYPE_CHECKING

import click

from maxlower.api import execute
from maxlower.cli.batch import BATCH_EXIT_CODES_HELP, batch_options, is_batch, run_batch
from maxlower.cli.main import (
    DEBUG_OPTION,
    EXIT_CODES_HELP,
    PROFILES_OPTION,
    QUIET_OPTION,
    READ_EXTERNAL,
    READ_IN,
    READ_INPUTS,
    REPORT_OPTION,
    TIMINGS_OPTION,
    cli,
    errors_to_exit_codes,
    no_cyclic_gc,
    opset_text,
    output_path_for,
    profile_reads,
    timings_report,
)
from maxlower.cli.prove import proof_options
from maxlower.cli.verify import Verification, exit_code, verification_options
from maxlower.errors import LATEST_OPSET, check_target_opset
from maxlower.external import inlined
from maxlower.files import Outputs, same_file
from maxlower.io import default_output_path, write_checked
from maxlower.pipeline import Job, load_proto
from maxlower.profiles import load_profiles
from maxlower.ui import Progress, echo

if TYPE_CHECKING:
    from maxlower.prove import ProofOptions


@cli.command(
    help=f"""Convert the model IN to opset N, exactly, and write it to OUT.

OUT defaults to <stem>.opset<N>.onnx beside IN (<stem>.opset<N>.<P>.onnx with --profile
P); it is never written over IN without --in-place, is written atomically, and nothing is
written on an error. Every Max, ReduceMax, ArgMax, Min, ReduceMin and ArgMin node is
rewritten into a form that gives identical results at N, every other node is relabelled,
adapted or converted on its own by onnx.version_converter, and the result passes
onnx.checker's full check. --dry-run writes nothing; --verify tests and --prove proves the
result before it is written (on a difference or an unproved site nothing is written:
--force writes anyway); --profile P also lowers it for a backend. maxlower.convert() in
Python runs the same pipeline. What it prints, and every option: docs/cli.md,
"maxlower convert".

\b
Examples:
  maxlower convert model.onnx --opset 13                # -> model.opset13.onnx
  maxlower convert model.onnx --opset 13 --dry-run      # summary only
  maxlower convert model.onnx --opset 13 --in-place     # replaces model.onnx
  maxlower convert model.onnx --opset 11 --verify       # tests it, or writes nothing
  maxlower convert models/ --opset 13 -o out/ --jobs 4  # a batch: every *.onnx below

Several IN, a directory (searched for *.onnx) or a glob make a batch: each model runs
in a process of its own, as it would alone, --jobs at a time, into -o DIR (the same
relative names) or beside each. A line per model as it finishes, then a summary;
--json writes JSON lines (one per model), --report INDEX.html an index page linking
each model's page, and --resume skips what OUT's record says is done. docs/cli.md,
"Batches".

{EXIT_CODES_HELP}
{BATCH_EXIT_CODES_HELP}""",
    short_help="Convert a model to another opset, exactly.",
)
@click.argument(
    "model_paths", metavar="IN...", nargs=-1, required=True, type=click.Path(path_type=pathlib.Path)
)
@click.option(
    "--opset",
    "-t",
    "opset",
    type=int,
    required=True,
    metavar="N",
    help=f"Target default-domain (ai.onnx) opset, 1..{LATEST_OPSET}. Required.",
)
@click.option(
    "-o",
    "--output",
    "output_path",
    type=click.Path(path_type=pathlib.Path),
    metavar="OUT",
    help="Where to write the result. Default: <stem>.opset<N>.onnx beside IN.",
)
@click.option("--dry-run", is_flag=True, help="Convert and print the summary, but write nothing.")
@click.option(
    "--in-place",
    is_flag=True,
    help="Allow replacing IN with the result (the default OUT becomes IN).",
)
@click.option(
    "--profile",
    "-p",
    "profile_names",
    multiple=True,
    metavar="P",
    help="Also lower the result for backend profile P: a shipped profile "
    "(`maxlower profiles`) or the path of a profile .toml file. Repeat it for what "
    "several profiles all accept.",
)
@click.option(
    "--expand-functions/--no-expand-functions",
    default=True,
    help="An op that does not exist at N (LayerNormalization below 17, say) becomes "
    "its ONNX function body, the spec's definition (the default); --no-expand-functions "
    "refuses it instead. A runtime's fused kernel may round floats unlike the body: "
    "--verify holds the result to the body bit for bit and reports the kernel's "
    "rounding apart (status 'rounding of an expanded function'; --strict or "
    "--expanded-ulps N fail it).",
)
@verification_options(gate=True)
@proof_options
@REPORT_OPTION
@batch_options
@QUIET_OPTION
@TIMINGS_OPTION
@DEBUG_OPTION
def convert(
    model_paths: tuple[pathlib.Path, ...],
    opset: int,
    output_path: pathlib.Path | None,
    dry_run: bool,
    in_place: bool,
    profile_names: tuple[str, ...],
    expand_functions: bool,
    quiet: bool,
    debug: bool,
    verification: Verification,
    timings: bool,
    report_path: pathlib.Path | None,
    proving: ProofOptions | None,
    **batch: object,
) -> None:
    progress = Progress()  # stage lines and a bar for the data file, on a terminal only
    with errors_to_exit_codes(debug), timings_report(progress, timings), no_cyclic_gc():
        profile = load_profiles(profile_names) if profile_names else None

        def default_for(path: pathlib.Path) -> pathlib.Path:
            default = default_output_path(path, opset)
            if profile is not None:
                default = default.with_name(f"{default.stem}.{profile.name}.onnx")
            return default

        if is_batch(model_paths, batch):
            check_target_opset(opset)
            run_batch("convert", click.get_current_context().params, default_for)
        input_path = model_paths[0]
        output_path = output_path_for(input_path, output_path, in_place, default_for(input_path))
        check_target_opset(opset)
        job = Job(opset, profile, expand_functions)
        _run_and_write(
            input_path,
            output_path,
            job,
            dry_run,
            quiet,
            verification,
            progress,
            report_path,
            proving,
        )


@cli.command(
    help=f"""Lower the model IN for the backend profile P, exactly, and write it to OUT.

OUT defaults to <stem>.<P>.onnx beside IN, written as `convert` writes. Every node P
does not accept becomes the cheapest exact form that P accepts, at IN's own opset, and the
summary says why P rejects it and which decompositions replaced it. P is a shipped
profile (`maxlower profiles`) or the path of a .toml file (schema: docs/profiles.md,
"Profile files"); --verify and --prove check the result before it is written, as for
`convert`. Details: docs/profiles.md.

\b
Examples:
  maxlower lower model.onnx --profile primitives        # -> model.primitives.onnx
  maxlower lower model.onnx --profile onnxruntime --verify
  maxlower lower models/ --profile rknn -o out/         # a batch, as for convert

{EXIT_CODES_HELP}
Here exit code 3 means that some node has no exact form that P accepts; the message
says what P would have to accept. An unknown or malformed profile is exit code 2.
{BATCH_EXIT_CODES_HELP}""",
    short_help="Lower a model for a backend profile, exactly.",
)
@click.argument(
    "model_paths", metavar="IN...", nargs=-1, required=True, type=click.Path(path_type=pathlib.Path)
)
@PROFILES_OPTION
@click.option(
    "-o",
    "--output",
    "output_path",
    type=click.Path(path_type=pathlib.Path),
    metavar="OUT",
    help="Where to write the result. Default: <stem>.<P>.onnx beside IN.",
)
@click.option("--dry-run", is_flag=True, help="Lower and print the summary, but write nothing.")
@click.option(
    "--in-place",
    is_flag=True,
    help="Allow replacing IN with the result (the default OUT becomes IN).",
)
@verification_options(gate=True)
@proof_options
@REPORT_OPTION
@batch_options
@QUIET_OPTION
@TIMINGS_OPTION
@DEBUG_OPTION
def lower(
    model_paths: tuple[pathlib.Path, ...],
    profile_names: tuple[str, ...],
    output_path: pathlib.Path | None,
    dry_run: bool,
    in_place: bool,
    quiet: bool,
    debug: bool,
    verification: Verification,
    timings: bool,
    report_path: pathlib.Path | None,
    proving: ProofOptions | None,
    **batch: object,
) -> None:
    progress = Progress()
    with errors_to_exit_codes(debug), timings_report(progress, timings), no_cyclic_gc():
        profile = load_profiles(profile_names)

        def default_for(path: pathlib.Path) -> pathlib.Path:
            return path.with_name(f"{path.stem}.{profile.name}.onnx")

        if is_batch(model_paths, batch):
            run_batch("lower", click.get_current_context().params, default_for)
        input_path = model_paths[0]
        output_path = output_path_for(input_path, output_path, in_place, default_for(input_path))
        job = Job(profile=profile)
        _run_and_write(
            input_path,
            output_path,
            job,
            dry_run,
            quiet,
            verification,
            progress,
            report_path,
            proving,
        )


def _run_and_write(
    input_path: pathlib.Path,
    output_path: pathlib.Path,
    job: Job,
    dry_run: bool,
    quiet: bool,
    verification: Verification,
    progress: Progress,
    report_path: pathlib.Path | None = None,
    proving: ProofOptions | None = None,
) -> None:
    """What `convert` and `lower` do once their options are read: the pipeline, the
    report, --verify, --prove, --json, --report, and the output files, all written
    together at the end (`maxlower.files.Outputs`: nothing is left behind when a later
    step refuses)."""
    started = time.perf_counter()
    if proving is not None:
        from maxlower.prove import require_solver

        require_solver()  # before any work
    with Outputs(_reads(input_path, job, verification)) as outputs:
        _declare_outputs(outputs, input_path, None if dry_run else output_path, verification)
        if report_path is not None:
            outputs.declare(report_path, "--report")
        counterexample_path = _counterexample_path(output_path, dry_run, proving)
        if counterexample_path is not None:
            outputs.declare(counterexample_path, "--prove's counterexample", optional=True)
        prepared = load_proto(input_path, progress=progress)
        base_dir = input_path.parent
        original = None
        if verification.enabled:  # the input as it is before the pipeline changes it
            original = inlined(prepared, base_dir)  # every external tensor, from base_dir
        keep = report_path is not None or proving is not None
        done = execute(prepared, job, base_dir, keep_before=keep, progress=progress)
        outcome, proof = done.outcome, None
        for location, directory in outcome.checked.base_dirs.items():
            outputs.read(os.path.join(directory, location), READ_EXTERNAL)
        report = outcome.report
        if not quiet:
            target = f" → {job.opset}" if job.opset is not None else ""
            header = f"{input_path}: opset {opset_text(report.source_opset)}{target}"
            echo("\n".join([header, *report.lines()]))
        allowed = True
        if original is not None:
            with _verifying(progress, verification):
                allowed = verification.allows_writing(
                    original,
                    inlined(outcome.proto, outcome.checked.base_dirs),
                    None if dry_run else output_path,
                    quiet=quiet,
                    expanded=report.expanded_ops(),
                )
        if proving is not None:
            proof = done.prove(proving)
            _show_proof(proof, outputs, counterexample_path, quiet)
            allowed &= proof.ok or verification.force or dry_run
            if not proof.ok and not dry_run:
                _proof_refusal(proof, output_path, verification.force, quiet)
        if verification.json_path is not None:
            verdict = verification.report.to_dict() if verification.report else None
            document = {"input": str(input_path), **report.to_dict(), "verification": verdict}
            document["proof"] = proof.to_dict() if proof is not None else None
            outputs.stage_text(verification.json_path, json.dumps(document, indent=2) + "\n")
        if report_path is not None:
            seconds = time.perf_counter() - started
            outputs.stage_text(
                report_path, done.page(str(input_path), seconds, verification.report)
            )
        if allowed and not dry_run:
            write_checked(outcome.checked, output_path, progress=progress, outputs=outputs)
        outputs.commit()
    if allowed and not quiet:
        echo(f"dry run: {output_path} not written" if dry_run else f"wrote {output_path}")
    _finish(verification, proof)


def _counterexample_path(
    output_path: pathlib.Path, dry_run: bool, proving: ProofOptions | None
) -> pathlib.Path | None:
    """Where --prove writes a counterexample's inputs: beside OUT, as `maxlower prove`
    writes them beside CANDIDATE (a dry run writes nothing)."""
    if proving is None or dry_run:
        return None
    return output_path.with_name(f"{output_path.name}.counterexample.npz")


def _show_proof(proof, outputs, counterexample_path, quiet) -> None:
    """--prove's verdict printed, a counterexample's inputs staged as .npz."""
    counterexample = proof.counterexample
    if counterexample is not None and counterexample_path is not None:
        import numpy as np

        counterexample.path = str(counterexample_path)
        with open(outputs.stage(counterexample_path), "wb") as handle:
            np.savez(handle, **counterexample.inputs)
    if not quiet:
        echo("\n".join(["proof: " + line for line in proof.lines()[:1]] + proof.lines()[1:]))


def _proof_refusal(proof, output_path, force, quiet) -> None:
    """The one line that says OUT was not written (or is, with --force) and why."""
    error = proof.error()
    if force:
        if not quiet:
            echo(f"--force: writing {output_path} although the {error}")
        return
    echo(
        f"maxlower: error: {output_path} not written: {error} (--force writes it anyway)", err=True
    )


def _finish(verification: Verification, proof) -> None:
    """Exit 1 if verification or the proof found a difference, else the code of the one
    that did not pass (2 not verified, 5 inconclusive)."""
    codes = []
    if verification.report is not None and not verification.report.ok:
        codes.append(exit_code(verification.report))
    error = proof.error() if proof is not None else None
    if error is not None:
        codes.append(error.exit_code)
    if codes:
        sys.exit(1 if 1 in codes else codes[0])


def _declare_outputs(
    outputs: Outputs,
    input_path: pathlib.Path,
    output_path: pathlib.Path | None,
    verification: Verification,
) -> None:
    """OUT and OUT.data (unless a dry run) and --json, vetted before any work. With
    --in-place (_output_path allowed OUT to be IN) they replace IN and its data."""
    if output_path is not None:
        in_place = same_file(output_path, input_path)
        outputs.declare(output_path, "OUT", may_replace={READ_IN} if in_place else set())
        outputs.declare(
            output_path.with_name(f"{output_path.name}.data"),
            "OUT.data",
            may_replace={READ_EXTERNAL} if in_place else set(),
            optional=True,
        )
    if verification.json_path is not None:
        outputs.declare(verification.json_path, "--json")


def _reads(input_path: pathlib.Path, job: Job, verification: Verification) -> dict:
    """{what it is: path} of every file that `convert` or `lower` reads by name."""
    reads = {READ_IN: input_path, READ_INPUTS: verification.inputs}
    return reads | profile_reads(job.profile)


def _verifying(progress: Progress, verification: Verification):
    """A progress line while --verify runs both models (on a terminal; nothing otherwise)."""
    if not verification.enabled:
        return contextlib.nullcontext()
    return progress.stage("verifying: both models on seeded trials", prints=True)
