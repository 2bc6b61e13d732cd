"""A batch on a Dask cluster (`--cluster ADDRESS`, the optional extra maxlower[cluster]).

One task per model. A task runs the model's command exactly as the local batch does
(`model_run.ModelRun`), in a fresh interpreter on the worker (a worker cannot fork itself
safely: it runs tasks in threads, and a nanny's worker may not have children of
multiprocessing's kind), with the same time and memory budgets, so a crash or a timeout
ends only its task. Paths travel as they are: the workers read IN and write OUT on
storage they share with the command, and every result is the one a local run gives.

An interrupted batch stops its running tasks too: Dask cancels a task that has not started,
but one running in a worker's thread goes on, so each task watches a Dask `Event` of its
batch and stops its child (SIGTERM, then SIGKILL) once the command sets it.

Dask rather than Ray: `distributed` is pure Python, a few MB with its dependencies, starts a
local cluster in a second for the tests, and its scheduler address is one string; Ray's
wheels are hundreds of MB and its local cluster takes several seconds to start.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable, Iterator

from maxlower.cli.model_run import ModelJob, ModelResult, ModelRun
from maxlower.errors import InvalidModelError

CONNECT_TIMEOUT = 15  # seconds to reach the scheduler
STOP_EVERY = 0.5  # seconds between two looks of a task at its batch's stop event


def run_on_cluster(
    address: str,
    command: str,
    jobs: list[ModelJob],
    params_for: Callable[[ModelJob], dict],
    timeout: float,
    memory_bytes: int | None,
) -> Iterator[tuple[ModelJob, ModelResult]]:
    """Each model as a task on the cluster at `address`, yielded as it finishes."""
    try:
        from distributed import Client, Event, as_completed
        from distributed.comm import parse_address
    except ImportError:
        raise InvalidModelError(
            "--cluster needs Dask's `distributed`: pip install 'maxlower[cluster]'"
        ) from None
    try:
        parse_address(address)
    except ValueError as error:
        raise InvalidModelError(
            f"--cluster {address!r}: not a scheduler address ({error})"
        ) from None
    try:
        client = Client(address, timeout=CONNECT_TIMEOUT, set_as_default=False)
    except Exception as error:  # refused, timed out, or not a Dask scheduler at all
        raise InvalidModelError(
            f"--cluster {address!r}: cannot reach a Dask scheduler there "
            f"({type(error).__name__}: {str(error)[:200]})"
        ) from None
    with client:
        stop_event = f"maxlower-stop-{uuid.uuid4().hex}"
        futures = {
            client.submit(
                run_task,
                command,
                params_for(job),
                timeout,
                memory_bytes,
                os.getcwd(),
                stop_event,
                key=f"maxlower-{command}-{job.key[:16]}-{job.index}",
                pure=False,
                retries=0,
            ): job
            for job in sorted(jobs, key=lambda job: -job.size)  # the largest first
        }
        finished = 0
        try:
            for future in as_completed(list(futures), loop=client.loop):
                finished += 1
                yield futures[future], _result(future)
        finally:
            if finished < len(futures):  # interrupted: stop what runs, drop what waits
                Event(stop_event, client=client).set()
                client.cancel(list(futures))


def _result(future) -> ModelResult:
    """The task's result, or a crash where the worker itself was lost."""
    try:
        return future.result()
    except Exception as error:  # KilledWorker, a lost connection: the task's own end
        return ModelResult(
            "crashed", 4, 0.0, f"the cluster lost the task ({type(error).__name__}: {error})"
        )


def run_task(
    command: str,
    params: dict,
    timeout: float,
    memory_bytes: int | None,
    cwd: str,
    stop_event: str,
) -> ModelResult | None:
    """On a worker: the model's command in a fresh interpreter, within its budgets, in
    the command's working directory (relative paths mean what they meant there), until
    it ends or the batch's `stop_event` is set (then None: nobody waits for it)."""
    from distributed import Event

    stop = Event(stop_event)
    output = params.get("output_path")
    run = ModelRun(command, params, timeout, memory_bytes, fork=False, cwd=cwd, output=output)
    looked = time.monotonic()
    while (result := run.poll()) is None:
        time.sleep(0.02)
        if time.monotonic() - looked >= STOP_EVERY:
            looked = time.monotonic()
            if stop.is_set():
                run.stop()
                return None
    return result
