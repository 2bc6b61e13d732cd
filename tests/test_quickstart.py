"""What a newcomer does: the README's quick start, in its order, on a fresh copy of the repository.

Its first command writes its output into examples/models/, beside the committed example models.
The tests that use every example model must then still pass, and must not test that output too:
they take the models from tests/example_models.py, never from a listing of that folder.
"""

from __future__ import annotations

import os
import pathlib
import re
import shlex
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
FENCED = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
CACHES = {"__pycache__", ".pytest_cache", ".hypothesis", ".ruff_cache"}

# The tests, run in the copy after the quick start's first command, that use every example
# model (the whole modules take about 70 s on 2 cores; these about 35 s):
IN_THE_COPY = (
    # parametrized over the example models (with family cases)
    "tests/test_io.py::test_loaded_types_are_those_of_the_shape_inference_pass",
    # the example models are in its corpus; about 25 s, but it is the one that compares them
    "tests/test_io_sparse.py::test_the_sparse_path_writes_what_the_full_path_writes",
    # parametrized over the example models
    "tests/test_verify.py::test_a_model_is_equivalent_to_itself",
    # the example models are its seeds (its default-tier item, at the slow profile's budget)
    "tests/test_fuzz_files.py::test_damaged_files_end_in_a_clean_exit",
    # test_examples.py: the tests of the example models, and those whose `workdir` copies
    # them; its other README commands (about 20 s) run in that same `workdir`
    "tests/test_examples.py::test_there_are_examples",
    "tests/test_examples.py::test_example_model_exists_and_checks",
    "tests/test_examples.py::test_committed_models_are_up_to_date",
    "tests/test_examples.py::test_example_script_runs",
    "tests/test_examples.py::test_readme_sample_output_matches",
)


def quick_start() -> tuple[str, list[str]]:
    """The quick start's section text and its command lines, as the README shows them."""
    section = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    return section, FENCED.search(section).group(2).strip().splitlines()


def quick_start_convert() -> list[str]:
    """The `maxlower convert ...` part of the quick start's first line (after `pip install`)."""
    _, lines = quick_start()
    parts = [part.strip() for part in lines[0].split("&&")]
    converts = [part for part in parts if part.startswith("maxlower convert ")]
    assert len(converts) == 1, f"no single `maxlower convert` in the quick start's {lines[0]!r}"
    return shlex.split(converts[0])


def quick_start_pytest() -> list[str]:
    """The quick start's second line, `python -m pytest ...`."""
    _, lines = quick_start()
    args = shlex.split(lines[1])
    assert args[:3] == ["python", "-m", "pytest"], lines[1]
    return args


def stated_output() -> str:
    """The file the README says the first command writes."""
    section, _ = quick_start()
    return re.search(r"The first command writes `([^`]+)`", section).group(1)


def tracked_files() -> list[str] | None:
    """The files a clone of this checkout has (their content as in the working tree), or None
    when this is not a git checkout."""
    try:
        result = subprocess.run(
            ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True, timeout=60
        )
    except (OSError, subprocess.CalledProcessError):
        return None
    names = [name for name in result.stdout.decode().split("\0") if name]
    return [name for name in names if (ROOT / name).is_file()]  # not those deleted since


def fresh_copy(destination: pathlib.Path) -> pathlib.Path:
    names = tracked_files()
    if names is None:  # an unpacked sdist, say: everything but caches and build output
        shutil.copytree(
            ROOT,
            destination,
            ignore=shutil.ignore_patterns(".git", "*.egg-info", "build", "dist", *CACHES),
        )
        stale = destination / stated_output()
        stale.unlink(missing_ok=True)  # the quick start's output, if it was run here
        return destination
    for name in names:
        target = destination / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, target)
    return destination


def files(tree: pathlib.Path) -> set[str]:
    """Every file under `tree`, relative, caches left out."""
    found = set()
    for directory, subdirectories, names in os.walk(tree):
        subdirectories[:] = [name for name in subdirectories if name not in CACHES]
        found |= {(pathlib.Path(directory) / name).relative_to(tree).as_posix() for name in names}
    return found


def run(args: list[str], cwd: pathlib.Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)


def quick_start_first_command(tmp_path: pathlib.Path) -> tuple[pathlib.Path, dict[str, str]]:
    """A fresh copy in tmp_path, and the quick start's first command run in it, checked: it
    writes what the README says. Returns the copy and the environment that runs it."""
    copy = fresh_copy(tmp_path / "repo")
    # `python -m` in the copy imports the copy's maxlower, passes and tests, not the
    # editable install's.
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["PYTHONPATH"] = str(copy)
    where = run(
        [
            sys.executable,
            "-c",
            "import maxlower, passes, tests.example_models as e; "
            "print(maxlower.__file__, passes.__file__, e.MODELS_DIR, sep='\\n')",
        ],
        copy,
        env,
    )
    assert where.returncode == 0, where.stderr
    assert all(
        pathlib.Path(line).resolve().is_relative_to(copy.resolve())
        for line in where.stdout.splitlines()
    ), where.stdout
    before = files(copy)

    # 1. `maxlower convert ...`, exactly as the quick start shows it.
    convert = quick_start_convert()
    result = run([sys.executable, "-m", "maxlower", *convert[1:]], copy, env)
    assert result.returncode == 0, result.stdout + result.stderr
    output = stated_output()
    assert output.startswith("examples/models/")  # what makes this test worth having
    assert files(copy) == before | {output}, "the first command writes what the README says"
    assert result.stdout.rstrip().endswith(f"wrote {output}")
    return copy, env


def test_the_quick_starts_first_command_writes_what_the_readme_says(tmp_path: pathlib.Path):
    """The default tier's part of the test below: its first step."""
    quick_start_first_command(tmp_path)


@pytest.mark.slow  # runs the suite's collection and the tests that use every example model
def test_the_quick_start_then_the_tests_on_a_fresh_copy(tmp_path: pathlib.Path):
    copy, env = quick_start_first_command(tmp_path)
    output = stated_output()
    after_convert = files(copy)

    # No test, in any module of either tier (docs/testing.md), is parametrized over the new file.
    pytest_args = [sys.executable, *quick_start_pytest()[1:], "-p", "no:cacheprovider"]
    both_tiers = ["-m", "slow or not slow"]
    collected = run([*pytest_args, "--collect-only", "-q", *both_tiers, "tests"], copy, env)
    assert collected.returncode == 0, collected.stdout[-3000:] + collected.stderr[-3000:]
    name = pathlib.PurePosixPath(output).name
    assert [line for line in collected.stdout.splitlines() if name in line] == []

    # 2. `python -m pytest`: the tests that use every example model.
    basetemp = tmp_path / "basetemp"  # not the outer run's pytest-of-<user> directory
    # (the default tier's items, at the slow tier's budgets: as many damaged files or more
    # than before the tiers, when this run asked for 100)
    budgets = ["--hypothesis-profile=slow"]
    tested = run([*pytest_args, f"--basetemp={basetemp}", "-q", *budgets, *IN_THE_COPY], copy, env)
    assert tested.returncode == 0, tested.stdout[-6000:] + tested.stderr[-3000:]
    # ... and they wrote nothing into the tree (README commands run in copies of examples/).
    assert files(copy) == after_convert
