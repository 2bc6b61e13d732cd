"""A timed soundness-fuzz campaign of `maxlower prove` (issue 26): fresh random pairs from
tests/prove_fuzz.py for a while, each proved and judged (see that module), one line of JSON
per pair, and the counts at the end.

    python benchmarks/prove_soundness_fuzz.py --minutes 30 --out /tmp/fuzz.jsonl
    python benchmarks/prove_soundness_fuzz.py --minutes 5 --out X.jsonl --timeout 5 --cli-every 10

Counts: pairs, PROVED, REFUTED, INCONCLUSIVE, refused (exit 2), PROVED-but-differ (must be 0),
exit 4 / internal errors, runs past --timeout + 10 %, false refutations (counterexamples that
do not reproduce), refutations that nothing confirms (no model-level counterexample, and
testing finds no difference). Every failing pair is written as ONNX text beside the jsonl
(OUT.witnesses/NNNN-<class>.txt). Exits 1 if any pair failed.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import pathlib
import resource
import sys
import time
import warnings

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402

from tests.prove_fuzz import judge, pairs, pick_door  # noqa: E402

MEMORY_LIMIT = 8 << 30  # a runaway proof fails here instead of taking the machine


class TimeUp(BaseException):
    """The campaign's time is up (a BaseException: hypothesis lets it through)."""


def failure_class(record) -> str:
    """A short name for what went wrong, for the counts and the witness file names."""
    if record.status == "overrun":
        return "overrun"
    if record.failure and record.failure.startswith(("internal error", "exit ")):
        return "internal_error"
    if record.failure and "interfaces differ" in record.failure:
        return "proved_interface_differs"
    if record.failure:
        return "proved_but_differ"
    if record.false_refutation:
        return "false_refutation"
    return ""


def campaign(minutes: float, out: pathlib.Path, timeout: float, cli_every: int, seed: int | None):
    counts: collections.Counter = collections.Counter()
    by_mutation: collections.Counter = collections.Counter()
    witnesses = out.with_name(out.name + ".witnesses")
    witnesses.mkdir(parents=True, exist_ok=True)
    end = time.monotonic() + minutes * 60
    index = [0]

    chosen = settings(
        max_examples=10**9,
        phases=[Phase.generate],
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        derandomize=False,
    )

    with out.open("w") as sink:

        @chosen
        @given(pair=pairs(max_dims=(2, 3, 4)))
        def one(pair):
            if time.monotonic() > end:
                raise TimeUp
            index[0] += 1
            record = judge(pair, timeout=timeout, door=pick_door(index[0], cli_every))
            counts[record.status] += 1
            kind = failure_class(record)
            if kind:
                counts["failure:" + kind] += 1  # (apart from the statuses: "overrun" is both)
                by_mutation[(kind, pair.mutation)] += 1
            if record.unconfirmed_refutation:
                counts["unconfirmed_refutation"] += 1
            if record.runtime_disagreement:
                counts["runtime_disagreement"] += 1
            other = record.unconfirmed_refutation or record.runtime_disagreement
            if kind or other:
                label = "unconfirmed_refutation" if record.unconfirmed_refutation else "runtime"
                name = f"{index[0]:05d}-{kind or label}.txt"
                why = record.failure or record.false_refutation or other
                (witnesses / name).write_text(f"# {why}\n{record.verdict_text}\n" + pair.text())
            line = json.loads(record.to_json())
            line["index"], line["failure_class"] = index[0], kind
            sink.write(json.dumps(line) + "\n")
            sink.flush()

        if seed is not None:
            one = __import__("hypothesis").seed(seed)(one)
        with contextlib.suppress(TimeUp):
            one()
    return counts, by_mutation, index[0]


def table(counts, by_mutation, total, args) -> str:
    rows = [
        ("pairs", total),
        ("PROVED", counts["proved"]),
        ("REFUTED", counts["counterexample"]),
        ("INCONCLUSIVE", counts["inconclusive"]),
        ("refused (exit 2)", counts["refused"]),
        ("PROVED-but-differ (must be 0)", counts["failure:proved_but_differ"]),
        ("PROVED with another interface (must be 0)", counts["failure:proved_interface_differs"]),
        ("exit 4 / internal errors (must be 0)", counts["failure:internal_error"]),
        (f"runs past --timeout {args.timeout} + 10 % (must be 0)", counts["failure:overrun"]),
        (
            "false refutations (counterexample does not reproduce)",
            counts["failure:false_refutation"],
        ),
        (
            "refutations nothing confirms (no model-level counterexample)",
            counts["unconfirmed_refutation"],
        ),
        (
            "PROVED, equal in onnx.reference, onnxruntime computes the candidate otherwise",
            counts["runtime_disagreement"],
        ),
    ]
    lines = ["| count | pairs |", "|---|---:|", *(f"| {k} | {v} |" for k, v in rows)]
    if by_mutation:
        lines += ["", "| failure | mutation | pairs |", "|---|---|---:|"]
        lines += [f"| {k} | {m} | {n} |" for (k, m), n in sorted(by_mutation.items())]
    return "\n".join(lines)


START, END = "<!-- prove_soundness_fuzz:start -->", "<!-- prove_soundness_fuzz:end -->"


def write_results(args, counts_table: str, total: int, argv) -> None:
    from benchmarks.report import machine, versions_text, write_section

    command = " ".join(["python benchmarks/prove_soundness_fuzz.py", *(argv or sys.argv[1:])])
    text = (
        f"{START}\n## Prove soundness fuzz\n\n`{command}`\n\n"
        f"{total} pairs in {args.minutes:g} minutes on {machine()}; {versions_text()}.\n\n"
        f"{counts_table}\n{END}\n"
    )
    write_section(args.results, text, START, END)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--out", type=pathlib.Path, required=True, help="one JSON line per pair")
    parser.add_argument("--timeout", type=float, default=5.0, help="prove's --timeout per pair")
    parser.add_argument("--cli-every", type=int, default=10, help="every Nth pair through the CLI")
    parser.add_argument("--seed", type=int, default=None, help="hypothesis seed (default: fresh)")
    parser.add_argument(
        "--results",
        type=pathlib.Path,
        default=None,
        help="also write the counts as this script's section of a RESULTS.md "
        "(benchmarks/RESULTS.md for the record)",
    )
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    start = time.perf_counter()
    counts, by_mutation, total = campaign(
        args.minutes, args.out, args.timeout, args.cli_every, args.seed
    )
    print(
        f"prove soundness fuzz: {total} pairs in {time.perf_counter() - start:.0f} s "
        f"(--timeout {args.timeout}, every {args.cli_every}th pair through the CLI)"
    )
    print(table(counts, by_mutation, total, args))
    if args.results is not None:
        write_results(args, table(counts, by_mutation, total, args), total, argv)
    failed = sum(
        counts["failure:" + k]
        for k in ("proved_but_differ", "proved_interface_differs", "internal_error", "overrun")
    )
    return 1 if failed or counts["failure:false_refutation"] else 0


if __name__ == "__main__":
    sys.exit(main())
