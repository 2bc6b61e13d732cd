"""Golden before/after cases in ONNX text, compared modulo consistent renaming.

A golden file holds cases in this form (MLIR-test style):

    // ---- case: bool_below_20
    // intent: bool ReduceMax at 20 goes through uint8 so the empty set stays False
    // target: 18
    // feed: axes = [1]
    // no-run: <why outputs are not compared, e.g. dims too large to allocate>
    // options: expand_functions        (keyword flags passed to maxlower.convert)
    <the input model in onnx.parser text>
    // ---- expect
    <the expected model in onnx.parser text>

or, for a negative case, `// ---- error: <substring of the ConversionError>` instead of the
expect block. `feed` lines give fixed values for inputs (e.g. axes); the others are random.

A lowering case runs `maxlower.lower` instead of `convert`: in place of `// target:` it says
`// lower: PROFILE` (a shipped profile) or `// profile: <[ops.*] rules as one-line TOML>`,
e.g. `// profile: ops = { Max = { absent = true } }`, and may add `// steps: a, b`, the
decompositions the lowering must use. `load_cases(path)` returns the conversion cases and
`load_cases(path, lowering=True)` the lowering ones (tests/test_decompose_golden.py).

Run `python -m tests.golden tests/golden/FILE.onnxtxt` to rewrite the expect blocks from the
current converter (then read the diff: that is the review).
"""

from __future__ import annotations

import ast
import dataclasses
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

import numpy as np
import onnx
import onnx_ir as ir

GOLDEN_DIR = Path(__file__).parent / "golden"
_HEADER = re.compile(r"^// ---- case: (\S+)\s*$", re.M)


@dataclasses.dataclass
class GoldenCase:
    name: str
    intent: str
    target: int | None
    source_text: str
    expected_text: str | None
    error: str | None
    feeds: dict[str, np.ndarray]
    no_run: str | None = None  # why the case is compared as text only (e.g. huge dims)
    lower: str | None = None  # a shipped profile: the case runs maxlower.lower
    profile_text: str | None = None  # or a one-line TOML profile of its own
    steps: tuple[str, ...] = ()  # decompositions a lowering case must use
    options: dict[str, bool] = dataclasses.field(default_factory=dict)  # convert(**options)

    def source_model(self) -> onnx.ModelProto:
        return onnx.parser.parse_model(self.source_text)

    @property
    def is_lowering(self) -> bool:
        return self.lower is not None or self.profile_text is not None

    def profile(self):
        """The case's profile (a maxlower.profiles.Profile), for lowering cases."""
        from maxlower.profiles import load_profile
        from maxlower.profiles.rules import parse_profile

        if self.lower is not None:
            return load_profile(self.lower)
        data = tomllib.loads(f'description = "golden case {self.name}"\n{self.profile_text}')
        return parse_profile(data, self.name, None)

    def run(self) -> onnx.ModelProto:
        """The case's rewrite of its source: maxlower.lower or maxlower.convert."""
        import maxlower
        from maxlower.api import lower

        if self.is_lowering:
            return lower(self.source_model(), self.profile())
        return maxlower.convert(self.source_model(), self.target, **self.options)


def load_cases(path: Path, lowering: bool = False) -> list[GoldenCase]:
    """The conversion cases of a golden file, or with `lowering` its lowering cases."""
    text = path.read_text()
    starts = [m.start() for m in _HEADER.finditer(text)]
    cases = [_parse_case(text[a:b]) for a, b in zip(starts, [*starts[1:], len(text)])]
    return [case for case in cases if case.is_lowering == lowering]


def _parse_case(block: str) -> GoldenCase:
    name = _HEADER.match(block).group(1)
    meta = dict(
        re.findall(r"^// (intent|target|no-run|lower|profile|steps|options): (.*)$", block, re.M)
    )
    feeds = {
        k: np.array(ast.literal_eval(v), dtype=np.int64)
        for k, v in re.findall(r"^// feed: (\w+) = (.*)$", block, re.M)
    }
    body = re.sub(r"^// (?!----).*\n", "", block.split("\n", 1)[1], flags=re.M)
    error = re.search(r"^// ---- error: (.*)$", body, re.M)
    source, _, expected = body.partition("// ---- expect\n")
    source = re.sub(r"^// ---- error: .*$", "", source, flags=re.M)
    case = GoldenCase(
        name,
        meta.get("intent", ""),
        int(meta["target"]) if "target" in meta else None,
        source.strip(),
        expected.strip() or None,
        error.group(1).strip() if error else None,
        feeds,
        meta.get("no-run"),
        meta.get("lower"),
        meta.get("profile"),
        tuple(s.strip() for s in meta.get("steps", "").split(",") if s.strip()),
        options={f.strip(): True for f in meta.get("options", "").split(",") if f.strip()},
    )
    return case


def canonical_text(model: onnx.ModelProto) -> str:
    """The model as text with values renamed v0, v1, ... in order of first appearance and
    node names dropped, so that two models differing only in names print the same."""
    ir_model = ir.serde.deserialize_model(model)
    counter = iter(range(1_000_000))
    for graph in ir_model.graphs():
        _rename_graph(graph, counter)
    for function in ir_model.functions.values():
        _rename_graph(function.graph, counter)
    proto = ir.serde.serialize_model(ir_model)
    proto.ClearField("producer_name")
    proto.ClearField("producer_version")
    return onnx.printer.to_text(proto)


def _rename_graph(graph: ir.Graph, counter) -> None:
    seen: set[int] = set()

    def rename(value: ir.Value | None) -> None:
        if value is None or id(value) in seen or value.graph not in (graph, None):
            return
        seen.add(id(value))
        if value.name in graph.initializers:
            graph.initializers.pop(value.name)
            value.name = f"v{next(counter)}"
            graph.initializers[value.name] = value
        else:
            value.name = f"v{next(counter)}"

    for value in graph.inputs:
        rename(value)
    for node in graph:
        node.name = None
        for value in node.inputs:
            rename(value)
        for value in node.outputs:
            rename(value)
    for value in graph.outputs:
        rename(value)
    # Values of this graph that only subgraphs read (an initializer an If branch uses).
    for node in ir.traversal.RecursiveGraphIterator(graph):
        for value in node.inputs:
            rename(value)
    # Initializers: order by first use, so registration order does not matter.
    ordered = sorted(graph.initializers.values(), key=lambda v: int(v.name[1:]))
    graph.initializers.clear()
    for value in ordered:
        graph.initializers[value.name] = value


def fed_inputs(
    model: onnx.ModelProto, dynamic: Callable[[onnx.TensorShapeProto.Dimension], int]
) -> Iterator[tuple[str, list[int], np.dtype]]:
    """(name, shape, dtype) of each graph input a run feeds (one with an initializer has a
    default); `dynamic` gives the length of a dim without a value."""
    initializers = {t.name for t in model.graph.initializer}
    for value in model.graph.input:
        if value.name in initializers:
            continue
        tensor_type = value.type.tensor_type
        shape = [
            d.dim_value if d.HasField("dim_value") else dynamic(d) for d in tensor_type.shape.dim
        ]
        yield (
            value.name,
            shape,
            np.dtype(onnx.helper.tensor_dtype_to_np_dtype(tensor_type.elem_type)),
        )


def random_feeds(
    model: onnx.ModelProto,
    fixed: dict[str, np.ndarray],
    seed: int = 0,
    dims: dict[str, int] | None = None,
) -> dict[str, np.ndarray]:
    """Seeded inputs with many ties (small integers) for every graph input not in `fixed`."""
    rng = np.random.default_rng(seed)
    feeds = {}
    for name, shape, dtype in fed_inputs(model, lambda d: (dims or {}).get(d.dim_param, 3)):
        if name in fixed:
            feeds[name] = fixed[name]
        elif dtype == np.bool_:
            feeds[name] = rng.integers(0, 2, size=shape).astype(bool)
        else:
            low = 0 if dtype.kind == "u" else -4
            feeds[name] = rng.integers(low, 5, size=shape).astype(dtype)
    return feeds


def update_file(path: Path) -> None:
    """Rewrite every expect block of `path` from the current converter (or lowering), case by
    case."""
    text = path.read_text()
    starts = [m.start() for m in _HEADER.finditer(text)]
    blocks = [text[: starts[0]]] if starts else [text]
    for a, b in zip(starts, [*starts[1:], len(text)]):
        block = re.sub(r"// ---- expect\n.*", "", text[a:b], flags=re.S).rstrip() + "\n"
        case = _parse_case(block)
        if not case.error:
            block += f"// ---- expect\n{canonical_text(case.run()).strip()}\n"
        blocks.append(block + "\n")
    path.write_text("".join(blocks).rstrip() + "\n")


if __name__ == "__main__":
    for argument in sys.argv[1:]:
        update_file(Path(argument))
