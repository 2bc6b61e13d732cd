"""Batch runs: `maxlower convert` and `lower` given several models, a directory or a glob
(issue 30). Each model runs the very command it would run alone, in a process of its own:

    find_models     the inputs: files, directories (searched for *.onnx), globs
    plan            each model's output, --report page and resume key; clashes refused
    ModelRun        one model in a child process, with a time and a memory budget
    run_local       --jobs N children at a time; a crash or a timeout ends only its model
    (cluster.py)    the same ModelRun on a Dask cluster, one task per model
    finish          the lines, the summary, --json lines, the index page, the exit code

A child is forked from the command's own process, so the imports and caches it starts with
are paid for once per batch, not once per model (a fresh `python -m maxlower` takes a
second or more before it reads a byte). The scheduler forks from one thread only. Where
there is no fork (Windows) a child is a fresh interpreter, as on a cluster.

The record of what was done (`.maxlower-batch.jsonl` in OUT) is appended as each model
finishes, so that `--resume` after an interruption or a crash skips what is done. A
model's key is a hash of its bytes, the command, its options and maxlower's version.
"""

from __future__ import annotations

import collections
import contextlib

try:
    import fcntl
except ImportError:  # Windows: no advisory locks; one batch per OUT is then on the user
    fcntl = None  # type: ignore[assignment]
import glob
import hashlib
import html
import json
import os
import pathlib
import stat
import sys
import time
import urllib.parse
from collections.abc import Callable, Iterable, Iterator

import click
import onnx

from maxlower import __version__
from maxlower.cli.main import (
    EXIT_DIFFERENT,
    EXIT_INCONCLUSIVE,
    EXIT_INTERNAL,
    EXIT_INVALID,
    EXIT_NO_EXACT_FORM,
    EXIT_OK,
    READ_INPUTS,
)
from maxlower.cli.model_run import EXIT_BUDGET, ModelJob, ModelResult, ModelRun
from maxlower.errors import InvalidModelError
from maxlower.external import external_protos, location
from maxlower.files import Outputs, same_file, vet_input
from maxlower.ui import Progress, echo

MANIFEST = ".maxlower-batch.jsonl"
# A batch exits with the code of its worst model, worst first; 0 if every model passed.
SEVERITY = (
    EXIT_INTERNAL,
    EXIT_BUDGET,
    EXIT_DIFFERENT,
    EXIT_INCONCLUSIVE,
    EXIT_NO_EXACT_FORM,
    EXIT_INVALID,
)
# `check`'s 1 is not a difference but --strict's "lower would change something": least.
CHECK_SEVERITY = (EXIT_INTERNAL, EXIT_BUDGET, EXIT_NO_EXACT_FORM, EXIT_INVALID, EXIT_DIFFERENT)
CHECK_STATUSES = {EXIT_DIFFERENT: "would change"}
# Statuses that a rerun with the same options would repeat: --resume skips them.
FINAL_STATUSES = {"ok", "different", "invalid", "no exact form", "inconclusive"}
# Options that belong to the batch, not to each model's run.
BATCH_OPTIONS = ("jobs", "resume", "cluster", "model_timeout", "model_memory")
PER_MODEL_PATHS = ("model_paths", "output_path", "json_path", "report_path")

BATCH_EXIT_CODES_HELP = """\b
With several models (a batch), the exit code is that of the worst model, in
this order: 4, 6 (a model ran past --model-timeout or --model-memory), 1, 5,
3, 2; 0 when every model passed."""


def batch_options(function=None, *, resumable: bool = True):
    """--jobs, --resume (for a command that writes models), --cluster, --model-timeout
    and --model-memory."""
    if function is None:
        return lambda f: batch_options(f, resumable=resumable)
    options = [
        click.option(
            "--jobs",
            "-j",
            type=click.IntRange(min=1),
            default=None,
            metavar="N",
            help="Models converted at once, each in a process of its own (default: the "
            "number of cores). Several IN, a directory or a glob make a batch.",
        ),
        click.option(
            "--resume",
            is_flag=True,
            help="Batch: skip each model that OUT's record says was done with the same "
            "bytes, command and options (a crash, a timeout or an interruption is "
            "redone). Needs -o DIR.",
        ),
        click.option(
            "--cluster",
            metavar="ADDRESS",
            default=None,
            help="Batch: run each model as a task on the Dask cluster whose scheduler is "
            "ADDRESS (tcp://host:8786), needing maxlower[cluster]. The workers read and "
            "write the same paths: IN and OUT on storage they all share.",
        ),
        click.option(
            "--model-timeout",
            type=click.FloatRange(min=0, min_open=True),
            default=None,
            metavar="S",
            help="Batch: seconds one model may take (default 1800); past it, it is stopped "
            "and counted as 'timeout' (exit 6), and the others go on.",
        ),
        click.option(
            "--model-memory",
            type=click.FloatRange(min=0, min_open=True),
            default=None,
            metavar="GB",
            help="Batch: resident memory one model may use, in GB (default: 80% of the "
            "machine's memory shared among --jobs); past it, it is stopped and counted as "
            "'memory' (exit 6).",
        ),
    ]
    if not resumable:
        del options[1]
    for option in reversed(options):
        function = option(function)
    return function


def is_batch(inputs: tuple[pathlib.Path, ...], params: dict) -> bool:
    """Several inputs, a directory, a glob or a batch-only option make a batch."""
    batch_only = ("jobs", "resume", "cluster", "model_timeout", "model_memory")
    if len(inputs) != 1 or any(params.get(name) not in (None, False) for name in batch_only):
        return True
    only = inputs[0]
    return only.is_dir() or (not only.exists() and glob.has_magic(str(only)))


# --- the models and their outputs --------------------------------------------------------


def find_models(
    arguments: Iterable[pathlib.Path], skip: pathlib.Path | None
) -> list[tuple[pathlib.Path, pathlib.Path]]:
    """(model, name relative to its argument) for each *.onnx file the arguments name,
    in order, each once (a symlink and the file it names: the file); `skip` (OUT) is not
    searched where it lies inside a directory argument."""
    found: dict[pathlib.Path, tuple[pathlib.Path, pathlib.Path]] = {}
    for argument in arguments:
        for path, relative in _expand(argument, skip):
            key = path.resolve()
            if key not in found or (found[key][0].is_symlink() and not path.is_symlink()):
                found[key] = (path, relative)
    if not found:
        named = ", ".join(
            f"{str(a)!r} (is a directory)" if os.path.isdir(a) else repr(str(a)) for a in arguments
        )
        raise InvalidModelError(
            f"no .onnx file found in {named}: a batch takes the .onnx files under a directory"
        )
    return list(found.values())


def _expand(argument: pathlib.Path, skip: pathlib.Path | None):
    if argument.is_dir():
        # OUT inside the directory is not searched (its files are this batch's outputs);
        # a directory inside OUT is searched as any other
        skip_inside = skip is not None and _is_within(skip, argument) and skip.exists()
        for path in sorted(argument.rglob("*.onnx")):
            if path.is_file() and not (skip_inside and _is_within(path, skip)):
                yield path, path.relative_to(argument)
    elif argument.exists():
        yield argument, pathlib.Path(argument.name)
    elif glob.has_magic(str(argument)):
        matches = sorted(glob.glob(str(argument), recursive=True))
        models = [m for m in matches if m.endswith(".onnx") or os.path.isdir(m)]
        if not models:
            raise InvalidModelError(f"{str(argument)!r}: no .onnx file matches")
        for match in models:
            yield from _expand(pathlib.Path(match), skip)
    else:
        raise InvalidModelError(f"{str(argument)!r}: no such file or directory")


def _is_within(path: pathlib.Path, directory: pathlib.Path) -> bool:
    try:
        path.resolve().relative_to(directory.resolve())
    except ValueError:
        return False
    return True


def plan(
    command: str,
    params: dict,
    models: list[tuple[pathlib.Path, pathlib.Path]],
    output_dir: pathlib.Path | None,
    default_output: Callable[[pathlib.Path], pathlib.Path] | None,
    want_reports: bool,
) -> list[ModelJob]:
    """Each model's output (OUT/<relative name>, or its default beside it), report and
    key. Two models that would write one file (a model, its data or its page), or a model
    written over an input, are refused before any work."""
    options = _fingerprint(command, params)
    jobs: list[ModelJob] = []
    writers: dict[pathlib.Path, pathlib.Path] = {}
    inputs = {path.resolve() for path, _ in models}
    for index, (path, relative) in enumerate(models):
        name = os.fsdecode(relative)
        if default_output is None:  # a command that writes no model (check)
            jobs.append(ModelJob(index, path, name, None, None, *_key(options, path, None)))
            continue
        if params.get("in_place"):
            output = path
        elif output_dir is not None:
            output = output_dir / relative
        else:
            output = default_output(path)
        report = output.with_suffix(".report.html") if want_reports else None
        for written in (output, output.with_name(output.name + ".data"), report):
            if written is None:
                continue
            other = writers.setdefault(written.resolve(), path)
            if other is not path:
                raise InvalidModelError(
                    f"{str(other)!r} and {str(path)!r} would both write {str(written)!r}; "
                    "give them different names or convert them apart"
                )
        if output.resolve() in inputs and not params.get("in_place"):
            raise InvalidModelError(
                f"{str(path)!r} would be written to {str(output)!r}, which is an input of "
                "this batch (an earlier run's output beside its model?); choose -o DIR"
            )
        jobs.append(ModelJob(index, path, name, output, report, *_key(options, path, output)))
    return jobs


def _key(options: str, path: pathlib.Path, output: pathlib.Path | None) -> tuple[str, int]:
    """The resume key (the options, the model's bytes, its external data files' sizes
    and times, and where it is written), and the bytes the model's run reads."""
    where = os.fsencode(output.resolve()) if output is not None else b""
    digest, names_a_location = _digest_and_location(path)
    stamp, external_bytes = _external_stamp(path) if names_a_location else ("", 0)
    text = f"{options}\n{digest}\n{stamp}\n".encode()
    size = external_bytes
    with contextlib.suppress(OSError):
        size += path.stat().st_size
    return hashlib.sha256(text + where).hexdigest(), size


def _external_stamp(path: pathlib.Path) -> tuple[str, int]:
    """The size and modification time of each external data file the model names, and
    their total size."""
    try:
        model = onnx.load(os.fspath(path), load_external_data=False)
    except Exception:  # unreadable: its run says so; the bytes are in the key
        return "", 0
    stamps, total = [], 0
    for name in sorted(external_locations(model)):
        with contextlib.suppress(OSError):
            found = (path.parent / name).stat()
            stamps.append(f"{name}:{found.st_size}:{found.st_mtime_ns}")
            total += found.st_size
    return ";".join(stamps), total


def external_locations(model: onnx.ModelProto) -> set[str]:
    """The external data files of every tensor the model holds (graphs, subgraphs,
    functions' constants)."""
    return {location(tensor) for tensor in external_protos(model)}


def _fingerprint(command: str, params: dict) -> str:
    """The command and the options that decide a model's result, as one string: the
    contents of the files options name (profiles, --inputs) too."""
    kept = {
        name: value
        for name, value in sorted(params.items())
        if name not in BATCH_OPTIONS + PER_MODEL_PATHS + ("quiet", "timings", "debug")
    }
    files = [kept.get("inputs"), *[n for n in kept.get("profile_names") or () if os.path.isfile(n)]]
    contents = [_digest(pathlib.Path(f)) for f in files if f is not None and os.path.isfile(f)]
    return json.dumps([__version__, command, kept, contents], default=str, sort_keys=True)


def _digest(path: pathlib.Path) -> str:
    return _digest_and_location(path)[0]


def _digest_and_location(path: pathlib.Path) -> tuple[str, bool]:
    """The file's SHA-256, and whether its bytes hold b"location" anywhere: a tensor in
    external data names its file under that key, so a model without those bytes has
    none, and planning a batch need not parse it (a tenth of a second for a large one)."""
    digest, found, tail = hashlib.sha256(), False, b""
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
            found = found or b"location" in tail + block
            tail = block[-7:]  # a key split across two blocks
    return digest.hexdigest(), found


def default_memory_budget(jobs: int) -> int | None:
    """80% of the machine's memory shared among the jobs (None where it is not known)."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None
    return int(total * 0.8 / jobs)


# --- the local scheduler -----------------------------------------------------------------


def run_local(
    command: str,
    jobs: list[ModelJob],
    params_for: Callable[[ModelJob], dict],
    workers: int,
    timeout: float,
    memory_bytes: int | None,
) -> Iterator[tuple[ModelJob, ModelResult]]:
    """Run the models, `workers` at a time, yielding each as it finishes. An interrupt
    stops every child before it propagates."""
    # the largest models first: a large one started last would run alone at the end
    pending = collections.deque(sorted(jobs, key=lambda job: -job.size))
    running: dict[ModelRun, ModelJob] = {}
    try:
        while pending or running:
            while pending and len(running) < workers:
                job = pending.popleft()
                run = ModelRun(
                    command, params_for(job), timeout, memory_bytes, fork=True, output=job.output
                )
                running[run] = job
            finished = [(run, result) for run in running if (result := run.poll()) is not None]
            for run, result in finished:
                yield running.pop(run), result
            if not finished:
                time.sleep(0.02)
    finally:
        for run in running:
            run.stop()


# --- what the batch shows and writes -----------------------------------------------------


class BatchView:
    """The line of each model as it finishes, a bar on a terminal, and the summary."""

    def __init__(self, total: int, quiet: bool) -> None:
        self.total, self.quiet, self.done = total, quiet, 0
        self.results: list[tuple[ModelJob, ModelResult]] = []
        self.started = time.monotonic()
        self._bar = None
        if not quiet and Progress().enabled:  # a bar on a terminal only
            self._bar = click.progressbar(length=total, label="models", file=sys.stderr)
            self._bar.__enter__()

    def show(self, job: ModelJob, result: ModelResult) -> None:
        self.done += 1
        self.results.append((job, result))
        width = len(str(self.total))
        status = "done before" if result.resumed else result.status
        count = f"[{self.done:>{width}}/{self.total}]"
        line = f"{count} {status:<14} {result.seconds:7.2f} s  {printable(job.name)}"
        if result.error:
            line += f": {printable(result.error)}"
        failed = result.exit_code != EXIT_OK
        if self.quiet and not failed:
            return
        if self._bar is not None:
            click.echo("\r\x1b[K", nl=False, err=True)
        echo(line, err=self.quiet)
        if self._bar is not None:
            self._bar.update(1)
            self._bar.render_progress()

    def close(self) -> None:
        if self._bar is not None:  # (its exit shows the cursor again)
            self._bar.__exit__(None, None, None)

    def summary(self, where: str) -> str:
        seconds = time.monotonic() - self.started
        counts = collections.Counter(r.status for _, r in self.results)
        models = f"{len(self.results)} model{'s' if len(self.results) != 1 else ''}"
        lines = [f"batch: {models} in {seconds:.1f} s ({where})"]
        width = max((len(s) for s in counts), default=0)
        for status, count in sorted(counts.items(), key=lambda item: -item[1]):
            lines.append(f"  {status:<{width}}  {count}")
        resumed = sum(r.resumed for _, r in self.results)
        if resumed:
            lines.append(f"  ({resumed} of them done before, skipped by --resume)")
        reasons = collections.Counter(
            _reason(r.error) for _, r in self.results if r.exit_code != EXIT_OK and r.error
        )
        if reasons:
            lines.append("refused or failed, by reason:")
            lines += [
                f"  {count:>3}  {printable(reason)}" for reason, count in reasons.most_common()
            ]
        ran = sorted((r.seconds, j.name) for j, r in self.results if not r.resumed)
        if ran:
            median, (longest, slowest) = ran[len(ran) // 2][0], ran[-1]
            lines.append(
                f"time per model: median {median:.2f} s, longest {longest:.2f} s "
                f"({printable(slowest)})"
            )
        return "\n".join(lines)

    def exit_code(self, command: str) -> int:
        """The worst model's code: an interruption (128 + the signal) first, then in the
        documented order; a code outside both counts as an internal error."""
        codes = {r.exit_code for _, r in self.results}
        interrupted = sorted(code for code in codes if code >= 128)
        if interrupted:
            return interrupted[0]
        order = CHECK_SEVERITY if command == "check" else SEVERITY
        known = next((code for code in order if code in codes), None)
        if known is not None:
            return known
        return EXIT_INTERNAL if codes - {EXIT_OK} else EXIT_OK


def printable(text: str) -> str:
    """`text` with every control character (a terminal's escape sequences, a newline that
    would forge a line) shown as an escape, and undecodable bytes as \\x.. escapes."""
    return "".join(
        ch if ch.isprintable() else ch.encode("unicode_escape", "backslashreplace").decode()
        for ch in text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    )


def _reason(error: str) -> str:
    """An error line without its names, so that one reason groups many models."""
    import re

    text = re.sub(r"'[^']*'", "'…'", error)
    return text if len(text) <= 160 else text[:159] + "…"


class Record:
    """OUT/.maxlower-batch.jsonl: one line per model as it finishes, appended (so an
    interrupted batch keeps what it did); --resume reads the last line of each key. It
    is opened without following a symlink or waiting on a FIFO, must be a regular file,
    and is locked: two batches into one OUT at once are refused."""

    def __init__(self, output_dir: pathlib.Path | None, resume: bool, dry_run: bool) -> None:
        self.path = None if output_dir is None or dry_run else output_dir / MANIFEST
        self.done: dict[str, dict] = {}
        self._handle = None
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._handle = self._open(self.path)
        if resume:
            self._handle.seek(0)
            for line in self._handle.read().splitlines():
                entry = _entry(line)
                if entry is not None:
                    self.done[entry["key"]] = entry
        if self._handle.tell() and not self._ends_with_newline():
            self._handle.write("\n")  # a line cut short by a crash stays on its own

    @staticmethod
    def _open(path: pathlib.Path):
        flags = os.O_RDWR | os.O_CREAT | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0)
        try:
            fd = os.open(path, flags | getattr(os, "O_NONBLOCK", 0), 0o644)
        except OSError as error:
            raise InvalidModelError(
                f"{str(path)!r}: cannot open the batch's record ({error.strerror}); it must "
                "be a regular file (not a symlink)"
            ) from None
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise InvalidModelError(f"{str(path)!r}: the batch's record is not a regular file")
        try:
            if fcntl is not None:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise InvalidModelError(
                f"another batch is writing into {str(path.parent)!r}; wait for it, or choose "
                "another -o DIR"
            ) from None
        return os.fdopen(fd, "a+", encoding="utf-8", errors="surrogateescape")

    def _ends_with_newline(self) -> bool:
        self._handle.seek(self._handle.tell() - 1)
        last = self._handle.read(1)
        return last == "\n"

    def done_before(self, job: ModelJob) -> ModelResult | None:
        entry = self.done.get(job.key)
        if entry is None or entry.get("status") not in FINAL_STATUSES:
            return None
        for path, size in (entry.get("written") or {}).items():
            if _size(path) != size:
                return None  # written then, since removed or changed: redo it
        if job.report is not None and not job.report.exists():
            return None
        return ModelResult(
            entry["status"],
            entry["exit_code"],
            entry.get("seconds", 0.0),
            entry.get("error"),
            document=entry.get("result"),
            resumed=True,
        )

    def add(self, job: ModelJob, result: ModelResult) -> None:
        if self._handle is None or result.resumed:
            return
        line = result.record(job)
        if result.exit_code == 0 and job.output is not None:
            data = job.output.with_name(job.output.name + ".data")
            line["written"] = {str(p): _size(p) for p in (job.output, data) if p.exists()}
        self._handle.write(json.dumps(line) + "\n")
        self._handle.flush()

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()


def _entry(line: str) -> dict | None:
    """One record line, or None where it is not one (a line cut short, edited by hand)."""
    try:
        entry = json.loads(line)
    except ValueError:
        return None
    valid = (
        isinstance(entry, dict)
        and isinstance(entry.get("key"), str)
        and isinstance(entry.get("status"), str)
        and isinstance(entry.get("exit_code"), int)
        and isinstance(entry.get("written") or {}, dict)
    )
    return entry if valid else None


def _size(path) -> int | None:
    try:
        return os.stat(path).st_size
    except (OSError, ValueError):
        return None


def index_page(results: list[tuple[ModelJob, ModelResult]], page: pathlib.Path, title: str) -> str:
    """The index page: one row per model, linking its report; every text escaped."""
    rows = []
    for job, result in sorted(results, key=lambda item: item[0].index):
        link = html.escape(job.name)
        if job.report is not None and job.report.exists():
            href = os.path.relpath(job.report, page.parent)
            link = f'<a href="{html.escape(urllib.parse.quote(href))}">{link}</a>'
        cells = [
            link,
            html.escape(result.status + (" (done before)" if result.resumed else "")),
            str(result.exit_code),
            f"{result.seconds:.2f}",
            html.escape(result.error or ""),
        ]
        css = "ok" if result.exit_code == EXIT_OK else "failed"
        rows.append(f'<tr class="{css}">' + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    return _PAGE.format(title=html.escape(title), rows="\n".join(rows))


_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<title>{title}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2em; }}
table {{ border-collapse: collapse; }}
td, th {{ border: 1px solid #ccc; padding: 0.3em 0.6em; text-align: left; vertical-align: top; }}
tr.failed td {{ background: #fdecea; }}
</style></head>
<body><h1>{title}</h1>
<table><thead><tr><th>model</th><th>status</th><th>exit code</th><th>seconds</th>
<th>error</th></tr></thead>
<tbody>
{rows}
</tbody></table></body></html>
"""


# --- the batch, end to end ---------------------------------------------------------------


def run_batch(
    command: str,
    params: dict,
    default_output: Callable[[pathlib.Path], pathlib.Path] | None,
) -> None:
    """Run `command` on every model the inputs name, and exit with the batch's code.
    `default_output` names a model's output beside it; None for a command that writes
    no model (check)."""
    output_dir = params.get("output_path")
    if params.get("resume") and output_dir is None:
        raise InvalidModelError("--resume needs -o DIR: the record of what was done is kept there")
    if output_dir is not None and output_dir.exists() and not output_dir.is_dir():
        raise InvalidModelError(f"-o {str(output_dir)!r}: with several models, OUT is a directory")
    if params.get("in_place") and output_dir is not None:
        raise InvalidModelError("--in-place writes over each IN; it takes no -o DIR")
    if params.get("cluster") is not None and not params["cluster"].strip():
        raise InvalidModelError("--cluster: give the scheduler's address (tcp://host:8786)")
    index_path, json_path = params.get("report_path"), params.get("json_path")
    models = find_models(params["model_paths"], output_dir)
    with Outputs(_reads(params, models)) as outputs:  # vets each (no FIFO, no device)
        jobs = plan(command, params, models, output_dir, default_output, index_path is not None)
        for label, path in (("--json", json_path), ("--report", index_path)):
            if path is not None:
                outputs.declare(path, label)
                _refuse_clash(label, path, jobs, output_dir)
        workers = params.get("jobs") or os.cpu_count() or 1
        memory = params.get("model_memory")
        memory_bytes = int(memory * 1e9) if memory else default_memory_budget(workers)
        record = Record(output_dir, bool(params.get("resume")), bool(params.get("dry_run")))
        view = BatchView(len(jobs), bool(params.get("quiet")))
        try:
            for job, result in _results(command, params, jobs, record, workers, memory_bytes):
                if command == "check":
                    result.status = CHECK_STATUSES.get(result.exit_code, result.status)
                record.add(job, result)
                view.show(job, result)
        finally:
            record.close()
            view.close()
        cluster = params.get("cluster")
        where = f"on the cluster at {cluster}" if cluster else f"{workers} at a time"
        if not params.get("quiet"):
            echo(view.summary(where))
        if json_path is not None:
            ordered = sorted(view.results, key=lambda item: item[0].index)
            lines = "".join(json.dumps(r.record(j)) + "\n" for j, r in ordered)
            outputs.stage_text(json_path, lines)
        if index_path is not None:
            title = f"maxlower {command}: {len(jobs)} models"
            outputs.stage_text(index_path, index_page(view.results, index_path, title))
        outputs.commit()
    sys.exit(view.exit_code(command))


def _reads(params: dict, models: list[tuple[pathlib.Path, pathlib.Path]]) -> dict:
    """{what it is: path} of every file the batch's models read: each model, its external
    data, the --inputs archive and the profile files (what --json and --report may not
    replace)."""
    reads: dict[str, object] = {}
    for path, relative in models:
        vet_input(path)  # before it is read: a FIFO or a device would hang the batch
        name = os.fsdecode(relative)
        reads[f"the input {name!r}"] = path
        with contextlib.suppress(Exception):  # unreadable: its own run says so
            model = onnx.load(os.fspath(path), load_external_data=False)
            for data in external_locations(model):
                reads[f"the external data {data!r} of {name!r}"] = path.parent / data
    reads[READ_INPUTS] = params.get("inputs")
    for name in params.get("profile_names") or ():
        if os.path.isfile(name):
            reads[f"the --profile file {name!r}"] = pathlib.Path(name)
    return {label: path for label, path in reads.items() if path is not None}


def _refuse_clash(label: str, path: pathlib.Path, jobs: list[ModelJob], output_dir) -> None:
    """--json and --report INDEX may be no file a model's run writes, nor OUT's record."""
    written = [output_dir / MANIFEST] if output_dir is not None else []
    for job in jobs:
        if job.output is not None:
            written += [job.output, job.output.with_name(job.output.name + ".data")]
        written += [job.report] if job.report is not None else []
    for other in written:
        if same_file(path, other):
            raise InvalidModelError(
                f"{label} {str(path)!r} is a file the batch writes for a model (or its "
                "record); choose another path"
            )


def _results(command, params, jobs, record, workers, memory_bytes):
    """Each model's result: done before (--resume), or run here or on the cluster."""
    to_run = []
    for job in jobs:
        before = record.done_before(job)
        if before is not None:
            yield job, before
        else:
            to_run.append(job)
    if not to_run:
        return
    if params.get("output_path") is not None and not params.get("dry_run"):
        params["output_path"].mkdir(parents=True, exist_ok=True)
    timeout = params.get("model_timeout") or 1800.0

    def params_for(job: ModelJob) -> dict:
        return model_params(params, job)

    if params.get("cluster"):
        from maxlower.cli.cluster import run_on_cluster

        yield from run_on_cluster(
            params["cluster"], command, to_run, params_for, timeout, memory_bytes
        )
    else:
        yield from run_local(command, to_run, params_for, workers, timeout, memory_bytes)


def model_params(params: dict, job: ModelJob) -> dict:
    """The command's parameters for one model: its input, output and report, and no
    batch options (so that it runs as a single model)."""
    single = {**params, "model_paths": (job.input,)}
    for name in BATCH_OPTIONS:  # (so that it is no batch: see is_batch)
        if name in params:
            single[name] = False if name == "resume" else None
    if job.output is not None:
        single["output_path"] = None if params.get("in_place") else job.output
        single["report_path"] = job.report
        if not params.get("dry_run"):
            job.output.parent.mkdir(parents=True, exist_ok=True)
        elif job.report is not None:  # a dry run writes the pages it was asked for
            job.report.parent.mkdir(parents=True, exist_ok=True)
    return single
