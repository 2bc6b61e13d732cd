"""Seeded inputs for the verifier: trials of sizes and values that find wrong rewrites.

A *trial* gives every symbolic dim a size and every graph input values of one kind:

    ties      three distinct values, many repeats     (ArgMax tie-breaking, Max of equals)
    specials  NaN, ±0, ±inf, the dtype's lowest and   (NaN handling, empty-set fill values,
              highest, ±smallest subnormal, ties        integer extremes)
    random    the dtype's whole range                 (lossy casts: most int32 values do
                                                        not survive float32)
    pow2      just below, at and above powers of two  (2^24 and 2^53 where the dtype holds
              that fit the dtype                        them: the edges of exact casts)

Sizes: the same symbolic dim has the same size in every input. The default schedule
(`schedule`) varies sizes between trials (all 3; distinct sizes 2, 3, 4, ...; all 1) and
adds one trial per symbolic dim with that dim at 0, so empty reductions are exercised
where the graph allows them (a trial the reference model cannot run is skipped). Static
dims are what the model says.

An input that flows into a ReduceMax or ReduceMin `axes` input (directly or through Identity, Cast,
Reshape, Squeeze, Unsqueeze, Flatten or a function call) gets valid axes instead of random
integers, also when an initializer gives it a default (a caller may override it, so a
rewrite must hold for every value; other inputs with defaults run with the default):
every trial is run once per subset of the data's axes (positive, then negative form, and
the empty list), limited to the declared length of the axes input if static.

User overrides: fixed arrays (`--inputs file.npz`, which also fix the sizes of the dims
they cover), per-input value ranges `[low, high)` (`--range ids=0:100`), and fixed dim
sizes (`--dim batch=4`). Every generator draws from `numpy.random.default_rng([seed,
trial])`, so a trial is reproduced by its seed and number alone.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import math
import os
import zipfile
import zlib
from collections.abc import Collection, Iterator, Mapping

import ml_dtypes
import numpy as np
import onnx
import onnx_ir as ir

from maxlower.errors import InvalidModelError
from maxlower.files import INPUTS_FILE_LIMIT, open_input
from maxlower.verify.accepts import Accepted, graph_inputs_behind
from passes.errors import concise
from passes.extremum import FAMILIES
from passes.graph_utils import infer_shapes

KINDS = ("ties", "specials", "random", "pow2")
# (value kind, size strategy) of the first trials; then one "zero" trial per symbolic dim.
SCHEDULE_PREFIX = (
    ("ties", "same"),
    ("specials", "distinct"),
    ("random", "distinct"),
    ("pow2", "same"),
    ("ties", "ones"),
    ("specials", "same"),
    ("ties", "distinct"),
)
SAME_SIZE = 3
MAX_ZERO_TRIALS = 8
MAX_AXES_VARIANTS = 64
# Ops that hand an axes list on unchanged, so that a graph input behind them is still axes.
_AXES_PASS_THROUGH = {"Identity", "Cast", "CastLike", "Reshape", "Squeeze", "Unsqueeze", "Flatten"}
_SUPPORTED = {
    onnx.TensorProto.BOOL,
    *(getattr(onnx.TensorProto, f"{s}INT{w}") for s in ("", "U") for w in (8, 16, 32, 64)),
    onnx.TensorProto.FLOAT16,
    onnx.TensorProto.BFLOAT16,
    onnx.TensorProto.FLOAT,
    onnx.TensorProto.DOUBLE,
}


@dataclasses.dataclass(frozen=True)
class InputSpec:
    """One graph input: its numpy dtype and dims (an int, or the key of a symbolic dim)."""

    name: str
    dtype: np.dtype
    dims: tuple[int | str, ...]


@dataclasses.dataclass
class Trial:
    """One set of feeds, and how it was made."""

    index: int  # the data trial, 0-based; axes variants of one trial share it
    kind: str
    sizes: dict[str, int]
    seed: int
    axes: dict[str, list[int]]
    feeds: dict[str, np.ndarray]

    @property
    def label(self) -> str:
        parts = [self.kind]
        if self.sizes:
            parts.append(" ".join(f"{k}={v}" for k, v in self.sizes.items()))
        parts.extend(f"{name}={values}" for name, values in self.axes.items())
        return f"trial {self.index} ({', '.join(parts)})"


def input_specs(
    model: onnx.ModelProto,
    given: Mapping[str, np.ndarray] | None = None,
    overridden: Collection[str] = (),
) -> list[InputSpec]:
    """The graph inputs that need feeds. An initializer listed as an input has a default
    and is run with it, unless it is in `overridden` (the axes inputs, `axes_inputs`),
    which are fed like the others: a caller may override a default, so a rewrite must
    hold for every value (the default is among the axes tried).

    An input with values in `given` may be of any type and need not declare a shape: the
    array says what it is. Any other must be a tensor of a type the verifier generates.
    """
    given = given or {}
    initializers = {t.name for t in model.graph.initializer}
    specs = []
    for value in model.graph.input:
        if value.name in initializers and value.name not in overridden and value.name not in given:
            continue
        tensor_type = value.type.tensor_type
        is_tensor = value.type.WhichOneof("value") == "tensor_type"
        if value.name in given and not (
            is_tensor and tensor_type.HasField("shape") and tensor_type.elem_type in _SUPPORTED
        ):
            array = np.asarray(given[value.name])
            specs.append(InputSpec(value.name, array.dtype, tuple(array.shape)))
            continue
        if not is_tensor:
            raise InvalidModelError(
                f"input {value.name!r} is not a tensor; give its value with --inputs"
            )
        if not tensor_type.HasField("shape"):
            raise InvalidModelError(
                f"input {value.name!r} has no declared shape (not even a rank); give its value "
                "with --inputs"
            )
        dims = tuple(_dim_key(value.name, axis, d) for axis, d in enumerate(tensor_type.shape.dim))
        specs.append(InputSpec(value.name, _numpy_dtype(value.name, tensor_type.elem_type), dims))
    return specs


def _dim_key(name: str, axis: int, dim: onnx.TensorShapeProto.Dimension) -> int | str:
    """A declared size, or the key of a free dim: its name, or for a dim with no name, or
    a negative size (paddle2onnx writes -1 for "any"), `NAME[AXIS]`, a dim of its own."""
    if dim.HasField("dim_value") and dim.dim_value >= 0:
        return dim.dim_value
    if dim.HasField("dim_param") and dim.dim_param:
        return dim.dim_param
    return f"{name}[{axis}]"


def _numpy_dtype(name: str, elem_type: int) -> np.dtype:
    if elem_type not in _SUPPORTED:
        type_name = onnx.TensorProto.DataType.Name(elem_type)
        raise InvalidModelError(
            f"input {name!r} is {type_name}, for which the verifier generates no values; give "
            "its value with --inputs"
        )
    return np.dtype(onnx.helper.tensor_dtype_to_np_dtype(elem_type))


_FAMILY_REDUCTIONS = frozenset(f.reduce for f in FAMILIES)


def axes_inputs(model: ir.Model) -> dict[str, int | None]:
    """{graph input: rank of the data it reduces, None if unknown} for every graph input
    that reaches some ReduceMax's or ReduceMin's `axes` input."""
    model = model.clone()
    infer_shapes(model)
    found: dict[str, int | None] = {}
    scopes = [model.graph, *(f for f in model.functions.values())]
    for scope in scopes:
        for node in ir.traversal.RecursiveGraphIterator(scope):
            if node.domain == "" and node.op_type in _FAMILY_REDUCTIONS and len(node.inputs) > 1:
                data = node.inputs[0]
                rank = len(data.shape) if data is not None and data.shape is not None else None
                for source in graph_inputs_behind(model, node.inputs[1], _AXES_PASS_THROUGH):
                    known = [r for r in (found.get(source.name), rank) if r is not None]
                    found[source.name] = min(known) if known else None  # valid for every user
    return found


def axes_variants(rank: int | None, length: int | None) -> list[list[int]]:
    """Valid axes lists for data of `rank`: the empty list, every subset in positive form,
    every non-empty subset in negative form (in reverse order: order must not matter)."""
    if rank is None:
        variants = [[], [0], [-1]]
    else:
        subsets = [list(s) for n in range(rank + 1) for s in itertools.combinations(range(rank), n)]
        if len(subsets) > MAX_AXES_VARIANTS // 2:
            rng = np.random.default_rng(rank)
            picked = rng.choice(len(subsets) - 2, MAX_AXES_VARIANTS // 2 - 2, replace=False) + 1
            subsets = [subsets[0], *(subsets[i] for i in sorted(picked)), subsets[-1]]
        variants = [s for s in subsets]
        variants += [[a - rank for a in reversed(s)] for s in subsets if s]
    if length is not None:
        variants = [v for v in variants if len(v) == length]
    return variants


def schedule(variable_dims: list[str], trials: int | None) -> list[tuple[str, str]]:
    """(value kind, size strategy) per data trial; None trials means the whole default."""
    planned = list(SCHEDULE_PREFIX)
    planned += [("ties", f"zero:{d}") for d in variable_dims[:MAX_ZERO_TRIALS]]
    if trials is None:
        return planned
    extra = [(KINDS[i % len(KINDS)], "random") for i in range(max(0, trials - len(planned)))]
    return (planned + extra)[:trials]


def _sizes(strategy: str, variable_dims: list[str], rng: np.random.Generator) -> dict[str, int]:
    if strategy == "same":
        return dict.fromkeys(variable_dims, SAME_SIZE)
    if strategy == "ones":
        return dict.fromkeys(variable_dims, 1)
    if strategy == "distinct":
        return {d: 4 + i % 5 for i, d in enumerate(variable_dims)}
    if strategy == "random":
        return {d: int(rng.integers(1, 7)) for d in variable_dims}
    zero = strategy.removeprefix("zero:")
    return {d: 0 if d == zero else SAME_SIZE for d in variable_dims}


def generate_trials(
    specs: list[InputSpec],
    *,
    seed: int,
    trials: int | None,
    fixed: Mapping[str, np.ndarray] | None = None,
    ranges: Mapping[str, tuple[float, float]] | None = None,
    dims: Mapping[str, int] | None = None,
    axes: Mapping[str, int | None] | None = None,
    accepted: Accepted | None = None,
) -> Iterator[Trial]:
    """The trials, one per axes variant of each data trial (see the module docstring).
    `accepted`: what the model accepts (maxlower.verify.accepts), which --range, --dim
    and --inputs override."""
    fixed = dict(fixed or {})
    ranges = dict(ranges or {})
    accepted = accepted or Accepted()
    bound = bind_dims(specs, fixed, dims or {})
    axes = {
        name: rank
        for name, rank in (axes or {}).items()
        if name not in fixed and name not in ranges
    }
    axes_dims = {d for s in specs if s.name in axes for d in s.dims if isinstance(d, str)}
    other_dims = {d for s in specs if s.name not in axes for d in s.dims if isinstance(d, str)}
    # a dim found equal to a bound one takes its size; else the size the graph needs
    by_group = {}
    for dim, size in bound.items():
        by_group.setdefault(accepted.group(dim), size)
    for dim in _ordered_dims(specs):
        if dim not in bound and accepted.group(dim) in by_group:
            bound[dim] = by_group[accepted.group(dim)]
        elif dim not in bound and dim in accepted.sizes:
            bound[dim] = accepted.sizes[dim]
    free = [d for d in _ordered_dims(specs) if d not in bound and d in other_dims]
    variable = list(dict.fromkeys(accepted.group(d) for d in free))
    generated = [s for s in specs if s.name not in fixed and s.name not in axes]
    if not generated and not axes:
        yield Trial(0, "given", {}, seed, {}, dict(fixed))
        return
    variants = {
        name: axes_variants(rank, _static_length(specs, name)) for name, rank in axes.items()
    }
    count = max((len(v) for v in variants.values()), default=1)
    for index, (kind, strategy) in enumerate(schedule(variable, trials)):
        rng = np.random.default_rng([seed, index])
        group_sizes = _sizes(strategy, variable, rng)
        sizes = {**{d: group_sizes[accepted.group(d)] for d in free}, **bound}
        feeds = dict(fixed)
        for slot, spec in enumerate(generated):
            shape = tuple(d if isinstance(d, int) else sizes[d] for d in spec.dims)
            value_range = ranges.get(spec.name)
            controls = []
            if value_range is None:
                value_range = accepted.index_range(spec.name, sizes)
                controls = _within_range(accepted.controls.get(spec.name, []), value_range)
            if controls and math.prod(shape) == 1:  # a control input: each value in turn
                feeds[spec.name] = np.full(shape, controls[index % len(controls)], spec.dtype)
                continue
            feeds[spec.name] = values(
                spec.dtype,
                shape,
                kind,
                rng,
                value_range,
                slot,
                placement_seed=(seed, index),
                extra=controls,
            )
        shown = {d: sizes[d] for d in _ordered_dims(specs) if d in sizes and d not in axes_dims}
        for j in range(count):
            chosen = {name: v[j % len(v)] for name, v in variants.items() if v}
            axes_feeds = {
                name: np.array(value, dtype=_spec(specs, name).dtype)
                for name, value in chosen.items()
            }
            yield Trial(index, kind, shown, seed, chosen, {**feeds, **axes_feeds})
        if axes and not any(variants.values()):
            raise InvalidModelError(
                "no valid axes list fits the declared length of "
                f"{', '.join(repr(n) for n in axes)}; give the axes with --inputs"
            )


def _within_range(controls: list, value_range: tuple[float, float] | None) -> list:
    if value_range is None:
        return list(controls)
    return [c for c in controls if value_range[0] <= c < value_range[1]]


def _ordered_dims(specs: list[InputSpec]) -> list[str]:
    return list(dict.fromkeys(d for s in specs for d in s.dims if isinstance(d, str)))


def _spec(specs: list[InputSpec], name: str) -> InputSpec:
    return next(s for s in specs if s.name == name)


def _static_length(specs: list[InputSpec], name: str) -> int | None:
    dims = _spec(specs, name).dims
    return dims[0] if len(dims) == 1 and isinstance(dims[0], int) else None


def shape_dims(
    specs: list[InputSpec], shapes: Mapping[str, tuple[int, ...]], dims: Mapping[str, int]
) -> dict[str, int]:
    """`dims` with the free dims that --input-shapes NAME:D1,D2,... sizes; InvalidModelError
    for an input the model does not have, a wrong rank, a size where the model declares
    another, or a dim given two sizes."""
    known = {s.name: s for s in specs}
    merged = dict(dims)
    for name, shape in shapes.items():
        shown = f"--input-shapes {name}:{','.join(map(str, shape))}"
        if name not in known:
            raise InvalidModelError(
                f"{shown}: the model has no generated input of that name (inputs: "
                f"{', '.join(known) or 'none'})"
            )
        declared = known[name].dims
        if len(shape) != len(declared):
            raise InvalidModelError(
                f"{shown}: rank {len(shape)}, but the model declares rank {len(declared)} "
                f"([{','.join(map(str, declared))}])"
            )
        for axis, (dim, size) in enumerate(zip(declared, shape)):
            if isinstance(dim, int) and dim != size:
                raise InvalidModelError(
                    f"{shown}: size {size} on axis {axis}, where the model declares {dim}"
                )
            if isinstance(dim, str) and merged.setdefault(dim, size) != size:
                raise InvalidModelError(
                    f"{shown}: dim {dim!r} is {merged[dim]} (from --dim or another input) "
                    f"but {size} here"
                )
    return merged


def bind_dims(
    specs: list[InputSpec], fixed: Mapping[str, np.ndarray], dims: Mapping[str, int]
) -> dict[str, int]:
    """The dim sizes that --dim and the --inputs arrays fix; InvalidModelError on conflicts."""
    known = {s.name: s for s in specs}
    all_dims = set(_ordered_dims(specs))
    for name in dims:
        if name not in all_dims:
            raise InvalidModelError(
                f"--dim {name}: no input has a dim of that name (symbolic dims: "
                f"{', '.join(sorted(all_dims)) or 'none'})"
            )
    bound = {k: int(v) for k, v in dims.items()}
    for name, array in fixed.items():
        if name not in known:
            raise InvalidModelError(
                f"--inputs gives {name!r}, which is not an input of the model (inputs: "
                f"{', '.join(known) or 'none'})"
            )
        spec = known[name]
        if array.dtype != spec.dtype:
            raise InvalidModelError(
                f"--inputs gives {name!r} as {array.dtype}, but the model declares {spec.dtype}"
            )
        if array.ndim != len(spec.dims):
            raise InvalidModelError(
                f"--inputs gives {name!r} with rank {array.ndim}, but the model declares rank "
                f"{len(spec.dims)}"
            )
        for axis, (dim, size) in enumerate(zip(spec.dims, array.shape)):
            if isinstance(dim, int) and dim != size:
                raise InvalidModelError(
                    f"--inputs gives {name!r} with size {size} on axis {axis}, where the model "
                    f"declares {dim}"
                )
            if isinstance(dim, str) and bound.setdefault(dim, size) != size:
                raise InvalidModelError(
                    f"dim {dim!r} is {bound[dim]} (from --dim or another input) but "
                    f"{size} in --inputs {name!r}"
                )
    return bound


# -- --inputs archives --------------------------------------------------------------------
# What a damaged or hostile archive raises while its directory or a member is read.
_ARCHIVE_ERRORS = (
    zipfile.BadZipFile,
    zipfile.LargeZipFile,
    zlib.error,
    EOFError,
    OSError,
    ValueError,
    NotImplementedError,
    RuntimeError,
)


def load_npz(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """The arrays of an .npz archive (np.savez), read within INPUTS_FILE_LIMIT (1 GiB): a
    regular file of at most that size, whose arrays together hold at most that much, as
    their headers claim and as they decompress. Nothing is allocated before the claims are
    checked: a header that claims 2^40 elements is refused, not read."""
    with _archive(path) as (archive, members):
        arrays = {}
        for name, info in members.items():
            with archive.open(info) as member:
                arrays[name] = np.lib.format.read_array(member, allow_pickle=False)
        return arrays


def npz_names(path: str | os.PathLike) -> list[str]:
    """The names of the arrays in an .npz archive, checked as `load_npz` checks them, but
    without reading their data."""
    with _archive(path) as (_, members):
        return list(members)


@contextlib.contextmanager
def _archive(path: str | os.PathLike) -> Iterator[tuple[zipfile.ZipFile, dict]]:
    """The open archive and {array name: its ZipInfo}, each member's header checked."""
    where = f"--inputs {os.fspath(path)}"
    with open_input(path, "file", INPUTS_FILE_LIMIT) as handle:
        try:
            with zipfile.ZipFile(handle) as archive:
                members, total = {}, 0
                for info in archive.infolist():
                    total += info.file_size
                    if total > INPUTS_FILE_LIMIT:
                        raise InvalidModelError(
                            f"{where}: its arrays hold more than the {INPUTS_FILE_LIMIT >> 30} "
                            "GiB maxlower reads from an .npz archive"
                        )
                    members[_array_name(info, where)] = info
                    _check_member(archive, info, where)
                yield archive, members
        except InvalidModelError:
            raise
        except _ARCHIVE_ERRORS as error:
            raise InvalidModelError(
                f"{where}: cannot read it as an .npz archive ({concise(error)})"
            ) from None


def _array_name(info: zipfile.ZipInfo, where: str) -> str:
    if not info.filename.endswith(".npy"):
        raise InvalidModelError(
            f"{where}: cannot read it as an .npz archive (its member {info.filename[:80]!r} "
            "is not an .npy array)"
        )
    return info.filename[: -len(".npy")]


def _check_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, where: str) -> None:
    """The member's .npy header must describe plain data of exactly the size the member
    holds (zipfile never decompresses past that size)."""
    name = info.filename[: -len(".npy")]
    with archive.open(info) as member:
        version = np.lib.format.read_magic(member)
        if version == (1, 0):
            shape, _, dtype = np.lib.format.read_array_header_1_0(member)
        elif version == (2, 0):
            shape, _, dtype = np.lib.format.read_array_header_2_0(member)
        else:
            raise ValueError(f"array {name!r} is in .npy format {version}, not 1.0 or 2.0")
        header = member.tell()
    if dtype.hasobject:
        raise InvalidModelError(
            f"{where}: array {name!r} holds Python objects; give plain numeric arrays"
        )
    claimed = math.prod(shape) * dtype.itemsize
    if claimed != info.file_size - header:
        raise InvalidModelError(
            f"{where}: array {name!r} claims shape {list(shape)} of {dtype} ({claimed} bytes), "
            f"but its member holds {info.file_size - header}"
        )


# -- values -----------------------------------------------------------------------------
def values(
    dtype: np.dtype,
    shape: tuple[int, ...],
    kind: str,
    rng: np.random.Generator,
    value_range: tuple[float, float] | None = None,
    slot: int = 0,
    placement_seed: tuple[int, ...] = (0,),
    extra: list | None = None,
) -> np.ndarray:
    """One input's values of the given kind (see the module docstring).

    Each leading value (special or power of two) is placed once where it fits, along one
    permutation of the positions fixed by `placement_seed` and the size, shifted by `slot`
    (the input's number): inputs of one size and one trial meet each leading value with a
    different one at the same position (NaN in `a` against a number in `b`, and the other
    way round), whatever the random filling does. `extra` values (the constants the
    model compares the input with) lead in the ties and specials kinds.
    """
    size = int(np.prod(shape, dtype=np.int64))
    placement = np.random.default_rng([*placement_seed, size])
    pools = _pools(dtype, value_range, rng)
    if dtype == np.bool_:
        p_true = 0.2 if kind == "specials" else 0.5
        return np.asarray(rng.random(shape) < p_true)  # (rank 0: an array, not np.bool_)
    if kind == "random":
        flat = pools.random(size)
    else:
        ties = pools.ties
        leading = {"ties": [], "specials": pools.specials, "pow2": pools.pow2}[kind]
        if extra and kind in ("ties", "specials"):
            leading = np.concatenate([np.array(extra, dtype=dtype), leading]).astype(dtype)
        pool = np.concatenate([leading, ties]).astype(dtype) if len(leading) else ties
        flat = pool[rng.integers(0, len(pool), size)]
        placed = min(size, len(leading))
        if placed:
            positions = np.roll(placement.permutation(size), -slot)
            flat[positions[:placed]] = leading[:placed]
    return np.asarray(flat.astype(dtype).reshape(shape))


@dataclasses.dataclass
class _Pools:
    ties: np.ndarray
    specials: np.ndarray
    pow2: np.ndarray
    random: callable


def _pools(dtype: np.dtype, value_range, rng: np.random.Generator) -> _Pools:
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        low, high = (info.min, info.max) if value_range is None else _int_range(value_range, info)
        base = [-2, -1, 0, 1, 2] if low < 0 else [0, 1, 2, 3]
        # the extremes of the range the input takes (the dtype's, or an index's bounds)
        specials = [low, high, 0, -1, 1, low + 1, high - 1]
        # The edges of exact casts first (small inputs hold only the first few), and the
        # neighbours of one power side by side: with the placement below, input i + 1 meets
        # input i's value at the same position, so 2^53 + 1 meets 2^53, which float64
        # cannot tell apart, and a tie-break between them (Max's, Min's) is exercised.
        pow2 = [
            sign * (2**k + d)
            for k in (53, 24, 63, 31, 32, 16, 15, 8, 7)
            for sign in (1, -1)
            for d in (-1, 0, 1)
        ]
        return _Pools(
            ties=_pick_ties(dtype, base, low, high, rng, integer=True),
            specials=_within(dtype, specials, low, high),
            pow2=_within(dtype, pow2, low, high),
            random=lambda n: rng.integers(low, high, size=n, dtype=dtype, endpoint=True),
        )
    if dtype == np.bool_:
        empty = np.zeros(0, dtype=bool)
        return _Pools(np.array([False, True]), empty, empty, lambda n: rng.random(n) < 0.5)
    info = ml_dtypes.finfo(dtype)
    lowest, highest = float(info.min), float(info.max)
    tiny = float(info.smallest_subnormal)
    if value_range is not None:
        low, high = float(value_range[0]), float(value_range[1])
        top = float(_step(np.array(high, dtype=dtype), -1)) if high != -np.inf else high
        specials = [low, top, 0.0, -0.0, 1.0, -1.0]
        return _Pools(
            ties=_pick_ties(dtype, [-1.5, -0.0, 0.0, 1.0, 2.5], low, top, rng, integer=False),
            specials=_within(dtype, specials, low, top),
            pow2=_within(dtype, _float_pow2(dtype, highest), low, top),
            random=lambda n: rng.uniform(low, high, n).clip(low, top),
        )
    specials = [np.nan, -0.0, np.inf, -np.inf, highest, lowest, 0.0, tiny, -tiny, 1.0, -1.0]
    return _Pools(
        ties=_pick_ties(
            dtype, [-1.5, -1.0, -0.0, 0.0, 1.0, 2.5], lowest, highest, rng, integer=False
        ),
        specials=np.array(specials, dtype=np.float64).astype(dtype),
        pow2=np.array(_float_pow2(dtype, highest), dtype=dtype),
        random=lambda n: _random_floats(dtype, n, rng),
    )


def _int_range(value_range: tuple[float, float], info: np.iinfo) -> tuple[int, int]:
    low, high = int(value_range[0]), int(value_range[1]) - 1
    return max(low, int(info.min)), min(high, int(info.max))


def _within(dtype: np.dtype, candidates: list, low, high) -> np.ndarray:
    kept = [v for v in dict.fromkeys(candidates) if low <= v <= high]
    if dtype.kind in "iu":
        return np.array(kept, dtype=object).astype(dtype)
    return np.array(kept, dtype=np.float64).astype(dtype)


def _pick_ties(dtype, base, low, high, rng, *, integer: bool) -> np.ndarray:
    """Three distinct values (fewer if the range is narrower): inputs drawn from them tie."""
    kept = [v for v in base if low <= v <= high]
    if len(kept) < 3:
        if integer:
            span = int(high) - int(low) + 1
            kept = (
                [int(low) + int(i) for i in rng.choice(span, min(3, span), replace=False)]
                if span < 2**62
                else [int(low), int(high)]
            )
        else:
            kept = list(rng.uniform(low, high, 3)) if high > low else [low]
    chosen = [kept[i] for i in sorted(rng.choice(len(kept), min(3, len(kept)), replace=False))]
    return np.array(chosen, dtype=object if integer else np.float64).astype(dtype)


def _float_pow2(dtype: np.dtype, highest: float) -> list[float]:
    """2^k for k in 8, 11, 24, 53 and the dtype's own integer limit, with its neighbours in
    the dtype and the integers 2^k ± 1 as the dtype rounds them; both signs."""
    info = ml_dtypes.finfo(dtype)
    found = []
    for k in sorted({8, 11, 24, 53, int(info.nmant) + 1}):
        if 2.0**k >= highest:
            continue
        at = np.array(2.0**k, dtype=dtype)
        for v in (_step(at, -1), at, _step(at, 1), 2.0**k - 1, 2.0**k + 1):
            found += [float(v), -float(v)]
    return list(dict.fromkeys(found))


def _step(x: np.ndarray, direction: int) -> np.ndarray:
    """The next representable value of the dtype above (1) or below (-1) a positive x."""
    unsigned = np.dtype(f"uint{x.dtype.itemsize * 8}")
    bits = np.asarray(x).reshape(1).view(unsigned)
    return (bits + unsigned.type(1) if direction > 0 else bits - unsigned.type(1)).view(x.dtype)[0]


def _random_floats(dtype: np.dtype, n: int, rng: np.random.Generator) -> np.ndarray:
    """Half standard normal, half log-uniform magnitudes over the dtype's finite exponents."""
    info = ml_dtypes.finfo(dtype)
    exponents = rng.uniform(float(info.minexp), float(info.maxexp) - 1, n)
    wide = np.sign(rng.standard_normal(n)) * np.exp2(exponents)
    out = np.where(rng.random(n) < 0.5, rng.standard_normal(n), wide)
    return out.clip(float(info.min), float(info.max))
