"""The bad-input table of docs/bad-inputs.md: one test per row.

Every refused input gets one `maxlower: error: ...` line naming the problem and exit code 2
(3 where no exact conversion exists), no traceback, an untouched input directory and no
output file. Each row runs every command it applies to (convert, lower, inspect, verify).
`test_readme_table_lists_every_row` keeps that table and ROWS the same.
"""

from __future__ import annotations

import dataclasses
import math
import os
import pathlib
import re
import subprocess
import sys
from collections.abc import Callable

import numpy as np
import onnx
import onnx_ir as ir
import pytest
from click.testing import CliRunner
from onnx import TensorProto, helper, numpy_helper

import maxlower
from maxlower.cli import cli
from maxlower.errors import InvalidModelError
from maxlower.pipeline import load_model
from tests import doc_pages, tiers

ROOT = pathlib.Path(__file__).resolve().parents[1]
LATEST = onnx.defs.onnx_opset_version()
SECRET = np.arange(256, dtype=np.float32)  # a file outside the model's directory


# --- models -------------------------------------------------------------------------------


def parse(text: str, opset: int = 13) -> onnx.ModelProto:
    return onnx.parser.parse_model(f'<ir_version: 8, opset_import: ["" : {opset}]>\n{text}')


GOOD = "g (float[2, 3] x) => (float[2] y) { y = ReduceMax <axes = [1], keepdims = 0> (x) }"


def good_model() -> onnx.ModelProto:
    return parse(GOOD)


def weighted_model(n: int = 256) -> onnx.ModelProto:
    """Max of the input and a weight tensor (stored externally by the rows below)."""
    graph = helper.make_graph(
        [helper.make_node("Max", ["x", "w"], ["y"], name="max_w")],
        "weighted",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [n])],
        [numpy_helper.from_array(np.zeros(n, np.float32), "w")],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)


def external(model: onnx.ModelProto, location: str, **entries: str) -> onnx.ModelProto:
    """`model` with its initializer 'w' pointing at `location` (and extra entries)."""
    tensor = next(t for t in model.graph.initializer if t.name == "w")
    tensor.ClearField("raw_data")
    tensor.data_location = TensorProto.EXTERNAL
    fields = {"location": location, "offset": "0", "length": str(4 * math.prod(tensor.dims))}
    fields.update(entries)
    for key, value in fields.items():
        if value is not None:
            entry = tensor.external_data.add()
            entry.key, entry.value = key, value
    return model


def save(model: onnx.ModelProto, directory: pathlib.Path, name: str = "model.onnx") -> pathlib.Path:
    path = directory / name
    path.write_bytes(model.SerializeToString())
    return path


def secret_file(tmp: pathlib.Path) -> pathlib.Path:
    """A data file beside (not inside) the model's directory `tmp/model`."""
    path = tmp / "secret.bin"
    path.write_bytes(SECRET.tobytes())
    return path


def model_dir(tmp: pathlib.Path) -> pathlib.Path:
    directory = tmp / "model"
    directory.mkdir(exist_ok=True)
    return directory


# --- the rows -----------------------------------------------------------------------------

ALL = ("convert", "lower", "inspect", "verify")
REWRITING = ("convert", "lower")


@dataclasses.dataclass(frozen=True)
class Row:
    id: str
    make: Callable[[pathlib.Path], pathlib.Path]  # tmp dir -> the input path
    fragments: tuple[str, ...]  # in the error line
    code: int = 2
    commands: tuple[str, ...] = ALL


def _missing(tmp):
    return tmp / "model" / "missing.onnx"


def _directory(tmp):
    return model_dir(tmp)


def _bytes(content: bytes):
    def make(tmp):
        path = model_dir(tmp) / "model.onnx"
        path.write_bytes(content)
        return path

    return make


def _truncated(tmp):
    data = good_model().SerializeToString()
    return _bytes(data[: len(data) * 2 // 3])(tmp)


def _model(build: Callable[[], onnx.ModelProto]):
    return lambda tmp: save(build(), model_dir(tmp))


def _external(location: str, setup=None, n: int = 256, **entries):
    def make(tmp):
        directory = model_dir(tmp)
        secret_file(tmp)
        (directory / "weights.bin").write_bytes(np.ones(256, np.float32).tobytes())
        if setup is not None:
            setup(tmp, directory)
        return save(external(weighted_model(n), location, **entries), directory)

    return make


def _symlink_to_secret(tmp, directory):
    (directory / "link.bin").symlink_to(tmp / "secret.bin")


def _symlinked_subdirectory(tmp, directory):
    (directory / "sub").symlink_to(tmp, target_is_directory=True)


def _hard_link(tmp, directory):
    os.link(tmp / "secret.bin", directory / "linked.bin")


def _fifo(tmp, directory):
    os.mkfifo(directory / "pipe.bin")


def _no_default_domain_but_a_function_has():
    relu = helper.make_function(
        "com.acme",
        "F",
        ["x"],
        ["y"],
        [helper.make_node("Relu", ["x"], ["y"])],
        [helper.make_opsetid("", 13)],
    )
    graph = helper.make_graph(
        [helper.make_node("F", ["x"], ["y"], domain="com.acme")],
        "custom",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
    )
    return helper.make_model(
        graph, opset_imports=[helper.make_opsetid("com.acme", 1)], functions=[relu]
    )


def _graph_model(nodes: str):
    return lambda: parse(f"g (float[3] x) => (float[3] y) {{ {nodes} }}")


def _not_utf8(tmp):
    """A node name that is not UTF-8 (protobuf parses it, as bytes)."""
    data = weighted_model().SerializeToString()
    assert data.count(b"max_w") == 1
    return _bytes(data.replace(b"max_w", b"\xffax_w"))(tmp)


def _huge_initializer():
    model = weighted_model(4)
    tensor = model.graph.initializer[0]
    del tensor.dims[:]
    tensor.dims.append(10**12)  # 4 TB declared, 16 bytes held
    return model


def _overflowing_dims():
    model = weighted_model(4)
    del model.graph.initializer[0].dims[:]
    model.graph.initializer[0].dims.extend([2**62, 4])
    return model


def _huge_constant():
    constant = TensorProto(name="c", data_type=TensorProto.FLOAT, dims=[10**10], raw_data=b"1234")
    graph = helper.make_graph(
        [
            helper.make_node("Constant", [], ["c"], value=constant),
            helper.make_node("ReduceMax", ["c"], ["y"], keepdims=0),
        ],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


ROWS = [
    Row("missing-path", _missing, ("missing.onnx", "no such file")),
    Row("directory", _directory, ("is a directory",)),
    Row("empty-file", _bytes(b""), ("not an ONNX model",)),
    Row("truncated-protobuf", _truncated, ("not an ONNX model",)),
    Row(
        "garbled-protobuf",
        _bytes(b"\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01garbage"),
        ("not an ONNX model",),
    ),
    Row("text-file", _bytes(b"ir_version: 8\nthis is not a model\n"), ("not an ONNX model",)),
    Row(
        "tensor-not-model",
        _bytes(numpy_helper.from_array(np.arange(6, dtype=np.float32)).SerializeToString()),
        ("not an ONNX model",),
    ),
    Row("graph-not-model", _bytes(good_model().graph.SerializeToString()), ("not an ONNX model",)),
    Row("not-utf8", _not_utf8, ("NodeProto.name", "is not valid UTF-8")),
    Row(
        "no-default-opset-but-functions",
        _model(_no_default_domain_but_a_function_has),
        ("no default-domain", "functions do"),
        commands=REWRITING,
    ),
    Row(
        "dangling-input",
        _model(_graph_model("y = Max (x, nothing)")),
        ("input 'nothing'", "made by no node"),
    ),
    Row(
        "cycle",
        _model(_graph_model("a = Max (x, b)\n b = Max (a, x)\n y = Identity (b)")),
        ("cycle",),
    ),
    Row(
        "value-made-twice",
        _model(_graph_model("y = Max (x, x)\n y = Max (x, x)")),
        ("'y' is made twice",),
    ),
    Row(
        "unknown-default-op",
        _model(_graph_model("y = Maximum (x, x)")),
        ("No Op registered for Maximum",),
    ),
    Row("missing-external-file", _external("gone.bin"), ("'gone.bin'", "is missing")),
    Row(
        "external-dotdot",
        _external("../secret.bin"),
        ("'../secret.bin'", "leads out of the model's directory", "security rule"),
    ),
    Row(
        "external-sub-dotdot",
        _external("sub/../../secret.bin"),
        ("'sub/../../secret.bin'", "leads out of the model's directory"),
    ),
    Row(
        "external-absolute",
        lambda tmp: _external(str(tmp / "secret.bin"))(tmp),
        ("is an absolute path", "security rule"),
    ),
    Row(
        "external-symlink-out",
        _external("link.bin", _symlink_to_secret),
        ("'link.bin'", "symbolic link", "outside the model's directory", "security rule"),
    ),
    Row(
        "external-symlinked-dir",
        _external("sub/secret.bin", _symlinked_subdirectory),
        ("'sub/secret.bin'", "symbolic link", "outside the model's directory"),
    ),
    Row("external-hard-link", _external("linked.bin", _hard_link), ("2 hard links",)),
    Row("external-not-a-file", _external("pipe.bin", _fifo), ("is not a regular file",)),
    Row(
        "external-unknown-key",
        _external("weights.bin", __class__="x"),
        ("external-data key '__class__'", "does not define"),
    ),
    Row(
        "external-key-twice",
        lambda tmp: _twice(tmp),
        ("gives the external-data key 'location' twice",),
    ),
    Row("external-bad-offset", _external("weights.bin", offset="-4"), ("offset '-4'",)),
    Row(
        "external-short-file",
        _external("weights.bin", n=512, length=None),
        ("shorter than the model says",),
    ),
    Row(
        "huge-initializer",
        _model(_huge_initializer),
        ("'w'", "[1000000000000]", "4000000000000 bytes, but holds 16"),
    ),
    Row("overflowing-dims", _model(_overflowing_dims), ("more than an int64 counts",)),
    Row("huge-constant", _model(_huge_constant), ("'c'", "40000000000 bytes, but holds 4")),
]


def _twice(tmp):
    """Two location entries: a checker could read the first, a loader the last."""
    path = _external("weights.bin")(tmp)
    model = onnx.load(path, load_external_data=False)
    entry = model.graph.initializer[0].external_data.add()
    entry.key, entry.value = "location", "../secret.bin"
    return save(model, path.parent)


# --- running ------------------------------------------------------------------------------


def invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def command_line(command: str, path: pathlib.Path, out: pathlib.Path) -> list:
    return {
        "convert": ["convert", path, "--opset", "12", "-o", out],
        "lower": ["lower", path, "--profile", "primitives", "-o", out],
        "inspect": ["inspect", path, "--opset", "11"],
        "verify": ["verify", path, path, "--trials", "1", "--json", out],
    }[command]


def snapshot(directory: pathlib.Path) -> dict[str, object]:
    """Every file under `directory`: bytes, or where a symlink points (a FIFO by name)."""
    files = {}
    for path in sorted(directory.rglob("*")):
        key = str(path.relative_to(directory))
        if path.is_symlink():
            files[key] = ("link", os.readlink(path))
        elif path.is_file():
            files[key] = path.read_bytes()
        else:
            files[key] = ("dir" if path.is_dir() else "special",)
    return files


def assert_one_line_error(result, *fragments: str) -> None:
    stderr = result.stderr
    assert stderr.startswith("maxlower: error: "), stderr
    assert stderr.count("\n") == 1, stderr
    assert "Traceback" not in stderr
    for fragment in fragments:
        assert fragment in stderr, (fragment, stderr)


CASES = [
    pytest.param(row, command, id=f"{row.id}-{command}") for row in ROWS for command in row.commands
]


@pytest.mark.parametrize("row, command", CASES)
def test_row_is_refused_with_one_line(tmp_path: pathlib.Path, row: Row, command: str):
    path = row.make(tmp_path)
    out = tmp_path / "out" / ("report.json" if command == "verify" else "out.onnx")
    out.parent.mkdir()
    before = snapshot(tmp_path)
    result = invoke(*command_line(command, path, out))
    assert result.exit_code == row.code, result.output
    assert_one_line_error(result, *row.fragments)
    assert snapshot(tmp_path) == before  # input untouched, nothing written anywhere


# --- library loaders: onnx, onnx_ir and maxlower refuse the escaping locations -------------

ESCAPES = [
    row
    for row in ROWS
    if row.id.startswith(
        ("external-dotdot", "external-sub", "external-abs", "external-symlink", "external-hard")
    )
]


@pytest.mark.parametrize("row", ESCAPES, ids=lambda row: row.id)
def test_every_loader_refuses_data_outside_the_directory(tmp_path: pathlib.Path, row: Row):
    """maxlower refuses before reading; onnx.load (load_external_data=True) and onnx_ir's
    ExternalTensor refuse too, on their own, when they read: the rule holds whichever
    loader a caller of the library uses."""
    path = row.make(tmp_path)
    with pytest.raises(InvalidModelError, match=r"model\.onnx"):
        load_model(path)
    with pytest.raises(InvalidModelError):
        maxlower.verify(path, path, trials=1)
    with pytest.raises(onnx.checker.ValidationError):
        onnx.load(path)
    with pytest.raises(onnx.checker.ValidationError):
        onnx.checker.check_model(str(path), full_check=True)
    tensor = ir.load(path).graph.initializers["w"].const_value
    assert isinstance(tensor, ir.ExternalTensor)
    with pytest.raises(ValueError, match=r"outside|hard link"):
        tensor.numpy()


def test_unknown_keys_are_only_ignored_by_onnx(tmp_path: pathlib.Path):
    """onnx warns and drops unknown external-data keys (since the CVE-2026-34445 fix);
    maxlower refuses them, so no tool down the line ever sees one of ours."""
    path = _external("weights.bin", __class__="x")(tmp_path)
    with pytest.warns(UserWarning, match="Ignoring unknown external data key"):
        loaded = onnx.load(path)
    assert numpy_helper.to_array(loaded.graph.initializer[0]).tolist() == [1.0] * 256
    with pytest.raises(InvalidModelError, match="'__class__'"):
        load_model(path)


def test_symlink_inside_the_directory_is_read(tmp_path: pathlib.Path):
    """A link whose target stays inside the directory is not an escape (onnx_ir's rule;
    onnx's C++ loader refuses every link)."""
    path = _external("link.bin", lambda tmp, d: (d / "link.bin").symlink_to("weights.bin"))(
        tmp_path
    )
    result = invoke("convert", path, "--opset", "12", "-o", tmp_path / "out.onnx")
    assert result.exit_code == 0, result.output
    written = onnx.load(tmp_path / "out.onnx", load_external_data=False)
    assert written.graph.initializer[0].external_data[0].value == "out.onnx.data"
    weights = onnx.load(tmp_path / "out.onnx").graph.initializer[0]
    assert numpy_helper.to_array(weights).tolist() == [1.0] * 256


def test_debug_shows_the_traceback_of_a_refusal(tmp_path: pathlib.Path):
    path = _external("../secret.bin")(tmp_path)
    with pytest.raises(InvalidModelError, match="security rule"):
        invoke("convert", path, "--opset", "12", "--debug")


# --- rows that are not refusals -----------------------------------------------------------


def _custom_domain_model() -> onnx.ModelProto:
    return onnx.parser.parse_model("""
        <ir_version: 8, opset_import: ["" : 13, "com.acme" : 1]>
        g (float[2, 3] x) => (float[2] y, float[2, 3] z) {
            y = ReduceMax <axes = [1], keepdims = 0> (x)
            z = com.acme.Fancy <alpha = 0.5, mode = "fast"> (x, y)
        }""")


@pytest.mark.parametrize("command", REWRITING)
def test_custom_domain_ops_are_kept_untouched(tmp_path: pathlib.Path, command: str):
    path = save(_custom_domain_model(), tmp_path)
    out = tmp_path / "out.onnx"
    result = invoke(*command_line(command, path, out))
    assert result.exit_code == 0, result.output
    written = onnx.load(out)
    fancy = [n for n in written.graph.node if n.domain == "com.acme"]
    original = next(n for n in _custom_domain_model().graph.node if n.domain == "com.acme")
    assert [n.SerializeToString() for n in fancy] == [original.SerializeToString()]
    imports = {o.domain: o.version for o in written.opset_import}
    assert imports["com.acme"] == 1
    assert imports[""] == (12 if command == "convert" else 13)


def _huge_input_model() -> onnx.ModelProto:
    return parse(
        "g (float[1099511627776, 1099511627776] x) => (float[1099511627776] y) {"
        " y = ReduceMax <axes = [-1], keepdims = 0> (x) }",
        13,
    )


HUGE_DECLARED_DIMS = {
    # 2^80 elements: any allocation of the data fails
    "2^40 x 2^40": _huge_input_model,
    # lower picks among forms whose shape inference once followed 2^40-long values
    "2^40 x 3": lambda: parse(
        "g (float[1099511627776, 3] x) => (float[1099511627776] y) {"
        " y = ReduceMax <axes = [-1], keepdims = 0> (x) }",
        13,
    ),
    # onnx's data propagation through Gather then Unsqueeze holds ~140 bytes per element
    "gather-unsqueeze": lambda: parse(
        "g (double[1099511627776, 3] x, int64 i) => (double[1] y) <int64[1] one = {1}> {"
        " g = Gather <axis = 1> (x, i)  u = Unsqueeze (g, one)"
        " y = ReduceMax <axes = [0], keepdims = 0> (u) }",
        13,
    ),
    # ...where a Shape node would make data propagation worth running: over budget
    "gather-unsqueeze-shape": lambda: parse(
        "g (double[1099511627776, 3] x, int64 i) => (double[1] y, int64[2] s)"
        " <int64[1] one = {1}> {"
        " s = Shape (x)  g = Gather <axis = 1> (x, i)  u = Unsqueeze (g, one)"
        " y = ReduceMax <axes = [0], keepdims = 0> (u) }",
        13,
    ),
}


HUGE_COMMANDS = ["convert", "lower", "inspect"]
# every (model, command); the default tier runs each model through one command, and each
# command on at least one model (each takes seconds), the slow tier the rest
HUGE_PAIRS = tiers.split(
    [
        pytest.param(model, command, id=f"{model}-{command}")
        for model in sorted(HUGE_DECLARED_DIMS)
        for command in HUGE_COMMANDS
    ],
    keep=lambda pair: (
        sorted(HUGE_DECLARED_DIMS).index(pair[0]) % len(HUGE_COMMANDS)
        == HUGE_COMMANDS.index(pair[1])
    ),
)


@pytest.mark.parametrize(("model", "command"), HUGE_PAIRS)
def test_huge_declared_dims_are_handled_on_shapes_alone(tmp_path, model: str, command: str):
    """Conversion and lowering work on shapes: declared dims of 2^40 cost nothing. Run in a
    child limited to 2 GB of address space, so that an attempt to allocate for them fails
    at once (bad_alloc, exit 4) instead of waking the machine's out-of-memory killer."""
    path = save(HUGE_DECLARED_DIMS[model](), tmp_path)
    out = tmp_path / "out.onnx"
    limit = "import resource; resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))"
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            f"{limit}\nfrom maxlower.cli import main\nmain()",
            *map(str, command_line(command, path, out)),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "bad_alloc" not in result.stderr and "MemoryError" not in result.stderr
    if command != "inspect":
        onnx.checker.check_model(onnx.load(out), full_check=True)


def test_huge_declared_input_dims_are_not_verified(tmp_path: pathlib.Path):
    path = save(_huge_input_model(), tmp_path)
    result = invoke("verify", path, path, "--json", tmp_path / "r.json")
    assert result.exit_code == 2
    assert_one_line_error(result, "input 'x'", "4.84e+24 bytes", "--inputs")
    assert not (tmp_path / "r.json").exists()


# --- opsets -------------------------------------------------------------------------------


@pytest.mark.parametrize("opset", ["0", "-3", str(LATEST + 1)])
@pytest.mark.parametrize("command", ["convert", "inspect"])
def test_target_opset_outside_the_known_range(tmp_path, command: str, opset: str):
    path = save(good_model(), tmp_path)
    before = snapshot(tmp_path)
    result = invoke(command, path, "--opset", opset)
    assert result.exit_code == 2
    assert_one_line_error(result, f"target opset {opset} is outside 1..{LATEST}")
    assert snapshot(tmp_path) == before


# --- outputs ------------------------------------------------------------------------------


@pytest.mark.parametrize("command", REWRITING)
def test_output_directory_missing(tmp_path: pathlib.Path, command: str):
    path = save(good_model(), tmp_path)
    before = snapshot(tmp_path)
    result = invoke(*command_line(command, path, tmp_path / "nowhere" / "out.onnx"))
    assert result.exit_code == 2
    assert_one_line_error(result, "does not exist")
    assert snapshot(tmp_path) == before


def unwritable_directory(tmp_path: pathlib.Path) -> pathlib.Path:
    """A directory this process cannot create files in: mode 0555, or for root (whom modes
    do not stop) /sys, which refuses new files to everyone."""
    if os.geteuid() != 0:
        directory = tmp_path / "locked"
        directory.mkdir(mode=0o555)
        return directory
    if not os.path.isdir("/sys") or os.access("/sys/maxlower-probe", os.F_OK):
        pytest.skip("running as root without a read-only directory to write to")
    return pathlib.Path("/sys")


@pytest.mark.parametrize("command", REWRITING)
def test_output_directory_not_writable(tmp_path: pathlib.Path, command: str):
    path = save(good_model(), tmp_path)
    directory = unwritable_directory(tmp_path)
    before, listing = snapshot(tmp_path), sorted(os.listdir(directory))
    result = invoke(*command_line(command, path, directory / "out.onnx"))
    assert result.exit_code == 2
    assert_one_line_error(result, "out.onnx", "cannot write")
    assert snapshot(tmp_path) == before
    assert sorted(os.listdir(directory)) == listing


@pytest.mark.parametrize("command", REWRITING)
def test_output_equal_to_input_needs_in_place(tmp_path: pathlib.Path, command: str):
    path = save(good_model(), tmp_path)
    before = snapshot(tmp_path)
    result = invoke(*command_line(command, path, tmp_path / "." / "model.onnx"))
    assert result.exit_code == 2
    assert_one_line_error(result, "--in-place")
    assert snapshot(tmp_path) == before
    assert invoke(*command_line(command, path, path), "--in-place").exit_code == 0
    assert onnx.load(path).SerializeToString() != before["model.onnx"]


@pytest.mark.parametrize("command", REWRITING)
def test_output_data_file_that_the_input_reads(tmp_path: pathlib.Path, command: str):
    """-o other.onnx would replace other.onnx.data, which the input reads its weights
    from: the input would be left pointing at the output's bytes."""
    directory = model_dir(tmp_path)
    (directory / "other.onnx.data").write_bytes(np.ones(256, np.float32).tobytes())
    path = save(external(weighted_model(), "other.onnx.data"), directory)
    before = snapshot(tmp_path)
    result = invoke(*command_line(command, path, directory / "other.onnx"))
    assert result.exit_code == 2
    assert_one_line_error(result, "other.onnx.data", "input's external data")
    assert snapshot(tmp_path) == before


def test_in_place_with_its_own_data_file(tmp_path: pathlib.Path):
    """--in-place replaces the model and its <name>.data together."""
    directory = model_dir(tmp_path)
    (directory / "model.onnx.data").write_bytes(np.full(256, 7, np.float32).tobytes())
    path = save(external(weighted_model(), "model.onnx.data"), directory)
    result = invoke("convert", path, "--opset", "12", "--in-place")
    assert result.exit_code == 0, result.output
    loaded = onnx.load(path)
    assert loaded.opset_import[0].version == 12
    assert numpy_helper.to_array(loaded.graph.initializer[0]).tolist() == [7.0] * 256
    assert sorted(os.listdir(directory)) == ["model.onnx", "model.onnx.data"]


@pytest.mark.parametrize("link", ["out.onnx", "out.onnx.data"])
def test_output_symlink_out_of_its_directory(tmp_path: pathlib.Path, link: str):
    """CVE-2025-51480 was onnx writing external data outside the model's directory: maxlower
    writes only in OUT's directory, and refuses a link at OUT or OUT.data that leads out."""
    directory = model_dir(tmp_path)
    path = save(external(weighted_model(), "weights.bin"), directory)
    (directory / "weights.bin").write_bytes(np.ones(256, np.float32).tobytes())
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / link).symlink_to(tmp_path / "secret.bin")
    secret_file(tmp_path)
    before = snapshot(tmp_path)
    result = invoke("convert", path, "--opset", "12", "-o", tmp_path / "out" / "out.onnx")
    assert result.exit_code == 2
    assert_one_line_error(result, "symbolic link", "outside the output's directory")
    assert snapshot(tmp_path) == before


def test_written_locations_stay_in_the_output_directory(tmp_path: pathlib.Path):
    """Whatever the input's locations were (a subdirectory here), the output's data file is
    <OUT>.data beside OUT."""
    directory = model_dir(tmp_path)
    (directory / "sub").mkdir()
    (directory / "sub" / "w.bin").write_bytes(np.ones(256, np.float32).tobytes())
    path = save(external(weighted_model(), "sub/w.bin"), directory)
    (tmp_path / "out").mkdir()
    result = invoke("convert", path, "--opset", "12", "-o", tmp_path / "out" / "o.onnx")
    assert result.exit_code == 0, result.output
    assert sorted(os.listdir(tmp_path / "out")) == ["o.onnx", "o.onnx.data"]
    written = onnx.load(tmp_path / "out" / "o.onnx", load_external_data=False)
    assert [e.value for e in written.graph.initializer[0].external_data if e.key == "location"] == [
        "o.onnx.data"
    ]


# --- verify -------------------------------------------------------------------------------

REDUCE = "ReduceMax <axes = [1], keepdims = 0>"
SIGNATURES = {
    "input-renamed": f"g (float[2, 3] z) => (float[2] y) {{ y = {REDUCE} (z) }}",
    "input-type": f"g (double[2, 3] x) => (double[2] y) {{ y = {REDUCE} (x) }}",
    "output-renamed": f"g (float[2, 3] x) => (float[2] r) {{ r = {REDUCE} (x) }}",
    "extra-output": f"g (float[2, 3] x) => (float[2] y, float[2] r) {{"
    f" y = {REDUCE} (x)\n r = Identity (y) }}",
}


@pytest.mark.parametrize("variant", SIGNATURES)
def test_verify_of_different_signatures(tmp_path: pathlib.Path, variant: str):
    reference = save(good_model(), tmp_path, "a.onnx")
    candidate = save(parse(SIGNATURES[variant]), tmp_path, "b.onnx")
    before = snapshot(tmp_path)
    result = invoke("verify", reference, candidate, "--json", tmp_path / "report.json")
    assert result.exit_code == 2, result.output
    assert_one_line_error(result, "different signatures")
    assert snapshot(tmp_path) == before
    # the library reports the same as a difference, and never raises on one
    assert maxlower.verify(reference, candidate).status == "different"


# --- the table of docs/bad-inputs.md ------------------------------------------------------


def test_readme_table_lists_every_row():
    """Each row id of the 'Bad inputs' table (docs/bad-inputs.md) names a row or a test here."""
    section = doc_pages.page("bad-inputs")
    listed = set(re.findall(r"`([a-z0-9-]+)`\s*\|\s*$", section, re.M))
    names = {row.id for row in ROWS}
    tests = {name for name in globals() if name.startswith("test_")}
    cited = set(re.findall(r"`(test_[a-z0-9_]+)`", section))
    assert names <= listed, names - listed
    assert cited <= tests | set(_tests_elsewhere()), cited - tests


def _tests_elsewhere() -> list[str]:
    names = []
    for path in (ROOT / "tests").glob("test_*.py"):
        names += re.findall(r"^def (test_\w+)", path.read_text(encoding="utf-8"), re.M)
    return names
