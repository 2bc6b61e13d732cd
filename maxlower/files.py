"""Every file maxlower opens by a name it was given: the path arguments are vetted before
anything is opened, every read is bounded, and every file written goes through one writer.

    vet_input(path, kind)              a regular file (also through a symlink), else refused
    read_input(path, kind, limit)      its bytes, at most `limit` of them
    open_input(path, kind, limit)      the same, as an open binary file (for zip archives)
    Outputs(reads)                     one command's path arguments: the files it reads
                                       vetted (vet_input), and the files it writes each
                                       declared (and vetted) first, written under a
                                       temporary name, renamed into place together
    atomic_write_text(path, text)      one text file through Outputs
    raising_on_termination()           SIGTERM and SIGHUP raise, as SIGINT does
    deferred_interrupts()              SIGINT, SIGTERM and SIGHUP wait until a block ends

**Reading.** A FIFO blocks its reader until something writes to it, and a device such as
/dev/zero never ends; reading either hangs the command or fills memory. Every path argument
(IN, verify's two models, --profile, --inputs) must be a regular file, checked with stat
before it is opened, and again with fstat on what was opened (opened O_NONBLOCK, so that a
FIFO swapped in between cannot block the open). Reads are bounded (docs/bad-inputs.md,
"Reading"):

    MODEL_FILE_LIMIT     2 GiB - 1: protobuf parses no larger message (weights beyond that
                         belong in external data, which is never read whole)
    PROFILE_FILE_LIMIT   1 MiB of TOML
    INPUTS_FILE_LIMIT    1 GiB for the --inputs archive, whose arrays are checked against
                         the same limit (maxlower.verify.inputs.load_npz)

**Writing.** The rules for every file written (model, `OUT.data`, --json report):

- its directory exists, and its name fits the file system (NAME_MAX, 255 bytes on Linux);
  temporary names are kept short whatever the name;
- it is not an existing directory, FIFO, device or socket (as root, `-o /dev/null` would
  otherwise replace the system's /dev/null with a regular file);
- it is not a symbolic link out of its directory (CVE-2025-51480 was onnx writing
  external data through `../`): a rename replaces the link, and a link that leads elsewhere
  says the user expects its target written;
- it is no file the command reads (IN, IN's external data, --profile, --inputs, verify's
  models), unless the command replaces that file on purpose (--in-place), and no other file
  the command writes (--json and -o, --json and OUT.data);
- it is written to a temporary file in its directory; only when every file of the command
  is written are they renamed into place, together, under an advisory lock (`flock`) on
  each directory, with SIGINT, SIGTERM and SIGHUP held until the renames are done. Two
  processes writing the same OUT therefore leave one's model with one's data, never a mix;
  a failure, or a signal before the renames, removes every temporary file.
"""

from __future__ import annotations

import contextlib
import errno
import os
import pathlib
import signal
import stat as stat_module
import tempfile
import threading
from collections.abc import Iterator, Mapping

from maxlower.errors import Interrupted, InvalidModelError

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no advisory locks
    fcntl = None

MODEL_FILE_LIMIT = (1 << 31) - 1
PROFILE_FILE_LIMIT = 1 << 20
INPUTS_FILE_LIMIT = 1 << 30
# Characters of the final name kept in a temporary name (bytes of UTF-8).
_TEMP_NAME_KEPT = 40
_HELD_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
)
_KINDS = (
    (stat_module.S_ISDIR, "a directory"),
    (stat_module.S_ISFIFO, "a FIFO"),
    (stat_module.S_ISCHR, "a character device"),
    (stat_module.S_ISBLK, "a block device"),
    (stat_module.S_ISSOCK, "a socket"),
)


def _kind_of(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


# --- reading ------------------------------------------------------------------------------


def vet_input(
    path: str | os.PathLike,
    kind: str = "file",
    *,
    limit: int | None = None,
    error: type[InvalidModelError] = InvalidModelError,
) -> os.stat_result:
    """The stat of `path` if it is a regular file (also through symlinks) of at most
    `limit` bytes; else `error` (exit code 2) saying what it is. Opens nothing."""
    try:
        found = os.stat(path)
    except FileNotFoundError:
        raise error(f"{os.fspath(path)}: no such {kind}") from None
    except OSError as failure:
        raise error(f"{os.fspath(path)}: cannot read ({failure.strerror or failure})") from None
    return _vet_stat(path, found, kind, limit, error)


def _vet_stat(path, found: os.stat_result, kind: str, limit, error) -> os.stat_result:
    if stat_module.S_ISDIR(found.st_mode):
        raise error(f"{os.fspath(path)}: is a directory, not a {kind}")
    if not stat_module.S_ISREG(found.st_mode):
        raise error(
            f"{os.fspath(path)}: is {_kind_of(found.st_mode)}, not a regular file; maxlower "
            "reads only regular files (reading this one could block or never end)"
        )
    if limit is not None and found.st_size > limit:
        raise error(
            f"{os.fspath(path)}: is {found.st_size} bytes, over the {_size_text(limit)} "
            f"maxlower reads from a {kind}"
        )
    return found


@contextlib.contextmanager
def open_input(
    path: str | os.PathLike,
    kind: str = "file",
    limit: int | None = None,
    *,
    error: type[InvalidModelError] = InvalidModelError,
) -> Iterator:
    """`path` opened for reading in binary, once `vet_input` has passed it; what was opened
    is checked again (a FIFO swapped in after the stat cannot block: O_NONBLOCK)."""
    vet_input(path, kind, limit=limit, error=error)
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as failure:
        raise error(f"{os.fspath(path)}: cannot read ({failure.strerror or failure})") from None
    try:
        _vet_stat(path, os.fstat(fd), kind, limit, error)
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        handle = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    with handle:
        yield handle


def read_input(
    path: str | os.PathLike,
    kind: str = "file",
    limit: int = MODEL_FILE_LIMIT,
    *,
    error: type[InvalidModelError] = InvalidModelError,
) -> bytes:
    """The bytes of the regular file `path`, refused if it holds more than `limit`."""
    with open_input(path, kind, limit, error=error) as handle:
        try:
            # As much as fstat said, then on in small steps (a file that grows meanwhile):
            # read(limit) would allocate the whole limit at once.
            data = bytearray(handle.read(os.fstat(handle.fileno()).st_size + 1))
            while len(data) <= limit:
                chunk = handle.read(min(1 << 20, limit + 1 - len(data)))
                if not chunk:
                    break
                data += chunk
        except OSError as failure:
            raise error(f"{os.fspath(path)}: cannot read ({failure.strerror or failure})") from None
    if len(data) > limit:
        raise error(f"{os.fspath(path)}: is over the {_size_text(limit)} maxlower reads")
    return bytes(data)


def _size_text(nbytes: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if nbytes + 1 >= 1 << shift:
            return f"{(nbytes + 1) >> shift} {unit}"
    return f"{nbytes} bytes"


def same_file(a: str | os.PathLike, b: str | os.PathLike) -> bool:
    """Whether two paths name the same file (through symlinks and hard links too); for a
    path that does not exist yet, whether both resolve to the same name."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return pathlib.Path(a).resolve() == pathlib.Path(b).resolve()


# --- writing ------------------------------------------------------------------------------


class Outputs:
    """The files one command writes, under the rules of the module docstring.

        with Outputs({"IN": in_path, "--profile": profile_path}) as outputs:
            outputs.declare(out, "OUT", may_replace={"IN"})   # refused here if it breaks a rule
            outputs.read(data_file, "the input's external data")  # a read found later
            temp = outputs.stage(out)                          # a temporary file to fill
            ...
            outputs.commit()                                   # every rename, together

    Leaving the block without `commit` (an error, a signal) removes every staged file.
    """

    def __init__(self, reads: Mapping[str, str | os.PathLike | None] | None = None) -> None:
        """`reads`: {what it is: path} of the path arguments the command reads, each vetted
        here (`vet_input`), before anything is opened or any work is done."""
        self._reads: list[tuple[str, str]] = []
        self._writes: dict[str, tuple[str, frozenset[str]]] = {}
        self._staged: list[tuple[str, str]] = []  # (temporary, final), in rename order
        for label, path in (reads or {}).items():
            if path is not None:
                vet_input(path)
                self.read(path, label)

    def __enter__(self) -> Outputs:
        return self

    def __exit__(self, *exc) -> None:
        self.discard()

    def read(self, path: str | os.PathLike, label: str) -> None:
        """A file the command reads; no declared output may be it."""
        self._reads.append((label, os.fspath(path)))
        for written, (written_label, allowed) in self._writes.items():
            self._check_against_read(written, written_label, allowed, label, os.fspath(path))

    def declare(
        self,
        path: str | os.PathLike,
        label: str,
        *,
        may_replace: frozenset[str] | set[str] = frozenset(),
        optional: bool = False,
    ) -> pathlib.Path:
        """Vet `path` as an output (see the module docstring); `may_replace` names the
        reads it may be (--in-place). An `optional` output (OUT.data, written only when
        the model has external data) has its name's length checked only if it is staged."""
        path = pathlib.Path(path)
        check_output_path(path, check_length=not optional)
        for other, (other_label, _) in self._writes.items():
            if same_file(path, other):
                raise InvalidModelError(
                    f"{label} {str(path)!r} is also {other_label}: one file cannot be both; "
                    "choose another path"
                )
        allowed = frozenset(may_replace)
        for read_label, read_path in self._reads:
            self._check_against_read(os.fspath(path), label, allowed, read_label, read_path)
        self._writes[os.fspath(path)] = (label, allowed)
        return path

    @staticmethod
    def _check_against_read(written, label, allowed, read_label, read_path) -> None:
        if read_label in allowed or not _same_existing_file(written, read_path):
            return
        raise InvalidModelError(
            f"{label} {written!r}: writing it would replace {read_path!r}, which holds "
            f"{read_label}; choose another output name"
        )

    def stage(self, path: str | os.PathLike) -> str:
        """A new, empty temporary file in `path`'s directory (mode as open() would give),
        renamed to `path` by `commit`."""
        path = pathlib.Path(path)
        check_output_path(path)
        try:
            fd, temp = tempfile.mkstemp(prefix=_temp_prefix(path.name), dir=path.parent)
        except OSError as failure:
            raise _write_error(path, failure) from None
        os.close(fd)
        self._staged.append((temp, os.fspath(path)))
        try:
            os.chmod(temp, _default_mode(path))
        except OSError as failure:
            raise _write_error(path, failure) from None
        return temp

    def stage_text(self, path: str | os.PathLike, text: str) -> None:
        temp = self.stage(path)
        try:
            with open(temp, "w", encoding="utf-8") as handle:
                handle.write(text)
        except OSError as failure:
            raise _write_error(pathlib.Path(path), failure) from None

    def commit(self) -> None:
        """Rename every staged file into place, in the order staged, holding a lock on each
        directory and the interrupting signals until all are done."""
        if not self._staged:
            return
        directories = sorted({os.path.dirname(os.path.abspath(f)) for _, f in self._staged})
        with _locked(directories), deferred_interrupts():
            while self._staged:
                temp, final = self._staged[0]
                try:
                    os.replace(temp, final)
                except OSError as failure:
                    raise _write_error(pathlib.Path(final), failure) from None
                self._staged.pop(0)

    def discard(self) -> None:
        """Remove every staged file that was not renamed."""
        while self._staged:
            temp, _ = self._staged.pop()
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temp)


def check_output_path(path: str | os.PathLike, *, check_length: bool = True) -> None:
    """Refuse (InvalidModelError, exit code 2) a path that no file may be written to: its
    directory missing, its name too long, an existing directory, FIFO, device or socket, or
    a symbolic link out of its directory."""
    path = pathlib.Path(path)
    directory = path.parent
    if not directory.is_dir():
        raise InvalidModelError(f"{path}: the output directory {str(directory)!r} does not exist")
    if not _name_fits(path):
        if not check_length:
            return  # no such file can exist; refused if it is ever staged
        _check_name_length(path)
    try:
        link = path.is_symlink()
        if link:
            real = os.path.realpath(path)
            if not _inside(real, os.path.realpath(directory)):
                raise InvalidModelError(
                    f"{path}: {str(path)!r} is a symbolic link to {real!r}, outside the "
                    "output's directory; maxlower writes only inside it: give the real path, "
                    "or remove the link"
                )
        found = os.stat(path)
    except FileNotFoundError:
        return
    except OSError as failure:
        raise _write_error(path, failure) from None
    if stat_module.S_ISDIR(found.st_mode):
        raise InvalidModelError(f"{path}: is a directory; give a file name for the output")
    if not stat_module.S_ISREG(found.st_mode):
        kind = _kind_of(found.st_mode)
        raise InvalidModelError(
            f"{path}: is {kind}, not a regular file; maxlower writes only regular files "
            f"(writing would replace {kind} with one): choose another output path"
        )


def _name_max(directory: pathlib.Path) -> int:
    try:
        return os.pathconf(directory, "PC_NAME_MAX")
    except (OSError, ValueError, AttributeError):
        return 255


def _name_fits(path: pathlib.Path) -> bool:
    return len(os.fsencode(path.name)) <= _name_max(path.parent)


def _check_name_length(path: pathlib.Path) -> None:
    most = _name_max(path.parent)
    length = len(os.fsencode(path.name))
    if length > most:
        raise InvalidModelError(
            f"{str(path)[:80]}...: the file name is {length} bytes, longer than the {most} "
            "its file system allows; choose a shorter output name"
        )


def _same_existing_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist (yet): nothing to replace
        return False


def _inside(path: str, directory: str) -> bool:
    return os.path.commonpath([path, directory]) == directory and path != directory


def _temp_prefix(name: str) -> str:
    """`.<name>.` with the name cut to a few bytes of UTF-8: a temporary name must fit the
    file system's limit whatever the final name's length (mkstemp adds 8 characters, and
    onnx_ir's writer makes a directory named after the data file's temporary name)."""
    kept = name.encode("utf-8", "surrogateescape")[:_TEMP_NAME_KEPT]
    return f".{kept.decode('utf-8', 'ignore')}."


def _default_mode(path: pathlib.Path) -> int:
    """An existing file's mode, else what a plain open() would give (mkstemp makes 0600)."""
    try:
        return path.stat().st_mode & 0o777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def _write_error(path: pathlib.Path, failure: OSError) -> InvalidModelError:
    reason = failure.strerror or str(failure)
    what = f"{reason}: {failure.filename}" if failure.filename else reason
    return InvalidModelError(f"{path}: cannot write ({what})")


@contextlib.contextmanager
def _locked(directories: list[str]) -> Iterator[None]:
    """An exclusive advisory lock (flock) on each directory, in sorted order (so two
    commands never wait for each other in a cycle), held while a command renames its files
    into place. A directory, not a lock file beside OUT: it needs no file that would be left
    behind, and it cannot be renamed or removed while files are renamed into it. A file
    system without flock, or a directory that cannot be opened, is written unlocked."""
    fds = []
    try:
        for directory in directories:
            if fcntl is None:
                break
            # A directory one may write to but not read (mode 0300) cannot be opened.
            try:
                fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
            except OSError:
                continue
            fds.append(fd)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
            except OSError as failure:
                if failure.errno not in (errno.ENOLCK, errno.EOPNOTSUPP, errno.EBADF, errno.EINVAL):
                    raise
        yield
    finally:
        for fd in fds:
            os.close(fd)  # closing releases the lock


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    """Write `text` to `path` through Outputs: a temporary file in the same directory and a
    rename, so `path` is the old file or the new one, never half of either."""
    with Outputs() as outputs:
        outputs.declare(path, "the report")
        outputs.stage_text(path, text)
        outputs.commit()


# --- signals ------------------------------------------------------------------------------


def _raise_interrupted(signum, frame) -> None:
    raise Interrupted(signum)


@contextlib.contextmanager
def raising_on_termination() -> Iterator[None]:
    """While the block runs, SIGTERM and SIGHUP raise `Interrupted` where they would have
    ended the process at once (their default action): the command cleans up as it does on
    SIGINT. Only in the main thread; a handler someone else installed is kept."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    installed = {}
    for signum in _HELD_SIGNALS:
        if signum != signal.SIGINT and signal.getsignal(signum) == signal.SIG_DFL:
            installed[signum] = signal.signal(signum, _raise_interrupted)
    try:
        yield
    finally:
        for signum, handler in installed.items():
            signal.signal(signum, handler)


@contextlib.contextmanager
def deferred_interrupts() -> Iterator[None]:
    """Hold SIGINT, SIGTERM and SIGHUP back until the block ends (a few renames that must
    all happen or none), then act on the first. Only in the main thread; elsewhere a no-op."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[tuple[int, object]] = []
    handlers = {}
    for signum in _HELD_SIGNALS:
        handlers[signum] = signal.signal(signum, lambda s, f: received.append((s, f)))
    try:
        yield
    finally:
        for signum, handler in handlers.items():
            signal.signal(signum, handler)
        for signum, frame in received[:1]:
            handler = handlers[signum]
            if callable(handler):
                handler(signum, frame)
            elif handler == signal.SIG_DFL:
                signal.raise_signal(signum)


__all__ = [
    "INPUTS_FILE_LIMIT",
    "MODEL_FILE_LIMIT",
    "PROFILE_FILE_LIMIT",
    "Outputs",
    "atomic_write_text",
    "check_output_path",
    "deferred_interrupts",
    "open_input",
    "raising_on_termination",
    "read_input",
    "same_file",
    "vet_input",
]
