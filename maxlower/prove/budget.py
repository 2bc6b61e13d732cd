"""The one budget of a proof: time, tensor size, unrolling and solver memory.

    with Budget(deadline=time.perf_counter() + 60).active():
        ...   # every Interpreter made here counts its work against it

A proof's cost is not only the solver's: the interpreter unrolls Loops, builds one z3 term
per tensor element, and a few hundred bytes of model (a Loop of 10^8 constant trips, an
Expand to [3000, 3000], a Range to 10^8) ask for hours and gigabytes before the solver is
called. So the interpreter checks this budget at every node, every Loop trip, every tensor
it makes and every few thousand elements it builds, and the solver gets the time left and a
memory cap. Over budget raises OverBudget, which the prover reports as INCONCLUSIVE, the
reason naming the limit and a remedy (never an internal error).
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import os
import time
from collections.abc import Iterator

MAX_ELEMENTS = 1_000_000  # elements of one tensor (one z3 term each)
MAX_NODES = 200_000  # nodes one run of a model interprets, Loop bodies unrolled
MAX_TRIPS = 100_000  # trips of one Loop
MEMORY_MB = 4096  # z3's memory (memory_max_size)
TICK = 2048  # elements built between two looks at the clock
COMMAND_SHARE = 0.95  # of --timeout, for the work; the rest to report and exit


class OverBudget(Exception):
    """The proof needs more time, elements, unrolling or memory than its budget allows."""


@dataclasses.dataclass
class Budget:
    """`deadline` is a time.perf_counter() value (None: no deadline); `timeout` the seconds
    it stands for, to name them."""

    deadline: float | None = None
    timeout: float | None = None
    max_elements: int = MAX_ELEMENTS
    max_nodes: int = MAX_NODES
    max_trips: int = MAX_TRIPS
    memory_mb: int = MEMORY_MB
    _ticks: int = 0

    @classmethod
    def until(cls, start: float, timeout: float) -> Budget:
        return cls(deadline=start + timeout, timeout=timeout)

    @classmethod
    def for_command(cls, timeout: float, entered: float) -> Budget:
        """A command's budget: `timeout` seconds from the command's start, its work
        stopping at COMMAND_SHARE of them so that reporting and exiting fit in the rest
        (a run never goes past --timeout + 10%, even on busy cores). The start is the
        process's (Python's start-up and imports count) when the process was started for
        this command, else `entered`, when the command was called: a process that ran
        other work first (a test runner, a caller invoking the CLI in-process) must not
        find its deadline already passed."""
        start = process_start()
        if entered - start > STARTUP_ALLOWANCE:
            start = entered
        return cls(deadline=start + COMMAND_SHARE * timeout, timeout=timeout)

    def remaining(self) -> float:
        return float("inf") if self.deadline is None else self.deadline - time.perf_counter()

    def check_time(self) -> None:
        if self.remaining() <= 0:
            raise OverBudget(
                f"timed out (--timeout {_seconds(self.timeout)}): the deadline passed while "
                "the models were interpreted or solved; a larger --timeout, or fixing "
                "symbolic dims (--dim) or a smaller --max-dim, may finish it"
            )

    def tick(self, count: int = 1) -> None:
        """`count` more elements built: looks at the clock every TICK of them."""
        self._ticks += count
        if self._ticks >= TICK:
            self._ticks = 0
            self.check_time()

    def elements(self, count: int, what: str) -> None:
        if count > self.max_elements:
            raise OverBudget(
                f"{what} would hold {count} elements, past the prover's budget of "
                f"{self.max_elements} per tensor (one solver term each); check it by "
                "testing instead (maxlower verify), or prove a smaller instance"
            )

    def nodes(self, count: int) -> None:
        if count > self.max_nodes:
            raise OverBudget(
                f"interpreting the model took more than {self.max_nodes} nodes (Loop bodies "
                "unrolled), past the prover's budget; check it by testing instead "
                "(maxlower verify), or prove a smaller instance"
            )
        self.check_time()

    def trips(self, count: int, what: str) -> None:
        if count > self.max_trips:
            raise OverBudget(
                f"{what} runs {count} trips, past the prover's budget of {self.max_trips} "
                "unrolled trips; check it by testing instead (maxlower verify)"
            )

    def memory_exhausted(self) -> OverBudget:
        return OverBudget(
            f"the solver ran out of its memory budget ({self.memory_mb} MB); check it by "
            "testing instead (maxlower verify), or prove a smaller instance (--max-dim)"
        )

    def tighter(self, deadline: float, timeout: float) -> Budget:
        """This budget with the earlier of its deadline and `deadline`."""
        if self.deadline is not None and self.deadline <= deadline:
            return self
        return dataclasses.replace(self, deadline=deadline, timeout=timeout)

    @contextlib.contextmanager
    def active(self) -> Iterator[Budget]:
        import z3

        z3.set_param("memory_max_size", self.memory_mb)
        token = _CURRENT.set(self)
        try:
            yield self
        finally:
            _CURRENT.reset(token)


_CURRENT: contextvars.ContextVar[Budget | None] = contextvars.ContextVar(
    "maxlower_prove_budget", default=None
)


def current() -> Budget:
    """The active budget, or a fresh one of the default caps and no deadline."""
    return _CURRENT.get() or Budget()


def is_active() -> bool:
    return _CURRENT.get() is not None


# Seconds between a process's start and its command's call that start-up and imports take,
# at most (about 1 s here; 5 on a busy machine): beyond it, the process was doing other work.
STARTUP_ALLOWANCE = 10.0


def process_start() -> float:
    """When this process started, as a time.perf_counter() value (the command's deadline
    counts Python's start-up and imports too); now where /proc does not say."""
    now = time.perf_counter()
    try:
        with open("/proc/self/stat") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
        with open("/proc/uptime") as handle:
            uptime = float(handle.read().split()[0])
        started = int(fields[19]) / os.sysconf("SC_CLK_TCK")  # field 22: starttime
    except (OSError, ValueError, IndexError):
        return now
    age = uptime - started
    return now - age if 0 <= age < 3600 else now


def _seconds(value: float | None) -> str:
    return "?" if value is None else f"{value:g}"


__all__ = ["Budget", "OverBudget", "current", "is_active", "process_start"]
