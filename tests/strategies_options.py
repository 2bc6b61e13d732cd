"""Hypothesis strategies for option values and profile files that must be refused.

    bad_option_lines()   a command line with one numeric option out of range or odd:
                         NaN, ±inf, 1e400, negative or huge integers, bools, words, for
                         every numeric option of every command (verify, and convert/lower
                         --verify; convert/inspect --opset)
    bad_library_options()  the same for `maxlower.verify`'s keyword arguments (Python
                         values: floats, huge ints, bools, strings, odd ranges and dims)
    bad_profile_texts()  a profile TOML that breaks the schema: a value of the wrong type
                         (a bool where an int goes, an int where a bool goes, ...), a
                         misspelt op, key or type name, deep nesting, a bad name

Every value drawn is invalid by construction, so a test can demand exit code 2 and one
error line of each (tests/test_fuzz_options.py).
"""

from __future__ import annotations

import dataclasses

import onnx
from hypothesis import strategies as st

from maxlower.options import MAX_TRIALS
from maxlower.profiles.rules import OpRule

LATEST = onnx.defs.onnx_opset_version()
RULE_KEYS = [field.name for field in dataclasses.fields(OpRule)]
OPS = sorted({s.name for s in onnx.defs.get_all_schemas_with_history() if s.domain == ""})

# Texts that are no number at all, or not the kind of number an option takes.
_WORDS = st.sampled_from(["", "nan", "NaN", "inf", "-inf", "1e400", "-1e400", "true", "x", "0x10"])
_NON_FINITE = st.sampled_from(["nan", "inf", "-inf", "1e400", "-1e400", "NAN", "Infinity"])
_FRACTIONS = st.floats(allow_nan=False, allow_infinity=False).filter(
    lambda x: not float(x).is_integer()
)


def _integers_outside(low: int, high: int) -> st.SearchStrategy[str]:
    """Text of integers below `low` or above `high` (huge ones included), fractions and
    words."""
    return st.one_of(
        st.integers(max_value=low - 1).map(str),
        st.integers(min_value=high + 1).map(str),
        st.integers(min_value=64, max_value=200).map(lambda k: str(2**k)),
        _FRACTIONS.map(repr),
        _WORDS,
    )


def _floats_outside(low: float, high: float | None, *, above: bool) -> st.SearchStrategy[str]:
    """Text of floats below `low` (or equal, with `above`), above `high`, non-finite, or
    words."""
    below = st.floats(max_value=low, allow_nan=False, allow_infinity=False).filter(
        lambda x: x < low or (above and x <= low)  # (-0.0 >= 0.0)
    )
    parts = [below.map(repr), _NON_FINITE, _WORDS]
    if high is not None:
        parts.append(st.floats(min_value=high, exclude_min=True, allow_infinity=False).map(repr))
    return st.one_of(*parts)


def _bad_ranges() -> st.SearchStrategy[str]:
    finite = st.floats(allow_nan=False, allow_infinity=False, width=64)
    return st.one_of(
        st.tuples(finite, finite)
        .filter(lambda p: p[0] >= p[1])
        .map(lambda p: f"x={p[0]!r}:{p[1]!r}"),
        st.tuples(_NON_FINITE, finite.map(repr)).map(lambda p: f"x={p[0]}:{p[1]}"),
        st.tuples(finite.map(repr), _NON_FINITE).map(lambda p: f"x={p[0]}:{p[1]}"),
        st.floats(min_value=1e308, max_value=1.7e308).map(lambda h: f"x={-h!r}:{h!r}"),
        st.sampled_from(["x", "x=", "x=1", "=0:1", "x=0:", "x=:1", "x=a:b"]),
    )


def _bad_dims() -> st.SearchStrategy[str]:
    return st.one_of(
        st.integers(min_value=2**62 + 1).map(lambda n: f"N={n}"),
        st.integers(max_value=-1).map(lambda n: f"N={n}"),
        _WORDS.map(lambda w: f"N={w}"),
        _FRACTIONS.map(lambda f: f"N={f!r}"),
        st.sampled_from(["N", "=4", "N=٣"]),  # (an Arabic-Indic digit: isdigit, not ASCII)
    )


# option -> strategy of its bad values (as text)
VERIFY_OPTIONS = {
    "--seed": _integers_outside(0, 2**64 - 1),
    "--trials": _integers_outside(1, MAX_TRIALS),
    "--rtol": _floats_outside(0.0, None, above=False),
    "--atol": _floats_outside(0.0, None, above=False),
    "--timeout": _floats_outside(0.0, 86_400.0, above=True),
    "--range": _bad_ranges(),
    "--dim": _bad_dims(),
}
COMMANDS = ("verify", "convert", "lower")


@st.composite
def bad_option_lines(draw) -> tuple[str, list[str]]:
    """(what was drawn, the arguments after the model paths) of one refused command line."""
    command = draw(st.sampled_from([*COMMANDS, "convert --opset", "inspect --opset"]))
    if command.endswith("--opset"):
        value = draw(_integers_outside(1, LATEST))
        return command, [command.split()[0], "{model}", "--opset", value]
    option = draw(st.sampled_from(sorted(VERIFY_OPTIONS)))
    value = draw(VERIFY_OPTIONS[option])
    head = {
        "verify": ["verify", "{model}", "{model}"],
        "convert": ["convert", "{model}", "--opset", "12", "--verify"],
        "lower": ["lower", "{model}", "--profile", "primitives", "--verify"],
    }[command]
    return f"{command} {option}", [*head, option, value]


# --- the library's keyword arguments -----------------------------------------------------

_NOT_NUMBERS = st.one_of(st.booleans(), st.text(max_size=4), st.none(), st.just([1]))
_HUGE_INTS = st.integers(min_value=10**309, max_value=10**400)  # beyond any float


def _python_floats_outside(low: float, high: float | None, *, above: bool):
    parts = [
        st.floats(max_value=low, allow_nan=False).filter(lambda x: x < low or (above and x <= low)),
        st.sampled_from([float("nan"), float("inf"), float("-inf")]),
        _HUGE_INTS,
        _NOT_NUMBERS.filter(lambda v: v is not None),
    ]
    if high is not None:
        parts.append(st.floats(min_value=high, exclude_min=True))
    return st.one_of(*parts)


def _python_integers_outside(low: int, high: int):
    return st.one_of(
        st.integers(max_value=low - 1),
        st.integers(min_value=high + 1),
        st.floats(),  # a float is no integer, even 1.0
        _NOT_NUMBERS.filter(lambda v: v is not None),
    )


_PYTHON_RANGES = st.one_of(
    st.tuples(st.floats(allow_nan=False), st.floats(allow_nan=False)).filter(
        lambda p: not (p[0] < p[1]) or not all(abs(v) < float("inf") for v in p)
    ),
    st.tuples(st.floats(), st.just(float("nan"))),
    st.tuples(_HUGE_INTS.map(lambda n: -n), st.just(0)),
    st.tuples(st.booleans(), st.booleans()),
    st.just((-1.7e308, 1.7e308)),
    st.sampled_from([(0,), (0, 1, 2), "0:1", 5]),
)

# keyword of maxlower.verify -> strategy of values it must refuse
LIBRARY_OPTIONS = {
    "seed": _python_integers_outside(0, 2**64 - 1),
    "trials": _python_integers_outside(1, MAX_TRIALS).filter(lambda v: v is not None),
    "rtol": _python_floats_outside(0.0, None, above=False),
    "atol": _python_floats_outside(0.0, None, above=False),
    "timeout": _python_floats_outside(0.0, 86_400.0, above=True),
    "ranges": _PYTHON_RANGES.map(lambda span: {"x": span}),
    "dims": _python_integers_outside(0, 2**62).map(lambda size: {"N": size}),
}


@st.composite
def bad_library_options(draw) -> dict:
    """One keyword argument of `maxlower.verify` with a value it must refuse."""
    key = draw(st.sampled_from(sorted(LIBRARY_OPTIONS)))
    return {key: draw(LIBRARY_OPTIONS[key])}


# --- profiles ----------------------------------------------------------------------------

_VALID_RULE = {
    "absent": "true",
    "opsets": "[7, 18]",
    "types": '["float32"]',
    "min_rank": "2",
    "select_last_index": "false",
}
# key -> values of a wrong type for it
_WRONG_VALUES = {
    "absent": ["1", "0", '"yes"', "[true]", "{a = 1}", "1.5"],
    "opsets": ["[true, 99]", "[1, false]", "[18, 7]", "[0, 5]", "7", '["7", "18"]', "[1, 2, 3]"],
    "types": ['"float32"', "[1]", "[true]", '["flaot32"]', '[["float32"]]', "{}"],
    "min_rank": ["true", "false", "-1", "1.0", '"2"', "[2]"],
    "select_last_index": ["0", "1", '"false"', "[]"],
}


def _misspelt(name: str, known: list[str]) -> st.SearchStrategy[str]:
    """`name` with a letter dropped, doubled or its case flipped, if that is not in `known`."""

    def variants(text: str) -> list[str]:
        found = [text.lower(), text.upper(), text.swapcase()]
        found += [text[:i] + text[i + 1 :] for i in range(len(text))]
        found += [text[:i] + text[i] + text[i:] for i in range(len(text))]
        return [v for v in dict.fromkeys(found) if v and v not in known and v.isidentifier()]

    return st.sampled_from(variants(name))


@st.composite
def bad_profile_texts(draw) -> tuple[str, str]:
    """(what is wrong, a profile file's text)."""
    kind = draw(st.sampled_from(["wrong-type", "misspelt-op", "misspelt-key", "deep", "name"]))
    op = draw(st.sampled_from(["ArgMax", "ReduceMax", "Max"]))
    rule = dict(_VALID_RULE)
    if op != "ArgMax":
        del rule["select_last_index"]
    head = 'description = "fuzzed"\n'
    if kind == "wrong-type":
        key = draw(st.sampled_from(sorted(rule)))
        rule[key] = draw(st.sampled_from(_WRONG_VALUES[key]))
    elif kind == "misspelt-op":
        op = draw(_misspelt(draw(st.sampled_from(["ArgMax", "ReduceMax", "Max", "Where"])), OPS))
    elif kind == "misspelt-key":
        key = draw(st.sampled_from(sorted(rule)))
        rule[draw(_misspelt(key, RULE_KEYS))] = rule.pop(key)
    elif kind == "deep":  # types takes one list: 2 to 3000 nested ones
        depth = draw(st.integers(2, 3000))
        rule["types"] = "[" * depth + '"float32"' + "]" * depth
    else:  # the name as TOML spells it (a text that breaks TOML is refused too)
        plain = st.characters(exclude_categories=("Cs",), exclude_characters='"\\')
        name = draw(
            st.one_of(
                st.text(plain, max_size=8).map(lambda t: f'"a/{t}"'),
                st.text(plain, max_size=8).map(lambda t: f'"{t}\\n"'),
                st.sampled_from(['"a\\tb"', '".."', '"a\\\\b"', '""', '"' + "é" * 128 + '"']),
                st.integers().map(str),
                st.sampled_from(["true", "[]", "{}", "1.5"]),
            )
        )
        head += f"name = {name}\n"
    body = "".join(f"{key} = {value}\n" for key, value in rule.items())
    return kind, f"{head}[ops.{op}]\n{body}"


__all__ = [
    "COMMANDS",
    "LIBRARY_OPTIONS",
    "VERIFY_OPTIONS",
    "bad_library_options",
    "bad_option_lines",
    "bad_profile_texts",
]
