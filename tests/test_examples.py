"""The examples run, the committed example models are valid and up to date, and every
command and code block in README.md works as shown."""

from __future__ import annotations

import pathlib
import re
import shlex
import shutil
import subprocess
import sys

import onnx
import pytest

from tests import tiers
from tests.example_models import EXAMPLE_MODEL_NAMES, EXAMPLE_MODELS

ROOT = pathlib.Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
MODELS = EXAMPLES / "models"
# examples/ itself: no README command writes there (their outputs go to examples/models/ and
# to the working directory), so its scripts may be listed.
SCRIPTS = sorted(EXAMPLES.glob("*.py"))
# The models make_example_models.py builds (and README and tests use); examples/models/ is
# never listed, because README commands write their outputs there.
EXPECTED_MODELS = EXAMPLE_MODEL_NAMES


def run(args: list[str], cwd: pathlib.Path) -> subprocess.CompletedProcess:
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=600)


@pytest.fixture
def workdir(tmp_path: pathlib.Path) -> pathlib.Path:
    """A copy of examples/ as a fresh clone has it (the scripts and the committed models, not
    what README commands may have left in the checkout's examples/models/), so that scripts
    and commands run on what is committed and write nothing into the checkout."""
    (tmp_path / "examples" / "models").mkdir(parents=True)
    for script in SCRIPTS:
        shutil.copy2(script, tmp_path / "examples" / script.name)
    for model in EXAMPLE_MODELS:
        shutil.copy2(model, tmp_path / "examples" / "models" / model.name)
    return tmp_path


def test_there_are_examples():
    assert {p.name for p in SCRIPTS} >= {"make_example_models.py", "library_usage.py"}
    assert len(EXPECTED_MODELS) == len(set(EXPECTED_MODELS)) >= 3
    assert all(name.endswith(".onnx") and "/" not in name for name in EXPECTED_MODELS)


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_example_script_runs(script: pathlib.Path, workdir: pathlib.Path):
    copy = workdir / "examples" / script.name
    args = [sys.executable, str(copy)]
    if script.name == "make_example_models.py":
        args.append(str(workdir / "rebuilt"))  # never rewrite the models others are reading
    result = run(args, cwd=workdir)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("name", EXPECTED_MODELS)
def test_example_model_exists_and_checks(name: str):
    model = onnx.load(MODELS / name)
    onnx.checker.check_model(model, full_check=True)


def test_committed_models_are_up_to_date(tmp_path: pathlib.Path):
    result = run(
        [sys.executable, str(EXAMPLES / "make_example_models.py"), str(tmp_path)], cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    for name in EXPECTED_MODELS:
        assert onnx.load(tmp_path / name) == onnx.load(MODELS / name), (
            f"{name} differs from what make_example_models.py builds; rerun it"
        )


# -- README -------------------------------------------------------------------------------
README = (ROOT / "README.md").read_text(encoding="utf-8")
FENCED = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
# Commands that the test suite must not run from inside itself, or that change the
# environment: each is run by CI (.ci/run) instead.
NOT_RUN_HERE = (
    "pip install",
    "python -m pytest",
    "ruff ",
    "mypy",
    "python -m build",
    "python -m twine",
)


def readme_blocks(language: str) -> list[str]:
    return [body for lang, body in FENCED.findall(README) if lang == language]


def readme_commands() -> list[tuple[str, int]]:
    """(command, expected exit code) for each shell line, `&&` chains split."""
    commands = []
    for block in readme_blocks("sh"):
        for line in block.splitlines():
            line, _, comment = line.partition("#")
            expected = re.search(r"exit code (\d+)", comment)
            for command in filter(None, (c.strip() for c in line.split("&&"))):
                if not command.startswith(NOT_RUN_HERE):
                    commands.append((command, int(expected.group(1)) if expected else 0))
    return commands


def test_readme_quick_start_is_exactly_two_commands():
    quick_start = README.split("## Quick start", 1)[1].split("##", 1)[0]
    block = FENCED.search(quick_start).group(2).strip().splitlines()
    assert block == [
        'pip install -e ".[dev]" && maxlower convert examples/models/reduce_max_opset18.onnx '
        "--opset 13",
        "python -m pytest -n auto",
    ]


def test_readme_has_commands_to_run():
    assert any(c.startswith("maxlower convert") for c, _ in readme_commands())
    assert any(c.startswith("maxlower inspect") for c, _ in readme_commands())


# The default tier runs the first README command of each program and subcommand (`maxlower
# convert`, `maxlower lower`, ..., `python examples/....py`) and exit code, each a second or
# more of start-up; the slow tier the others (a command that proves a whole model, `--prove`,
# always: seconds of solving).
FIRST_OF_EACH_COMMAND = tiers.first_of_each(
    [(c, code) for c, code in readme_commands() if "--prove" not in c],
    lambda command: (*command[0].split()[:2], command[1]),
)


@pytest.mark.parametrize(
    ("command", "expected"),
    tiers.split(readme_commands(), keep=FIRST_OF_EACH_COMMAND.__contains__),
    ids=[c for c, _ in readme_commands()],
)
def test_readme_command_runs(command: str, expected: int, workdir: pathlib.Path):
    args = shlex.split(command)
    if args[0] == "maxlower":
        args = [sys.executable, "-m", "maxlower", *args[1:]]
    elif args[0] == "python":
        args = [sys.executable, *args[1:]]
    result = run(args, cwd=workdir)
    assert result.returncode == expected, result.stdout + result.stderr
    if expected:
        assert result.stderr.startswith("maxlower: error: ")
        assert "Traceback" not in result.stderr


@pytest.mark.parametrize("block", readme_blocks("python"), ids=lambda b: b.splitlines()[0])
def test_readme_python_block_runs(block: str, workdir: pathlib.Path):
    result = run([sys.executable, "-c", block], cwd=workdir)
    assert result.returncode == 0, result.stdout + result.stderr


def test_readme_sample_output_matches(workdir: pathlib.Path):
    """The quick start's printed summary is what the command prints."""
    shown = README.split("## Quick start", 1)[1].split("```text\n", 1)[1].split("```", 1)[0]
    result = run(
        [
            sys.executable,
            "-m",
            "maxlower",
            "convert",
            "examples/models/reduce_max_opset18.onnx",
            "--opset",
            "13",
        ],
        cwd=workdir,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == shown
