"""What a command shows a person: `echo` (standard output that outlives a closed pipe) and
`Progress` (stage lines and bars on a terminal's stderr, durations for --timings)."""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Callable, Iterator

import click

from maxlower.errors import InvalidModelError


def echo(message: str = "", *, err: bool = False) -> None:
    """click.echo that outlives a reader that stopped reading (`maxlower convert ... |
    head`): the rest of the output goes nowhere and the command goes on, so the model
    is still written and the exit code still says how it went. Standard output that
    cannot be written (a full device: `> /dev/full`) is a bad invocation: the command
    stops with InvalidModelError (exit code 2) and writes nothing; stderr that cannot be
    written is given up on."""
    try:
        click.echo(message, err=err)
    except BrokenPipeError:
        _silence(sys.stderr if err else sys.stdout)
    except OSError as error:
        _silence(sys.stderr if err else sys.stdout)
        if not err:
            raise InvalidModelError(
                f"cannot write to standard output ({error.strerror or error})"
            ) from None


def _silence(stream) -> None:
    """Point `stream`'s file descriptor at /dev/null: what is left in its buffer goes
    nowhere, also at the flush when the process exits."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)


class Progress:
    """Stage lines and progress bars on stderr, only when stderr is a terminal.

        progress = Progress()
        with progress.stage("checking model.onnx"):
            ...
        with progress.bar(total_bytes, "writing model.onnx.data") as advance:
            advance(nbytes)

    Durations are recorded either way (`timings`), for `--timings`.
    """

    def __init__(self, enabled: bool | None = None) -> None:
        self.enabled = _stderr_is_terminal() if enabled is None else enabled
        self.timings: list[tuple[str, float]] = []

    @contextlib.contextmanager
    def stage(self, label: str, *, prints: bool = False) -> Iterator[None]:
        """`label…` on its line, finished with the duration; a stage that `prints` lines of
        its own (a verification verdict) gets a line to itself instead."""
        if self.enabled:
            click.echo(f"{label}…", err=True, nl=prints)
        started = time.perf_counter()
        try:
            yield
        finally:
            seconds = time.perf_counter() - started
            self.timings.append((label, seconds))
            if self.enabled and not prints:
                click.echo(f" {seconds:.1f} s", err=True)

    @contextlib.contextmanager
    def bar(self, total: int, label: str) -> Iterator[Callable[[int], None]]:
        """A byte-count progress bar; yields `advance(nbytes)`."""
        started = time.perf_counter()
        try:
            if not self.enabled:
                yield lambda nbytes: None
                return
            with click.progressbar(
                length=total,
                label=label,
                file=sys.stderr,
                show_percent=True,
                show_eta=True,
                item_show_func=None,
            ) as bar:
                yield bar.update
        finally:
            self.timings.append((label, time.perf_counter() - started))

    def timings_text(self) -> str:
        width = max((len(label) for label, _ in self.timings), default=0)
        return "\n".join(f"{label:<{width}}  {seconds:8.3f} s" for label, seconds in self.timings)


def _stderr_is_terminal() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


QUIET = Progress(enabled=False)


__all__ = ["QUIET", "Progress", "echo"]
