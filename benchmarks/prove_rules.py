#!/usr/bin/env python
"""The long run of `maxlower prove --rules`: every rule, per dtype, at n = 1..N.

It runs what `maxlower prove --rules --max-dim N --timeout S` runs (maxlower.prove.rules.
prove_rules), one rule at a time, and appends each rule's rows to a JSON-lines file as soon
as they are in, so a run stopped by its deadline keeps what it finished (the table then
lists the rules not run). At the end, or with --table alone, it prints the table:

    nice -n 10 python benchmarks/prove_rules.py --max-dim 8 --timeout 120 \\
        --out benchmarks/prove_rules_n8.jsonl
    python benchmarks/prove_rules.py --table --out benchmarks/prove_rules_n8.jsonl

An existing --out is resumed: rules already in it are not run again.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import pathlib
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--max-dim", type=int, default=8)
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per instance")
    parser.add_argument("--out", type=pathlib.Path, required=True, help="JSON lines, one a row")
    parser.add_argument("--table", action="store_true", help="only print the table of --out")
    args = parser.parse_args()

    from maxlower.prove.rules import Row, prove_rules, registered_rules, table

    done = _rows(args.out)
    if not args.table:
        for rule in registered_rules():
            if rule in {r.get("rule", r.get("done")) for r in done}:
                continue
            start = time.perf_counter()
            rows = prove_rules(args.max_dim, args.timeout, only=lambda r, d, rule=rule: r == rule)
            with args.out.open("a") as handle:
                for row in rows:
                    data = dict(dataclasses.asdict(row), methods=sorted(row.methods))
                    handle.write(json.dumps(data) + "\n")
                # a rule with no row (no type it applies to) is done too
                handle.write(json.dumps({"done": rule}) + "\n")
            print(f"{rule}: {len(rows)} rows, {time.perf_counter() - start:.1f} s", flush=True)
        done = _rows(args.out)
    rows = [Row(**dict(r, methods=set(r["methods"]))) for r in done if "rule" in r]
    proved = sum(r.result == "proved" for r in rows)
    finished = {r.get("rule", r.get("done")) for r in done}
    missing = [rule for rule in registered_rules() if rule not in finished]
    print(table(rows))
    print(f"\n{proved} of {len(rows)} rows proved; {sum(r.seconds for r in rows):.0f} s in all")
    if missing:
        print("not run: " + ", ".join(missing))
    empty = [rule for rule in finished if rule not in {r.rule for r in rows}]
    if empty:
        print("no instance (no type the rule applies to): " + ", ".join(sorted(empty)))


def _rows(path: pathlib.Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


if __name__ == "__main__":
    main()
