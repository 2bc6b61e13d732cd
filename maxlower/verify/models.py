"""The two models `maxlower verify` compares: refused before any trial when a caller cannot
feed them alike, or when their inputs are too large to generate.

    load_comparable(ref, cand, verification) both loaded once, then checked
    check_comparable(ref, cand)              the same inputs (names, types) and outputs
    check_verifiable(model, dims, given)     test inputs of at most VERIFY_INPUT_LIMIT bytes
"""

from __future__ import annotations

import math
import os

import onnx_ir as ir

from maxlower.errors import InvalidModelError

# Test inputs the verifier may generate for one trial (all inputs together).
VERIFY_INPUT_LIMIT = 1 << 30
# The sizes the verifier gives a symbolic dim (maxlower.verify.inputs: at most 3).
_LARGEST_SYMBOLIC_SIZE = 3


def check_comparable(reference: ir.Model, candidate: ir.Model) -> None:
    """`maxlower verify` of two models a caller cannot feed alike (other input names or
    element types, other outputs): refused (exit code 2) before any trial, naming the
    first difference. (`maxlower.verify` itself reports such a pair as different.)"""
    ref_inputs, cand_inputs = _fed_inputs(reference), _fed_inputs(candidate)
    differences = [
        f"input {name!r} of the reference is not an input of the candidate"
        for name in ref_inputs.keys() - cand_inputs.keys()
    ] + [
        f"the candidate needs an input {name!r} that the reference does not have"
        for name in cand_inputs.keys() - ref_inputs.keys()
    ]
    differences += [
        f"input {name!r} is {_type_text(ref_inputs[name])} in the reference and "
        f"{_type_text(cand_inputs[name])} in the candidate"
        for name in sorted(ref_inputs.keys() & cand_inputs.keys())
        if ref_inputs[name].type != cand_inputs[name].type
    ]
    ref_outputs = [v.name for v in reference.graph.outputs]
    cand_outputs = [v.name for v in candidate.graph.outputs]
    if ref_outputs != cand_outputs:
        differences.append(f"the outputs differ: reference {ref_outputs}, candidate {cand_outputs}")
    if differences:
        more = f" (and {len(differences) - 1} more)" if len(differences) > 1 else ""
        raise InvalidModelError(
            "the models have different signatures, so they cannot be compared: "
            f"{differences[0]}{more}"
        )


def _fed_inputs(model: ir.Model) -> dict[str, ir.Value]:
    """The graph inputs a caller feeds (an initializer listed as an input has a default)."""
    return {v.name: v for v in model.graph.inputs if v.name not in model.graph.initializers}


def _type_text(value: ir.Value) -> str:
    return str(value.type) if value.type is not None else "untyped"


def check_verifiable(
    model: ir.Model, dims: dict[str, int] | None = None, given: set[str] = frozenset()
) -> None:
    """Refuse to verify a model whose declared input shapes need more than
    VERIFY_INPUT_LIMIT bytes of test inputs per trial (huge static dims); inputs in
    `given` (--inputs) are not generated, and a symbolic dim counts as --dim gives it, or
    as the largest size the verifier gives one."""
    dims = dims or {}
    total, largest = 0, None
    for value in _fed_inputs(model).values():
        if value.name in given or value.shape is None or value.dtype is None:
            continue  # the verifier refuses these itself, or they are given
        sizes = [
            d if isinstance(d, int) else dims.get(d.value, _LARGEST_SYMBOLIC_SIZE)
            for d in value.shape
        ]
        nbytes = math.prod(sizes) * value.dtype.itemsize
        total += nbytes
        if largest is None or nbytes > largest[1]:
            largest = (value, nbytes)
    if total > VERIFY_INPUT_LIMIT:
        value, nbytes = largest
        raise InvalidModelError(
            f"input {value.name!r} is declared {value.dtype}{list(value.shape)}: {nbytes:.3g} "
            f"bytes of test data per trial, over the verifier's {VERIFY_INPUT_LIMIT >> 30} "
            "GiB; give its values with --inputs"
        )


def load_comparable(
    reference: str | os.PathLike, candidate: str | os.PathLike, verification
) -> tuple[ir.Model, ir.Model]:
    """The two models of `maxlower verify`, loaded (once); refused (exit code 2) if a caller
    cannot feed them alike (`check_comparable`) or their inputs are too large to generate
    (`check_verifiable`). `verification` is the command's
    `maxlower.verify.cli.Verification` (its --dim and --inputs count)."""
    from maxlower.pipeline import load_model

    models = load_model(reference), load_model(candidate)
    check_comparable(*models)
    given: set[str] = set()
    if verification.inputs is not None:
        from maxlower.verify.inputs import npz_names

        given = set(npz_names(verification.inputs))
    check_verifiable(models[0], verification.dims, given)
    return models


__all__ = ["VERIFY_INPUT_LIMIT", "check_comparable", "check_verifiable", "load_comparable"]
