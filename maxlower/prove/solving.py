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
counterexample needs. It closes every descriptor but its pipe (a thread's concurrent
solve must see its own child's end of file), dies with its parent, and is reaped by a
thread once it has answered (its exit frees a copy of this process's memory: no call waits
for that). A child that dies without a whole verdict (killed, out of memory) is
"unknown", never "unsat". Where fork does not exist or fails (a process limit), z3 runs in
this process with its own timeout.
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import math
import os
import pickle
import select
import signal
import sys
import threading
import time

import z3

KILL_GRACE = 0.05  # seconds after the deadline before the child is killed
_PR_SET_PDEATHSIG = 1  # prctl(2): a signal to this process when its parent dies
_MAX_FD = os.sysconf("SC_OPEN_MAX") if hasattr(os, "sysconf") else 1 << 16


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
    deadline = time.perf_counter() + seconds + KILL_GRACE
    try:
        return _in_child(solver, deadline)
    except _NoChild:  # no fork here, or it failed (a process limit, no memory)
        return _verdict_of(solver)


class _NoChild(Exception):
    pass


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
    if not hasattr(os, "fork"):
        raise _NoChild
    read_end, write_end = os.pipe()
    parent = os.getpid()
    try:
        pid = os.fork()
    except OSError:
        os.close(read_end)
        os.close(write_end)
        raise _NoChild from None
    if pid == 0:  # the child: solve, send the verdict, and leave without Python's clean-up
        _child(solver, parent, write_end)
    os.close(write_end)
    try:
        data = _read_until(read_end, deadline)
    finally:
        os.close(read_end)
        status = _end(pid, answered=bool(data))
    if data is None:
        return Verdict("unknown", reason="timeout")
    try:
        return pickle.loads(data)
    except Exception:  # nothing, or a part: the child died writing (killed, out of memory)
        return Verdict("unknown", reason=f"the solver's process {_death(status)}")


def _child(solver: z3.Solver, parent: int, write_end: int) -> None:
    code = 0
    try:
        _die_with_parent(parent)
        # a pipe another thread opened for its own child must not stay open here, or that
        # child's end of file would wait for this one (os.closerange is close_range(2))
        os.closerange(3, write_end)
        os.closerange(write_end + 1, _MAX_FD)
        signal.signal(signal.SIGINT, signal.SIG_DFL)  # ^C is the parent's to handle
        try:
            verdict = _verdict_of(solver)
        except MemoryError:
            verdict = Verdict("unknown", reason="out of memory")
        except Exception as error:
            verdict = Verdict("unknown", reason=f"the solver failed: {error}")
        payload = pickle.dumps(verdict)
        with os.fdopen(write_end, "wb") as pipe:
            pipe.write(payload)
    except BaseException:  # the child must never return into the caller
        code = 1
    finally:
        os._exit(code)


def _die_with_parent(parent: int) -> None:
    """The child is killed with its parent (a prove killed by its caller leaves no solver
    running); Linux only, nothing elsewhere. A parent that died before the request was
    made is seen in the parent id (the child then belongs to init)."""
    if _LIBC is not None:
        _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent:
            os._exit(1)


def _read_until(fd: int, deadline: float) -> bytes | None:
    """All the child writes before it closes the pipe; None when the deadline comes first.
    poll, not select: select takes no descriptor past 1023 (a process with many files)."""
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    chunks = []
    while True:
        left = deadline - time.perf_counter()
        if left <= 0 or not poller.poll(max(1, math.ceil(left * 1000))):
            return None
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def _end(pid: int, answered: bool) -> int | None:
    """Ends the child: killed and reaped unless it answered; an answered child is exiting
    by itself, and a thread reaps it (freeing its copy of this process's memory takes
    longer than forking it: no call waits for it, and no zombie stays). The wait status
    of a child reaped here (None for one reaped by the thread)."""
    if answered:
        threading.Thread(target=_reap, args=(pid,), daemon=True).start()
        return None
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    return _reap(pid)


def _reap(pid: int) -> int | None:
    try:
        return os.waitpid(pid, 0)[1]
    except ChildProcessError:  # reaped by someone else (a SIGCHLD handler)
        return None


def _death(status: int | None) -> str:
    """How a child that sent no whole verdict ended, in words."""
    if status is not None and os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        if number != signal.SIGKILL:
            return f"was killed by {signal.Signals(number).name}"
        return "was killed (SIGKILL: out of memory, or from outside)"
    return "ended without a verdict"


__all__ = ["KILL_GRACE", "Verdict", "check"]
