"""Compare two arrays the way the verifier's verdict needs: exact unless told otherwise.

- dtype and shape must be the same; otherwise nothing else is compared.
- Integers and bools must be identical.
- Floats (float16, bfloat16, float32, float64) must have identical bits, except that NaN equals
  NaN (of any payload) and -0.0 equals +0.0. With `rtol`/`atol`, finite floats may differ by
  `atol + rtol * |reference|` (numpy.isclose); ±inf and NaN must still match exactly.
"""

from __future__ import annotations

import dataclasses

import numpy as np


@dataclasses.dataclass
class Comparison:
    """How one candidate array differs from the reference array."""

    kind: str  # "equal", "dtype", "shape" or "values"
    elements: int = 0  # elements compared
    mismatches: int = 0
    max_difference: float | int | None = None  # over mismatching elements; nan if NaN vs number
    index: tuple[int, ...] | None = None  # first mismatching element
    expected: object = None  # reference value there (or dtype / shape)
    actual: object = None  # candidate value there (or dtype / shape)
    max_ulps: int | None = None  # floats: over mismatching elements both finite
    special: int = 0  # floats: mismatching elements where either is NaN or ±inf

    @property
    def equal(self) -> bool:
        return self.kind == "equal"


def is_float(dtype: np.dtype) -> bool:
    return dtype.kind == "f" or dtype.name == "bfloat16"


def compare(
    expected: np.ndarray, actual: np.ndarray, rtol: float = 0.0, atol: float = 0.0
) -> Comparison:
    if not isinstance(expected, np.ndarray) or not isinstance(actual, np.ndarray):
        # a sequence or map output (ZipMap's list of dicts): the same structure (lengths,
        # keys), then its leaves compared as one array
        (form_e, expected), (form_a, actual) = flatten(expected), flatten(actual)
        if form_e != form_a:
            return Comparison("shape", expected=str(form_e)[:200], actual=str(form_a)[:200])
    expected, actual = np.asarray(expected), np.asarray(actual)
    if expected.dtype != actual.dtype:
        return Comparison("dtype", expected=str(expected.dtype), actual=str(actual.dtype))
    if expected.shape != actual.shape:
        return Comparison("shape", expected=list(expected.shape), actual=list(actual.shape))
    same = equal_elements(expected, actual, rtol, atol)
    e, a = _comparable(expected), _comparable(actual)
    wrong = np.flatnonzero(~same.reshape(-1))
    if wrong.size == 0:
        return Comparison("equal", elements=int(expected.size))
    first = tuple(int(i) for i in np.unravel_index(wrong[0], expected.shape))
    flat_e, flat_a = e.reshape(-1)[wrong], a.reshape(-1)[wrong]
    if is_float(expected.dtype):
        with np.errstate(invalid="ignore", over="ignore"):
            difference = np.abs(flat_e - flat_a)
        both_numbers = ~np.isnan(flat_e) & ~np.isnan(flat_a)
        largest = float(difference[both_numbers].max()) if both_numbers.any() else float("nan")
        ulps, special = ulp_distance(expected.reshape(-1)[wrong], actual.reshape(-1)[wrong])
    else:
        ulps, special = None, 0
        if expected.dtype.itemsize <= 4:
            largest = int(np.abs(flat_e.astype(np.int64) - flat_a.astype(np.int64)).max())
        else:  # Python ints: 64-bit differences do not fit 64 bits
            largest = int(np.abs(flat_e.astype(object) - flat_a.astype(object)).max())
    return Comparison(
        "values",
        elements=int(expected.size),
        mismatches=int(wrong.size),
        max_difference=largest,
        index=first,
        expected=scalar(expected[first]),
        actual=scalar(actual[first]),
        max_ulps=ulps,
        special=special,
    )


_SIGNED = {2: np.int16, 4: np.int32, 8: np.int64}


def ulp_distance(expected: np.ndarray, actual: np.ndarray) -> tuple[int | None, int]:
    """(the largest distance in units in the last place between elements both finite,
    counted in the arrays' own float type; the number of elements where either is NaN or
    ±inf). -0.0 and +0.0 are 0 apart; neighbouring floats 1."""
    e, a = _comparable(expected), _comparable(actual)
    finite = np.isfinite(e) & np.isfinite(a)
    special = int(np.count_nonzero(~finite))
    if not finite.any():
        return None, special
    distance = np.abs(_ordered(expected[finite]) - _ordered(actual[finite]))
    return int(distance.max()), special


def _ordered(array: np.ndarray) -> np.ndarray:
    """Floats as integers in the order of their values (sign-magnitude bits made two's
    complement), as Python ints for float64, whose distances do not fit 64 bits."""
    width = array.dtype.itemsize
    bits = array.view(_SIGNED[width])
    bits = bits.astype(object) if width == 8 else bits.astype(np.int64)
    magnitude = (1 << (8 * width - 1)) - 1
    return np.where(bits >= 0, bits, -(bits & magnitude))


def flatten(value) -> tuple[object, np.ndarray]:
    """(the structure of a sequence / map / tensor value, its leaves as one 1-D array)."""
    leaves: list[np.ndarray] = []

    def walk(item) -> object:
        if isinstance(item, dict):
            keys = sorted(item)
            return ("map", tuple(keys), tuple(walk(item[k]) for k in keys))
        if isinstance(item, list | tuple):
            return ("sequence", tuple(walk(x) for x in item))
        array = np.asarray(item)
        leaves.append(array.reshape(-1))
        return ("tensor", str(array.dtype), array.shape)

    form = walk(value)
    flat = np.concatenate(leaves) if leaves else np.zeros(0, dtype=np.float64)
    return form, flat


def equal_elements(
    expected: np.ndarray, actual: np.ndarray, rtol: float = 0.0, atol: float = 0.0
) -> np.ndarray:
    """Elementwise verdict for two arrays of one dtype and shape (see the module docstring)."""
    if not is_float(expected.dtype):
        return np.asarray(expected == actual)
    e, a = _comparable(expected), _comparable(actual)
    same = (e == a) | (np.isnan(e) & np.isnan(a))
    if rtol or atol:
        same |= np.isfinite(e) & np.isfinite(a) & np.isclose(a, e, rtol=rtol, atol=atol)
    return same


def _comparable(array: np.ndarray) -> np.ndarray:
    """Floats as float64 (exact for every float type), integers and bools as they are."""
    return array.astype(np.float64) if is_float(array.dtype) else array


def scalar(value) -> float | int | bool:
    """A numpy element as a plain Python number (bfloat16 and float16 via float)."""
    value = np.asarray(value)
    if value.dtype == np.bool_:
        return bool(value)
    if is_float(value.dtype):
        return float(value.astype(np.float64))
    return int(value)
