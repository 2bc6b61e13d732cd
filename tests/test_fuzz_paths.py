"""Fuzzing the path arguments: tests/strategies_paths.py draws a command and one of its
path arguments (IN, verify's candidate, --profile, --inputs, -o, --json) and puts there a
file that is not regular (a FIFO, /dev/zero, /dev/urandom, /dev/null, a directory, a
character device, a symbolic link to one of these) or, for an output, a file the command
also reads or writes. Every case must be refused with exit code 2 and one line, within the
child's timeout and address-space limit, with every file under the case's directory (and
the system's devices) as they were.

The slow tier runs EXAMPLES cases, the default tier a small share (tests/budget.py), the same
each time; a longer run:

    python -m pytest -m slow --hypothesis-profile=long tests/test_fuzz_paths.py
"""

from __future__ import annotations

import os
import pathlib
import stat
import subprocess
import sys
import tempfile

from hypothesis import given, note

from tests import budget
from tests.strategies_paths import Layout, bad_paths

EXAMPLES = 30
CHILD = (
    "import resource; resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))\n"
    "from maxlower.cli import main\nmain()"
)
SYSTEM_DEVICES = ("/dev/null", "/dev/zero", "/dev/urandom")


def _devices() -> dict[str, tuple[int, int]]:
    found = {}
    for path in SYSTEM_DEVICES:
        mode = os.lstat(path)
        found[path] = (stat.S_IFMT(mode.st_mode), mode.st_rdev)
    return found


@budget.fuzz(
    EXAMPLES,
    derandomize=True,
)
@given(case=bad_paths())
def test_bad_path_arguments_are_refused(case: tuple[str, str, str]):
    command, slot, bad = case
    devices = _devices()
    with tempfile.TemporaryDirectory() as tmp:
        layout = Layout(pathlib.Path(tmp))
        layout.spoil(slot, bad)
        argv = layout.argv(command)
        note(f"maxlower {' '.join(argv)}")
        before = layout.snapshot()
        result = subprocess.run(
            [sys.executable, "-c", CHILD, *argv],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode == 2, result.stderr
        assert result.stderr.startswith("maxlower: error: "), result.stderr
        assert result.stderr.count("\n") == 1, result.stderr
        assert layout.snapshot() == before
    assert _devices() == devices
