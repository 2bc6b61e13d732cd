"""`maxlower check` (a pre-flight report for a target) and `maxlower profiles`."""

from __future__ import annotations

import json
import pathlib
import sys

import click

from maxlower import pipeline
from maxlower.cli.batch import batch_options, is_batch, run_batch
from maxlower.cli.main import (
    DEBUG_OPTION,
    PROFILES_OPTION,
    QUIET_OPTION,
    READ_IN,
    cli,
    errors_to_exit_codes,
    no_cyclic_gc,
    opset_text,
    profile_reads,
)
from maxlower.errors import check_target_opset
from maxlower.files import Outputs
from maxlower.pipeline import Job, load_proto
from maxlower.profiles import load_profiles, shipped_profiles
from maxlower.ui import echo


@cli.command(
    help="""List the backend profiles that ship with maxlower, one line each.

Pass a name to `maxlower lower --profile NAME` or `maxlower convert --profile NAME`,
or write your own profile file and pass its path (schema: docs/profiles.md, "Profile
files"). Each shipped file is in maxlower/profiles/ and cites its sources.""",
    short_help="List the backend profiles.",
)
@click.option("--paths", is_flag=True, help="Also print where each profile file is.")
@DEBUG_OPTION
def profiles(paths: bool, debug: bool) -> None:
    with errors_to_exit_codes(debug):
        shipped = shipped_profiles()
        width = max(len(name) for name in shipped)
        for name, profile in shipped.items():
            where = f"  ({profile.path})" if paths else ""
            window = f" [opsets {profile.opsets[0]}-{profile.opsets[1]}]" if profile.opsets else ""
            echo(f"{name:<{width}}  {profile.description}{window}{where}")
            if profile.target:
                echo(f"{'':<{width}}    target: {profile.target}")


@cli.command(
    help="""Say, before deploying, what the target P would reject in IN and what
`maxlower lower` would do about it. Nothing is written (but --json).

For each rejected node: the profile's rule and the source it cites, and the exact form
`lower` would choose, with its node count and estimated cost; a node no exact form can
fix is listed with what would make it possible. A profile's opset window, or --opset N,
converts first. Repeat --profile for what several targets all accept. maxlower.check()
gives the same report. Details: docs/cli.md, "maxlower check"; the profiles:
docs/profiles.md.

\b
Examples:
  maxlower check model.onnx --profile qnn-htp
  maxlower check model.onnx --profile rknn --profile onnxruntime --json plan.json
  maxlower check models/ --profile qnn-htp --jobs 2     # a batch (docs/cli.md, "Batches")

\b
Exit codes:
  0  P accepts IN as it is, or `lower` would make it acceptable exactly
  1  with --strict: `lower` would change something
  2  bad invocation, unreadable input or profile
  3  some node has no exact form that P accepts (each is listed)
  4  internal error in maxlower (a bug)
With several models (a batch): the worst model's code, in the order 4, 6 (a model ran
past --model-timeout or --model-memory), 3, 2, 1; --json writes JSON lines.""",
    short_help="Pre-flight: what a target rejects, and what lower would do.",
)
@click.argument(
    "model_paths", metavar="IN...", nargs=-1, required=True, type=click.Path(path_type=pathlib.Path)
)
@PROFILES_OPTION
@click.option(
    "--opset",
    "-t",
    "opset",
    type=int,
    default=None,
    metavar="N",
    help="Check the model as converted to opset N (default: its own, or the profile's window).",
)
@click.option(
    "--json",
    "json_path",
    type=click.Path(path_type=pathlib.Path),
    default=None,
    metavar="F",
    help="Also write the report as JSON to F.",
)
@click.option("--strict", is_flag=True, help="Exit 1 when `lower` would change anything.")
@batch_options(resumable=False)
@QUIET_OPTION
@DEBUG_OPTION
def check(
    model_paths: tuple[pathlib.Path, ...],
    profile_names: tuple[str, ...],
    opset: int | None,
    json_path: pathlib.Path | None,
    strict: bool,
    quiet: bool,
    debug: bool,
    **batch: object,
) -> None:
    from maxlower.check import CheckReport

    with errors_to_exit_codes(debug), no_cyclic_gc():
        profile = load_profiles(profile_names)
        if opset is not None:
            check_target_opset(opset)
        if is_batch(model_paths, batch):
            run_batch("check", click.get_current_context().params, None)
        input_path = model_paths[0]
        reads = {READ_IN: input_path} | profile_reads(profile)
        with Outputs(reads) as outputs:
            if json_path is not None:
                outputs.declare(json_path, "--json")
            prepared = load_proto(input_path)
            job = Job(opset, profile, keep_going=True)
            outcome = pipeline.run(prepared, job, input_path.parent)
            report = CheckReport.of(outcome.report, profile, outcome.proto)
            if not quiet:
                source = opset_text(report.source_opset)
                echo(
                    "\n".join(
                        [
                            f"{input_path}: opset {source}, profile {profile.name!r}",
                            *report.lines(),
                        ]
                    )
                )
            if json_path is not None:
                document = {"input": str(input_path), **report.to_dict()}
                outputs.stage_text(json_path, json.dumps(document, indent=2) + "\n")
            outputs.commit()
    sys.exit(report.exit_code(strict=strict))
