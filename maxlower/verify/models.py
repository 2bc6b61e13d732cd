"""The two models `maxlower verify` compares: refused before any trial when a caller cannot
feed them alike, or when their inputs are too large to generate.

    load_comparable(ref, cand, verification) both read and prepared once, checked, and
                                             their external tensors read in
    check_comparable(ref, cand)              the same inputs (names, types) and outputs
    check_verifiable(model, dims, given)     test inputs of at most VERIFY_INPUT_LIMIT bytes

The checks read the protobufs' inputs and outputs only (typed as onnx_ir types them, so
that the messages say what onnx_ir would); no whole graph is built for them.
"""

from __future__ import annotations

import math
import os
import pathlib

import onnx
import onnx_ir as ir

from maxlower.errors import InvalidModelError

# Test inputs the verifier may generate for one trial (all inputs together).
VERIFY_INPUT_LIMIT = 1 << 30
# The sizes the verifier gives a symbolic dim (maxlower.verify.inputs: at most 3).
_LARGEST_SYMBOLIC_SIZE = 3


def check_comparable(reference: onnx.ModelProto, candidate: onnx.ModelProto) -> None:
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
    ref_outputs = [v.name for v in reference.graph.output]
    cand_outputs = [v.name for v in candidate.graph.output]
    if ref_outputs != cand_outputs:
        differences.append(f"the outputs differ: reference {ref_outputs}, candidate {cand_outputs}")
    if differences:
        more = f" (and {len(differences) - 1} more)" if len(differences) > 1 else ""
        raise InvalidModelError(
            "the models have different signatures, so they cannot be compared: "
            f"{differences[0]}{more}"
        )


def _fed_inputs(model: onnx.ModelProto) -> dict[str, ir.Value]:
    """The graph inputs a caller feeds (an initializer listed as an input has a default),
    each as the onnx_ir value it would be."""
    defaults = {t.name for t in model.graph.initializer}
    return {info.name: _value(info) for info in model.graph.input if info.name not in defaults}


def _value(info: onnx.ValueInfoProto) -> ir.Value:
    """The input as an onnx_ir value; untyped where onnx_ir cannot read its type (a map),
    as maxlower.serde.deserialize sets such a type aside."""
    try:
        return ir.serde.deserialize_value_info_proto(info, None)
    except ir.serde.SerdeError:
        return ir.Value(name=info.name)


def _type_text(value: ir.Value) -> str:
    return str(value.type) if value.type is not None else "untyped"


def check_verifiable(
    model: onnx.ModelProto, dims: dict[str, int] | None = None, given: set[str] = frozenset()
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
            d
            if isinstance(d, int) and d >= 0
            # a -1 or unnamed dim is a free dim of its own, keyed NAME[AXIS] (inputs.py)
            else dims.get(
                getattr(d, "value", None) or f"{value.name}[{axis}]", _LARGEST_SYMBOLIC_SIZE
            )
            for axis, d in enumerate(value.shape)
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
) -> tuple[onnx.ModelProto, onnx.ModelProto, list[str]]:
    """The two models of `maxlower verify`, each read and prepared once
    (maxlower.pipeline.load_proto) and refused (exit code 2) if a caller cannot feed them
    alike (`check_comparable`) or their inputs are too large to generate
    (`check_verifiable`); then every external tensor read in from its model's own
    directory, as the verifier runs them. Also the paths of the external data files read.
    `verification` is the command's maxlower.cli.verify.Verification (its --dim and
    --inputs count)."""
    from maxlower.external import inlined, location_dirs
    from maxlower.pipeline import load_proto

    paths = pathlib.Path(reference), pathlib.Path(candidate)
    prepared = [load_proto(path) for path in paths]
    check_comparable(*prepared)
    given: set[str] = set()
    if verification.inputs is not None:
        from maxlower.verify.inputs import npz_names

        given = set(npz_names(verification.inputs))
    check_verifiable(prepared[0], verification.dims, given)
    read = []
    for proto, path in zip(prepared, paths):
        read += [os.path.join(d, loc) for loc, d in location_dirs(proto, path.parent).items()]
    ref, cand = (inlined(proto, path.parent) for proto, path in zip(prepared, paths))
    return ref, cand, read


__all__ = ["VERIFY_INPUT_LIMIT", "check_comparable", "check_verifiable", "load_comparable"]
