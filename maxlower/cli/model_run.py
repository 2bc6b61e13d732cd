"""One model of a batch in a process of its own (`ModelRun`), watched for its time and
memory budgets, and what it gave (`ModelResult`): the step that `batch.run_local` runs
--jobs at a time and `cluster.run_task` runs on a worker. The child runs the command
exactly as it runs alone (`child_main`), its standard output and error sent to files."""

from __future__ import annotations

import contextlib
import dataclasses
import glob
import json
import os
import pathlib
import pickle
import signal
import subprocess
import sys
import tempfile
import time

import click

from maxlower.cli.main import (
    EXIT_BUDGET,
    EXIT_DIFFERENT,
    EXIT_INCONCLUSIVE,
    EXIT_INTERNAL,
    EXIT_INVALID,
    EXIT_NO_EXACT_FORM,
    EXIT_OK,
)

STATUS_OF_CODE = {
    EXIT_OK: "ok",
    EXIT_DIFFERENT: "different",
    EXIT_INVALID: "invalid",
    EXIT_NO_EXACT_FORM: "no exact form",
    EXIT_INTERNAL: "internal error",
    EXIT_INCONCLUSIVE: "inconclusive",
}


@dataclasses.dataclass(frozen=True)
class ModelJob:
    """One model of a batch: where it is read and written, and its resume key."""

    index: int
    input: pathlib.Path
    name: str  # as the lines and the index page show it
    output: pathlib.Path | None  # None: the command writes no model (check)
    report: pathlib.Path | None
    key: str
    size: int = 0  # bytes to read (the model and its external data): the largest go first


# --- one model in a child process --------------------------------------------------------


@dataclasses.dataclass
class ModelResult:
    """What one model's run gave: its exit code and status, its time, the error line,
    what it printed, and its --json document."""

    status: str
    exit_code: int
    seconds: float
    error: str | None = None
    stdout: str = ""
    document: dict | None = None
    resumed: bool = False

    def record(self, job: ModelJob) -> dict:
        """The model's JSON line (and its line in OUT's record)."""
        return {
            "input": str(job.input),
            "output": str(job.output) if job.output is not None else None,
            "status": self.status,
            "exit_code": self.exit_code,
            "seconds": round(self.seconds, 3),
            "error": self.error,
            "report": str(job.report) if job.report is not None else None,
            "resumed": self.resumed,
            "key": job.key,
            "result": self.document,
        }


class ModelRun:
    """One model's command in a child process, watched for its budgets.

    The child is forked from this process (`fork=True`) or is a fresh interpreter running
    `python -m maxlower.cli.child` on the pickled arguments; either way it runs
    `child_main`, with standard output and error in files of the run's directory. It
    ignores SIGINT (the batch stops it), and is stopped with SIGTERM first, so that its
    own clean-up removes its temporary files, then SIGKILL after `GRACE` seconds."""

    GRACE = 3.0
    MEMORY_EVERY = 0.25  # seconds between two reads of the child's memory

    def __init__(
        self,
        command: str,
        params: dict,
        timeout: float,
        memory_bytes: int | None,
        *,
        fork: bool,
        cwd: str | None = None,
        output: pathlib.Path | None = None,
    ) -> None:
        self.timeout, self.memory_bytes, self.output = timeout, memory_bytes, output
        self.directory = pathlib.Path(tempfile.mkdtemp(prefix="maxlower-batch-"))
        self.json_path = self.directory / "result.json"
        params = {**params, "json_path": self.json_path}
        self.started = time.monotonic()
        self.started_at = time.time()  # (to tell an output this run wrote from an older one)
        self.killed_for: str | None = None
        self._code: int | None = None  # once reaped
        self._memory_read = 0.0
        self._popen: subprocess.Popen | None = None
        if fork and hasattr(os, "fork"):
            self.pid = _fork_child(command, params, self.directory, timeout)
        else:
            arguments = self.directory / "arguments.pickle"
            pickled = (command, params, str(self.directory), timeout)
            arguments.write_bytes(pickle.dumps(pickled))
            self._popen = subprocess.Popen(
                [sys.executable, "-m", "maxlower.cli.child", str(arguments)],
                stdin=subprocess.DEVNULL,
                cwd=cwd,  # a cluster's worker: the command's directory, relative paths
                preexec_fn=_child_of_a_worker if sys.platform == "linux" else None,
            )
            self.pid = self._popen.pid

    def poll(self) -> ModelResult | None:
        """The result once the child has ended (stopping it past a budget), else None."""
        code = self._returncode()
        if code is None:
            code = self._check_budgets()
        elif self.killed_for is None and (self.directory / TIMED_OUT).exists():
            # it stopped itself at its timeout (`_arm_own_timeout`), whatever code the
            # interruption left it with
            self.killed_for = "timeout"
            self._remove_leftovers()
        if code is None:
            return None
        return self._result(code)

    def stop(self) -> None:
        """Stop the child and wait for it (an interrupted batch); never raises."""
        with contextlib.suppress(OSError):
            self._end()
            self.cleanup()

    def cleanup(self) -> None:
        with contextlib.suppress(OSError):
            for path in self.directory.iterdir():
                path.unlink()
            self.directory.rmdir()

    def _returncode(self) -> int | None:
        if self._code is not None:
            return self._code
        if self._popen is not None:
            self._code = self._popen.poll()
            return self._code
        try:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
        except ChildProcessError:  # reaped already (cannot happen here, but never raise)
            self._code = -signal.SIGKILL
            return self._code
        if pid == 0:
            return None
        self._code = os.waitstatus_to_exitcode(status)
        return self._code

    def _check_budgets(self) -> int | None:
        over = None
        now = time.monotonic()
        if now - self.started > self.timeout:
            over = "timeout"
        elif self.memory_bytes is not None and now - self._memory_read > self.MEMORY_EVERY:
            self._memory_read = now
            if _private_bytes(self.pid) > self.memory_bytes:
                over = "memory"
        if over is None:
            return None
        self.killed_for = over
        return self._end()

    def _end(self) -> int:
        """SIGTERM, then SIGKILL past the grace; the exit code; leftovers removed."""
        deadline = time.monotonic() + self.GRACE
        signum = signal.SIGTERM
        while (code := self._returncode()) is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signum)
            if time.monotonic() > deadline:
                signum = signal.SIGKILL
            time.sleep(0.02)
        self._remove_leftovers()
        return code

    def _remove_leftovers(self) -> None:
        """The temporary files (`.NAME.XXXXXXXX`, maxlower.files) a killed child could not
        remove, beside its output."""
        if self.output is None:
            return
        for name in (self.output.name, self.output.name + ".data"):
            for leftover in self.output.parent.glob(f".{glob.escape(name)}.????????"):
                with contextlib.suppress(OSError):
                    leftover.unlink()

    def _remove_written_output(self) -> None:
        """The output (and its external data) a child stopped past a budget wrote all the
        same (SIGTERM waits until a write's renames are done): a model counted as
        'timeout' or 'memory' leaves nothing, as its line says (red team of 7de8564). An
        output older than the run is another run's, and stays."""
        if self.output is None:
            return
        for path in (self.output, self.output.with_name(self.output.name + ".data")):
            with contextlib.suppress(OSError):
                if path.stat().st_mtime >= self.started_at:
                    path.unlink()

    def _result(self, code: int) -> ModelResult:
        seconds = time.monotonic() - self.started
        stdout = _read_text(self.directory / "stdout")
        stderr = _read_text(self.directory / "stderr")
        document = None
        with contextlib.suppress(OSError, ValueError):
            document = json.loads(self.json_path.read_text(encoding="utf-8"))
        self.cleanup()
        if self.killed_for is not None:
            self._remove_written_output()
        if self.killed_for == "timeout":
            error = f"stopped after {self.timeout:g} s (--model-timeout)"
            return ModelResult("timeout", EXIT_BUDGET, seconds, error, stdout, None)
        if self.killed_for == "memory":
            gigabytes = (self.memory_bytes or 0) / 1e9
            error = f"stopped past {gigabytes:.3g} GB of its own memory (--model-memory)"
            return ModelResult("memory", EXIT_BUDGET, seconds, error, stdout, None)
        if code < 0:
            self._remove_leftovers()
            name = signal.Signals(-code).name
            error = f"the process died of {name}{_last_line(stderr, prefix='')}"
            return ModelResult("crashed", EXIT_INTERNAL, seconds, error, stdout, None)
        status = STATUS_OF_CODE.get(code, "interrupted" if code >= 128 else "internal error")
        return ModelResult(status, code, seconds, _error_line(stderr), stdout, document)


def _fork_child(command: str, params: dict, directory: pathlib.Path, timeout: float) -> int:
    """Fork; the child runs the model's command and never returns."""
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the child
        code = EXIT_INTERNAL
        try:
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # the batch stops its children
            code = child_main(command, params, directory, timeout)
        finally:
            os._exit(code)
    return pid


def _child_of_a_worker() -> None:
    """In a cluster worker's child, before it runs: it dies with the worker (a lost
    worker leaves no model running unwatched), and ignores SIGINT as a forked one does."""
    import ctypes

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def child_main(
    command: str, params: dict, directory: str | os.PathLike, timeout: float | None = None
) -> int:
    """Run the command `command` of `maxlower` on one model, with standard output and
    error sent to files in `directory`; return its exit code. Past `timeout` seconds the
    child stops itself as the batch would stop it."""
    directory = pathlib.Path(directory)
    if timeout is not None:
        _arm_own_timeout(timeout, directory)
    for fd, name in ((1, "stdout"), (2, "stderr")):
        target = os.open(directory / name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(target, fd)
        os.close(target)
    # Python's streams onto those descriptors (the parent's may be a test's capture)
    sys.stdout = open(1, "w", encoding="utf-8", errors="replace", closefd=False)  # noqa: SIM115
    sys.stderr = open(2, "w", encoding="utf-8", errors="replace", closefd=False)  # noqa: SIM115
    from maxlower.cli.main import cli  # its commands: registered by the parent (or child.py)

    code = EXIT_INTERNAL
    try:
        callback = cli.commands[command].callback
        assert callback is not None
        with click.Context(cli.commands[command], info_name=command):
            callback(**params)
        code = EXIT_OK
    except SystemExit as done:
        code = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
    except click.exceptions.Exit as done:
        code = done.exit_code
    except BaseException as error:  # a bug outside the command's own error handling
        print(f"maxlower: error: internal error ({type(error).__name__}: {error})", file=sys.stderr)
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
    return code


# The file a child writes into its run's directory as its own timeout passes.
TIMED_OUT = "timed-out"


def _arm_own_timeout(seconds: float, directory: pathlib.Path) -> None:
    """Past `seconds`, write TIMED_OUT and send SIGTERM to itself, as the batch would stop
    it (so that a write in progress finishes: maxlower.files defers SIGTERM), again every
    RESEND seconds until it has ended. The batch's own check polls every 20 ms: a child
    that ended between two polls, past its timeout, would otherwise count as finished."""
    if not hasattr(signal, "setitimer"):  # Windows: the batch's check alone
        return

    def stop_as_the_batch_would(signum: int, frame: object) -> None:
        with contextlib.suppress(OSError):
            (directory / TIMED_OUT).touch()
        os.kill(os.getpid(), signal.SIGTERM)

    signal.signal(signal.SIGALRM, stop_as_the_batch_would)
    signal.setitimer(signal.ITIMER_REAL, max(seconds, 1e-6), RESEND)


RESEND = 0.1  # seconds between two SIGTERMs of a child past its timeout


def _private_bytes(pid: int) -> int:
    """The child's own memory: its proportional share of resident pages (Linux's Pss), so
    that what it shares with the batch's process since the fork counts by its share, not
    whole (0 where it cannot be read)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _read_text(path: pathlib.Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _error_line(stderr: str) -> str | None:
    for line in reversed(stderr.splitlines()):
        if line.startswith("maxlower: error: "):
            return line.removeprefix("maxlower: error: ")
    return None


def _last_line(stderr: str, prefix: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    return f" ({lines[-1][:200]})" if lines and lines[-1].startswith(prefix) else ""
