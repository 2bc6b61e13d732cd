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
import pickle
import signal
import subprocess
import sys
import textwrap
import threading
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


def _wait_for_no_new_children(before: set[int]) -> set[int]:
    deadline = time.perf_counter() + 10
    while _children() - before and time.perf_counter() < deadline:
        time.sleep(0.02)
    return _children() - before


def _x_is_5() -> z3.Solver:
    solver = z3.Solver()
    solver.add(z3.BitVec("x", 8) == 5)
    return solver


@needs_fork
def test_children_that_answered_are_reaped():
    solver = _x_is_5()
    before = _children()
    for _ in range(20):
        assert solving.check(solver, 5.0).value("x", 0) == 5
    assert not _wait_for_no_new_children(before), "a zombie or a running child is left"


def _open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


@needs_fork
def test_a_failed_fork_solves_in_this_process_and_leaks_no_descriptor(monkeypatch):
    """A process limit (EAGAIN) or no memory for the fork: the proof goes on in-process."""

    def no_fork():
        raise BlockingIOError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(os, "fork", no_fork)
    before = _open_descriptors()
    assert solving.check(_x_is_5(), 5.0).value("x", 0) == 5
    assert _open_descriptors() == before


@needs_fork
def test_a_pipe_past_descriptor_1023_is_waited_on():
    """select() takes no descriptor past 1023; a process holding many files still proves."""
    held = [os.open(os.devnull, os.O_RDONLY) for _ in range(1100)]
    try:
        assert solving.check(_x_is_5(), 5.0).value("x", 0) == 5
    finally:
        for fd in held:
            os.close(fd)


@needs_fork
def test_a_child_killed_before_it_answers_is_unknown_not_unsat(monkeypatch):
    def killed(solver):
        os.kill(os.getpid(), signal.SIGKILL)

    monkeypatch.setattr(solving, "_verdict_of", killed)
    verdict = solving._in_child(_x_is_5(), time.perf_counter() + 5)
    assert verdict.status == "unknown"
    assert "killed" in verdict.reason


@needs_fork
def test_a_partial_or_garbled_verdict_is_unknown_not_unsat(monkeypatch):
    class Garbling:
        loads = staticmethod(pickle.loads)

        @staticmethod
        def dumps(verdict):
            return pickle.dumps(solving.Verdict("unsat"))[:-3]  # cut short

    monkeypatch.setattr(solving, "pickle", Garbling)
    verdict = solving.check(_x_is_5(), 5.0)
    assert verdict.status == "unknown"


@needs_fork
def test_an_error_in_the_child_comes_back_as_its_text(monkeypatch):
    def fails(solver):
        raise ValueError("a term of another sort")

    monkeypatch.setattr(solving, "_verdict_of", fails)
    verdict = solving._in_child(_x_is_5(), time.perf_counter() + 5)
    assert verdict.status == "unknown"
    assert "a term of another sort" in verdict.reason


@needs_fork
def test_solves_from_two_threads_each_get_their_own_answer_in_time():
    """A child forked by one thread must not hold the other thread's pipe open (its end
    of file would wait for that child), and the reaping must not race."""
    failures: list[str] = []

    def solve_many(value: int) -> None:
        context = z3.Context()
        for _ in range(25):
            solver = z3.Solver(ctx=context)
            solver.add(z3.BitVec("x", 8, ctx=context) == value)
            start = time.perf_counter()
            verdict = solving.check(solver, 20.0)
            if verdict.value("x", 0) != value or time.perf_counter() - start > 5:
                failures.append(f"{value}: {verdict} in {time.perf_counter() - start:.2f} s")

    threads = [threading.Thread(target=solve_many, args=(v,)) for v in (3, 200)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures


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
