"""The `maxlower` command line: `convert`, `lower`, `check`, `profiles`, `inspect` and
`verify`."""

from __future__ import annotations

import contextlib
import gc
import json
import os
import pathlib
import signal
import sys
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

import click

from maxlower import __version__, pipeline
from maxlower.api import LATEST_OPSET, InvalidModelError, check_target_opset
from maxlower.external import inlined
from maxlower.files import Outputs, raising_on_termination, same_file
from maxlower.inspect import FamilyNode, Plan, family_nodes, in_graph_order, plan_conversion
from maxlower.io import (
    Progress,
    default_output_path,
    echo,
    external_data_files,
    load_proto,
    model_from_proto,
    write_checked,
)
from maxlower.pipeline import Job
from maxlower.profiles import Profile, ProfileSet, load_profiles, shipped_profiles
from maxlower.prove.cli import proof_options, prove_command
from maxlower.safety import load_comparable
from maxlower.verify.cli import (
    VERIFY_EXIT_CODES_HELP,
    Verification,
    exit_code,
    verification_options,
)
from passes.builder import schema_version
from passes.errors import ConversionError, concise

if TYPE_CHECKING:
    from maxlower.prove import ProofOptions

EXIT_INVALID, EXIT_NO_EXACT_FORM, EXIT_INTERNAL = 2, 3, 4
# Interrupted: 128 + the signal, as shells report it (SIGINT 130, SIGTERM 143, SIGHUP 129).
# What each file a command reads is, in the message refusing an output that would replace it.
READ_IN = "the input model (IN)"
READ_EXTERNAL = "the input's external data"
READ_PROFILE = "the --profile file"
READ_INPUTS = "the --inputs archive"

EXIT_CODES_HELP = f"""\b
Exit codes:
  0  success
  1  verification found a difference (verify, and --verify on convert/lower), or
     --prove found a counterexample
  2  bad invocation, or the input is not a readable, valid ONNX model
     (missing file, directory, FIFO or device, garbled protobuf, opset
     outside 1..{LATEST_OPSET}), or an output path that is not a regular file
     or names a file the command reads or writes
  3  no exact conversion exists: the message names the node, the op, the
     reason and what would make it possible
  4  internal error in maxlower (a bug: please report it, with --debug output)
  5  --prove on convert/lower: a rewrite site could not be proved (inconclusive)
  130, 143, 129  interrupted by SIGINT, SIGTERM or SIGHUP: nothing written
"""

DEBUG_OPTION = click.option(
    "--debug",
    is_flag=True,
    help="On an error, raise it with its full traceback instead of printing one line "
    "(the exit code is then Python's, 1).",
)


QUIET_OPTION = click.option(
    "--quiet",
    "-q",
    is_flag=True,
    help="Print nothing but errors (the exit code says how it went; --json still writes "
    "the report).",
)


TIMINGS_OPTION = click.option(
    "--timings",
    is_flag=True,
    help="Print how long each stage took (loading, checking, converting, writing) to "
    "stderr at the end.",
)


REPORT_OPTION = click.option(
    "--report",
    "report_path",
    type=click.Path(path_type=pathlib.Path),  # maxlower.files vets it
    default=None,
    metavar="FILE.html",
    help="Also write a report for people: one self-contained HTML page (no network "
    "needed) with a summary, a before/after drawing of every rewrite, the verification "
    "results and a filterable table of every node that changed. Written like OUT: "
    "atomically, never over a file the command reads, nothing on a refusal.",
)


@contextlib.contextmanager
def _timings_report(progress: Progress, enabled: bool) -> Iterator[None]:
    try:
        yield
    finally:
        if enabled:
            echo(progress.timings_text(), err=True)


@contextlib.contextmanager
def _no_cyclic_gc() -> Iterator[None]:
    """Building and rewriting a graph of many nodes creates millions of objects; Python's
    cyclic collector would rescan them over and over (a third of the time on 20,000
    nodes, benchmarks/RESULTS.md). One command's garbage is small, so it waits."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


@contextlib.contextmanager
def _errors_to_exit_codes(debug: bool) -> Iterator[None]:
    """Turn the library's errors into one stderr line and an exit code (or, with --debug,
    let them propagate with their traceback). SIGTERM and SIGHUP end the command as SIGINT
    does: every temporary file removed, exit code 128 + the signal's number."""
    try:
        with raising_on_termination():
            yield
    except click.exceptions.Exit:
        raise
    except KeyboardInterrupt as error:
        signum = getattr(error, "signum", signal.SIGINT)
        by = "" if signum == signal.SIGINT else f" by {signal.Signals(signum).name}"
        _fail(f"interrupted{by} (an output file is only ever replaced whole)", 128 + signum, debug)
    except ConversionError as error:
        _fail(error, EXIT_NO_EXACT_FORM, debug)
    except InvalidModelError as error:
        _fail(error, EXIT_INVALID, debug)
    except Exception as error:
        if debug:
            raise
        _fail(
            f"internal error ({type(error).__name__}: {concise(error)}); rerun with --debug "
            "for the traceback",
            EXIT_INTERNAL,
            debug,
        )


def _fail(error: BaseException | str, code: int, debug: bool) -> None:
    if debug and isinstance(error, BaseException):
        raise error
    echo(
        f"maxlower: error: {concise(error) if isinstance(error, BaseException) else error}",
        err=True,
    )
    sys.exit(code)


# `lower` and `check` (`convert --profile` is optional, and says so itself).
_REQUIRED_PROFILES = click.option(
    "--profile",
    "-p",
    "profile_names",
    required=True,
    multiple=True,
    metavar="P",
    help="A shipped profile (`maxlower profiles`) or the path of a profile .toml file. "
    "Repeat it for what all of them accept (--profile rknn --profile onnxruntime).",
)


class _OneLineErrors(click.Group):
    """Usage errors (a missing option, a value out of range) as one `maxlower: error: ...`
    line and exit code 2, like every other refusal, instead of click's usage block."""

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, False, **extra)
        try:
            code = super().main(args, prog_name, complete_var, False, **extra)
        except click.exceptions.NoArgsIsHelpError as error:  # `maxlower` alone: the help
            error.show()
            sys.exit(error.exit_code)
        except click.UsageError as error:
            command = error.ctx.command_path if error.ctx is not None else "maxlower"
            named = isinstance(error, click.BadParameter) and error.message.startswith("--")
            text = error.message if named else error.format_message()  # names its option
            _fail(f"{text} (see '{command} --help')", EXIT_INVALID, False)
        except click.ClickException as error:
            _fail(error.format_message(), error.exit_code, False)
        except click.Abort:
            _fail("aborted", 128 + signal.SIGINT, False)
        sys.exit(code if isinstance(code, int) else 0)


@click.group(
    cls=_OneLineErrors,
    help=f"""Exact opset conversion of the ONNX Max and Min families: Max, ReduceMax, ArgMax
and Min, ReduceMin, ArgMin.

Every node of both families (in the main graph, subgraphs and model-local
functions) is rewritten to a form that gives identical results (-0.0 equal to
+0.0) at the target opset, or the conversion stops with an error that names the
node and says what would make it possible. Every other node is relabelled when
its meaning is the same at the target opset, else converted on its own by
onnx.version_converter, else refused. The result always passes onnx.checker with
full_check.

\b
Examples:
  maxlower convert model.onnx --opset 13          writes model.opset13.onnx
  maxlower convert model.onnx --opset 11 --dry-run
  maxlower lower model.onnx --profile primitives  writes model.primitives.onnx
  maxlower profiles                               lists the backend profiles
  maxlower check model.onnx --profile qnn-htp     what the target rejects, and the plan
  maxlower inspect model.onnx --opset 11
  maxlower verify model.onnx model.opset13.onnx

Run `maxlower COMMAND --help` for each command's options.

{EXIT_CODES_HELP}""",
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.version_option(__version__, prog_name="maxlower")
def cli() -> None:
    pass


@cli.command(
    help=f"""Convert the model IN to opset N, exactly, and write it to OUT.

Loads IN, rewrites every Max / ReduceMax / ArgMax node (and every Min / ReduceMin /
ArgMin node) that the target opset needs
in another form (for example ReduceMax-18's `axes` input becomes ReduceMax-13's
`axes` attribute), brings every other node to N (relabelled, adapted, or converted on
its own by onnx.version_converter), sets the default-domain opset import to N, checks
the result with onnx.checker (full_check) and writes it. maxlower.convert() in Python
runs the same pipeline and gives the same model or the same refusal.

It prints what changed, grouped by kind with counts: rewritten (family nodes, one
line each), relabelled, adapted, delegated, expanded and lowered (one line per op
and version step). --quiet prints nothing but errors; --json PATH writes the same
report as data, every node listed.

OUT defaults to <stem>.opset<N>.onnx beside IN. IN is never overwritten unless you
pass --in-place. The file is written to a temporary name in the same directory and
then renamed, so OUT is never left half-written; nothing is written when an error
occurs.

\b
Examples:
  maxlower convert model.onnx --opset 13                # -> model.opset13.onnx
  maxlower convert model.onnx --opset 11 -o out/model11.onnx
  maxlower convert model.onnx --opset 13 --dry-run      # summary only
  maxlower convert model.onnx --opset 13 --in-place     # replaces model.onnx
  maxlower convert model.onnx --opset 11 --verify       # proves it, or writes nothing
  maxlower convert model.onnx --opset 13 --profile tensorrt   # convert, then lower

With --profile P the converted model is also lowered for the backend profile P, as
`maxlower lower` does, and OUT defaults to <stem>.opset<N>.<P>.onnx.

With --verify the original and the result run on the same generated inputs (see
`maxlower verify --help`, whose input options apply here too); on a difference
nothing is written and the exit code is 1 (--force writes anyway, still exit 1).

With --prove every rewrite site of the run is proved equal to the node it replaced,
for all inputs, by the SMT prover (see `maxlower prove --help`; needs maxlower[prove]):
on a counterexample nothing is written, its inputs go to OUT.counterexample.npz and the
exit code is 1; on an inconclusive site (an op outside the prover's fragment, a size past
its budget, a timeout: the message names the node, op and size) nothing is written and
the exit code is 5. --force writes anyway and keeps the exit code.

{EXIT_CODES_HELP}""",
    short_help="Convert a model to another opset, exactly.",
)
@click.argument("input_path", metavar="IN", type=click.Path(path_type=pathlib.Path))
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
    "--expand-functions",
    is_flag=True,
    help="Let an op that does not exist at N (LayerNormalization below 17, say) "
    "become its ONNX function body. Off by default: the body is the spec's "
    "definition, but a runtime's fused kernel may round floats differently, so "
    "outputs can differ from the original's in the last bits.",
)
@verification_options(gate=True)
@proof_options
@REPORT_OPTION
@QUIET_OPTION
@TIMINGS_OPTION
@DEBUG_OPTION
def convert(
    input_path: pathlib.Path,
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
) -> None:
    progress = Progress()  # stage lines and a bar for the data file, on a terminal only
    with _errors_to_exit_codes(debug), _timings_report(progress, timings), _no_cyclic_gc():
        profile = load_profiles(profile_names) if profile_names else None
        default = default_output_path(input_path, opset)
        if profile is not None:
            default = default.with_name(f"{default.stem}.{profile.name}.onnx")
        output_path = _output_path(input_path, output_path, in_place, default)
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

A profile says what a backend accepts: which of Max, ReduceMax, ArgMax (and their Min
twins) it has, for
which element types, and constraints such as constant axes, no select_last_index or a
minimum rank (`maxlower profiles` lists the shipped ones; --profile also takes the
path of your own .toml file, schema in README.md). Every node that P does not accept
is rewritten into the cheapest exact form that P accepts (for example ArgMax without
ArgMax: ReduceMax + Equal + Where + ReduceMin), at IN's own opset; the result is
checked with onnx.checker (full_check) and written. A summary lists each lowered node,
why P rejects it and the decompositions used.

OUT defaults to <stem>.<P>.onnx beside IN. As for `convert`: IN is never overwritten
without --in-place, OUT is written atomically, and nothing is written on an error.

\b
Examples:
  maxlower lower model.onnx --profile primitives        # -> model.primitives.onnx
  maxlower lower model.onnx --profile onnxruntime --verify
  maxlower lower model.onnx --profile my_backend.toml -o out.onnx
  maxlower convert model.onnx --opset 13 --profile tensorrt   # convert, then lower

With --verify the original and the result run on the same generated inputs (see
`maxlower verify --help`); on a difference nothing is written and the exit code is 1.

With --prove every rewrite site is proved by the SMT prover before writing, as for
`convert --prove`: a counterexample exits 1, an inconclusive site 5, nothing written.

{EXIT_CODES_HELP}
Here exit code 3 means that some node has no exact form that P accepts; the message
says what P would have to accept. An unknown or malformed profile is exit code 2.""",
    short_help="Lower a model for a backend profile, exactly.",
)
@click.argument("input_path", metavar="IN", type=click.Path(path_type=pathlib.Path))
@_REQUIRED_PROFILES
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
@QUIET_OPTION
@TIMINGS_OPTION
@DEBUG_OPTION
def lower(
    input_path: pathlib.Path,
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
) -> None:
    progress = Progress()
    with _errors_to_exit_codes(debug), _timings_report(progress, timings), _no_cyclic_gc():
        profile = load_profiles(profile_names)
        default = input_path.with_name(f"{input_path.stem}.{profile.name}.onnx")
        output_path = _output_path(input_path, output_path, in_place, default)
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
        keep = report_path is not None or proving is not None
        before = _copy_proto(prepared) if keep else None
        original = None
        if verification.enabled:  # the input as it is before the pipeline changes it
            original = inlined(prepared, base_dir)  # every external tensor, from base_dir
        outcome = pipeline.run(prepared, job, base_dir, progress=progress)
        for location, directory in outcome.checked.base_dirs.items():
            outputs.read(os.path.join(directory, location), READ_EXTERNAL)
        report = outcome.report
        if not quiet:
            target = f" → {job.opset}" if job.opset is not None else ""
            header = f"{input_path}: opset {_opset_text(report.source_opset)}{target}"
            echo("\n".join([header, *report.lines()]))
        allowed = True
        if original is not None:
            with _verifying(progress, verification):
                allowed = verification.allows_writing(
                    original,
                    inlined(outcome.proto, outcome.checked.base_dirs),
                    None if dry_run else output_path,
                    quiet=quiet,
                )
        proof = None
        if proving is not None and before is not None:
            proof = _proof(before, outcome, job, proving, outputs, counterexample_path, quiet)
            allowed &= proof.ok or verification.force or dry_run
            if not proof.ok and not dry_run:
                _proof_refusal(proof, output_path, verification.force, quiet)
        if verification.json_path is not None:
            verdict = verification.report.to_dict() if verification.report else None
            document = {"input": str(input_path), **report.to_dict(), "verification": verdict}
            document["proof"] = proof.to_dict() if proof is not None else None
            outputs.stage_text(verification.json_path, json.dumps(document, indent=2) + "\n")
        if report_path is not None and before is not None:
            from maxlower.report import job_report

            seconds = time.perf_counter() - started
            page = job_report(
                str(input_path), before, outcome, job, seconds, verification.report, proof
            )
            outputs.stage_text(report_path, page)
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


def _proof(before, outcome, job, proving, outputs, counterexample_path, quiet):
    """--prove: every rewrite site of the run proved; the verdict printed, a
    counterexample's inputs staged as .npz."""
    from maxlower.prove.sites import prove_run

    proof = outcome.report.proof = prove_run(before, outcome, job, proving)
    counterexample = proof.counterexample
    if counterexample is not None and counterexample_path is not None:
        import numpy as np

        counterexample.path = str(counterexample_path)
        with open(outputs.stage(counterexample_path), "wb") as handle:
            np.savez(handle, **counterexample.inputs)
    if not quiet:
        echo("\n".join(["proof: " + line for line in proof.lines()[:1]] + proof.lines()[1:]))
    return proof


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


def _copy_proto(proto):
    copy = type(proto)()
    copy.CopyFrom(proto)
    return copy


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
    return reads | _profile_reads(job.profile)


def _profile_reads(profile: Profile | ProfileSet | None) -> dict:
    """{what it is: path} of the --profile files."""
    members = profile.members if profile is not None else ()
    if len(members) <= 1:
        return {READ_PROFILE: members[0].path if members else None}
    return {f"{READ_PROFILE} {m.name!r}": m.path for m in members}


@cli.command(
    help="""List the backend profiles that ship with maxlower, one line each.

Pass a name to `maxlower lower --profile NAME` or `maxlower convert --profile NAME`,
or write your own profile file and pass its path (schema: README.md, "Lowering and
profiles"). Each shipped file is in maxlower/profiles/ and cites its sources.""",
    short_help="List the backend profiles.",
)
@click.option("--paths", is_flag=True, help="Also print where each profile file is.")
@DEBUG_OPTION
def profiles(paths: bool, debug: bool) -> None:
    with _errors_to_exit_codes(debug):
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
`maxlower lower` would do about it. Nothing is written.

For every node P rejects (main graph, subgraphs, functions) it prints the rule and
the source the profile cites for it, then the exact form `lower` would choose: the
decompositions, the node count and the planner's cost estimate (1 is an Add over the
node's input). Nodes that no exact form can fix are listed with the reason and what
would make them possible. A profile with an opset window, or --opset N, converts first,
and the report says so. Repeat --profile for what several targets all accept.
maxlower.check() in Python runs the same pipeline and gives the same report.

\b
Examples:
  maxlower check model.onnx --profile qnn-htp
  maxlower check model.onnx --profile rknn --profile onnxruntime --json plan.json
  maxlower check model.onnx --profile coreml --opset 13 --strict

\b
Exit codes:
  0  P accepts IN as it is, or `lower` would make it acceptable exactly
  1  with --strict: `lower` would change something
  2  bad invocation, unreadable input or profile
  3  some node has no exact form that P accepts (each is listed)
  4  internal error in maxlower (a bug)""",
    short_help="Pre-flight: what a target rejects, and what lower would do.",
)
@click.argument("input_path", metavar="IN", type=click.Path(path_type=pathlib.Path))
@_REQUIRED_PROFILES
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
@QUIET_OPTION
@DEBUG_OPTION
def check(
    input_path: pathlib.Path,
    profile_names: tuple[str, ...],
    opset: int | None,
    json_path: pathlib.Path | None,
    strict: bool,
    quiet: bool,
    debug: bool,
) -> None:
    from maxlower.check import CheckReport

    with _errors_to_exit_codes(debug), _no_cyclic_gc():
        profile = load_profiles(profile_names)
        if opset is not None:
            check_target_opset(opset)
        reads = {READ_IN: input_path} | _profile_reads(profile)
        with Outputs(reads) as outputs:
            if json_path is not None:
                outputs.declare(json_path, "--json")
            prepared = load_proto(input_path)
            job = Job(opset, profile, keep_going=True)
            report = CheckReport.of(pipeline.run(prepared, job, input_path.parent).report, profile)
            if not quiet:
                opset_text = _opset_text(report.source_opset)
                echo(
                    "\n".join(
                        [
                            f"{input_path}: opset {opset_text}, profile {profile.name!r}",
                            *report.lines(),
                        ]
                    )
                )
            if json_path is not None:
                document = {"input": str(input_path), **report.to_dict()}
                outputs.stage_text(json_path, json.dumps(document, indent=2) + "\n")
            outputs.commit()
    sys.exit(report.exit_code(strict=strict))


def _output_path(
    input_path: pathlib.Path,
    output_path: pathlib.Path | None,
    in_place: bool,
    default: pathlib.Path,
) -> pathlib.Path:
    """OUT as given, or the default; IN only with --in-place (and then not another -o)."""
    if output_path is None:
        output_path = input_path if in_place else default
    if same_file(output_path, input_path) and not in_place:
        raise InvalidModelError(
            f"the output {str(output_path)!r} is the input file; pass --in-place to "
            "replace it, or choose another path with -o"
        )
    if in_place and not same_file(output_path, input_path):
        raise InvalidModelError(
            f"--in-place writes over IN, but -o names another file ({str(output_path)!r}); "
            "pass one or the other"
        )
    return output_path


@cli.command(
    help=f"""List the Max- and Min-family nodes of IN and, with --opset, what conversion
would do.

For every Max, ReduceMax, ArgMax, Min, ReduceMin and ArgMin node (main graph,
subgraphs of If/Loop/Scan, and model-local functions) this prints where it is, its op
and schema version at the model's opset, its inputs with their element types and
shapes (and constant values of int64 inputs such as ReduceMax's axes), and its
attributes.

With --opset N, it also converts a copy of the model to N (nothing is written) and
says per node what would be rewritten, or why no exact form exists.

\b
Examples:
  maxlower inspect model.onnx
  maxlower inspect model.onnx --opset 11

{EXIT_CODES_HELP}
With --opset, exit code 3 means that conversion to N would fail.""",
    short_help="List the Max- and Min-family nodes and what conversion would do.",
)
@click.argument("input_path", metavar="IN", type=click.Path(path_type=pathlib.Path))
@click.option(
    "--opset",
    "-t",
    "opset",
    type=int,
    default=None,
    metavar="N",
    help="Also show what converting to this opset would do. Default: list only.",
)
@DEBUG_OPTION
def inspect(input_path: pathlib.Path, opset: int | None, debug: bool) -> None:
    with _errors_to_exit_codes(debug):
        if opset is not None:
            check_target_opset(opset)
        prepared = load_proto(input_path)
        base_dir = str(input_path.parent)
        plan = plan_conversion(prepared, base_dir, opset) if opset is not None else None
        model = model_from_proto(prepared, base_dir)
        nodes = family_nodes(model, infer_shapes=False)  # typed by the pipeline

        source = model.opset_imports.get("")
        header = f"{input_path}: opset {_opset_text(source)}, ir_version {model.ir_version}, "
        header += f"{len(nodes)} Max/Min-family node{'s' if len(nodes) != 1 else ''}"
        echo(header + (f"; planned conversion to opset {opset}" if plan else ""))
        where = None
        for node in nodes:
            if node.where != where:
                where = node.where
                echo(f"\n{where}")
            version = f"-{node.version}" if node.version else " (not in this opset)"
            echo(f"  node {node.node!r}: {node.op_type}{version}")
            echo(f"    inputs: {', '.join(node.inputs) or '(none)'}")
            echo(f"    attributes: {', '.join(node.attributes) or '(none)'}")
            if plan is not None:
                for line in _plan_lines(plan, node):
                    echo(f"    {line}")
        if plan is not None:
            others = in_graph_order(plan.other_rewrites(nodes), nodes)
            if others:
                echo("\nnodes that conversion creates are rewritten in turn:")
                for rewrite in others:
                    echo(f"  {pipeline.rewrite_line(rewrite)}")
            if plan.error is not None:
                echo(
                    f"\nconversion to opset {opset} would fail at node "
                    f"{plan.error.node_name!r} ({plan.error.op_type})"
                )
                raise plan.error
            echo(f"\nconversion to opset {opset} would succeed")


@cli.command(
    help=f"""Check that the model CANDIDATE computes what REFERENCE computes.

Runs both models on the same seeded inputs, trial after trial, in onnxruntime
(CPU, graph optimisations off; onnx.reference where onnxruntime cannot run a model)
and compares every output exactly: integers and bools identical, floats
identical bit for bit except that NaN equals NaN and -0.0 equals +0.0. Shape and dtype
differences always fail.

Trials cover every input type, sizes 1 and 0 for symbolic dims, ties, NaN,
±inf, ±0, the dtype's extremes and values around 2^24 and 2^53; inputs that
feed ReduceMax's (ReduceMin's) axes get every valid axes list. Differences that only
come from NaN reaching ReduceMax/ArgMax/ReduceMin/ArgMin (unspecified by ONNX) are
reported, and fail only
with --strict. On a difference the report names, per output, the mismatching
elements, the largest difference, the first mismatch with both values, its trial
and seed, and the first diverging node.

\b
Examples:
  maxlower verify model.onnx model.opset13.onnx
  maxlower verify a.onnx b.onnx --dim batch=4 --range ids=0:1000 --json report.json

{VERIFY_EXIT_CODES_HELP}""",
    short_help="Check that two models compute the same outputs.",
)
@click.argument("reference", type=click.Path(path_type=pathlib.Path))
@click.argument("candidate", type=click.Path(path_type=pathlib.Path))
@verification_options
@REPORT_OPTION
@DEBUG_OPTION
def verify(
    reference: pathlib.Path,
    candidate: pathlib.Path,
    verification: Verification,
    debug: bool,
    report_path: pathlib.Path | None,
) -> None:
    started = time.perf_counter()
    reads = {
        "the reference model": reference,
        "the candidate model": candidate,
        READ_INPUTS: verification.inputs,
    }
    with _errors_to_exit_codes(debug), Outputs(reads) as outputs:
        if verification.json_path is not None:
            outputs.declare(verification.json_path, "--json")
        if report_path is not None:
            outputs.declare(report_path, "--report")
        models = load_comparable(reference, candidate, verification)
        for path in external_data_files(*models):
            outputs.read(path, "the models' external data")
        report = verification.run(*models, outputs=outputs)
        echo(f"{reference} vs {candidate}: {report.summary()}")
        if report_path is not None:
            from maxlower.report import verify_report

            label = f"{reference} vs {candidate}"
            seconds = time.perf_counter() - started
            outputs.stage_text(report_path, verify_report(label, *models, seconds, report))
        outputs.commit()
    sys.exit(exit_code(report))


prove_command(cli, _errors_to_exit_codes, DEBUG_OPTION)  # maxlower prove (maxlower/prove/cli.py)


def _verifying(progress: Progress, verification: Verification):
    """A progress line while --verify runs both models (on a terminal; nothing otherwise)."""
    if not verification.enabled:
        return contextlib.nullcontext()
    return progress.stage("verifying: both models on seeded trials", prints=True)


def _plan_lines(plan: Plan, node: FamilyNode) -> list[str]:
    target = schema_version(node.op_type, plan.opset)
    if plan.error is not None:
        if (plan.error.node_name, plan.error.op_type) == (node.node, node.op_type):
            return [f"at opset {plan.opset}: no exact form: {plan.error.reason}"]
        return []
    rewrites = plan.rewrites_of(node)  # one node's steps, in the order they were made
    if not rewrites:
        if target is None:  # cannot happen after a successful conversion; be plain anyway
            return [f"at opset {plan.opset}: {node.op_type} does not exist"]
        return [f"at opset {plan.opset}: {node.op_type}-{target}, no rewrite needed"]
    return [
        f"at opset {plan.opset}: {node.op_type} {r.from_version}→{r.to_version}: {r.what}"
        for r in rewrites
    ]


def _opset_text(opset: int | None) -> str:
    return "(none)" if opset is None else str(opset)


def main(argv: list[str] | None = None) -> None:
    """The console script `maxlower` and `python -m maxlower`."""
    cli.main(args=argv, prog_name="maxlower")


__all__ = ["cli", "main"]
