"""Bad path arguments: what tests/test_bad_paths.py's rows and tests/test_fuzz_paths.py's
hypothesis strategy put in place of a good file.

    Layout(tmp)             a good invocation's files: IN (a model with external data),
                            a profile file, an --inputs archive, OUT and --json in their
                            own directory
    layout.spoil(slot, bad) one path argument replaced by a bad one
    layout.argv(command)    the command line (convert, lower, inspect, verify), with
                            -o, --json and --report where the command takes them
    bad_paths()             a strategy: (command, slot, bad) for every path argument of
                            every command

The bad things: files that are not regular (a FIFO, /dev/zero, /dev/urandom, /dev/null, a
directory, a character device, symbolic links to these) in every slot, and collisions in
the output slots (-o or --json naming a file the command reads or writes otherwise, OUT
whose OUT.data is IN). Output slots never name a device of the system: as root, a
regression there would replace /dev/null; a device node made here (mknod) stands in.
"""

from __future__ import annotations

import os
import pathlib
import stat

import numpy as np
import onnx
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

COMMANDS = ("convert", "lower", "inspect", "verify")
# Which commands take each path argument (with --inputs, convert and lower also --verify).
SLOTS = {
    "IN": COMMANDS,
    "CANDIDATE": ("verify",),
    "--profile": ("convert", "lower"),
    "--inputs": ("convert", "lower", "verify"),
    "-o": ("convert", "lower"),
    "--json": ("convert", "lower", "verify"),
    "--report": ("convert", "lower", "verify"),
}
WRITTEN = ("-o", "--json", "--report")
NOT_REGULAR = (
    "fifo",
    "dev-zero",
    "dev-urandom",
    "dev-null",
    "directory",
    "char-device",
    "symlink-to-fifo",
    "symlink-to-dev-zero",
    "symlink-to-directory",
)
# What an output slot may collide with: another argument's file, or IN as OUT.data.
COLLISIONS = {
    "-o": ("same-as-IN", "same-as---profile", "same-as---inputs", "data-is-IN"),
    "--json": (
        "same-as-IN",
        "same-as-CANDIDATE",
        "same-as--o",
        "same-as-OUT.data",
        "same-as---profile",
        "same-as---inputs",
        "same-as-external-data",
    ),
    "--report": (
        "same-as-IN",
        "same-as-CANDIDATE",
        "same-as--o",
        "same-as---json",
        "same-as---profile",
        "same-as---inputs",
        "same-as-external-data",
    ),
}
PROFILE_TEXT = 'description = "accepts everything"\n'


def model(n: int = 96) -> onnx.ModelProto:
    """Max of x and a weight of n floats, then ReduceMax: its weight goes to a data file."""
    graph = helper.make_graph(
        [
            helper.make_node("Max", ["x", "w"], ["m"], name="max_w"),
            helper.make_node("ReduceMax", ["m"], ["y"], name="reduce", keepdims=0),
        ],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [])],
        [numpy_helper.from_array(np.arange(n, dtype=np.float32), "w")],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)


class Layout:
    """The files of one good invocation, under `tmp`: in/ holds what is read, out/ what is
    written; `paths` maps each slot to its path."""

    def __init__(self, tmp: pathlib.Path) -> None:
        self.tmp = tmp
        self.inside, self.out = tmp / "in", tmp / "out"
        self.inside.mkdir(parents=True, exist_ok=True)
        self.out.mkdir(exist_ok=True)
        source = self.inside / "model.onnx"
        onnx.save(model(), source, save_as_external_data=True, location="w.bin", size_threshold=0)
        (self.inside / "profile.toml").write_text(PROFILE_TEXT)
        np.savez(self.inside / "x.npz", x=np.ones(96, np.float32))
        self.paths: dict[str, pathlib.Path] = {
            "IN": source,
            "CANDIDATE": source,
            "--profile": self.inside / "profile.toml",
            "--inputs": self.inside / "x.npz",
            "-o": self.out / "out.onnx",
            "--json": self.out / "report.json",
            "--report": self.out / "report.html",
        }
        self.uses: set[str] = set()  # optional slots the invocation names

    def spoil(self, slot: str, bad: str) -> pathlib.Path:
        """Put the bad thing `bad` in `slot`; returns the bad path."""
        self.uses.add(slot)
        if bad in NOT_REGULAR:
            path = self._not_regular(bad, self.out if slot in WRITTEN else self.inside)
        else:
            path = self._collision(slot, bad)
        self.paths[slot] = path
        return path

    def _not_regular(self, bad: str, directory: pathlib.Path) -> pathlib.Path:
        written = directory == self.out
        if bad.startswith("symlink-to-"):
            target = self._not_regular(bad.removeprefix("symlink-to-"), directory)
            link = directory / f"link-{target.name}"
            link.symlink_to(target)
            return link
        if bad == "fifo":
            path = directory / "pipe"
            os.mkfifo(path)
            return path
        if bad == "directory":
            path = directory / "folder"
            path.mkdir()
            return path
        device = {"dev-zero": (1, 5), "dev-urandom": (1, 9), "dev-null": (1, 3)}.get(bad, (1, 3))
        if written or bad == "char-device":
            return _device_node(directory / f"node-{bad}", device)
        return pathlib.Path(f"/dev/{bad.removeprefix('dev-')}")

    def _collision(self, slot: str, bad: str) -> pathlib.Path:
        if bad == "data-is-IN":  # -o x.onnx where IN is x.onnx.data
            renamed = self.inside / "x.onnx.data"
            self.paths["IN"].rename(renamed)
            self.paths["IN"] = self.paths["CANDIDATE"] = renamed
            return self.inside / "x.onnx"
        if bad == "same-as-OUT.data":
            return self.paths["-o"].with_name(self.paths["-o"].name + ".data")
        if bad == "same-as-external-data":
            return self.inside / "w.bin"
        other = bad.removeprefix("same-as-")
        self.uses.add(other)
        return self.paths[other]

    def argv(self, command: str) -> list[str]:
        p = {slot: str(path) for slot, path in self.paths.items()}
        verifying = "--inputs" in self.uses
        if command == "inspect":
            return ["inspect", p["IN"], "--opset", "12"]
        if command == "verify":
            argv = ["verify", p["IN"], p["CANDIDATE"], "--trials", "1", "--json", p["--json"]]
            argv += ["--report", p["--report"]]
            return argv + (["--inputs", p["--inputs"]] if verifying else [])
        if command == "convert":
            argv = ["convert", p["IN"], "--opset", "12"]
        else:
            argv = ["lower", p["IN"], "--profile", p["--profile"]]
        if command == "convert" and "--profile" in self.uses:
            argv += ["--profile", p["--profile"]]
        argv += ["-o", p["-o"], "--json", p["--json"], "--report", p["--report"]]
        if verifying:
            argv += ["--verify", "--trials", "1", "--inputs", p["--inputs"]]
        return argv

    def snapshot(self) -> dict[str, object]:
        return snapshot(self.tmp)


def snapshot(directory: pathlib.Path) -> dict[str, object]:
    """Every entry under `directory`: bytes of regular files, link targets, the kind of
    others (a leftover temporary directory shows up too)."""
    found = {}
    for path in sorted(directory.rglob("*")):
        key = str(path.relative_to(directory))
        mode = path.lstat().st_mode
        if stat.S_ISLNK(mode):
            found[key] = ("link", os.readlink(path))
        elif stat.S_ISREG(mode):
            found[key] = path.read_bytes()
        else:
            found[key] = ("special", stat.S_IFMT(mode))
    return found


def _device_node(path: pathlib.Path, device: tuple[int, int]) -> pathlib.Path:
    """A character device node like /dev/null (root only); else a FIFO, also no regular
    file, and as safe to leave in an output slot."""
    try:
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(*device))
    except PermissionError:
        os.mkfifo(path)
    return path


def applicable(command: str, slot: str) -> bool:
    return command in SLOTS[slot]


@st.composite
def bad_paths(draw) -> tuple[str, str, str]:
    """(command, slot, bad): one path argument of one command replaced by a bad one."""
    slot = draw(st.sampled_from(sorted(SLOTS)))
    command = draw(st.sampled_from(SLOTS[slot]))
    choices = NOT_REGULAR + tuple(c for c in COLLISIONS.get(slot, ()) if _collides(command, c))
    return command, slot, draw(st.sampled_from(choices))


def _collides(command: str, collision: str) -> bool:
    """Whether the command reads or writes the file the collision names (a file it does
    not touch is a fine output)."""
    other = {"same-as-OUT.data": "-o", "data-is-IN": "IN", "same-as-external-data": "IN"}.get(
        collision, collision.removeprefix("same-as-")
    )
    return applicable(command, other)
