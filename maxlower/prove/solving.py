"""One call of z3 that ends by its deadline: the solver runs in a forked child, killed at
the deadline if it has not answered.

    verdict = check(solver, seconds=2.0)   # Verdict("unsat"), ("sat", values), ("unknown", why)

z3 stops at its own timeout only between steps: on float problems one step (bit-blasting
a product of doubles, a SAT phase) ran 0.5 to 2.6 s past a 4 s timeout here, so a proof
given `--timeout 5` ended at 7 s (the 30-minute soundness campaign). Its interrupt goes
through the same flag, so it is no faster. A child process can always be killed: the
child gets z3's timeout too (it usually stops by itself, cleanly), and the parent kills it
KILL_GRACE after the deadline.

The child is a fork, so it shares the solver's assertions without serialising them; it
sends back only the verdict and, for `sat`, the value of every constant of the model (the
bits of each input element, see maxlower.prove.core._variable), which is all a
counterexample needs. Where fork does not exist, z3 runs in this process with its timeout.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import dataclasses
import os
import pickle
import select
import signal
import sys
import time

import z3

KILL_GRACE = 0.05  # seconds after the deadline before the child is killed
_PR_SET_PDEATHSIG = 1  # prctl(2): a signal to this process when its parent dies


def _libc():
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc if hasattr(libc, "prctl") else None
    except (OSError, AttributeError):
        return None


_LIBC = _libc() if sys.platform.startswith("linux") else None


@dataclasses.dataclass(frozen=True)
class Verdict:
    """`status` is "unsat", "sat" or "unknown"; `values`, for sat, maps each constant of
    z3's model to its value (an int for a bit-vector, a bool for a Bool); `reason`, for
    unknown, is z3's (or "timeout" when the child was killed at the deadline)."""

    status: str
    values: dict[str, int | bool] | None = None
    reason: str = ""

    def value(self, name: str, default: int | bool) -> int | bool:
        """The model's value of `name`, `default` where the model leaves it free (z3's
        model completion gives 0 and False)."""
        return (self.values or {}).get(name, default)


def check(solver: z3.Solver, seconds: float) -> Verdict:
    """z3's verdict on `solver`'s assertions, within `seconds` (a timeout past them)."""
    solver.set("timeout", max(1, int(seconds * 1000)))
    if not hasattr(os, "fork"):
        return _verdict_of(solver)
    return _in_child(solver, time.perf_counter() + seconds + KILL_GRACE)


def _verdict_of(solver: z3.Solver) -> Verdict:
    result = solver.check()
    if result == z3.unsat:
        return Verdict("unsat")
    if result == z3.sat:
        return Verdict("sat", values=_constants(solver.model()))
    return Verdict("unknown", reason=solver.reason_unknown())


def _constants(model: z3.ModelRef) -> dict[str, int | bool]:
    values: dict[str, int | bool] = {}
    for decl in model.decls():
        if decl.arity() != 0:
            continue
        value = model[decl]
        if z3.is_bv_value(value):
            values[decl.name()] = value.as_long()
        elif z3.is_true(value) or z3.is_false(value):
            values[decl.name()] = z3.is_true(value)
    return values


def _in_child(solver: z3.Solver, deadline: float) -> Verdict:
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: solve, send the verdict, and leave without Python's clean-up
        os.close(read_end)
        _child(solver, write_end)
    os.close(write_end)
    data = None
    try:
        data = _read_until(read_end, deadline)
    finally:
        os.close(read_end)
        _end(pid, answered=bool(data))
    if data is None:
        return Verdict("unknown", reason="timeout")
    if not data:  # the child died without a word (killed from outside, out of memory)
        return Verdict("unknown", reason="the solver's process ended without a verdict")
    return pickle.loads(data)


def _child(solver: z3.Solver, write_end: int) -> None:
    code = 0
    try:
        _die_with_parent()
        signal.signal(signal.SIGINT, signal.SIG_DFL)  # ^C is the parent's to handle
        try:
            verdict = _verdict_of(solver)
        except z3.Z3Exception as error:
            verdict = Verdict("unknown", reason=f"the solver failed: {error}")
        payload = pickle.dumps(verdict)
        with os.fdopen(write_end, "wb") as pipe:
            pipe.write(payload)
    except BaseException:  # the child must never return into the caller
        code = 1
    finally:
        os._exit(code)


def _die_with_parent() -> None:
    """The child is killed with its parent (a prove killed by its caller leaves no solver
    running); Linux only, nothing elsewhere."""
    if _LIBC is not None:
        _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def _read_until(fd: int, deadline: float) -> bytes | None:
    """All the child writes before it closes the pipe; None when the deadline comes first."""
    chunks = []
    while True:
        left = deadline - time.perf_counter()
        if left <= 0:
            return None
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            return None
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


# children that answered and are still exiting (freeing a copy of this process's memory
# takes longer than forking it): reaped later, so that no call waits for it
_EXITING: list[int] = []


def _end(pid: int, answered: bool) -> None:
    """Kills the child unless it answered (then it is exiting by itself), and reaps every
    child that has exited: none is left running past its call, and none stays a zombie."""
    if not answered:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)
    else:
        _EXITING.append(pid)
    _reap_exited()


def _reap_exited() -> None:
    for child in list(_EXITING):
        with contextlib.suppress(ChildProcessError):
            if os.waitpid(child, os.WNOHANG)[0] == 0:
                continue  # still exiting
        _EXITING.remove(child)


@atexit.register
def _reap_all() -> None:
    for child in _EXITING:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(child, 0)


__all__ = ["KILL_GRACE", "Verdict", "check"]
