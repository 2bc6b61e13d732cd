"""An onnxruntime session in a child process, so that a kernel that traps kills the child,
never maxlower.

onnxruntime's int32 and int64 Div compute INT_MIN / -1 with the machine's division, which
raises SIGFPE on x86 (onnxruntime 1.32 checks a zero divisor, not that overflow): in
maxlower's own process the signal ends it with exit code 136 and no message. Here the child
dies instead; `IsolatedSession.run` raises `KernelDied` naming the signal, and the next
run starts a new child.

Children are forked from maxlower's process, which has onnxruntime, numpy and onnx imported
already (a few milliseconds; runner.isolated_session runs in-process where there is no
fork). Not multiprocessing's forkserver or spawn: both import the caller's `__main__` again
in the child, which runs a script that lacks an `if __name__ == "__main__"` guard a second
time. The model goes to the child once, as bytes; each run sends the feeds and gets the
outputs back, pickled through a pipe. The child runs the session with the run's time
budget (`budget.run_in_process`); the parent waits that long plus `GRACE`, then kills it (a
kernel that never returns to check `terminate`).
"""

from __future__ import annotations

import contextlib
import faulthandler
import multiprocessing
import signal
import weakref

import numpy as np

from maxlower.verify.budget import RunTimedOut, run_in_process

GRACE = 5.0  # seconds the parent waits past the run's own budget before killing the child


class KernelDied(RuntimeError):
    """onnxruntime's process died of a signal while it ran the model (SIGFPE from an integer
    Div of INT_MIN by -1, say)."""

    def __init__(self, signum: int) -> None:
        try:
            name = signal.Signals(signum).name
        except ValueError:
            name = f"signal {signum}"
        super().__init__(f"onnxruntime's process died of {name}")
        self.signum = signum


class ChildTimedOut(RuntimeError):
    """The child did not answer within the run's budget and GRACE: it was killed."""


class IsolatedSession:
    """`maxlower.runtime.onnxruntime_session(model)`, made and run in a child process.
    Made as a session is: raises what onnxruntime raised when it cannot load the model (as
    a RuntimeError with its message)."""

    def __init__(self, model: bytes) -> None:
        self._model = model
        self._process = None
        self._connection = None
        self._finalizer = None
        self._start()

    def _start(self) -> None:
        context = multiprocessing.get_context("fork")
        parent, child = context.Pipe()
        process = context.Process(target=_serve, args=(child,), daemon=True)
        process.start()
        child.close()
        self._process, self._connection = process, parent
        self._finalizer = weakref.finalize(self, _stop, process, parent)
        parent.send_bytes(self._model)
        answer = self._answer(None)
        if answer[0] != "ok":
            self.close()
            raise RuntimeError(answer[1])

    def run(self, feeds: dict[str, np.ndarray], seconds: float) -> list:
        """The outputs; RunTimedOut past `seconds` (budget.RunTimedOut), KernelDied if the
        child died, RuntimeError with onnxruntime's message if the run failed."""

        if self._process is None:
            self._start()  # the last child died
        self._connection.send((feeds, seconds))
        try:
            answer = self._answer(seconds + GRACE)
        except ChildTimedOut as error:
            raise RunTimedOut from error
        if answer[0] == "ok":
            return answer[1]
        if answer[0] == "timeout":
            raise RunTimedOut
        raise RuntimeError(answer[1])

    def _answer(self, seconds: float | None):
        connection, process = self._connection, self._process
        try:
            if seconds is not None and not connection.poll(seconds):
                self.close()
                raise ChildTimedOut
            return connection.recv()
        except (EOFError, OSError):
            process.join(GRACE)
            code = process.exitcode
            self.close()
            if code is not None and code < 0:
                raise KernelDied(-code) from None
            raise RuntimeError(f"onnxruntime's process ended with exit code {code}") from None

    def close(self) -> None:
        if self._finalizer is not None:
            self._finalizer()
        self._process = self._connection = self._finalizer = None


def _stop(process, connection) -> None:
    with contextlib.suppress(OSError, ValueError):
        connection.send(None)
    connection.close()
    process.join(1.0)
    if process.exitcode is None:
        process.kill()
        process.join()


def _serve(connection) -> None:
    """The child: make the session from the model's bytes, then run feeds until told to
    stop (None) or the parent is gone."""
    from maxlower.runtime import onnxruntime_session
    from passes.errors import concise

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent stops it
    faulthandler.disable()  # its death is the parent's to report, in one line
    try:
        session = onnxruntime_session(connection.recv_bytes())
    except Exception as error:
        connection.send(("error", concise(error)))
        return
    connection.send(("ok", None))
    while True:
        try:
            request = connection.recv()
        except (EOFError, OSError):
            return
        if request is None:
            return
        feeds, seconds = request
        try:
            connection.send(("ok", run_in_process(session, feeds, seconds)))
        except RunTimedOut:
            connection.send(("timeout", None))
        except Exception as error:
            connection.send(("error", concise(error)))
