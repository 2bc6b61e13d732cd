"""Restore each bug the fuzz suite found, from git history, and ask today's prover about it.

    python benchmarks/known_bugs_prove.py [--write-fixtures] [--markdown]

For every bug (tests/test_fuzz_pipeline.py: KNOWN_BUGS and the "found by this suite" tests
beside them) this takes the parent of the commit that fixed it (`git archive` into
/tmp/scratch-<bug>), runs that old converter on the bug's model in a subprocess
(PYTHONPATH=the scratch copy), and runs today's `maxlower prove ORIGINAL OLD-OUTPUT`
(the command line, so the exit code is the one a user sees). It prints a table: bug, fix
commit, what the old code produced, prove's verdict, time.

--write-fixtures keeps each pair (tests/fixtures/known_bugs/<bug>.{reference,buggy}.onnx and
manifest.json) for tests/test_prove_known_bugs.py, which needs no git history.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import pathlib
import subprocess
import sys
import tarfile
import tempfile
import time

import onnx

ROOT = pathlib.Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "known_bugs"
sys.path.insert(0, str(ROOT))

from tests.test_fuzz_pipeline import FOUND_BUGS, KNOWN_BUGS  # noqa: E402

# (bug, fix commit, model text, target opset, profile to lower for or None). The first
# five are KNOWN_BUGS; the others are the tests after them that name the bug they found.
BUGS = [
    ("loop_unused_scan_output_dropped", "bf3be8e", *KNOWN_BUGS["loop_unused_scan_output_dropped"]),
    ("function_body_below_opset_6", "bf3be8e", *KNOWN_BUGS["function_body_below_opset_6"]),
    ("bfloat16_if_relabelled_below_16", "bf3be8e", *KNOWN_BUGS["bfloat16_if_relabelled_below_16"]),
    (
        "if_branch_shapes_differ_below_11",
        "bf3be8e",
        *KNOWN_BUGS["if_branch_shapes_differ_below_11"],
    ),
    (
        "if_branch_shapes_differ_only_after_conversion",
        "940bf3b",
        *KNOWN_BUGS["if_branch_shapes_differ_only_after_conversion"],
    ),
]
FIXES = {  # the tests after KNOWN_BUGS that name the bug they found: the fix commit
    "input_constant_renamed": "bf3be8e",
    "float_max_stacked_into_reduce_max_drops_nan": "9c88e73",
    "generated_dim_names_collide": "eb3376b",
}
BUGS = [(*bug, None) for bug in BUGS] + [(name, FIXES[name], *FOUND_BUGS[name]) for name in FIXES]

# ONNX leaves a NaN in ReduceMax unspecified and onnx.reference keeps it: this bug (a NaN
# onnxruntime dropped) is a difference only under that reading, `prove --strict`.
STRICT = {"float_max_stacked_into_reduce_max_drops_nan"}

# Runs inside the old tree: convert (and lower) the model on stdin, write the result. A
# crash there was the old code's own final check failing on the model it had built: the
# checks are wrapped so that the model they failed on is kept (exit 4), which is the wrong
# model the bug produced.
OLD_CONVERTER = """
import sys, onnx, onnx.checker, onnx.shape_inference, maxlower
from maxlower.lower import lower
failed = []
def keeping(check):
    def wrapped(model, *args, **kwargs):
        try:
            return check(model, *args, **kwargs)
        except Exception:
            if isinstance(model, onnx.ModelProto):
                failed.append(model.SerializeToString())
            raise
    return wrapped
onnx.checker.check_model = keeping(onnx.checker.check_model)
onnx.shape_inference.infer_shapes = keeping(onnx.shape_inference.infer_shapes)
import maxlower.io
if hasattr(maxlower.io, "check_and_infer"):  # the pipeline's one full check, later on
    maxlower.io.check_and_infer = keeping(maxlower.io.check_and_infer)
model = onnx.load_from_string(sys.stdin.buffer.read())
target, profile, out = int(sys.argv[1]), sys.argv[2], sys.argv[3]
try:
    result = maxlower.convert(model, target)
    if profile:
        result = lower(result, profile)
except maxlower.ConversionError as error:
    print(str(error).splitlines()[0])
    sys.exit(3)
except Exception as error:
    print(type(error).__name__ + ": " + str(error).strip().splitlines()[0])
    if failed:
        open(out, "wb").write(failed[-1])
    sys.exit(4)
onnx.save(result, out)
"""


def scratch_copy(bug: str, fix: str) -> tuple[pathlib.Path, str]:
    """The tree before `fix` (its parent), unpacked in /tmp/scratch-<bug>; and the parent."""
    parent = git("rev-parse", "--short", f"{fix}^")
    where = pathlib.Path(tempfile.gettempdir()) / f"scratch-{bug}"
    if not (where / ".commit").exists() or (where / ".commit").read_text() != parent:
        where.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(
            ["git", "archive", parent], cwd=ROOT, check=True, capture_output=True
        ).stdout
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(where, filter="data")
        (where / ".commit").write_text(parent)
    return where, parent


def git(*args: str) -> str:
    done = subprocess.run(["git", *args], cwd=ROOT, check=True, capture_output=True, text=True)
    return done.stdout.strip()


def run_old(tree: pathlib.Path, model: onnx.ModelProto, target: int, profile, out) -> str:
    """What the old code did: 'a model' (written to `out`), 'refused: ...' or 'crashed: ...'."""
    env = dict(os.environ, PYTHONPATH=str(tree))
    done = subprocess.run(
        [sys.executable, "-c", OLD_CONVERTER, str(target), profile or "", str(out)],
        input=model.SerializeToString(),
        capture_output=True,
        cwd=tree,
        env=env,
    )
    if done.returncode == 0:
        return "a model"
    if done.returncode == 3:
        return "refused: " + done.stdout.decode().strip()
    message = done.stdout.decode().strip() or done.stderr.decode().strip().splitlines()[-1]
    message = message.replace("[ShapeInferenceError] ", "").replace("Inference error(s): ", "")
    kept = "; kept: the model its final check failed on" if out.exists() else ""
    return f"crashed, exit 4 ({message[:110]}){kept}"


def validity(model: onnx.ModelProto) -> str:
    try:
        onnx.checker.check_model(model, full_check=True)
    except Exception:  # the checker's own classes differ by version
        return "invalid"
    return "valid"


def prove_cli(reference: pathlib.Path, candidate: pathlib.Path, *flags: str):
    """Today's `maxlower prove`: exit code, its report's lines, seconds."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "maxlower", "prove", str(reference), str(candidate), *flags],
        capture_output=True,
        text=True,
        env=env,
        cwd=candidate.parent,
    )
    seconds = time.perf_counter() - start
    return done.returncode, (done.stdout + done.stderr).strip().splitlines(), seconds


def _verdict(lines: list[str]) -> str:
    """The head of the report, and a counterexample's line and replay, in short."""
    head = lines[0].split(": ", 1)[-1].split(" (NaN equal")[0] if lines else ""
    detail = [
        line.strip()
        for line in lines[1:]
        if line.strip().startswith(("counterexample at", "replayed"))
    ]
    return "; ".join([head, *detail]).replace("|", "/")


def _version(distribution: str) -> str:
    from importlib.metadata import version

    return version(distribution)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write-fixtures", action="store_true")
    args = parser.parse_args()
    work = pathlib.Path(tempfile.mkdtemp(prefix="known-bugs-"))
    manifest = {}
    rows = []
    for bug, fix, text, target, profile in BUGS:
        tree, parent = scratch_copy(bug, fix)
        model = onnx.parser.parse_model(text)
        reference, buggy = work / f"{bug}.reference.onnx", work / f"{bug}.buggy.onnx"
        onnx.save(model, reference)
        step = f"convert {target}" + (f", lower {profile}" if profile else "")
        produced = run_old(tree, model, target, profile, buggy)
        verdict, seconds, code = "-", 0.0, None
        if buggy.exists():
            produced = f"{produced}: {validity(onnx.load(buggy))}"
            flags = ["--strict"] if bug in STRICT else []
            code, lines, seconds = prove_cli(reference, buggy, *flags)
            verdict = f"`prove{' --strict' if flags else ''}` exit {code}: {_verdict(lines)}"
        rows.append((bug, fix, parent, step, produced, verdict, seconds))
        manifest[bug] = {
            "fix": fix,
            "parent": parent,
            "step": step,
            "target": target,
            "profile": profile,
            "old_code": produced,
            "prove_exit": code,
        }
        if args.write_fixtures:
            FIXTURES.mkdir(parents=True, exist_ok=True)
            onnx.save(model, FIXTURES / reference.name)
            if buggy.exists():
                (FIXTURES / buggy.name).write_bytes(buggy.read_bytes())
    if args.write_fixtures:
        (FIXTURES / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    print(
        f"- Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; python "
        f"{sys.version.split()[0]}, onnx {onnx.__version__}, "
        f"onnxruntime {_version('onnxruntime')}, z3 {_version('z3-solver')}; "
        f"maxlower at git {git('rev-parse', '--short', 'HEAD')}"
    )
    print("- Command: `python benchmarks/known_bugs_prove.py --write-fixtures`\n")
    print("| bug | fix (old code = its parent) | old code: step → result | prove | time (s) |")
    print("|---|---|---|---|---:|")
    for bug, fix, parent, step, produced, verdict, seconds in rows:
        print(f"| {bug} | {fix} ({parent}) | {step} → {produced} | {verdict} | {seconds:.2f} |")


if __name__ == "__main__":
    main()
