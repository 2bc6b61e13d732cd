"""A model whose every string is markup, and the --report pages built from it.

Every name (graph inputs and outputs, node names, value names in the main graph and in
If branches, a model-local function's name, domain and op type, a symbolic dim), every doc
string, every metadata key and value, and the model file's own name is one of TEMPLATES,
each numbered so that a page showing it unescaped holds an element marked `pwn<k>`. The
model is valid ONNX, runs in onnxruntime and onnx.reference, and has family nodes to
rewrite in the main graph, an If branch and the function, so a conversion draws each of
them; `tampered` gives a candidate that differs (a ReduceMax made ReduceMin) so that
`verify` reports a first divergence.

tests/test_report_hostile.py parses the pages with html.parser; tests/test_report_browser.py
loads them in Chromium. Both check that no element or attribute of a payload is in the DOM.
"""

from __future__ import annotations

import html.parser
import pathlib
import re

import onnx
from click.testing import CliRunner
from onnx import TensorProto
from onnx import helper as h

# Markup in the places text can break out of: a table cell (the old `<span` hole), an
# attribute value (the quotes), a <title>, a comment, the JSON data's <script>.
TEMPLATES = (
    '<span><img src=x onerror="window.pwned=(window.pwned||[]).concat({k})" class=pwn{k}>',
    "<script class=pwn{k}>window.pwned=(window.pwned||[]).concat({k})</script>",
    '"\'><svg class=pwn{k} onload="window.pwned=(window.pwned||[]).concat({k})">',
    "</title></textarea><b class=pwn{k} onclick=x>",
    "<!-- --><i class=pwn{k}></i></script><u class=pwn{k}>",
)


def payload(k: int, what: str) -> str:
    """The k-th hostile string (its kind in the text, to tell them apart in a failure)."""
    return TEMPLATES[k % len(TEMPLATES)].format(k=k) + f" {what}"


def hostile_model() -> onnx.ModelProto:
    """Opset 18: main-graph ReduceMax, an If whose branches hold a ReduceMax and a ReduceMin,
    a call of a local function (its ReduceMax); every string a payload."""
    f = {what: payload(k, what) for k, what in enumerate(_NAMES)}
    axes = h.make_tensor(f["axes tensor"], TensorProto.INT64, [1], [1])
    cond = h.make_tensor(f["cond tensor"], TensorProto.BOOL, [], [True])

    def branch(tag: str, op: str) -> onnx.GraphProto:
        out = f[f"{tag} out"]
        return h.make_graph(
            [
                h.make_node(
                    "Constant", [], [f[f"{tag} axes"]], value=axes, name=f[f"{tag} constant"]
                ),
                h.make_node(
                    op, [f["x"], f[f"{tag} axes"]], [out], keepdims=0, name=f[f"{tag} node"]
                ),
            ],
            f[f"{tag} graph"],
            [],
            [h.make_tensor_value_info(out, TensorProto.FLOAT, [f["dim"]])],
        )

    function = h.make_function(
        f["function domain"],
        f["function name"],
        [f["function in"]],
        [f["function out"]],
        [
            h.make_node("Constant", [], [f["function axes"]], value=axes, name=f["fn const"]),
            h.make_node(
                "ReduceMax",
                [f["function in"], f["function axes"]],
                [f["function out"]],
                keepdims=0,
                name=f["function node"],
            ),
        ],
        [h.make_opsetid("", 18)],
        doc_string=f["function doc"],
    )
    nodes = [
        h.make_node("Constant", [], [f["axes"]], value=axes, name=f["axes node"]),
        h.make_node("Constant", [], [f["cond"]], value=cond, name=f["cond node"]),
        h.make_node(
            "ReduceMax",
            [f["x"], f["axes"]],
            [f["main out"]],
            keepdims=0,
            name=f["main node"],
            doc_string=f["node doc"],
        ),
        h.make_node(
            "If",
            [f["cond"]],
            [f["if out"]],
            then_branch=branch("then", "ReduceMax"),
            else_branch=branch("else", "ReduceMin"),
            name=f["if node"],
        ),
        h.make_node(
            f["function name"],
            [f["x"]],
            [f["call out"]],
            domain=f["function domain"],
            name=f["call node"],
        ),
    ]
    graph = h.make_graph(
        nodes,
        f["graph"],
        [h.make_tensor_value_info(f["x"], TensorProto.FLOAT, [f["dim"], 4])],
        [
            h.make_tensor_value_info(f[k], TensorProto.FLOAT, [f["dim"]])
            for k in ("main out", "if out", "call out")
        ],
        doc_string=f["graph doc"],
    )
    model = h.make_model(
        graph,
        opset_imports=[h.make_opsetid("", 18), h.make_opsetid(f["function domain"], 1)],
        functions=[function],
        doc_string=f["model doc"],
        producer_name=f["producer"],
        domain=f["model domain"],
    )
    h.set_model_props(model, {f["metadata key"]: f["metadata value"]})
    onnx.checker.check_model(model, full_check=True)
    return model


_NAMES = (
    "x",
    "dim",  # a symbolic dim: the trials' labels and the drawings' types show it
    "axes",
    "axes node",
    "axes tensor",
    "cond",
    "cond node",
    "cond tensor",
    "main node",
    "main out",
    "if node",
    "if out",
    "call node",
    "call out",
    *(
        f"{tag} {part}"
        for tag in ("then", "else")
        for part in ("out", "axes", "constant", "node", "graph")
    ),
    "function domain",
    "function name",
    "function in",
    "function out",
    "function axes",
    "fn const",
    "function node",
    "function doc",
    "node doc",
    "graph",
    "graph doc",
    "model doc",
    "producer",
    "model domain",
    "metadata key",
    "metadata value",
)


def tampered(model: onnx.ModelProto) -> onnx.ModelProto:
    """`model` with its main-graph ReduceMax made a ReduceMin: a candidate that differs."""
    candidate = onnx.ModelProto()
    candidate.CopyFrom(model)
    node = next(n for n in candidate.graph.node if n.op_type == "ReduceMax")
    node.op_type = "ReduceMin"
    return candidate


def pages(tmp_path: pathlib.Path) -> dict[str, tuple[pathlib.Path, int]]:
    """{door: (its page, its exit code)} for verify --report, convert --verify --report,
    lower --verify --report and prove --report of the hostile model (verify against a
    tampered candidate, prove against the conversion)."""
    from maxlower.cli import cli

    # the file's name is markup too: the page's title and heading show it
    source = tmp_path / (TEMPLATES[0].format(k=999).replace("/", "") + ".onnx")
    candidate, converted = tmp_path / "tampered.onnx", tmp_path / "c.onnx"
    model = hostile_model()
    onnx.save(model, source)
    onnx.save(tampered(model), candidate)
    lowered = tmp_path / "l.onnx"
    commands = {
        "verify": ["verify", source, candidate],
        "convert": ["convert", source, "--opset", "13", "--verify", "-o", converted],
        "lower": ["lower", source, "--profile", "primitives", "--verify", "-o", lowered],
        "prove": ["prove", source, converted],  # (after convert: it proves its output)
    }
    found = {}
    for door, args in commands.items():
        page = tmp_path / f"{door}.html"
        result = CliRunner().invoke(cli, [*map(str, args), "--report", str(page)])
        assert page.exists(), (door, result.output)
        found[door] = page, result.exit_code
    return found


class Elements(html.parser.HTMLParser):
    """Every start tag of a page with its attributes, as a browser's tokenizer sees them
    (script and style content is text)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_startendtag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)


def injected(page: str) -> list[str]:
    """The elements and attributes of `page` that a payload made: tags the page never writes
    (img, b, i, u), event-handler attributes, anything marked pwn<k>, more scripts than the
    page's own two)."""
    parser = Elements()
    parser.feed(page)
    parser.close()
    found = []
    scripts = 0
    for tag, attrs in parser.tags:
        scripts += tag == "script"
        if tag in {"img", "b", "i", "u", "iframe", "object", "embed", "textarea"}:
            found.append(f"<{tag} {attrs}>")
        for name, value in attrs.items():
            # (a payload's text inside the page's own attribute, an aria-label, is text)
            if name.startswith("on") or re.fullmatch(r"pwn\d+", value or "") or "pwn" in name:
                found.append(f"<{tag} {name}={value!r}>")
    if scripts != 2:  # the table's JSON data and the page's script
        found.append(f"{scripts} <script> elements")
    return found
