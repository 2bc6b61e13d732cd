"""`maxlower prove`: the command, and the --prove options of convert and lower.

    maxlower prove REFERENCE CANDIDATE [--dim NAME=N ...] [--max-dim N] [--timeout S]
                   [--json F] [--counterexample F] [--signed-zeros] [--strict]
                   [--report F.html]
    maxlower prove --rules [--max-dim N] [--timeout S] [--json F]

Exit codes: 0 proved, 1 counterexample (its inputs written as .npz and replayed in
onnx.reference), 2 bad invocation or input, 4 internal error, 5 inconclusive (an op or
size outside the fragment, or the solver timed out: the message names it)."""

from __future__ import annotations

import functools
import json
import pathlib
import sys
import time

import click
import numpy as np

from maxlower.cli.main import (
    DEBUG_OPTION,
    EXIT_DIFFERENT,
    EXIT_INCONCLUSIVE,
    EXIT_OK,
    cli,
    errors_to_exit_codes,
)
from maxlower.errors import InvalidModelError
from maxlower.files import Outputs
from maxlower.options import Number, check_number
from maxlower.ui import echo

PROVE_EXIT_CODES_HELP = """\b
Exit codes:
  0  proved: equal at every dim binding, for all inputs or the split values named
  1  refuted: inputs on which the models differ (written as .npz), or a
     candidate that is not a valid model at its opset
  2  bad invocation or input
  4  internal error in maxlower (a bug: please report it, with --debug output)
  5  inconclusive: an op or size outside the prover's fragment, or the solver
     timed out (the message names which)
"""


def _parse_dims(ctx, param, values) -> dict[str, int]:
    dims = {}
    for text in values:
        name, sep, size = text.partition("=")
        if not sep or not name or not size.strip().lstrip("-").isdigit():
            raise click.BadParameter(
                f"--dim {text[:60]!r}: expected NAME=SIZE with SIZE an integer from 0 to 4096"
            )
        try:
            dims[name] = check_number("--prove-dim", int(size), f"--dim {name}")
        except InvalidModelError as error:
            raise click.BadParameter(str(error)) from None
    return dims


# the least --timeout of `prove A B`: the command's clock starts with the process, and
# start-up (Python, onnx, z3) takes 2 to 2.5 s on 2 cores; a smaller one ended past
# --timeout + 10 % (red team 3, F6)
MIN_TIMEOUT = 5.0

PROVE_FLAGS = {"prove_max_dim": "--prove-max-dim", "prove_timeout": "--prove-timeout"}


def proof_options(function):
    """--prove, --prove-max-dim N and --prove-timeout S on `convert` and `lower`, passed on
    as one `proving` argument: a maxlower.prove.sites.ProofOptions, or None without
    --prove. Apply it below `verification_options` (which lets --force serve --prove)."""

    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        enabled = kwargs.pop("prove_flag")
        given = {name: kwargs.pop(name) for name in PROVE_FLAGS}
        used = [PROVE_FLAGS[n] for n, v in given.items() if v is not None]
        if not enabled and used:
            raise click.UsageError(f"{', '.join(used)} only apply with --prove")
        kwargs["proving"] = None
        if enabled:  # (the values are checked already: Number)
            from maxlower.prove import ProofOptions

            defaults = ProofOptions()
            kwargs["proving"] = ProofOptions(
                defaults.max_dim if given["prove_max_dim"] is None else given["prove_max_dim"],
                defaults.timeout if given["prove_timeout"] is None else given["prove_timeout"],
            )
        return function(*args, **kwargs)

    options = [
        click.option(
            "--prove",
            "prove_flag",
            is_flag=True,
            help="Prove every rewrite site of this run equal to the node it replaced, for "
            "all inputs, with the SMT prover (`maxlower prove`; needs maxlower[prove]); "
            "write only if every site is proved: a counterexample exits 1 (its inputs "
            "written as OUT.counterexample.npz), an inconclusive site exits 5.",
        ),
        click.option(
            "--prove-max-dim",
            type=Number("--prove-max-dim"),
            default=None,
            metavar="N",
            help="With --prove: symbolic dims take each size 0..N (default 4).",
        ),
        click.option(
            "--prove-timeout",
            type=Number("--prove-timeout"),
            default=None,
            metavar="S",
            help="With --prove: seconds for the solver on one site (default 60).",
        ),
    ]
    for option in reversed(options):
        wrapper = option(wrapper)
    return wrapper


@cli.command(
    "prove",
    help=f"""Prove that CANDIDATE computes what REFERENCE computes, for all inputs.

At every size of the symbolic dims from 0 to --max-dim (--dim fixes one), with the SMT
solver z3 (pip install "maxlower[prove]"): outputs equal with NaN equal to NaN and -0.0
equal to +0.0 (unless --signed-zeros), under onnx.reference's semantics where ONNX is
silent. A candidate that is not valid at its opset is refuted (exit 1); an op, a size or
a time the prover cannot cover is inconclusive and named (exit 5); models too large for
one proof are proved region by region. With --rules it proves every shipped version
adapter and decomposition instead. Details: docs/proof.md (the methods, and the table of
every shipped rule).

\b
Examples:
  maxlower prove model.onnx model.opset13.onnx
  maxlower prove --rules --max-dim 4

{PROVE_EXIT_CODES_HELP}""",
    short_help="Prove two models equal for all inputs (SMT, bounded shapes).",
)
@click.argument("reference", required=False, type=click.Path(path_type=pathlib.Path))
@click.argument("candidate", required=False, type=click.Path(path_type=pathlib.Path))
@click.option("--rules", is_flag=True, help="Prove every registered rewrite rule.")
@click.option(
    "--dim",
    "dims",
    multiple=True,
    callback=_parse_dims,
    metavar="NAME=SIZE",
    help="Fix a symbolic dim's size. Repeatable.",
)
@click.option(
    "--max-dim",
    type=Number("--max-dim"),
    default=None,
    help="Sizes of the other symbolic dims: 0..N (default 4); with --rules, n = 1..N.",
)
@click.option(
    "--timeout",
    type=Number("--timeout"),
    default=None,
    help="Seconds for the whole command, start-up included (default 60, at least "
    f"{MIN_TIMEOUT:g}); with --rules, per instance (default 20).",
)
@click.option("--signed-zeros", is_flag=True, help="Count -0.0 and +0.0 as different.")
@click.option(
    "--strict",
    is_flag=True,
    help="A NaN reaching ReduceMax/ArgMax gives an unspecified result, as ONNX leaves it "
    "(default: onnx.reference's NaN).",
)
@click.option(
    "--counterexample",
    "counterexample_path",
    type=click.Path(path_type=pathlib.Path),
    default=None,
    help="Where a counterexample's inputs go (default CANDIDATE.counterexample.npz).",
)
@click.option(
    "--json", "json_path", type=click.Path(path_type=pathlib.Path), help="Write the report."
)
@click.option(
    "--report",
    "report_path",
    type=click.Path(path_type=pathlib.Path),
    default=None,
    metavar="FILE.html",
    help="Also write the verdict as a page (as `verify --report`): a proof by regions "
    "draws each region with its status.",
)
@DEBUG_OPTION
def prove(
    reference,
    candidate,
    rules,
    dims,
    max_dim,
    timeout,
    signed_zeros,
    strict,
    counterexample_path,
    json_path,
    report_path,
    debug,
) -> None:
    with errors_to_exit_codes(debug):
        from maxlower.prove import require_solver

        if rules and (reference is not None or candidate is not None or dims or report_path):
            raise InvalidModelError(
                "--rules proves the shipped rules and takes no models, --dim or "
                "--report; drop them, or drop --rules"
            )
        if not rules and (reference is None or candidate is None):
            raise InvalidModelError(
                "prove needs REFERENCE and CANDIDATE (or --rules); see 'maxlower prove --help'"
            )
        require_solver()
        if rules:
            sys.exit(_rules(max_dim, timeout, signed_zeros, json_path))
        if timeout is not None and timeout < MIN_TIMEOUT:
            raise InvalidModelError(
                f"--timeout {timeout:g}: a proof of two models takes at least {MIN_TIMEOUT:g} s, "
                "since --timeout counts from the command's start and starting Python, onnx "
                f"and z3 takes about 2 s of it; give --timeout {MIN_TIMEOUT:g} or more"
            )
        sys.exit(
            _models(
                reference,
                candidate,
                dims,
                max_dim,
                timeout,
                (signed_zeros, strict),
                counterexample_path,
                json_path,
                report_path,
            )
        )


def _models(reference, candidate, dims, max_dim, timeout, flags, cex_path, json_path, report_path):
    """flags: (--signed-zeros, --strict)."""
    from maxlower.prove.budget import Budget
    from maxlower.prove.core import (
        COUNTEREXAMPLE,
        DEFAULT_MAX_DIM,
        DEFAULT_TIMEOUT,
        PROVED,
        Policy,
    )
    from maxlower.prove.models import read_model
    from maxlower.prove.sites import prove_models

    cex_path = cex_path or candidate.with_name(candidate.name + ".counterexample.npz")
    reads = {"the reference model": reference, "the candidate model": candidate}
    with Outputs(reads) as outputs:
        outputs.declare(cex_path, "--counterexample")
        if json_path is not None:
            outputs.declare(json_path, "--json")
        if report_path is not None:
            outputs.declare(report_path, "--report")
        started = time.perf_counter()
        models = [read_model(reference, candidate=False), read_model(candidate, candidate=True)]
        timeout = DEFAULT_TIMEOUT if timeout is None else timeout
        # --timeout counts from the command's start (imports and reading included)
        with Budget.for_command(timeout, entered=started).active():
            report = prove_models(
                *models,
                dims=dims,
                max_dim=DEFAULT_MAX_DIM if max_dim is None else max_dim,
                timeout=timeout,
                policy=Policy(signed_zeros=flags[0], nan_unspecified=flags[1]),
            )
        if report.counterexample is not None:
            report.counterexample.path = str(cex_path)
            temp = outputs.stage(cex_path)
            with open(temp, "wb") as handle:
                np.savez(handle, **report.counterexample.inputs)
        if json_path is not None:
            outputs.stage_text(json_path, report.to_json())
        echo(f"{reference} vs {candidate}: {report.summary()}")
        if report_path is not None:
            from maxlower.report import prove_report

            seconds = time.perf_counter() - started
            label = f"{reference} vs {candidate}"
            outputs.stage_text(report_path, prove_report(label, *models, seconds, report))
        outputs.commit()
    if report.status == PROVED:
        return EXIT_OK
    return EXIT_DIFFERENT if report.status == COUNTEREXAMPLE else EXIT_INCONCLUSIVE


def _rules(max_dim, timeout, signed_zeros, json_path) -> int:
    import dataclasses

    from maxlower.prove.core import COUNTEREXAMPLE, PROVED, Policy
    from maxlower.prove.rules import prove_rules, table

    with Outputs() as outputs:
        if json_path is not None:
            outputs.declare(json_path, "--json")
        start = time.perf_counter()
        rows = prove_rules(
            4 if max_dim is None else max(1, max_dim),
            20.0 if timeout is None else timeout,
            Policy(signed_zeros=signed_zeros),
        )
        echo(table(rows))
        proved = sum(r.result == PROVED for r in rows)
        echo(f"\n{proved} of {len(rows)} rows proved in {time.perf_counter() - start:.1f} s")
        if json_path is not None:
            data = [dict(dataclasses.asdict(r), methods=sorted(r.methods)) for r in rows]
            outputs.stage_text(json_path, json.dumps(data, indent=2) + "\n")
        outputs.commit()
    if any(r.result == COUNTEREXAMPLE for r in rows):
        return EXIT_DIFFERENT
    return EXIT_OK if proved == len(rows) else EXIT_INCONCLUSIVE
