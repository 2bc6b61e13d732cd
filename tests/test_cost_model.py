"""The cost model is measured, and on the benchmark's shapes it picks the fastest form.

`benchmarks/decompose_latency.py --write-weights` wrote passes/legalize/weights.json (what
cost.py reads) and benchmarks/candidates.json: for every (op, variant, dtype, profile) row
where a shipped profile rejects the native node, the median latency of every candidate form
the planner weighs. Nothing is timed here: the planner's choice, recomputed from the code as it
is, must be the measured fastest exact form (not a last resort where another exists) within
the measurement's noise.
"""

from __future__ import annotations

import json
from pathlib import Path

import onnx_ir as ir
import pytest

from benchmarks.decompose_latency import (
    CANDIDATES_FILE,
    DTYPES,
    OP_PROBES,
    PlanRow,
    native_model,
    plan_rows,
)
from maxlower.profiles import shipped_profiles
from passes.legalize import candidate_forms, cost
from tests import tiers

RECORDS = json.loads(Path(CANDIDATES_FILE).read_text(encoding="utf-8"))
# The default tier plans each op, variant and profile at one dtype (the first recorded), and
# for the profiles whose plans take seconds (their searches are the longest), each op at one
# variant; the slow tier plans the other rows.
LONG_SEARCHES = ("primitives", "tensorrt")
FIRST_DTYPE = tiers.first_of_each(
    range(len(RECORDS["rows"])),
    lambda k: tuple(
        RECORDS["rows"][k][key]
        for key in ("op", "profile")
        + (() if RECORDS["rows"][k]["profile"] in LONG_SEARCHES else ("variant",))
    ),
)
ROWS = [
    pytest.param(
        r,
        id=f"{r['op']}-{r['variant']}-{r['dtype']}-{r['profile']}",
        marks=() if k in FIRST_DTYPE else tiers.slow,
    )
    for k, r in enumerate(RECORDS["rows"])
]
RERUN = "rerun python benchmarks/decompose_latency.py --write-weights"


def test_weights_come_from_the_benchmark():
    measured = json.loads(cost.WEIGHTS_FILE.read_text(encoding="utf-8"))
    assert measured["generated_by"].startswith("python benchmarks/decompose_latency.py")
    assert "--write-weights" in measured["generated_by"]
    assert measured["ops"] == cost.WEIGHTS and set(cost.WEIGHTS) == set(OP_PROBES)
    assert measured["launch"] == cost.LAUNCH and measured["loop_trip"] == cost.LOOP_TRIP
    assert cost.WEIGHTS["Add"] == 1.0  # the unit


def test_every_row_the_benchmark_can_make_was_measured():
    recorded = {(r["op"], r["variant"], r["dtype"], r["profile"]) for r in RECORDS["rows"]}
    rows = {(r.op, r.variant, r.dtype, r.profile) for r in plan_rows()}
    assert rows == recorded, RERUN
    assert len(rows) >= 20


@pytest.mark.parametrize("record", ROWS)
def test_planner_picks_the_measured_fastest_form(record):
    row = PlanRow(record["op"], record["variant"], record["dtype"], record["profile"])
    native = ir.serde.deserialize_model(native_model(row.op, DTYPES[row.dtype], row.variant))
    forms = candidate_forms(native, "native", shipped_profiles()[row.profile])
    measured = {tuple(c["steps"]): c for c in record["candidates"]}
    assert {f.steps for f in forms} == set(measured), f"the candidates changed: {RERUN}"
    chosen = min(forms, key=lambda f: f.rank)
    exact = [c for c in record["candidates"] if not c["last_resort"]] or record["candidates"]
    fastest = min(exact, key=lambda c: c["median_us"])
    mine = measured[chosen.steps]["median_us"]
    assert mine <= (1 + record["noise"]) * fastest["median_us"], (
        f"the planner picks {' > '.join(chosen.steps)} (cost {chosen.cost:.2f}, {mine} µs), "
        f"but {' > '.join(fastest['steps'])} measured {fastest['median_us']} µs"
    )
