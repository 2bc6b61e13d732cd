"""The `maxlower` command group: its shared options, how errors become exit codes (every
exit code in one table, EXIT_*), and the helpers every command family shares. The commands
are in the modules beside this one, one per family:

    convert.py   convert, lower       the rewriting commands (the one job: maxlower.api)
    inspect.py   inspect
    check.py     check, profiles
    verify.py    verify, and the --verify options of convert and lower
    prove.py     prove, and the --prove options of convert and lower
"""

from __future__ import annotations

import contextlib
import gc
import pathlib
import signal
import sys
from collections.abc import Iterator

import click

from maxlower import __version__
from maxlower.errors import LATEST_OPSET, InvalidModelError
from maxlower.files import raising_on_termination, same_file
from maxlower.profiles import Profile, ProfileSet
from maxlower.ui import Progress, echo
from passes.errors import ConversionError, concise

# Every exit code of every command, in one table; the help texts below are written from it.
EXIT_OK = 0
EXIT_DIFFERENT = 1  # verify / --verify found a difference; prove / --prove a counterexample
EXIT_INVALID = 2  # a bad invocation, an unusable input or output path; NOT VERIFIED
EXIT_NO_EXACT_FORM = 3  # ConversionError: some node has no exact form
EXIT_INTERNAL = 4  # a bug in maxlower
EXIT_INCONCLUSIVE = 5  # prove / --prove: some site could not be proved
EXIT_BUDGET = 6  # a batch: some model ran past its time or memory budget
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
  6  a batch of models: some model ran past --model-timeout or --model-memory
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
def timings_report(progress: Progress, enabled: bool) -> Iterator[None]:
    try:
        yield
    finally:
        if enabled:
            echo(progress.timings_text(), err=True)


@contextlib.contextmanager
def no_cyclic_gc() -> Iterator[None]:
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
def errors_to_exit_codes(debug: bool) -> Iterator[None]:
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
        fail(f"interrupted{by} (an output file is only ever replaced whole)", 128 + signum, debug)
    except ConversionError as error:
        fail(error, EXIT_NO_EXACT_FORM, debug)
    except InvalidModelError as error:
        fail(error, EXIT_INVALID, debug)
    except Exception as error:
        if debug:
            raise
        fail(
            f"internal error ({type(error).__name__}: {concise(error)}); rerun with --debug "
            "for the traceback",
            EXIT_INTERNAL,
            debug,
        )


def fail(error: BaseException | str, code: int, debug: bool) -> None:
    if debug and isinstance(error, BaseException):
        raise error
    echo(
        f"maxlower: error: {concise(error) if isinstance(error, BaseException) else error}",
        err=True,
    )
    sys.exit(code)


# `lower` and `check` (`convert --profile` is optional, and says so itself).
PROFILES_OPTION = click.option(
    "--profile",
    "-p",
    "profile_names",
    required=True,
    multiple=True,
    metavar="P",
    help="A shipped profile (`maxlower profiles`) or the path of a profile .toml file. "
    "Repeat it for what all of them accept (--profile rknn --profile onnxruntime).",
)


class OneLineErrors(click.Group):
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
            fail(f"{text} (see '{command} --help')", EXIT_INVALID, False)
        except click.ClickException as error:
            fail(error.format_message(), error.exit_code, False)
        except click.Abort:
            fail("aborted", 128 + signal.SIGINT, False)
        sys.exit(code if isinstance(code, int) else 0)


@click.group(
    cls=OneLineErrors,
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

Run `maxlower COMMAND --help` for each command's options. Documentation: README.md
and the pages in docs/ (in the source tree and the sdist).

{EXIT_CODES_HELP}""",
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.version_option(__version__, prog_name="maxlower")
def cli() -> None:
    pass


def output_path_for(
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


def profile_reads(profile: Profile | ProfileSet | None) -> dict:
    """{what it is: path} of the --profile files."""
    members = profile.members if profile is not None else ()
    if len(members) <= 1:
        return {READ_PROFILE: members[0].path if members else None}
    return {f"{READ_PROFILE} {m.name!r}": m.path for m in members}


def opset_text(opset: int | None) -> str:
    return "(none)" if opset is None else str(opset)
