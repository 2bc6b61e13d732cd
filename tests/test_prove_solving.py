"""z3 called so that it ends by its deadline (maxlower.prove.solving): the solver runs in a
forked child, killed at the deadline.

z3 stops at its own timeout only between steps. On double products it ran 0.5 to 2.6 s past
a 4 s timeout, so `prove_models(..., timeout=5)` ended at 6.4 to 7.1 s (the 30-minute
soundness campaign's last overruns). These tests hold the child's contract: the verdicts and
models of a solve in this process, an end by the deadline whatever z3 does, no child left
running or unreaped, and none left when the prover's own process is killed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import onnx
import pytest

z3 = pytest.importorskip("z3", reason="the prover needs z3-solver: pip install -e '.[prove]'")

from maxlower.prove import solving  # noqa: E402
from maxlower.prove.sites import prove_models  # noqa: E402

needs_fork = pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork here: z3 runs in-process")


def _hard_problem() -> z3.Solver:
    """Factoring a 64-bit semiprime (two random 32-bit primes) by bit-vector
    multiplication: z3 does not finish it in 10 s."""
    p, q = z3.BitVecs("p q", 32)
    solver = z3.Solver()
    n = 3538334777 * 2767054501
    solver.add(z3.ZeroExt(32, p) * z3.ZeroExt(32, q) == n, z3.UGT(p, 1), z3.UGT(q, 1))
    return solver


def _children() -> set[int]:
    path = f"/proc/{os.getpid()}/task/{os.getpid()}/children"
    with open(path) as handle:
        return {int(pid) for pid in handle.read().split()}


def test_unsat_sat_and_unknown_come_back_as_in_this_process():
    x = z3.BitVec("x", 8)
    flag = z3.Bool("flag")
    unsat = z3.Solver()
    unsat.add(x + 1 == x)
    assert solving.check(unsat, 5.0).status == "unsat"

    sat = z3.Solver()
    sat.add(x * 3 == 9, flag)  # 3 is odd, so x = 3 is the one solution mod 256
    verdict = solving.check(sat, 5.0)
    assert verdict.status == "sat"
    assert verdict.value("x", 0) == 3
    assert verdict.value("flag", False) is True
    assert verdict.value("absent", 7) == 7  # free in the model: the caller's default


@needs_fork
def test_a_solve_past_its_deadline_is_killed_at_the_deadline():
    solver = _hard_problem()
    before = _children()
    start = time.perf_counter()
    # no z3 timeout at all: only the kill can end it
    verdict = solving._in_child(solver, time.perf_counter() + 0.5)
    took = time.perf_counter() - start
    assert verdict.status == "unknown"
    assert verdict.reason == "timeout"
    assert took < 2.0, took  # the deadline and a kill, not z3's search
    assert _children() <= before  # killed and reaped: no zombie


@needs_fork
def test_z3_s_own_timeout_still_ends_a_solve_that_stops_by_itself():
    start = time.perf_counter()
    verdict = solving.check(_hard_problem(), 0.3)
    assert verdict.status == "unknown"
    assert "timeout" in verdict.reason or "canceled" in verdict.reason
    assert time.perf_counter() - start < 2.0


@needs_fork
def test_children_that_answered_are_reaped():
    x = z3.BitVec("x", 8)
    solver = z3.Solver()
    solver.add(x == 5)
    before = _children()
    for _ in range(20):
        assert solving.check(solver, 5.0).value("x", 0) == 5
    deadline = time.perf_counter() + 5
    while solving._EXITING and time.perf_counter() < deadline:
        solving._reap_exited()
        time.sleep(0.05)
    assert not solving._EXITING
    assert _children() <= before


@needs_fork
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_the_solver_dies_with_the_prover_s_process(tmp_path):
    """A prove killed by its caller (a timeout in CI, a scheduler) leaves no z3 running."""
    script = textwrap.dedent(
        f"""
        import sys, time
        sys.path.insert(0, {os.path.dirname(os.path.dirname(__file__))!r})
        from tests.test_prove_solving import _hard_problem
        from maxlower.prove import solving
        print("solving", flush=True)
        solving._in_child(_hard_problem(), time.perf_counter() + 120)
        """
    )
    prover = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert prover.stdout.readline().strip() == "solving"
        path = f"/proc/{prover.pid}/task/{prover.pid}/children"
        deadline = time.perf_counter() + 10
        solver_pid = None
        while solver_pid is None and time.perf_counter() < deadline:
            with open(path) as handle:
                pids = handle.read().split()
            solver_pid = int(pids[0]) if pids else None
            time.sleep(0.05)
        assert solver_pid is not None, "the prover forked no solver"
    finally:
        prover.send_signal(signal.SIGKILL)
        prover.wait()
    deadline = time.perf_counter() + 10
    while os.path.exists(f"/proc/{solver_pid}") and time.perf_counter() < deadline:
        with open(f"/proc/{solver_pid}/stat") as handle:
            if handle.read().rsplit(")", 1)[1].split()[0] == "Z":
                break  # dead, waiting for init to reap it
        time.sleep(0.05)
    alive = os.path.exists(f"/proc/{solver_pid}")
    if alive:
        with open(f"/proc/{solver_pid}/stat") as handle:
            alive = handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    assert not alive, "the solver outlived the prover"


def _model(signature: str, body: str, constants: str = "") -> onnx.ModelProto:
    text = f'<ir_version: 8, opset_import: ["" : 18]>\ng {signature} {constants} {{\n{body}\n}}'
    return onnx.parser.parse_model(text)


@pytest.mark.slow
def test_a_proof_z3_cannot_finish_ends_within_its_timeout():
    """The campaign's witness: x*x against x*(x+0) in double at [8, N], N <= 2. z3's
    whole-model solve gives up past its own timeout; the proof ends by timeout + 10 %."""
    signature = "(double[8,N] x) => (double[8,N] mul1)"
    reference = _model(signature, "mul1 = Mul(x, x)")
    candidate = _model(
        signature,
        "plus_zero_0 = Add(x, zero_0)\nmul1 = Mul(x, plus_zero_0)",
        "<double zero_0 = {0}>",
    )
    start = time.perf_counter()
    report = prove_models(reference, candidate, max_dim=2, timeout=5)
    took = time.perf_counter() - start
    assert took <= 5.5, (took, report.status)
