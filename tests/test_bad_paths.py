"""Bad paths: the rows of the 'Bad inputs' table (docs/bad-inputs.md) about the files maxlower
reads and writes (maxlower/files.py). Each row puts one bad thing in one path argument and
runs every command that takes that argument (convert, lower, inspect, verify): the refusal is
one `maxlower: error: ...` line, exit code 2, nothing blocks or reads without bound, and no
file changes (no output, no temporary file, the bad thing itself as it was).
`test_readme_table_lists_every_path_row` keeps that table and ROWS the same.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import pathlib
import re
import signal
import subprocess
import sys
import textwrap
import time
import zipfile

import numpy as np
import onnx
import onnx_ir as ir
import pytest
from click.testing import CliRunner

from maxlower.cli import cli
from tests import doc_pages, tiers
from tests.strategies_paths import SLOTS, Layout, applicable, model, snapshot
from tests.test_interrupt import CHILD, weighted_model  # a child whose writer pauses

ROOT = pathlib.Path(__file__).resolve().parents[1]
ADDRESS_LIMIT = "import resource; resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))"


@dataclasses.dataclass(frozen=True)
class Row:
    id: str
    slot: str
    bad: str
    fragments: tuple[str, ...]


NOT_A_FILE = ("not a regular file", "maxlower reads only regular files")
NOT_WRITABLE = ("not a regular file", "maxlower writes only regular files")
ROWS = [
    Row("fifo-in", "IN", "fifo", ("is a FIFO", *NOT_A_FILE)),
    Row("fifo-candidate", "CANDIDATE", "fifo", ("is a FIFO", *NOT_A_FILE)),
    Row("fifo-profile", "--profile", "fifo", ("is a FIFO", *NOT_A_FILE)),
    Row("fifo-inputs", "--inputs", "fifo", ("is a FIFO", *NOT_A_FILE)),
    Row("symlink-to-fifo-in", "IN", "symlink-to-fifo", ("is a FIFO", *NOT_A_FILE)),
    Row("dev-zero-in", "IN", "dev-zero", ("/dev/zero", "is a character device", *NOT_A_FILE)),
    Row("dev-urandom-profile", "--profile", "dev-urandom", ("is a character device",)),
    Row("dev-zero-inputs", "--inputs", "dev-zero", ("is a character device",)),
    Row("directory-profile", "--profile", "directory", ("is a directory",)),
    Row("directory-inputs", "--inputs", "directory", ("is a directory",)),
    Row("fifo-out", "-o", "fifo", ("is a FIFO", *NOT_WRITABLE)),
    Row("char-device-out", "-o", "char-device", NOT_WRITABLE),
    Row("fifo-json", "--json", "fifo", ("is a FIFO", *NOT_WRITABLE)),
    Row("char-device-json", "--json", "char-device", NOT_WRITABLE),
    Row("directory-json", "--json", "directory", ("is a directory",)),
    Row("json-is-in", "--json", "same-as-IN", ("--json", "writing it would replace")),
    Row("json-is-candidate", "--json", "same-as-CANDIDATE", ("writing it would replace",)),
    Row("json-is-out", "--json", "same-as--o", ("--json", "is also OUT")),
    Row("json-is-out-data", "--json", "same-as-OUT.data", ("--json", "is also OUT.data")),
    Row("json-is-external-data", "--json", "same-as-external-data", ("w.bin", "external data")),
    Row("json-is-profile", "--json", "same-as---profile", ("the --profile file",)),
    Row("json-is-inputs", "--json", "same-as---inputs", ("the --inputs archive",)),
    Row("out-is-profile", "-o", "same-as---profile", ("OUT", "the --profile file")),
    Row("out-is-inputs", "-o", "same-as---inputs", ("OUT", "the --inputs archive")),
    Row("out-data-is-in", "-o", "data-is-IN", ("OUT.data", "the input model (IN)")),
]
CASES = [
    pytest.param(row, command, id=f"{row.id}-{command}")
    for row in ROWS
    for command in SLOTS[row.slot]
    # verify reads no profile and writes no OUT: those files are not its business
    if not (
        command == "verify" and row.bad in ("same-as---profile", "same-as--o", "same-as-OUT.data")
    )
    if not (command != "verify" and row.bad == "same-as-CANDIDATE")
]
# The default tier runs each row through one of its commands (the k-th row of a slot through
# the slot's k-th command, counting round), so that every row and every command is in it; the
# slow tier runs the other pairs.
DEFAULT_CASES = {
    (row.id, commands[k % len(commands)])
    for slot in SLOTS
    for k, row in enumerate(r for r in ROWS if r.slot == slot)
    for commands in [[c.values[1] for c in CASES if c.values[0] is row]]
}
CASES = tiers.split(CASES, keep=lambda case: (case[0].id, case[1]) in DEFAULT_CASES)


# --- running ------------------------------------------------------------------------------


@contextlib.contextmanager
def watchdog(seconds: float):
    """Fail instead of hanging: SIGALRM interrupts a blocked open() or read()."""

    def expire(signum, frame):
        raise TimeoutError(f"the command was still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def run(argv: list, *, child: bool = False, stdout=subprocess.PIPE) -> tuple[int, str]:
    """(exit code, stderr) of `maxlower ARGV`: in this process under a watchdog, or (for
    system devices, which a regression would read without end) in a child limited to
    2 GB of address space and 60 s."""
    argv = [str(a) for a in argv]
    if child:
        result = subprocess.run(
            [
                sys.executable,
                "-c",
                f"{ADDRESS_LIMIT}\nfrom maxlower.cli import main\nmain()",
                *argv,
            ],
            stdout=stdout,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
        )
        return result.returncode, result.stderr
    with watchdog(30):
        result = CliRunner().invoke(cli, argv, catch_exceptions=False)
    return result.exit_code, result.stderr


def assert_one_line_error(stderr: str, *fragments: str) -> None:
    assert stderr.startswith("maxlower: error: "), stderr
    assert stderr.count("\n") == 1, stderr
    assert "Traceback" not in stderr
    for fragment in fragments:
        assert fragment in stderr, (fragment, stderr)


def assert_refused_untouched(layout, command: str, *fragments: str, **run_options) -> None:
    """`maxlower COMMAND` on `layout` exits 2 with one line naming each of `fragments`, and
    nothing is written, left or replaced."""
    before = layout.snapshot()
    code, stderr = run(layout.argv(command), **run_options)
    assert code == 2, stderr
    assert_one_line_error(stderr, *fragments)
    assert layout.snapshot() == before


@pytest.mark.parametrize("row, command", CASES)
def test_path_row_is_refused_with_one_line(tmp_path: pathlib.Path, row: Row, command: str):
    assert applicable(command, row.slot)
    layout = Layout(tmp_path)
    layout.spoil(row.slot, row.bad)
    assert_refused_untouched(layout, command, *row.fragments, child=row.bad.startswith("dev-"))


# --- outputs: what is left behind, names, data files --------------------------------------


@pytest.mark.parametrize("command", ["convert", "lower"])
def test_no_json_report_is_left_when_a_later_check_refuses(tmp_path: pathlib.Path, command):
    """--json is declared first but written last, with the model: a refusal found after
    the conversion (here OUT.data would be the file IN reads its weights from) leaves
    nothing."""
    layout = Layout(tmp_path)
    onnx.save(model(), layout.inside / "model.onnx", save_as_external_data=True,
              location="other.onnx.data", size_threshold=0)  # fmt: skip
    layout.paths["-o"] = layout.inside / "other.onnx"
    assert_refused_untouched(layout, command, "other.onnx.data", "the input's external data")


def test_no_json_report_is_left_when_no_exact_form_exists(tmp_path: pathlib.Path):
    bf16 = onnx.parser.parse_model(
        '<ir_version: 8, opset_import: ["" : 13]>'
        "g (bfloat16[3] a, bfloat16[3] b) => (bfloat16[3] y) { y = Max (a, b) }"
    )
    onnx.save(bf16, tmp_path / "m.onnx")
    before = snapshot(tmp_path)
    code, stderr = run(
        ["convert", tmp_path / "m.onnx", "--opset", "12", "--json", tmp_path / "r.json"]
    )
    assert code == 3, stderr
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("command", ["convert", "lower"])
def test_no_empty_data_file_beside_a_model_without_external_data(tmp_path, command):
    """An input whose external tensors are all small (they go into the protobuf) gives an
    output with no data file: none is written, not even an empty one."""
    layout = Layout(tmp_path)
    onnx.save(model(n=8), layout.paths["IN"], save_as_external_data=True, location="w.bin",
              size_threshold=0)  # fmt: skip
    code, stderr = run(layout.argv(command))
    assert code == 0, stderr
    assert sorted(os.listdir(layout.out)) == ["out.onnx", "report.html", "report.json"]
    onnx.checker.check_model(onnx.load(layout.out / "out.onnx"), full_check=True)


@pytest.mark.parametrize("command", ["convert", "lower"])
def test_long_output_names_get_short_temporary_names(tmp_path: pathlib.Path, command: str):
    """OUT's name may use the whole 255 bytes: temporary names are short. A name the file
    system cannot take is refused before any work."""
    layout = Layout(tmp_path)
    onnx.save(model(n=8), layout.paths["IN"])  # no external data: no OUT.data
    layout.paths["-o"] = layout.out / ("o" * 250 + ".onnx")
    layout.paths["--json"] = layout.out / ("j" * 250 + ".json")
    layout.paths["--report"] = layout.out / ("r" * 250 + ".html")
    code, stderr = run(layout.argv(command))
    assert code == 0, stderr
    assert sorted(p.name for p in layout.out.iterdir()) == sorted(
        [layout.paths[slot].name for slot in ("-o", "--json", "--report")]
    )
    for slot in ("-o", "--json", "--report"):
        spoiled = Layout(tmp_path / f"too-long{slot}")
        spoiled.paths[slot] = spoiled.out / ("x" * 256)
        fragments = ("the file name is 256 bytes", "longer than the 255")
        assert_refused_untouched(spoiled, command, *fragments)


def test_a_data_file_name_over_the_limit_is_refused(tmp_path: pathlib.Path):
    """OUT of 252 bytes is fine, but its weights would go to OUT.data, 257 bytes."""
    layout = Layout(tmp_path)
    layout.paths["-o"] = layout.out / ("o" * 247 + ".onnx")
    assert_refused_untouched(layout, "convert", "the file name is 257 bytes")


@pytest.mark.parametrize(
    "slot, size, fragment",
    [
        ("IN", 1 << 31, "over the 2 GiB maxlower reads from a file"),
        ("--profile", (1 << 20) + 1, "over the 1 MiB maxlower reads from a profile file"),
        ("--inputs", (1 << 30) + 1, "over the 1 GiB maxlower reads from a file"),
    ],
)
def test_read_limits_are_enforced(tmp_path: pathlib.Path, slot: str, size: int, fragment: str):
    """A file over its limit is refused on its size, before a byte is read (the files are
    sparse: they take no disk)."""
    layout = Layout(tmp_path)
    path = layout.inside / f"big-{slot.strip('-')}"
    with open(path, "wb") as handle:
        handle.truncate(size)
    layout.paths[slot] = path
    layout.uses.add(slot)
    command = "lower" if slot == "--profile" else "convert"
    code, stderr = run(layout.argv(command))
    assert code == 2, stderr
    assert_one_line_error(stderr, f"is {size} bytes", fragment)
    assert not any(layout.out.iterdir())


# --- --inputs archives --------------------------------------------------------------------


def _npz_claiming(path: pathlib.Path, shape: tuple[int, ...]) -> None:
    """An .npz whose array 'x' claims `shape` in its header but holds 16 bytes."""
    header = {"descr": "<f4", "fortran_order": False, "shape": shape}
    with zipfile.ZipFile(path, "w") as archive, archive.open("x.npy", "w") as member:
        np.lib.format.write_array_header_1_0(member, header)
        member.write(np.zeros(4, np.float32).tobytes())


def _npz_claiming_decompressed(path: pathlib.Path, nbytes: int) -> None:
    """A small .npz whose zip directory says its member decompresses to `nbytes`."""
    np.savez(path, x=np.ones(96, np.float32))
    data = bytearray(path.read_bytes())
    entry = data.rindex(b"PK\x01\x02")  # the central directory entry of x.npy
    data[entry + 24 : entry + 28] = nbytes.to_bytes(4, "little")
    path.write_bytes(bytes(data))


NPZ = {
    "npz-claims-2^40-elements": (
        lambda path: _npz_claiming(path, (1 << 40,)),
        ("array 'x' claims shape [1099511627776]", "but its member holds 16"),
    ),
    "npz-claims-4-gib-decompressed": (
        lambda path: _npz_claiming_decompressed(path, (1 << 32) - 1),
        ("more than the 1 GiB",),
    ),
    "npz-member-not-an-array": (
        lambda path: zipfile.ZipFile(path, "w").writestr("notes.txt", "hello"),
        ("'notes.txt' is not an .npy array",),
    ),
}


@pytest.mark.parametrize("command", SLOTS["--inputs"])
@pytest.mark.parametrize("case", sorted(NPZ))
def test_npz_claims_are_checked_before_reading(tmp_path: pathlib.Path, case: str, command: str):
    """A header's claimed size (2^40 float32, 4 TiB) and the zip directory's claimed
    decompressed size are checked before anything is allocated (a regression would fail
    at once: 4 TiB is more than any allocation can get)."""
    layout = Layout(tmp_path)
    make, fragments = NPZ[case]
    make(layout.paths["--inputs"])
    layout.uses.add("--inputs")
    assert_refused_untouched(layout, command, "--inputs", *fragments)


# --- standard output ----------------------------------------------------------------------


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")
# (the default tier: a command that writes a summary and one that writes a verdict)
@pytest.mark.parametrize(
    "command",
    tiers.split(["convert", "lower", "inspect", "verify"], keep=("convert", "verify").__contains__),
)
def test_stdout_on_a_full_device(tmp_path: pathlib.Path, command: str):
    layout = Layout(tmp_path)
    with open("/dev/full", "w") as full:  # the summary comes before the model: none written
        fragments = ("cannot write to standard output", "No space left on device")
        assert_refused_untouched(layout, command, *fragments, child=True, stdout=full)


# --- signals and concurrent writers ------------------------------------------------------


@pytest.mark.parametrize(
    "command, stage, signum",
    # the default tier: both signals and both stages; the slow tier: the other two
    tiers.split(
        [
            ("convert", "data", signal.SIGTERM),
            ("convert", "data", signal.SIGHUP),
            ("convert", "model", signal.SIGTERM),
            ("lower", "data", signal.SIGHUP),
        ],
        keep=lambda case: case[0] == "convert" and case[1:] != ("data", signal.SIGTERM),
    ),
    ids=lambda v: getattr(v, "name", v),
)
def test_sigterm_and_sighup_mid_write_leave_nothing(tmp_path, command, stage, signum):
    """Like SIGINT (tests/test_interrupt.py): the temporary files, onnx_ir's temporary
    directory among them, are removed, and the exit code is 128 + the signal."""
    source_dir, out_dir = tmp_path / "in", tmp_path / "out"
    source_dir.mkdir()
    out_dir.mkdir()
    source = weighted_model(source_dir, 1.0)
    weighted_model(out_dir, 50.0)  # an earlier output, which must survive
    before = snapshot(tmp_path)
    marker = tmp_path.parent / f"{tmp_path.name}.marker"
    extra = ["--opset", "12"] if command == "convert" else ["--profile", "primitives"]
    argv = [command, str(source), *extra, "-o", str(out_dir / "model.onnx")]
    process = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(marker), stage, *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _wait_for(marker, process)
    assert any(p.name.startswith(".") for p in out_dir.iterdir()), "the write had not started"
    process.send_signal(signum)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 128 + signum, stderr
    assert_one_line_error(stderr, f"interrupted by {signum.name}")
    assert snapshot(tmp_path) == before


def _wait_for(marker: pathlib.Path, process: subprocess.Popen, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while not marker.exists():
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            stdout, stderr = process.communicate()
            pytest.fail(f"the child never reached its pause:\n{stdout}\n{stderr}")
        time.sleep(0.01)


CONCURRENT = textwrap.dedent(
    """
    import fcntl, os, pathlib, sys, time
    from maxlower.cli import main

    marker, role, argv = pathlib.Path(sys.argv[1]), sys.argv[2], sys.argv[3:]
    if role == "first":  # pauses between its two renames until the test removes the marker
        real_replace = os.replace
        def replace(source, target):
            real_replace(source, target)
            if str(target).endswith(".onnx.data"):
                marker.write_text("data renamed")
                while marker.exists():
                    time.sleep(0.01)
        os.replace = replace
    else:  # says when it asks for the lock
        real_flock = fcntl.flock
        def flock(fd, operation):
            marker.write_text("asking")
            return real_flock(fd, operation)
        fcntl.flock = flock
    main(argv)
    """
)


@pytest.mark.slow  # many writers racing in subprocesses: the default tier's 3 minutes
def test_two_writers_of_one_output_never_mix_a_pair(tmp_path: pathlib.Path):
    """A renames its data file into place and pauses before its model; B, writing the same
    OUT, must wait for A's model before renaming its own pair (else OUT would be A's model
    with B's data). A converts to 12 from weights 1.0, B to 11 from weights 50.0."""
    out = tmp_path / "out" / "model.onnx"
    out.parent.mkdir()
    processes, markers = {}, {}
    for role, opset, value in (("first", 12, 1.0), ("second", 11, 50.0)):
        source_dir = tmp_path / role
        source_dir.mkdir()
        markers[role] = tmp_path / f"{role}.marker"
        argv = ["convert", str(weighted_model(source_dir, value)), "--opset", str(opset)]
        processes[role] = subprocess.Popen(
            [sys.executable, "-c", CONCURRENT, str(markers[role]), role, *argv, "-o", str(out)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        _wait_for(markers[role], processes[role])
    time.sleep(0.5)
    assert processes["second"].poll() is None, "the second writer did not wait for the lock"
    markers["first"].unlink()  # the first renames its model, then releases the lock
    for process in processes.values():
        _, stderr = process.communicate(timeout=60)
        assert process.returncode == 0, stderr
    written = ir.load(out)
    pair = (
        written.opset_imports[""],
        float(written.graph.initializers["w0"].const_value.numpy()[0]),
    )
    assert pair == (11, 50.0)  # the second's model with the second's data
    onnx.checker.check_model(str(out), full_check=True)
    assert sorted(os.listdir(out.parent)) == ["model.onnx", "model.onnx.data"]


# --- the table of docs/bad-inputs.md ------------------------------------------------------


def test_readme_table_lists_every_path_row():
    section = doc_pages.page("bad-inputs")
    last_cells = re.findall(r"\|([^|]*)\|\s*$", section, re.M)
    listed = {name for cell in last_cells for name in re.findall(r"`([a-z0-9^-]+)`", cell)}
    names = {row.id for row in ROWS} | set(NPZ)
    assert names <= listed, names - listed
