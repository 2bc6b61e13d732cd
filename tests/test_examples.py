"""The examples run, the committed example models are valid and up to date, and every
command and code block in README.md and docs/*.md works as shown."""

from __future__ import annotations

import pathlib
import re
import shlex
import shutil
import subprocess
import sys

import onnx
import pytest

from tests import doc_pages, tiers
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


# -- README and docs/ ---------------------------------------------------------------------
README = doc_pages.text(doc_pages.README)
FENCED = doc_pages.FENCED
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


def page_name(page: pathlib.Path) -> str:
    return page.relative_to(ROOT).as_posix()


def documented_commands() -> list[tuple[str, list[str], int]]:
    """(page, commands, expected exit code of the last) for each shell line of README.md and
    docs/*.md: the commands of one `&&` chain run in order in one copy, and a line shown on
    several pages runs once."""
    lines, seen = [], set()
    for page, block in doc_pages.blocks("sh"):
        for line in block.splitlines():
            line, _, comment = line.partition("#")
            expected = re.search(r"exit code (\d+)", comment)
            commands = [c.strip() for c in line.split("&&") if c.strip()]
            commands = [c for c in commands if not c.startswith(NOT_RUN_HERE)]
            code = int(expected.group(1)) if expected else 0
            if commands and (tuple(commands), code) not in seen:
                seen.add((tuple(commands), code))
                lines.append((page_name(page), commands, code))
    return lines


def python_blocks() -> list[tuple[str, str]]:
    return [(page_name(page), body) for page, body in doc_pages.blocks("python")]


def test_readme_quick_start_is_exactly_two_commands():
    quick_start = README.split("## Quick start", 1)[1].split("##", 1)[0]
    block = FENCED.search(quick_start).group(2).strip().splitlines()
    assert block == [
        'pip install -e ".[dev]" && maxlower convert examples/models/reduce_max_opset18.onnx '
        "--opset 13",
        "python -m pytest -n auto",
    ]


def test_readme_shows_every_command_and_every_page_has_commands_to_run():
    readme = [" && ".join(c) for page, c, _ in documented_commands() if page == "README.md"]
    for command in ("convert", "inspect", "lower", "verify", "prove"):
        assert any(f"maxlower {command} " in line for line in readme), command
    assert "\n$ maxlower check " in README  # shown with its output: tests/test_check.py
    pages = {page for page, _, _ in documented_commands()}
    assert {"README.md", "docs/cli.md", "docs/proof.md", "docs/development.md"} <= pages


# The default tier runs the first README command of each program and subcommand (`maxlower
# convert`, `maxlower lower`, ..., `python examples/....py`; of a chain, its last command)
# and exit code, each a second or more of start-up; the slow tier the others (a command
# that proves a whole model, `--prove`, always: seconds of solving).
FIRST_OF_EACH_COMMAND = tiers.first_of_each(
    [
        (tuple(commands), code)
        for _, commands, code in documented_commands()
        if not any("--prove" in c for c in commands)
    ],
    lambda line: (tuple(line[0][-1].split()[:2]), line[1]),  # the command a line documents
)


@pytest.mark.parametrize(
    ("page", "commands", "expected"),
    tiers.split(
        documented_commands(), keep=lambda line: (tuple(line[1]), line[2]) in FIRST_OF_EACH_COMMAND
    ),
    ids=[f"{page}: {' && '.join(commands)}" for page, commands, _ in documented_commands()],
)
def test_documented_command_runs(
    page: str, commands: list[str], expected: int, workdir: pathlib.Path
):
    for number, command in enumerate(commands, 1):
        args = shlex.split(command)
        if args[0] == "maxlower":
            args = [sys.executable, "-m", "maxlower", *args[1:]]
        elif args[0] == "python":
            args = [sys.executable, *args[1:]]
        result = run(args, cwd=workdir)
        wanted = expected if number == len(commands) else 0
        assert result.returncode == wanted, result.stdout + result.stderr
    if expected:
        assert result.stderr.startswith("maxlower: error: ")
        assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("page", "block"),
    # the README's blocks in the default tier (each a few seconds); the other pages' in the slow
    tiers.split(python_blocks(), keep=lambda pair: pair[0] == "README.md"),
    ids=[f"{page}: {block.splitlines()[0]}" for page, block in python_blocks()],
)
def test_documented_python_block_runs(page: str, block: str, workdir: pathlib.Path):
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
