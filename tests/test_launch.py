"""The `maxlower` command's entry point defers sympy (maxlower/launch.py): it must stay
out of the way of conversion and still work when something does use it."""

from __future__ import annotations

import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]

DEFER = (
    "import maxlower.launch\nmaxlower.launch.prepare()\nimport sys\n"
    "import onnx_ir\nmaxlower.launch.bind_deferred_submodules()\n"
)


def run_python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=ROOT
    )


def test_a_conversion_never_runs_sympy(tmp_path: pathlib.Path):
    model = ROOT / "examples" / "models" / "reduce_max_opset18.onnx"
    code = DEFER + (
        "from maxlower.cli import cli\n"
        f"sys.argv = ['maxlower', 'convert', {str(model)!r}, '--opset', '11',"
        f" '-o', {str(tmp_path / 'out.onnx')!r}]\n"
        "try:\n    cli()\nexcept SystemExit as e:\n    assert e.code in (0, None), e.code\n"
        "print('sympy ran' if 'Max' in vars(sys.modules['sympy']) else 'sympy waited')\n"
    )
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "sympy waited"
    assert (tmp_path / "out.onnx").exists()


def test_deferred_sympy_runs_on_first_use():
    code = DEFER + (
        "import onnx_ir as ir\n"
        "assert 'Max' not in vars(sys.modules['sympy'])\n"
        "assert onnx_ir._symbolic_shapes is sys.modules['onnx_ir._symbolic_shapes']\n"
        "dim = ir.SymbolicDim('N') + 1\n"  # symbolic arithmetic: sympy runs now
        "import sympy.core.numbers\n"
        "from sympy import Symbol\n"
        "print(dim.value, Symbol('x') + 1)\n"
    )
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["N", "+", "1", "x", "+", "1"]


def test_deferring_an_imported_or_missing_module_does_nothing():
    code = (
        "import json, sys\n"
        "from maxlower.launch import defer_module\n"
        "defer_module('json'); defer_module('no_such_module_here')\n"
        "assert type(sys.modules['json']).__name__ == 'module'\n"
        "assert 'no_such_module_here' not in sys.modules\n"
    )
    result = run_python(code)
    assert result.returncode == 0, result.stderr


def test_a_deferred_module_that_fails_is_not_left_half_loaded(tmp_path: pathlib.Path):
    (tmp_path / "broken_here.py").write_text("x = 1\nraise RuntimeError('broken on purpose')\n")
    code = (
        f"import sys\nsys.path.insert(0, {str(tmp_path)!r})\n"
        "from maxlower.launch import defer_module\n"
        "defer_module('broken_here')\n"
        "import broken_here\n"
        "try:\n    broken_here.x\nexcept RuntimeError as e:\n    print('first:', e)\n"
        "assert 'broken_here' not in sys.modules\n"
        "try:\n    import broken_here\nexcept RuntimeError as e:\n    print('again:', e)\n"
    )
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["first: broken on purpose", "again: broken on purpose"]


def test_import_maxlower_is_light_and_reaches_submodules():
    """`import maxlower` loads nothing heavy; its names and submodules load on first use."""
    code = (
        "import sys, maxlower\n"
        "assert 'onnx_ir' not in sys.modules and 'onnxruntime' not in sys.modules\n"
        "print(maxlower.api.convert_with_report.__name__,"
        " maxlower.profiles.load_profile.__name__)\n"
        "import maxlower.verify\n"  # the subpackage: light, and it does not rebind the name
        "print('onnxruntime' in sys.modules)\n"
        "print(callable(maxlower.verify), maxlower.verify.__name__)\n"
    )
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "convert_with_report load_profile",
        "False",
        "True verify",
    ]
