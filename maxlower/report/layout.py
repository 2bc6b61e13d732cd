"""Layered layout of a small DAG with grandalf's Sugiyama layout (layers, crossing
reduction by median ordering, Brandes-Köpf coordinates, long edges routed through the
layers' dummy points). Pure Python: the report needs nothing but `pip install`."""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Hashable, Sequence

X_GAP = 36  # between components, and the margin around the whole drawing


@dataclasses.dataclass
class Placed:
    """Where the layout put everything: box centres, edge polylines, the drawing's size."""

    centres: dict[Hashable, tuple[float, float]]
    paths: list[tuple[Hashable, Hashable, list[tuple[float, float]]]]
    width: float
    height: float


class _View:
    """What grandalf reads and writes on a vertex (w, h, xy) or an edge (setpath)."""

    def __init__(self, w: float = 0.0, h: float = 0.0) -> None:
        self.w, self.h = w, h
        self.xy = (0.0, 0.0)
        self.points: list[tuple[float, float]] = []

    def setpath(self, points: list[tuple[float, float]]) -> None:
        self.points = [tuple(p) for p in points]


def layout(
    boxes: dict[Hashable, tuple[float, float]],
    edges: Sequence[tuple[Hashable, Hashable]],
    *,
    layer_gap: float = 34,
    box_gap: float = 22,
) -> Placed:
    """Lay out `boxes` ({id: (width, height)}) joined by `edges` (source, target), top to
    bottom; each connected component on its own, side by side."""
    from grandalf.graphs import Edge, Graph, Vertex
    from grandalf.layouts import SugiyamaLayout

    vertices = {key: Vertex(key) for key in boxes}
    for key, vertex in vertices.items():
        vertex.view = _View(*boxes[key])
    grandalf_edges = []
    for source, target in dict.fromkeys(edges):  # one edge per pair
        edge = Edge(vertices[source], vertices[target])
        edge.view = _View()
        grandalf_edges.append(edge)
    graph = Graph(list(vertices.values()), grandalf_edges)
    centres: dict[Hashable, tuple[float, float]] = {}
    paths = []
    left, height = float(X_GAP), 0.0
    for component in graph.C:
        sugiyama = SugiyamaLayout(component)
        sugiyama.xspace, sugiyama.yspace = box_gap, layer_gap
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # grandalf warns on a one-vertex component
            sugiyama.init_all()
            sugiyama.draw(3)
        placed = list(component.sV)
        min_x = min(v.view.xy[0] - v.view.w / 2 for v in placed)
        max_x = max(v.view.xy[0] + v.view.w / 2 for v in placed)
        min_y = min(v.view.xy[1] - v.view.h / 2 for v in placed)
        max_y = max(v.view.xy[1] + v.view.h / 2 for v in placed)
        dx, dy = left - min_x, X_GAP - min_y
        for v in placed:
            centres[v.data] = (v.view.xy[0] + dx, v.view.xy[1] + dy)
        for e in component.sE:
            points = e.view.points or [e.v[0].view.xy, e.v[1].view.xy]
            paths.append((e.v[0].data, e.v[1].data, [(x + dx, y + dy) for x, y in points]))
        left += max_x - min_x + X_GAP
        height = max(height, max_y - min_y + 2 * X_GAP)
    order = {pair: k for k, pair in enumerate(dict.fromkeys(edges))}  # (a stable page)
    paths.sort(key=lambda path: order[path[0], path[1]])
    return Placed(centres, paths, left, height)
