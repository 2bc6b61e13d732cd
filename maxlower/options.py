"""The verifier's numeric options, checked in one place for every door: `maxlower verify`,
`convert --verify`, `lower --verify` (through the click type `NUMBER`) and the library's
`maxlower.verify` (through `check_options`), so that each refuses a value the same way, as
InvalidModelError (exit code 2, one line), before anything runs.

    --seed S            an integer, 0 <= S < 2^64 (numpy's seed sequence takes no negatives)
    --trials N          an integer, 1 <= N <= 100,000
    --rtol / --atol X   a finite float >= 0 (NaN would pass every comparison)
    --timeout T         seconds per run of one model on one trial, finite, 0 < T <= 86,400
    --range NAME=L:H    finite L < H whose width H - L is finite too (numpy draws from it)
    --dim NAME=SIZE     an integer, 0 <= SIZE <= 2^62
    --input-shapes NAME:D1,D2,...   each D as --dim's SIZE

Python's bool is an int, and a float may be NaN, ±inf or (from text such as 1e400) inf:
each of these is refused where it is not a value of the option.
"""

from __future__ import annotations

import dataclasses
import math
import numbers

import click

from maxlower.errors import InvalidModelError

DEFAULT_TIMEOUT = 10.0
MAX_TRIALS = 100_000


@dataclasses.dataclass(frozen=True)
class Bounds:
    """What one option takes: an integer or a finite float, within [low, high] (`above`:
    strictly greater than low), said as `text`."""

    integer: bool
    low: float
    high: float
    text: str
    above: bool = False


OPTIONS = {
    "--seed": Bounds(True, 0, 2**64 - 1, "an integer from 0 to 2^64-1"),
    "--trials": Bounds(True, 1, MAX_TRIALS, f"an integer from 1 to {MAX_TRIALS:,}"),
    "--rtol": Bounds(False, 0.0, math.inf, "a finite number >= 0"),
    "--atol": Bounds(False, 0.0, math.inf, "a finite number >= 0"),
    "--timeout": Bounds(False, 0.0, 86_400.0, "seconds, a number > 0 and <= 86400", above=True),
    "--dim": Bounds(True, 0, 2**62, "an integer from 0 to 2^62"),
    # --verify of an expanded function op: the original kernel's largest distance in ulps
    "--expanded-ulps": Bounds(True, 0, 2**64, "an integer from 0 to 2^64"),
    # maxlower prove: bounded shapes (every element is a solver term)
    "--max-dim": Bounds(True, 0, 64, "an integer from 0 to 64"),
    "--prove-dim": Bounds(True, 0, 4096, "an integer from 0 to 4096"),
    # convert / lower --prove: the site prover's --max-dim and its timeout per site
    "--prove-max-dim": Bounds(True, 0, 64, "an integer from 0 to 64"),
    "--prove-timeout": Bounds(
        False, 0.0, 86_400.0, "seconds, a number > 0 and <= 86400", above=True
    ),
}


def check_number(flag: str, value: object, label: str | None = None) -> int | float:
    """`value` if it is what `flag` (a key of OPTIONS) takes, else InvalidModelError naming
    it (`label`, say "--dim batch", stands for the flag in the message)."""
    bounds = OPTIONS[flag]
    shown = f"{label or flag} {repr(value) if bounds.integer else _number(value)}"
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InvalidModelError(f"{shown}: expected {bounds.text}")
    if bounds.integer and not isinstance(value, numbers.Integral):
        raise InvalidModelError(f"{shown}: expected {bounds.text}")
    if not bounds.integer and not _finite(value):
        raise InvalidModelError(f"{shown}: expected {bounds.text}, not NaN or infinite")
    low_ok = value > bounds.low if bounds.above else value >= bounds.low
    if not (low_ok and value <= bounds.high):
        raise InvalidModelError(f"{shown}: expected {bounds.text}")
    return int(value) if bounds.integer else float(value)


def check_range(name: str, low: object, high: object) -> tuple[float, float]:
    """A --range NAME=LOW:HIGH, as floats; InvalidModelError unless LOW < HIGH, both finite
    and HIGH - LOW finite (numpy cannot draw from a wider span)."""
    shown = f"--range {name}={_number(low)}:{_number(high)}"
    numeric = all(isinstance(v, numbers.Real) and not isinstance(v, bool) for v in (low, high))
    if not numeric or not all(_finite(v) for v in (low, high)):
        raise InvalidModelError(f"{shown}: expected finite numbers LOW < HIGH")
    if not low < high:
        raise InvalidModelError(f"{shown}: expected LOW < HIGH (values are drawn from [LOW, HIGH))")
    if not math.isfinite(float(high) - float(low)):
        raise InvalidModelError(f"{shown}: HIGH - LOW overflows a float; narrow the range")
    return float(low), float(high)


def check_input_shapes(shapes) -> dict[str, tuple[int, ...]]:
    """--input-shapes NAME:D1,D2,...: {input: its shape}, each size as --dim takes it."""
    checked = {}
    for name, shape in (shapes or {}).items():
        if isinstance(shape, str | bytes) or not isinstance(shape, tuple | list):
            raise InvalidModelError(
                f"--input-shapes {name}: expected a sequence of sizes, not {shape!r}"[:200]
            )
        checked[name] = tuple(
            check_number("--dim", size, f"--input-shapes {name} axis {axis}")
            for axis, size in enumerate(shape)
        )
    return checked


def check_options(
    *, seed, trials, rtol, atol, timeout, ranges, dims
) -> tuple[dict[str, tuple[float, float]], dict[str, int]]:
    """Every numeric option of `maxlower.verify`, checked; the ranges and dims as floats
    and ints (--input-shapes: `check_input_shapes`)."""
    check_number("--seed", seed)
    if trials is not None:
        check_number("--trials", trials)
    check_number("--rtol", rtol)
    check_number("--atol", atol)
    check_number("--timeout", timeout)
    checked_ranges = {}
    for name, span in (ranges or {}).items():
        if not isinstance(span, tuple | list) or len(span) != 2:
            raise InvalidModelError(f"--range {name}: expected a pair (LOW, HIGH), not {span!r}")
        checked_ranges[name] = check_range(name, *span)
    checked_dims = {
        name: check_number("--dim", size, f"--dim {name}") for name, size in (dims or {}).items()
    }
    return checked_ranges, checked_dims


class Number(click.ParamType):
    """A click type for one numeric option of OPTIONS: parsed from text and checked by
    `check_number`, so the command line refuses what the library refuses."""

    def __init__(self, flag: str) -> None:
        self.flag = flag
        self.name = "integer" if OPTIONS[flag].integer else "number"

    def convert(self, value, param, ctx):
        if not isinstance(value, str):
            text = value
        else:
            text = _parse(value, OPTIONS[self.flag].integer)
            if text is None:
                self.fail(f"{self.flag} {value!r}: expected {OPTIONS[self.flag].text}", param, ctx)
        try:
            return check_number(self.flag, text)
        except InvalidModelError as error:
            self.fail(str(error), param, ctx)


def _finite(value: numbers.Real) -> bool:
    try:
        return math.isfinite(value)
    except OverflowError:  # an int beyond any float (10**400)
        return False


def _parse(text: str, integer: bool) -> int | float | None:
    try:
        return int(text, 10) if integer else float(text)
    except ValueError:
        return None


def _number(value: object) -> str:
    """A value as a message shows it: short, and an integral float without its .0."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e16:
        text = str(int(value))
    else:
        text = repr(value) if isinstance(value, str) else str(value)
    return text if len(text) <= 40 else f"{text[:37]}..."
