"""Before/after drawings of a rewrite site as SVG (text as text, never as pictures).

The original node goes on the left, its replacement on the right. The values both sides
share (the node's inputs and outputs) are drawn as numbered pills of one colour each, the
same number and colour on both sides; the colours are pale with dark text (contrast over
10:1), and the number, not the colour, is what pairs them. A replacement of more than
COLLAPSE_AT nodes is drawn as one group box (its ops counted), with the whole drawing in
an expandable <details> below it. The first diverging node of a verification is outlined
and labelled "FIRST DIVERGENCE".
"""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Hashable
from html import escape

import onnx

from maxlower.changes import node_label
from maxlower.report.layout import layout

COLLAPSE_AT = 30  # nodes of a replacement drawn one by one; more become a group
CHAR = 7.3  # width of a character of the 12px monospace font, with a little to spare
NAME_CHARS = 36  # longer names are cut (the whole name is in the box's tooltip)
ARROW_GAP = 64
HEADER = 30
# pale fills for shared values (dark text on each: contrast over 10:1)
PALETTE = ("#fde68a", "#bfdbfe", "#fbcfe8", "#bbf7d0", "#fed7aa", "#ddd6fe", "#a5f3fc", "#e5e7eb")


@dataclasses.dataclass
class Half:
    """One side of a drawing: the nodes and the values at its edge."""

    nodes: list[onnx.NodeProto]
    inputs: list[str]  # values read from outside (shared ones numbered)
    outputs: list[str]
    types: dict[str, str]
    constants: list[str] = dataclasses.field(default_factory=list)  # new initializers


def site_svg(
    before: Half,
    after: Half,
    shared: list[str],
    *,
    title: str,
    diverging: str | None = None,
    collapse: bool = True,
    css_class: str = "site-drawing",
    labels: tuple[str, str, str] = ("BEFORE", "becomes", "AFTER"),
) -> str:
    """One SVG: BEFORE on the left, AFTER on the right, shared values numbered alike
    (`labels`: the left side's, the arrow's and the right side's)."""
    badges = {name: k + 1 for k, name in enumerate(shared)}
    left = _half_svg(before, badges, diverging, group=False)
    group = collapse and collapses(after.nodes)
    right = _half_svg(after, badges, diverging, group=group)
    width = left.width + ARROW_GAP + right.width
    height = HEADER + max(left.height, right.height)
    middle = left.width + ARROW_GAP / 2
    arrow_y = HEADER + min(left.height, right.height) / 2
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="{css_class}" role="group" '
        f'width="{width:.0f}" height="{height:.0f}" viewBox="0 0 {width:.0f} {height:.0f}" '
        f'aria-label="{escape(title)}">',
        f"<title>{escape(title)}</title>",
        _panel(0, left.width, height, "before", labels[0]),
        _panel(left.width + ARROW_GAP, right.width, height, "after", labels[2]),
        f'<g transform="translate(0,{HEADER})">{left.body}</g>',
        f'<g transform="translate({left.width + ARROW_GAP:.0f},{HEADER})">{right.body}</g>',
        f'<path class="becomes" d="M{middle - 18:.0f},{arrow_y:.0f} h30 m-8,-6 l8,6 l-8,6"/>',
        f'<text class="becomes-label" x="{middle:.0f}" y="{arrow_y - 12:.0f}">'
        f"{escape(labels[1])}</text>",
        "</svg>",
    ]
    return "".join(parts)


def _panel(x: float, width: float, height: float, kind: str, label: str) -> str:
    return (
        f'<rect class="panel {kind}" x="{x:.0f}" y="1" width="{width:.0f}" '
        f'height="{height - 2:.0f}" rx="6"/>'
        f'<text class="panel-label {kind}" x="{x + 10:.0f}" y="20">{escape(label)}</text>'
    )


@dataclasses.dataclass
class _Drawn:
    body: str
    width: float
    height: float


def _half_svg(half: Half, badges: dict[str, int], diverging: str | None, group: bool) -> _Drawn:
    boxes: dict[Hashable, tuple[float, float]] = {}
    texts: dict[Hashable, str] = {}
    edges: list[tuple[Hashable, Hashable]] = []
    # Constants (Constant nodes, new initializers) are folded into the nodes reading them:
    # a rewrite makes many (axes, starts, indices), and drawn as boxes they bury the
    # operations; each box's tooltip gives their values.
    folded = {*half.constants, *(o for n in half.nodes if _is_constant(n) for o in n.output)}
    nodes = [(k, n) for k, n in enumerate(half.nodes) if not _is_constant(n)]
    produced = {o: ("node", k) for k, n in nodes for o in n.output if o}
    outside = list(half.inputs)
    for _, node in nodes:  # values read that neither side lists (an outer value, say)
        outside += [
            i
            for i in node.input
            if i and i not in produced and i not in outside and i not in folded
        ]
    for name in outside:
        boxes["in", name], texts["in", name] = _value_box(name, half, badges, "in")
    for name in half.outputs:
        boxes["out", name], texts["out", name] = _value_box(name, half, badges, "out")
    if group:
        boxes["group"], texts["group"] = _group_box([n for _, n in nodes])
        edges += [(("in", name), "group") for name in outside if _read(name, half.nodes)]
        edges += [("group", ("out", name)) for name in half.outputs]
    else:
        values = _constant_values(half)
        for k, node in nodes:
            marked = diverging is not None and diverging in node.output
            boxes["node", k], texts["node", k] = _node_box(node, half.types, values, marked)
            for name in node.input:
                if name and name not in folded:
                    edges.append((produced.get(name, ("in", name)), ("node", k)))
        edges += [(produced[name], ("out", name)) for name in half.outputs if name in produced]
    placed = layout(boxes, edges)
    body = [
        _edge(placed.centres, boxes, source, target, points)
        for source, target, points in placed.paths
    ]
    for key, (w, h) in boxes.items():
        x, y = placed.centres[key]
        body.append(f'<g transform="translate({x - w / 2:.1f},{y - h / 2:.1f})">{texts[key]}</g>')
    return _Drawn("".join(body), placed.width, placed.height)


def operations(nodes: list[onnx.NodeProto]) -> int:
    """The nodes drawn as boxes (constants are folded into their readers)."""
    return sum(1 for n in nodes if not _is_constant(n))


def collapses(nodes: list[onnx.NodeProto]) -> bool:
    """Whether a replacement is drawn as one group (more than COLLAPSE_AT operations)."""
    return operations(nodes) > COLLAPSE_AT


def _is_constant(node: onnx.NodeProto) -> bool:
    return node.op_type == "Constant" and node.domain in ("", "ai.onnx") and not node.input


def _constant_values(half: Half) -> dict[str, str]:
    """{value: its value as text} of the Constant nodes of `half` (small ones in full)."""
    found = {}
    for node in half.nodes:
        if _is_constant(node) and node.attribute:
            found[node.output[0]] = _constant_text(node.attribute[0])
    for name in half.constants:
        found.setdefault(name, "a new initializer")
    return found


def _constant_text(attr: onnx.AttributeProto) -> str:
    if attr.type == onnx.AttributeProto.TENSOR:
        tensor = attr.t
        count = 1
        for d in tensor.dims:
            count *= d
        if count <= 16:
            values = onnx.numpy_helper.to_array(tensor).tolist()
            return f"constant {values}"
        return f"constant of shape {list(tensor.dims)}"
    return f"constant {_attribute_text(attr)}"


def _read(name: str, nodes: list[onnx.NodeProto]) -> bool:
    return any(name in node.input for node in nodes)


def _short(text: str, limit: int = NAME_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _value_box(name: str, half: Half, badges: dict[str, int], side: str) -> tuple[tuple, str]:
    kind = half.types.get(name, "")
    text = _short(name) + (f": {kind}" if kind else "")
    badge = badges.get(name)
    label = text
    width = len(label) * CHAR + (40 if badge else 18)
    height = 26
    css = f"value shared s{(badge - 1) % len(PALETTE)}" if badge else "value"
    tip = f"{'input' if side == 'in' else 'output'} value {name}" + (f" ({kind})" if kind else "")
    if badge:
        tip += f"; value {badge} on both sides"
    parts = [f"<title>{escape(tip)}</title>"]
    parts.append(f'<rect class="{css}" width="{width:.0f}" height="{height}" rx="13"/>')
    x = 10
    if badge:
        parts.append('<circle class="badge" cx="16" cy="13" r="10"/>')
        parts.append(f'<text class="badge-text" x="16" y="17">{badge}</text>')
        x = 32
    parts.append(f'<text class="value-text" x="{x}" y="17">{escape(label)}</text>')
    return (width, height), "".join(parts)


def _node_box(
    node: onnx.NodeProto, types: dict[str, str], constants: dict[str, str], marked: bool
) -> tuple[tuple, str]:
    op = node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}::{node.op_type}"
    name = _short(node_label(node))
    lines = [op, name] + (["⚠ FIRST DIVERGENCE"] if marked else [])
    width = max(len(line) for line in lines) * CHAR + 20
    height = 16 * len(lines) + 10
    attributes = ", ".join(_attribute_text(a) for a in node.attribute)
    ins = ", ".join(
        f"{i}: {types.get(i, '?')}" + (f" = {constants[i]}" if i in constants else "")
        for i in node.input
        if i
    )
    outs = ", ".join(f"{o}: {types.get(o, '?')}" for o in node.output if o)
    tip = f"{op} node {node_label(node)}\ninputs: {ins or '-'}\noutputs: {outs or '-'}"
    if attributes:
        tip += f"\nattributes: {attributes}"
    css = "op diverging" if marked else "op"
    parts = [
        f"<title>{escape(tip)}</title>",
        f'<rect class="{css}" width="{width:.0f}" height="{height}" rx="4"/>',
        f'<text class="op-text" x="10" y="18">{escape(op)}</text>',
        f'<text class="name-text" x="10" y="34">{escape(name)}</text>',
    ]
    if marked:
        parts.append('<text class="diverging-text" x="10" y="50">⚠ FIRST DIVERGENCE</text>')
    return (width, height), "".join(parts)


def _group_box(nodes: list[onnx.NodeProto]) -> tuple[tuple, str]:
    counts = collections.Counter(n.op_type for n in nodes)
    ops = [f"{op} ×{n}" for op, n in counts.most_common()]
    rows = [ops[k : k + 3] for k in range(0, len(ops), 3)]
    lines = [f"{len(nodes)} nodes (expand below)", *[", ".join(row) for row in rows]]
    width = max(len(line) for line in lines) * CHAR + 20
    height = 16 * len(lines) + 12
    parts = [
        f"<title>{escape('a group of ' + str(len(nodes)) + ' nodes: ' + ', '.join(ops))}</title>",
        f'<rect class="group" width="{width:.0f}" height="{height}" rx="8"/>',
    ]
    for k, line in enumerate(lines):
        css = "op-text" if k == 0 else "name-text"
        parts.append(f'<text class="{css}" x="10" y="{19 + 16 * k}">{escape(line)}</text>')
    return (width, height), "".join(parts)


def _attribute_text(attr: onnx.AttributeProto) -> str:
    value = onnx.helper.get_attribute_value(attr)
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    elif isinstance(value, onnx.TensorProto):
        value = f"tensor {list(value.dims)}"
    elif isinstance(value, onnx.GraphProto):
        value = f"graph of {len(value.node)} nodes"
    elif isinstance(value, list) and value and isinstance(value[0], onnx.GraphProto):
        value = f"{len(value)} graphs"
    return _short(f"{attr.name}={value}", 60)


def _edge(centres, boxes, source, target, points) -> str:
    (sx, sy), (tx, ty) = centres[source], centres[target]
    points = list(points)
    points[0] = (sx, sy + boxes[source][1] / 2)
    points[-1] = (tx, ty - boxes[target][1] / 2)
    path = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
    x, y = points[-1]
    head = f"{x - 4:.1f},{y - 7:.1f} {x + 4:.1f},{y - 7:.1f} {x:.1f},{y:.1f}"
    return f'<polyline class="edge" points="{path}"/><polygon class="head" points="{head}"/>'
