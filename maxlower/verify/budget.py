"""A run within a time budget, in this process: onnxruntime stops when its RunOptions'
`terminate` is set from a timer thread; onnx.reference, which is Python, gets an exception
raised in its thread (`PyThreadState_SetAsyncExc`, delivered between two bytecodes).

Below both `runner` (which runs models, in a child process or here) and `isolated` (the
child's side, which runs them here): one implementation of the budget for both.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Callable

import numpy as np
import onnxruntime as ort


class RunTimedOut(Exception):
    """A run went past its time budget."""


def within_budget(
    call: Callable[[], list],
    seconds: float,
    stop: Callable[[], None],
    undo: Callable[[], None] | None = None,
) -> list:
    """`call()`, or RunTimedOut if it is still running after `seconds`; then `stop()` has
    been called, from a timer thread, to make it return. `undo()` withdraws a `stop()` that
    came too late to act (the call had just returned)."""
    lock = threading.Lock()
    state = {"running": True, "expired": False}

    def expire() -> None:
        with lock:
            if state["running"]:
                state["expired"] = True
                stop()

    timer = threading.Timer(seconds, expire)
    timer.daemon = True
    try:
        try:
            timer.start()  # (inside: a short budget may be spent before start() returns)
            outputs = call()
        finally:
            with lock:
                state["running"] = False
                if state["expired"] and undo is not None:
                    undo()
            timer.cancel()
    except Exception as error:
        if state["expired"]:
            raise RunTimedOut from error
        raise
    except _Interrupted as error:  # the reference's run, stopped (a BaseException)
        raise RunTimedOut from error
    return outputs


class _Interrupted(BaseException):
    """Raised in a thread running onnx.reference whose budget is spent; a BaseException, so
    that the evaluator's own `except Exception` does not swallow it."""


def _set_async_exception(thread_id: int, exception: type[BaseException] | None) -> None:
    """Raise `exception` in the thread, at its next bytecode (None: withdraw a pending one)."""
    ctypes.pythonapi.PyThreadState_SetAsyncExc(
        ctypes.c_ulong(thread_id), ctypes.py_object(exception) if exception else None
    )


def run_in_process(runnable, feeds: dict[str, np.ndarray], seconds: float) -> list:
    """`runnable.run(None, feeds)` for an onnxruntime session or an onnx.reference
    evaluator in this process, stopped after `seconds` (RunTimedOut)."""
    if isinstance(runnable, ort.InferenceSession):
        options = ort.RunOptions()
        return within_budget(
            lambda: runnable.run(None, feeds, options),
            seconds,
            lambda: setattr(options, "terminate", True),
        )
    thread = threading.get_ident()
    with np.errstate(all="ignore"):  # NaN and inf are what the trials are made of
        return within_budget(
            lambda: runnable.run(None, feeds),
            seconds,
            lambda: _set_async_exception(thread, _Interrupted),
            lambda: _set_async_exception(thread, None),
        )
