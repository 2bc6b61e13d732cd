"""`maxlower verify`, and the verifier's command-line pieces, shared by every command that
rewrites a model (`convert --verify`, and `lower --verify` the same way):

    @verification_options            # --seed --trials --inputs --range --dim --rtol --atol
    def command(..., verification):  #   --timeout --strict --json, with gate=True --verify --force
        original = inlined(prepared, base_dir)     # before rewriting it
        ...rewrite...
        if verification.allows_writing(original, rewritten, output_path):  # prints it
            save(...)
        verification.finish()                      # exit 1 (difference) / 2 (inconclusive)

`maxlower verify A B` uses `verification.verify_models(A, B)` and exits with `exit_code(report)`."""

from __future__ import annotations

import dataclasses
import functools
import pathlib
import re
import sys
import time

import click
import onnx

from maxlower.cli.main import (
    DEBUG_OPTION,
    EXIT_DIFFERENT,
    EXIT_INVALID,
    EXIT_OK,
    READ_INPUTS,
    REPORT_OPTION,
    cli,
    errors_to_exit_codes,
)
from maxlower.errors import InvalidModelError
from maxlower.files import Outputs
from maxlower.options import DEFAULT_TIMEOUT, OPTIONS, Number, check_number, check_range
from maxlower.ui import echo
from maxlower.verify.models import load_comparable
from maxlower.verify.report import (
    DIFFERENT,
    EQUIVALENT_EXCEPT_EXPANDED,
    EQUIVALENT_EXCEPT_NAN,
    VerifyReport,
)

VERIFY_EXIT_CODES_HELP = """\b
Exit codes:
  0  equivalent on every trial (differences unspecified by ONNX are
     reported, and count only with --strict)
  1  a difference was found
  2  bad invocation or input: a model that cannot be read, bad --inputs,
     --range, --dim or another option; or NOT VERIFIED: every trial was
     skipped (the reference rejects every input, or runs past --timeout)
  4  internal error in maxlower (a bug: please report it, with --debug output)
"""


def exit_code(report: VerifyReport) -> int:
    if report.ok:
        return EXIT_OK
    failed = (DIFFERENT, EQUIVALENT_EXCEPT_NAN, EQUIVALENT_EXCEPT_EXPANDED)
    return EXIT_DIFFERENT if report.status in failed else EXIT_INVALID


@dataclasses.dataclass
class Verification:
    """The verifier options of one command line, and what they found."""

    enabled: bool = True
    force: bool = False
    seed: int = 0
    trials: int | None = None
    inputs: pathlib.Path | None = None
    ranges: dict[str, tuple[float, float]] = dataclasses.field(default_factory=dict)
    dims: dict[str, int] = dataclasses.field(default_factory=dict)
    input_shapes: dict[str, tuple[int, ...]] = dataclasses.field(default_factory=dict)
    rtol: float = 0.0
    atol: float = 0.0
    timeout: float = DEFAULT_TIMEOUT
    strict: bool = False
    json_path: pathlib.Path | None = None
    expanded_ulps: int | None = None
    gate: bool = False  # on convert/lower: --json is their whole report, verdict included
    report: VerifyReport | None = None

    def verify_models(
        self, reference, candidate, outputs=None, expanded: frozenset[str] = frozenset()
    ) -> VerifyReport:
        """Verify, keep the report, write --json if asked (staged in `outputs`, a
        `maxlower.files.Outputs` that has it declared, if given). `expanded`: the ops the
        conversion expanded into function bodies (maxlower.verify.expanded)."""
        from maxlower.verify.core import verify  # onnxruntime: only when verifying
        from maxlower.verify.expanded import verify_expanded

        def one_comparison(reference, candidate) -> VerifyReport:
            return verify(
                reference,
                candidate,
                seed=self.seed,
                trials=self.trials,
                inputs=self.inputs,
                ranges=self.ranges,
                dims=self.dims,
                input_shapes=self.input_shapes,
                rtol=self.rtol,
                atol=self.atol,
                timeout=self.timeout,
                strict=self.strict,
            )

        if expanded:
            self.report = verify_expanded(
                reference, candidate, expanded, one_comparison, max_ulps=self.expanded_ulps
            )
        else:
            self.report = one_comparison(reference, candidate)
        if self.json_path is not None and not self.gate:  # convert/lower write their own
            if outputs is not None:
                outputs.stage_text(self.json_path, self.report.to_json())
            else:
                self.report.write_json(self.json_path)
        return self.report

    def allows_writing(
        self,
        original: onnx.ModelProto,
        candidate: onnx.ModelProto,
        output_path: pathlib.Path | None,
        *,
        quiet: bool = False,
        expanded: frozenset[str] = frozenset(),
    ) -> bool:
        """Verify the rewrite of `original` into `candidate` and print the verdict (with
        `quiet`, only a failure's one line on stderr). False means: do not write (the reason
        is printed); then call `finish`. `expanded`: as for verify_models."""
        report = self.verify_models(original, candidate, expanded=expanded)
        if not quiet:
            echo("verification: " + report.summary())
        if report.ok or output_path is None:
            return True
        if self.force:
            if not quiet:
                echo(f"--force: writing {output_path} although verification failed")
            return True
        echo(
            f"maxlower: {output_path} not written: verification "
            f"{_failure(report)}"
            " (--force writes it anyway)",
            err=True,
        )
        return False

    def finish(self) -> None:
        """Exit 1 (difference) or 2 (inconclusive) if verification did not pass."""
        if self.report is not None and not self.report.ok:
            sys.exit(exit_code(self.report))


def _failure(report: VerifyReport) -> str:
    if report.status == DIFFERENT:
        return "found a difference"
    if report.status == EQUIVALENT_EXCEPT_EXPANDED:
        rounding = report.expanded
        why = (
            "integers that differ, not by rounding"
            if rounding.integers_differ
            else "--strict"
            if report.strict
            else f"past --expanded-ulps {rounding.max_ulps_bound}"
        )
        return f"found the original's kernel differing from an expanded function's body ({why})"
    if report.status == EQUIVALENT_EXCEPT_NAN:
        return "found a difference where ONNX leaves NaN unspecified (--strict)"
    return "was inconclusive"


def _parse_ranges(ctx, param, values) -> dict[str, tuple[float, float]]:
    ranges = {}
    for text in values:
        name, _, span = text.partition("=")
        low, sep, high = span.partition(":")
        try:
            if not name or not sep:
                raise ValueError
            ranges[name] = check_range(name, float(low), float(high))
        except InvalidModelError as error:
            raise click.BadParameter(str(error)) from None
        except ValueError:
            raise click.BadParameter(
                f"--range {text[:60]!r}: expected NAME=LOW:HIGH with finite LOW < HIGH, "
                "e.g. ids=0:100 (values are drawn from [LOW, HIGH))"
            ) from None
    return ranges


def _parse_dims(ctx, param, values) -> dict[str, int]:
    dims = {}
    for text in values:
        name, _, size = text.partition("=")
        try:
            if not name or not size.isascii() or not size.isdigit():
                raise ValueError
            dims[name] = check_number("--dim", int(size), f"--dim {name}")
        except InvalidModelError as error:
            raise click.BadParameter(str(error)) from None
        except ValueError:  # (int() of 5,000 digits too)
            raise click.BadParameter(
                f"--dim {text[:60]!r}: expected NAME=SIZE with SIZE {OPTIONS['--dim'].text}, "
                "e.g. batch=4"
            ) from None
    return dims


def _parse_input_shapes(ctx, param, values) -> dict[str, tuple[int, ...]]:
    """NAME:D1,D2,... (onnxsim's --overwrite-input-shape) or NAME:[D1,D2,...] (Polygraphy's
    --input-shapes), several in one value (comma- or space-separated) or repeated; a name
    may hold colons (the last one separates it). `x:` or `x:[]` is rank 0."""
    shapes: dict[str, tuple[int, ...]] = {}
    for text in values:
        name, sizes = None, []
        entries = []
        for token in re.split(r"[\s,]+", text.strip()):
            if ":" in token:
                if name is not None:
                    entries.append((name, sizes))
                name, _, first = token.rpartition(":")
                sizes = [first] if first.strip("[]") else []
            elif name is not None and token.strip("[]"):
                sizes.append(token)
            elif name is None:
                name = ""
        if name is not None:
            entries.append((name, sizes))
        for name, sizes in entries:
            digits = [s.strip("[]") for s in sizes]
            try:
                if not name or not all(d.isascii() and d.isdigit() for d in digits):
                    raise ValueError
                if name in shapes:
                    raise InvalidModelError(f"--input-shapes {name}: given twice")
                shapes[name] = tuple(
                    check_number("--dim", int(d), f"--input-shapes {name}") for d in digits
                )
            except InvalidModelError as error:
                raise click.BadParameter(str(error)) from None
            except ValueError:
                raise click.BadParameter(
                    f"--input-shapes {text[:60]!r}: expected NAME:D1,D2,... (or NAME:[D1,D2,...]) "
                    f"with each size {OPTIONS['--dim'].text}, e.g. input:1,3,224,224"
                ) from None
    return shapes


_INPUT_OPTIONS = [
    click.option(
        "--seed",
        type=Number("--seed"),
        default=None,
        metavar="S",
        help="Seed of the generated inputs (default 0). Reports name the seed and "
        "trial of each difference.",
    ),
    click.option(
        "--trials",
        type=Number("--trials"),
        default=None,
        metavar="N",
        help="Number of data trials (default: the built-in schedule, 7 plus one "
        "per symbolic dim with that dim at 0).",
    ),
    click.option(
        "--inputs",
        "inputs",
        type=click.Path(path_type=pathlib.Path),  # maxlower.files vets it
        default=None,
        metavar="FILE.npz",
        help="Fixed values for some or all inputs (np.savez); they also fix the "
        "sizes of the dims they have.",
    ),
    click.option(
        "--range",
        "ranges",
        multiple=True,
        callback=_parse_ranges,
        metavar="NAME=LOW:HIGH",
        help="Draw input NAME from [LOW, HIGH) in every trial (e.g. indices). Repeatable.",
    ),
    click.option(
        "--dim",
        "dims",
        multiple=True,
        callback=_parse_dims,
        metavar="NAME=SIZE",
        help="Fix a symbolic dim's size in every trial (an unnamed or -1 dim is "
        "NAME[AXIS], e.g. x[0]=2). Repeatable.",
    ),
    click.option(
        "--input-shapes",
        "input_shapes",
        multiple=True,
        callback=_parse_input_shapes,
        metavar="NAME:D1,D2,...",
        help="Fix whole inputs' shapes in every trial, e.g. input:1,3,224,224 (also "
        "input:[1,3,224,224]; several: a:1,3,b:2). Sizes must match the declared ones; "
        "the free dims take them. Repeatable.",
    ),
    click.option(
        "--rtol",
        type=Number("--rtol"),
        default=None,
        help="Relative tolerance for float outputs (default 0: bit-exact).",
    ),
    click.option(
        "--atol",
        type=Number("--atol"),
        default=None,
        help="Absolute tolerance for float outputs (default 0: bit-exact).",
    ),
    click.option(
        "--timeout",
        type=Number("--timeout"),
        default=None,
        metavar="SECONDS",
        help=f"Time budget of one model on one trial (default {DEFAULT_TIMEOUT:g} s). A "
        "trial that runs past it is skipped, and the report says so; if every trial is "
        "skipped, nothing is verified (exit code 2).",
    ),
    click.option(
        "--strict",
        is_flag=True,
        default=None,
        help="Count differences where NaN reaches ReduceMax/ArgMax/ReduceMin/ArgMin "
        "(unspecified by ONNX) as differences.",
    ),
    click.option(
        "--json",
        "json_path",
        type=click.Path(path_type=pathlib.Path),  # maxlower.files vets it
        default=None,
        metavar="PATH",
        help="Also write the full report as JSON (on convert and lower: what changed, "
        "node by node, by kind, and the --verify verdict, if any).",
    ),
]
_GATE_OPTIONS = [
    click.option(
        "--expanded-ulps",
        type=Number("--expanded-ulps"),
        default=None,
        metavar="N",
        help="With --verify, where the conversion expanded a function op into its ONNX "
        "body: fail when the original's own kernel differs from that body by more than N "
        "ulps (default: no bound; the result itself is held to the body bit for bit).",
    ),
    click.option(
        "--verify",
        "verify_flag",
        is_flag=True,
        help="Run the original and the result on the same generated inputs and "
        "compare them exactly; on a difference write nothing and exit 1.",
    ),
    click.option(
        "--force",
        is_flag=True,
        default=None,
        help="With --verify or --prove: write the result even if verification or the "
        "proof fails (the exit code is still 1, or 5 for an inconclusive proof).",
    ),
]
# parameter name -> its flag
_FLAGS = {
    "seed": "--seed",
    "trials": "--trials",
    "inputs": "--inputs",
    "ranges": "--range",
    "dims": "--dim",
    "input_shapes": "--input-shapes",
    "rtol": "--rtol",
    "atol": "--atol",
    "timeout": "--timeout",
    "strict": "--strict",
    "json_path": "--json",
    "expanded_ulps": "--expanded-ulps",
    "force": "--force",
}


def verification_options(command=None, *, gate: bool = False):
    """Add the verifier's options to a click command, passed on as one `verification`
    argument. With `gate`, also --verify and --force, and the other options need --verify."""

    def decorate(function):
        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            given = {name: kwargs.pop(name, None) for name in _FLAGS if name != "force"}
            enabled = kwargs.pop("verify_flag", True)
            force = kwargs.pop("force", None)
            proving = bool(kwargs.get("prove_flag"))  # --force serves --prove too
            used = [
                _FLAGS[n]
                for n, v in {**given, "force": force}.items()
                if v is not None and v is not False and v != {} and n != "json_path"
                if not (proving and n == "force")
            ]
            if not enabled and used:
                raise click.UsageError(f"{', '.join(used)} only apply with --verify")
            options = {n: v for n, v in given.items() if v is not None}
            kwargs["verification"] = Verification(
                enabled=enabled, force=bool(force), gate=gate, **options
            )
            return function(*args, **kwargs)

        for option in reversed(_INPUT_OPTIONS + (_GATE_OPTIONS if gate else [])):
            wrapper = option(wrapper)
        return wrapper

    return decorate(command) if command is not None else decorate


@cli.command(
    help=f"""Check that the model CANDIDATE computes what REFERENCE computes.

Both run in onnxruntime (CPU, graph optimisations off; onnx.reference where onnxruntime
cannot) on the same seeded inputs, covering ties, NaN, ±inf, ±0, the dtypes' extremes
and empty dims, and every output is compared exactly (bit for bit, NaN equal to NaN,
-0.0 equal to +0.0; NaN that reaches a reduction, which ONNX leaves unspecified, counts
only with --strict). A difference names the first mismatch, its trial and seed, and the
first diverging node. Details: docs/verification.md.

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
    with errors_to_exit_codes(debug), Outputs(reads) as outputs:
        if verification.json_path is not None:
            outputs.declare(verification.json_path, "--json")
        if report_path is not None:
            outputs.declare(report_path, "--report")
        *models, data_files = load_comparable(reference, candidate, verification)
        for path in data_files:
            outputs.read(path, "the models' external data")
        report = verification.verify_models(*models, outputs=outputs)
        echo(f"{reference} vs {candidate}: {report.summary()}")
        if report_path is not None:
            from maxlower.report import verify_report

            label = f"{reference} vs {candidate}"
            seconds = time.perf_counter() - started
            outputs.stage_text(report_path, verify_report(label, *models, seconds, report))
        outputs.commit()
    sys.exit(exit_code(report))
