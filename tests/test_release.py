"""The release, as a new user meets it: `python -m build` makes an sdist and a wheel without
a single warning and `twine check` passes them; the sdist holds what the test suite needs
and nothing that running the project writes; the wheel, installed into a fresh virtual
environment, works from outside the source tree (its data files included); and a typed
caller of the library gets real types.

Building fetches setuptools from the package index into build's isolated environment, and
the install fetches the dependencies (pip's cache makes that fast after the first time); CI
has the index. These tests skip only when `build`, `twine` or `mypy` (the dev extra) are
not installed. All but the changelog's test are in the slow tier (docs/testing.md).
"""

from __future__ import annotations

import importlib.util
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tarfile
import time
import venv
import zipfile

import pytest

import maxlower
from maxlower.profiles import PROFILE_DIR
from tests.example_models import MODELS_DIR
from tests.test_quickstart import fresh_copy, stated_output, tracked_files

ROOT = pathlib.Path(__file__).resolve().parents[1]
VERSION = maxlower.__version__
WARNING = re.compile(r"warn|deprecat", re.IGNORECASE)

# What running the project writes into the tree (see .gitignore), planted in the copy that
# is built: none of it may reach the sdist.
GENERATED = (
    "benchmarks/.work/inputs.json",  # bench.py's inputs and outputs
    "benchmarks/.work/out/wide.maxlower.opset18.onnx",
    stated_output(),  # what the quick start's first command writes
    "examples/models/nested_opset18.primitives.onnx",  # what README's lower commands write
    "examples/models/reduce_max_opset18.onnxruntime.onnx",
    "tests/__pycache__/test_release.cpython-311.pyc",
    ".hypothesis/examples/0/1",
    "report.json",
)
# What setuptools adds to an sdist besides the project's files
SDIST_METADATA = re.compile(r"^(PKG-INFO|setup\.cfg|[^/]+\.egg-info/.*)$")


def _needs(module: str) -> None:
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed (pip install -e '.[dev]')")


def _quiet_env() -> dict[str, str]:
    """The environment for building: PYTHONDONTWRITEBYTECODE (set on some machines) makes
    setuptools warn that it skips byte-compiling, a warning about the machine, not the
    project. PYTHONPATH would let the build see this checkout instead of the copy."""
    drop = {"PYTHONDONTWRITEBYTECODE", "PYTHONPATH"}
    return {k: v for k, v in os.environ.items() if k not in drop and not k.startswith("PYTEST_")}


def _run(args: list[str | os.PathLike[str]], **kwargs: object) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(a) for a in args], capture_output=True, text=True, timeout=900, **kwargs
    )


class Dists:
    def __init__(self, directory: pathlib.Path, log: str) -> None:
        self.log = log
        self.sdist = next(directory.glob("*.tar.gz"))
        self.wheel = next(directory.glob("*.whl"))


@pytest.fixture(scope="module")
def dists(tmp_path_factory: pytest.TempPathFactory) -> Dists:
    """The sdist and the wheel (built from the sdist, as `python -m build` does), from a
    copy of the checkout with generated files planted in it."""
    _needs("build")
    base = tmp_path_factory.mktemp("release")
    copy = fresh_copy(base / "src")
    for name in GENERATED:
        (copy / name).parent.mkdir(parents=True, exist_ok=True)
        (copy / name).write_bytes(b"generated")
    started = time.perf_counter()
    built = _run([sys.executable, "-m", "build", "--outdir", base / "dist", copy], env=_quiet_env())
    print(f"python -m build: {time.perf_counter() - started:.1f} s")
    assert built.returncode == 0, built.stdout[-4000:] + built.stderr[-4000:]
    return Dists(base / "dist", built.stdout + built.stderr)


@pytest.mark.slow  # builds the sdist and the wheel (the `dists` fixture): the slow tier
def test_the_build_prints_no_warning(dists: Dists):
    """The next deprecation (setuptools announced 2027-02-18 for the last one) fails here
    the day it appears, not the day builds stop working."""
    warnings = [line for line in dists.log.splitlines() if WARNING.search(line)]
    assert warnings == [], "\n".join(warnings)


@pytest.mark.slow  # builds the sdist and the wheel (the `dists` fixture): the slow tier
def test_twine_check_passes_with_no_warning(dists: Dists):
    _needs("twine")
    checked = _run([sys.executable, "-m", "twine", "check", "--strict", dists.sdist, dists.wheel])
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert not WARNING.search(checked.stdout + checked.stderr), checked.stdout


def _sdist_files(sdist: pathlib.Path) -> set[str]:
    with tarfile.open(sdist) as archive:
        names = [m.name.split("/", 1)[1] for m in archive.getmembers() if m.isfile()]
    return {name for name in names if not SDIST_METADATA.match(name)}


@pytest.mark.slow  # builds the sdist and the wheel (the `dists` fixture): the slow tier
def test_the_sdist_holds_the_tracked_files_and_no_generated_data(dists: Dists):
    files = _sdist_files(dists.sdist)
    assert not files & set(GENERATED)
    tracked = tracked_files()
    if tracked is None:  # not a git checkout (an unpacked sdist, say): what the tests need
        assert {"README.md", "LICENSE", "CHANGELOG.md", "tests/test_release.py"} <= files
        assert {"docs/cli.md", "docs/bad-inputs.md", "docs/report.png"} <= files  # tests read them
        assert any(name.startswith("tests/fixtures/models/") for name in files)
        return
    missing, extra = set(tracked) - files, files - set(tracked)
    assert not missing, f"tracked but not in the sdist (MANIFEST.in): {sorted(missing)}"
    assert not extra, f"in the sdist but not tracked: {sorted(extra)}"


@pytest.mark.slow  # builds the sdist and the wheel (the `dists` fixture): the slow tier
def test_the_wheel_holds_the_license_the_type_markers_and_the_profiles(dists: Dists):
    with zipfile.ZipFile(dists.wheel) as wheel:
        names = set(wheel.namelist())
        metadata = wheel.read(f"maxlower-{VERSION}.dist-info/METADATA").decode()
    assert f"maxlower-{VERSION}.dist-info/licenses/LICENSE" in names
    assert {"maxlower/py.typed", "passes/py.typed"} <= names
    profiles = {f"maxlower/profiles/{p.name}" for p in PROFILE_DIR.glob("*.toml")}
    assert profiles and profiles <= names
    assert not any(name.startswith(("tests/", "benchmarks/", "examples/")) for name in names)
    assert f"\nVersion: {VERSION}\n" in metadata
    assert "\nLicense-Expression: Apache-2.0\n" in metadata
    assert "\nClassifier: Typing :: Typed\n" in metadata


@pytest.mark.slow  # a virtual environment and an install of every dependency: a minute
def test_the_wheel_works_in_a_fresh_venv_outside_the_source_tree(
    dists: Dists, tmp_path: pathlib.Path
):
    """Not editable and without the system's site-packages (where this checkout may be
    installed editable): only the wheel and its dependencies."""
    started = time.perf_counter()
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True, clear=True)
    bin_dir = env_dir / ("Scripts" if os.name == "nt" else "bin")
    python = bin_dir / "python"
    env = _quiet_env()
    env.update(PYTHONNOUSERSITE="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    # (--no-compile: byte-compiling sympy, numpy and the rest would take most of the time)
    installed = _run([python, "-m", "pip", "install", "--no-compile", dists.wheel], env=env)
    assert installed.returncode == 0, installed.stdout[-4000:] + installed.stderr[-4000:]
    install_time = time.perf_counter() - started

    away = tmp_path / "elsewhere"  # no maxlower/, passes/ or pyproject.toml here
    away.mkdir()
    example = shutil.copy(MODELS_DIR / "reduce_max_opset18.onnx", away)

    def run(*args: str | pathlib.Path) -> str:
        result = _run(list(args), cwd=away, env=env)
        assert result.returncode == 0, f"{args}: {result.stdout}{result.stderr}"
        return result.stdout

    where = run(python, "-c", "import maxlower, passes; print(maxlower.__file__, passes.__file__)")
    assert all(pathlib.Path(p).is_relative_to(env_dir) for p in where.split()), where
    assert VERSION in run(bin_dir / "maxlower", "--version")
    assert VERSION in run(python, "-m", "maxlower", "--version")
    listed = run(bin_dir / "maxlower", "profiles")  # the TOML files: package data
    assert all(p.stem in listed for p in PROFILE_DIR.glob("*.toml")), listed
    # converting and verifying runs onnx, onnx_ir and onnxruntime from the venv
    converted = run(bin_dir / "maxlower", "convert", example, "--opset", "13", "--verify")
    assert (away / "reduce_max_opset18.opset13.onnx").is_file(), converted
    run(bin_dir / "maxlower", "lower", example, "--profile", "onnxruntime", "-o", "lowered.onnx")
    run(python, "-c", "import onnx; onnx.checker.check_model('lowered.onnx', full_check=True)")
    print(f"venv and install: {install_time:.1f} s, all: {time.perf_counter() - started:.1f} s")


TYPED_CALLER = """
import onnx
import onnx_ir as ir

import maxlower
from passes import ConvertFamilyPass, ConvertToOpsetPass
from passes.legalize import LegalizePass

proto = onnx.load("model.onnx")
reveal_type(maxlower.convert(proto, 13))
reveal_type(maxlower.convert(ir.load("model.onnx"), 13))
reveal_type(maxlower.convert_with_report(proto, 13))
reveal_type(maxlower.lower(proto, "onnxruntime"))
reveal_type(maxlower.convert_and_lower(proto, 13, "primitives")[1].rewrites)
reveal_type(maxlower.verify(proto, proto).ok)
reveal_type(maxlower.load_profile("webnn"))
reveal_type(ConvertToOpsetPass(13)(ir.load("model.onnx")).rewrites)
reveal_type(ConvertFamilyPass(13)(ir.load("model.onnx")).rewrites)
reveal_type(LegalizePass(maxlower.load_profile("webnn"))(ir.load("model.onnx")).lowerings)
reveal_type(maxlower.convert)
reveal_type(maxlower.verify)
"""
REVEALED = [
    "onnx.onnx_ml_pb2.ModelProto",
    "onnx_ir._core.Model",
    "tuple[onnx.onnx_ml_pb2.ModelProto, maxlower.pipeline.Report]",
    "onnx.onnx_ml_pb2.ModelProto",
    "builtins.list[passes.version.convert.Rewrite]",
    "builtins.bool",
    "maxlower.profiles.rules.Profile",
    "builtins.list[passes.version.convert.Rewrite]",
    "builtins.list[passes.version.convert.Rewrite]",
    "builtins.list[passes.legalize.Lowering]",
]


@pytest.mark.slow  # mypy on a caller, cold: seconds (.ci/run type-checks the API itself)
def test_a_typed_caller_gets_real_types(tmp_path: pathlib.Path):
    """What mypy infers for a program that calls the library: the types the annotations
    give (py.typed), not Any; and no parameter or result of an entry point is Any."""
    _needs("mypy")
    caller = tmp_path / "caller.py"
    caller.write_text(TYPED_CALLER)
    env = {**os.environ, "MYPYPATH": str(ROOT)}
    checked = _run(
        [sys.executable, "-m", "mypy", "--config-file", ROOT / "pyproject.toml", caller],
        cwd=tmp_path,
        env=env,
    )
    revealed = re.findall(r'Revealed type is "(.*)"', checked.stdout)
    assert len(revealed) == len(REVEALED) + 2, checked.stdout + checked.stderr
    assert [r.replace("builtins.", "") for r in revealed[: len(REVEALED)]] == [
        r.replace("builtins.", "") for r in REVEALED
    ]
    for signature in revealed[len(REVEALED) :]:
        assert signature.startswith("def "), signature
        assert not re.search(r"(: |-> |\| )Any\b", signature), signature
    assert checked.returncode == 0, checked.stdout


def test_the_changelog_has_the_current_version_and_an_unreleased_section():
    """Bumping `maxlower.__version__` without saying what the version added fails here."""
    headings = re.findall(r"^## (\S+)", (ROOT / "CHANGELOG.md").read_text(encoding="utf-8"), re.M)
    assert headings[0] == "Unreleased", headings
    assert VERSION in headings, f"CHANGELOG.md has no section for {VERSION}: {headings}"
