"""Fuzzing the loader: damaged model files (truncated, bytes flipped, inserted or deleted,
fields spliced from another model) through `maxlower convert` and `maxlower inspect`.

Whatever the bytes, the command ends with exit code 0, 2 or 3, never 4 (an internal error)
and never a traceback; a refusal is one line; the input file is unchanged and nothing but
the output (on success) is written. Budget: EXAMPLES cases in the slow tier, a small share
in the default tier (tests/budget.py).
"""

from __future__ import annotations

import pathlib
import tempfile

import onnx
import pytest
from click.testing import CliRunner
from hypothesis import event, given, note
from hypothesis import strategies as st

from maxlower.cli import cli
from tests import budget
from tests.example_models import EXAMPLE_MODELS

EXAMPLES = 1000
# Never a glob: README commands write into examples/models/.
SEEDS = [path.read_bytes() for path in EXAMPLE_MODELS]
LATEST = onnx.defs.onnx_opset_version()


@st.composite
def damaged_files(draw) -> bytes:
    data = bytearray(draw(st.sampled_from(SEEDS)))
    for _ in range(draw(st.integers(1, 4))):
        how = draw(st.sampled_from(["truncate", "flip", "insert", "delete", "splice"]))
        at = draw(st.integers(0, max(len(data) - 1, 0)))
        if how == "truncate":
            del data[at:]
        elif how == "flip" and data:
            data[at] ^= draw(st.integers(1, 255))
        elif how == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=8))
        elif how == "delete":
            del data[at : at + draw(st.integers(1, 8))]
        elif how == "splice":
            other = draw(st.sampled_from(SEEDS))
            start = draw(st.integers(0, len(other) - 1))
            data[at:at] = other[start : start + draw(st.integers(1, 64))]
    return bytes(data)


@budget.fuzz(
    EXAMPLES,
    database=None,
)
@given(
    content=damaged_files(),
    command=st.sampled_from(["convert", "inspect"]),
    opset=st.integers(1, LATEST),
)
def test_damaged_files_end_in_a_clean_exit(content: bytes, command: str, opset: int):
    with tempfile.TemporaryDirectory() as directory:
        directory = pathlib.Path(directory)
        path = directory / "model.onnx"
        path.write_bytes(content)
        out = directory / "out.onnx"
        args = [command, str(path), "--opset", str(opset)]
        args += ["-o", str(out)] if command == "convert" else []
        result = CliRunner().invoke(cli, args, catch_exceptions=False)
        note(f"exit {result.exit_code}: {result.stderr}")
        event(f"exit {result.exit_code}")
        assert result.exit_code in (0, 2, 3), result.stderr
        assert "Traceback" not in result.stderr
        if result.exit_code:
            assert result.stderr.startswith("maxlower: error: ")
            assert result.stderr.count("\n") == 1, result.stderr
        assert path.read_bytes() == content
        written = {"model.onnx"} | (
            {"out.onnx"} if command == "convert" and not result.exit_code else set()
        )
        assert {p.name for p in directory.iterdir()} == written


DAMAGED = pathlib.Path(__file__).resolve().parent / "fixtures" / "damaged"


@pytest.mark.parametrize("command", ["convert", "lower", "inspect", "verify"])
@pytest.mark.parametrize(
    ("name", "message"),
    [
        # found by this suite: onnx.checker let both through, then onnx's shape inference
        # raised ValueError and onnx_ir SerdeError, which ended as internal errors (exit 4)
        ("unknown_element_type.onnx", "Invalid tensor data type 29"),
        ("function_output_never_made.onnx", "onnx_ir cannot read the model"),
    ],
)
def test_damaged_files_found_by_this_suite(tmp_path, name: str, message: str, command: str):
    path = DAMAGED / name
    out = tmp_path / "out.onnx"
    args = {
        "convert": ["convert", path, "--opset", "1", "-o", out],
        "lower": ["lower", path, "--profile", "primitives", "-o", out],
        "inspect": ["inspect", path],
        "verify": ["verify", path, path],
    }[command]
    result = CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)
    assert result.exit_code == 2, result.stderr
    assert result.stderr.startswith("maxlower: error: ") and message in result.stderr
    assert result.stderr.count("\n") == 1, result.stderr
    assert not out.exists()


@pytest.mark.parametrize("target", [13, 11])
@pytest.mark.parametrize("path", ["sparse", "whole graph"])
def test_an_output_declared_of_a_rank_inference_cannot_see_is_refused_not_internal(
    tmp_path, path, target
):
    """What this fuzz drew once (a damaged file): reduce_max_opset18.onnx with its run-time
    axes ReduceMax's output declared of rank 2. The node's own inference at 18 gives no
    shape there (the axes are computed at run time), so the input's full check cannot see
    it; the exact form at 13 has a shape inference knows (rank 3, keepdims=1). That is a
    refusal naming the node and the output (exit 3), not an internal error (exit 4).
    Declared of the right rank, as the remedy says, it converts. (A declaration the
    node's inference confirms is never blamed: tests/test_verify_mutants.py's
    argmax_keepdims_dropped stays an internal error.) A model-local function sends the
    model down the whole-graph path."""
    model = onnx.load(pathlib.Path(__file__).parents[1] / "examples/models/reduce_max_opset18.onnx")
    if path == "whole graph":
        model.functions.append(
            onnx.parser.parse_function(
                '<domain: "local", opset_import: ["" : 18]> unused (a) => (b) '
                "{ b = Constant <value = float {1.0}> () }"
            )
        )
        model.opset_import.append(onnx.helper.make_opsetid("local", 1))
    output = next(o for o in model.graph.output if o.name == "reduced_runtime_axes")
    for rank, code in ((2, 3), (3, 0)):
        del output.type.tensor_type.shape.dim[:]
        for i in range(rank):
            output.type.tensor_type.shape.dim.add().dim_param = f"q{i}"
        source = tmp_path / f"rank{rank}.onnx"
        onnx.save(model, source)
        out = str(tmp_path / f"out{rank}.onnx")
        args = ["convert", str(source), "--opset", str(target), "-o", out]
        result = CliRunner().invoke(cli, args)
        assert result.exit_code == code, result.output
        if code:
            assert result.stderr.startswith("maxlower: error: node 'reduce_runtime_axes'")
            assert "declares its output 'reduced_runtime_axes'" in result.stderr
            assert result.stderr.count("\n") == 1
