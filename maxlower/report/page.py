"""The report as one self-contained HTML page: styles and script inline, no network, no
server. Sections: summary, one before/after drawing per rewrite site, verification, and
a filterable table of every node that changed version."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable
from html import escape

from maxlower.changes import Record, Site, Stage, op_counts, producers_of, scopes, sites
from maxlower.report.drawing import PALETTE, Half, collapses, operations, site_svg

TABLE_ROWS = 2000  # rows of the version table shown at once (the filter reaches them all)
# Rewrite sites drawn, at most: 20,000 rewritten nodes would make 80 MB of drawings and
# minutes of layout; past this the table still lists every one (the first drawn are the
# first in graph order, and a drawing that holds the first diverging node is always drawn).
MAX_DRAWINGS = 500


@dataclasses.dataclass
class Facts:
    """What the summary states besides what the stages show."""

    input_label: str
    job: str  # "convert to opset 11", "lower for profile 'primitives'", "verify"
    source_opset: int | None
    target_opset: int | None
    profile: str | None
    seconds: float


def render(facts: Facts, stages: list[Stage], verification=None, proof=None) -> str:
    """The whole page. `verification`: a maxlower.verify.VerifyReport, or None; `proof`:
    a maxlower.prove.sites.SitesReport (--prove), or None."""
    drawn: list[tuple[Stage, Site]] = []
    unplaced: list[Record] = []
    for stage in stages:
        found, left = sites(stage.before, stage.after, stage.records)
        drawn += [(stage, site) for site in found]
        unplaced += left
    divergence = getattr(verification, "divergence", None)
    diverging = divergence.value if divergence is not None else None
    found = len(drawn)
    drawn = _drawn_first(drawn, diverging)
    parts = [
        _head(facts),
        _summary(facts, stages, drawn, found, verification, proof),
        _sites_section(drawn, found, diverging, _site_proofs(proof)),
        _verification_section(verification, stages, drawn, diverging),
        _versions_section(stages, drawn),
        _FOOT,
    ]
    return "".join(parts)


class Markup(str):
    """HTML that this module built (a status badge): written into the page as it is.
    Every other string a cell or line is given is text, and is escaped: a model's names
    are the model's, and a name such as `<span><img onerror=...>` is still only text."""


def html_text(text: str) -> str:
    """`text` as HTML: a Markup as it is, anything else escaped."""
    return text if isinstance(text, Markup) else escape(str(text))


def _drawn_first(drawn: list[tuple[Stage, Site]], diverging: str | None) -> list:
    """At most MAX_DRAWINGS sites, in order, with the one holding `diverging` among them."""
    if len(drawn) <= MAX_DRAWINGS:
        return drawn
    kept = drawn[:MAX_DRAWINGS]
    holding = [d for d in drawn[MAX_DRAWINGS:] if _holds_value(d[1], diverging)]
    return kept[: MAX_DRAWINGS - len(holding[:1])] + holding[:1]


def _holds_value(site: Site, value: str | None) -> bool:
    return value is not None and any(value in n.output for n in [*site.before, *site.after])


# --- summary -------------------------------------------------------------------------------


def _head(facts: Facts) -> str:
    title = f"maxlower report: {facts.input_label}"
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)}</title><style>{_CSS}</style></head><body>"
        f'<header><h1>maxlower report: <span id="input-name">{escape(facts.input_label)}'
        "</span></h1></header><main>"
    )


def _summary(facts: Facts, stages: list[Stage], drawn, found: int, verification, proof) -> str:
    records = [r for stage in stages for r in stage.records]
    kinds: dict[str, int] = {}
    for record in records:
        kinds[record.kind] = kinds.get(record.kind, 0) + 1
    opsets = _opset(facts.source_opset)
    if facts.target_opset is not None:
        opsets += f" → {_opset(facts.target_opset)}"
    items = [  # (label, HTML)
        ("Job", escape(facts.job)),
        ("Opset", escape(opsets)),
        ("Profile", escape(facts.profile or "none")),
        ("Rewrite sites drawn", _drawn_text(len(drawn), found)),
        ("Time taken", f'<span id="elapsed">{facts.seconds:.2f} s</span>'),
        ("Verdict", _verdict(verification)),
    ]
    if proof is not None:
        css = "status " + {"proved": "ok", "counterexample": "bad"}.get(proof.status, "unknown")
        head = proof.headline() if hasattr(proof, "headline") else proof.summary().split("\n")[0]
        items.append(("Proof", f"<span class='{css}'>{escape(head)}</span>"))
    rows = "".join(f"<tr><th scope='row'>{k}</th><td>{v}</td></tr>" for k, v in items)
    kind_rows = (
        "".join(
            f"<tr><td>{escape(kind)}</td><td class='num'>{n:,}</td></tr>"
            for kind, n in kinds.items()
        )
        or "<tr><td colspan='2'>no node changed</td></tr>"
    )
    before, after = op_counts(stages[0].before), op_counts(stages[-1].after)
    op_rows = "".join(
        f"<tr><td>{escape(op)}</td><td class='num'>{before[op]:,}</td>"
        f"<td class='num'>{after[op]:,}</td>"
        f"<td class='num'>{_delta(after[op] - before[op])}</td></tr>"
        for op in sorted(set(before) | set(after))
    )
    return (
        '<section id="summary" aria-labelledby="summary-h"><h2 id="summary-h">Summary</h2>'
        f'<div class="cards"><table class="facts"><caption>The job</caption>{rows}</table>'
        '<table class="kinds"><caption>Nodes changed, by kind</caption>'
        f"<thead><tr><th scope='col'>kind</th><th scope='col'>nodes</th></tr></thead>"
        f"<tbody>{kind_rows}</tbody></table>"
        '<table class="ops"><caption>Nodes by op (every graph)</caption><thead><tr>'
        "<th scope='col'>op</th><th scope='col'>before</th><th scope='col'>after</th>"
        f"<th scope='col'>change</th></tr></thead><tbody>{op_rows}</tbody></table></div>"
        "</section>"
    )


def _opset(opset: int | None) -> str:
    return "(none)" if opset is None else str(opset)


def _delta(n: int) -> str:
    return f"+{n:,}" if n > 0 else f"−{-n:,}" if n < 0 else "0"


def _verdict(verification) -> str:
    if verification is None:
        return '<span class="verdict none">not verified (run with --verify)</span>'
    from maxlower.verify.report import INCONCLUSIVE

    css = "ok" if verification.ok else "unknown" if verification.status == INCONCLUSIVE else "bad"
    head = verification.summary().splitlines()[0]
    return f'<span class="verdict {css}">{escape(head)}</span>'


# --- rewrite sites ------------------------------------------------------------------------


def _drawn_text(drawn: int, found: int) -> str:
    if drawn == found:
        return f"{drawn:,}"
    return f"{drawn:,} of {found:,} (the table lists them all)"


def _site_proofs(proof) -> dict:
    """{(stage, where, node): the site's proof} of a --prove verdict."""
    return {(p.stage, p.where, p.node): p for p in getattr(proof, "sites", [])}


def _sites_section(
    drawn: list[tuple[Stage, Site]], found: int, diverging: str | None, proofs: dict
) -> str:
    if not drawn:
        body = "<p>No node was rewritten: nothing to draw (version changes are listed below).</p>"
    else:
        body = _legend() + "".join(
            _site_html(
                k + 1, stage, site, diverging, proofs.get((stage.name, site.where, site.node))
            )
            for k, (stage, site) in enumerate(drawn)
        )
    return (
        '<section id="rewrites" aria-labelledby="rewrites-h">'
        f'<h2 id="rewrites-h">Rewrites ({_drawn_text(len(drawn), found)})</h2>{body}</section>'
    )


def _legend() -> str:
    return (
        '<p class="legend">Each drawing shows the node <strong>BEFORE</strong> (left) and '
        "what replaced it <strong>AFTER</strong> (right). Values both sides share carry the "
        "same number (and colour); hover a box for its inputs, outputs, types and attributes. "
        "A replacement of more than 30 operations is drawn as one group: open "
        "<em>Show all … operations</em> under it for the whole graph. Constants are "
        "folded into the nodes that read them (hover to see their values).</p>"
    )


def _site_html(number: int, stage: Stage, site: Site, diverging: str | None, proof=None) -> str:
    before, after, shared = _halves(site)
    title = f"Rewrite {number}: node {site.node} ({site.op_type}) in {site.where}"
    svg = site_svg(before, after, shared, title=title, diverging=diverging)
    full = ""
    if collapses(site.after):
        whole = site_svg(
            before,
            after,
            shared,
            title=title + ", all nodes",
            diverging=diverging,
            collapse=False,
            css_class="site-drawing-full",
        )
        full = (
            f"<details><summary>Show all {operations(site.after)} operations of the "
            "replacement</summary>"
            f'<div class="scroll">{whole}</div></details>'
        )
    path = " <span aria-hidden='true'>›</span> ".join(
        f"<span>{escape(part)}</span>" for part in site.where.split(" > ")
    )
    marks = ""
    if _holds_value(site, diverging):
        marks = "<p class='diverging-note'>⚠ The first diverging node is in this drawing.</p>"
    messages = "".join(f"<li>{escape(m)}</li>" for m in site.messages)
    kinds = ", ".join(dict.fromkeys(site.kinds))
    if proof is not None:
        css = "status " + {"proved": "ok", "counterexample": "bad"}.get(proof.status, "unknown")
        reason = f": {escape(proof.reason)}" if proof.reason else ""
        if proof.status == "proved" and getattr(proof, "proof", None) is not None:
            reason = f", {escape(proof.proof.coverage_text())}"  # the bound it holds at
        marks += (
            f"<p class='proof'>Proof: <span class='{css}'>{escape(proof.status.upper())}</span>"
            f" (method {escape(proof.method)}, {proof.seconds:.2f} s){reason}</p>"
        )
    return (
        f'<article class="site" id="site-{number}" aria-labelledby="site-{number}-h">'
        f'<h3 id="site-{number}-h">{number}. node <code>{escape(site.node)}</code> '
        f"({escape(site.op_type)}): {escape(kinds)} <span class='stage'>{escape(stage.name)}"
        f"</span></h3><p class='path'>Where: {path}</p>"
        f'<div class="site-body"><div class="scroll">{svg}</div>'
        f"<aside><h4>What maxlower said</h4><ul>{messages}</ul>{marks}"
        f"<p class='sizes'>{len(site.before)} node → {len(site.after)} "
        f"node{'s' if len(site.after) != 1 else ''}</p></aside></div>{full}</article>"
    )


def _halves(site: Site) -> tuple[Half, Half, list[str]]:
    shared = list(dict.fromkeys([*site.inputs, *site.outputs]))
    before = Half(
        site.before, site.inputs, [o for o in site.before[0].output if o], site.before_types
    )
    after = Half(site.after, site.inputs, site.outputs, site.after_types, site.new_constants)
    return before, after, shared


# --- verification -------------------------------------------------------------------------


def _verification_section(verification, stages, drawn, diverging) -> str:
    head = (
        '<section id="verification" aria-labelledby="verification-h">'
        '<h2 id="verification-h">Verification</h2>'
    )
    if verification is None:
        return (
            f"{head}<p>Not verified: run with <code>--verify</code> to compare the outputs "
            "of both models.</p></section>"
        )
    v = verification
    exactness = "bit-exact" if not (v.rtol or v.atol) else f"rtol={v.rtol:g}, atol={v.atol:g}"
    skipped = sum(1 for t in v.trials if t.status == "skipped")
    outside = v.not_accepted()
    if outside:
        skipped = f"{skipped} skipped, {outside} at an edge the model does not accept"
    else:
        skipped = f"{skipped} skipped"
    parts = [
        head,
        f"<p>{_verdict(v)}</p>",
        f"<p>Comparison: {escape(exactness)}; seed {v.seed}; "
        f"{len({t.index for t in v.trials})} trials, {v.runs} runs compared, {skipped}"
        f"{'; strict' if v.strict else ''}.</p>",
        _table(
            "Outputs",
            [
                "output",
                "result",
                "elements compared",
                "mismatches",
                "largest difference",
                "first mismatch",
            ],
            [
                [
                    o.name,
                    _status_text(o.status),
                    f"{o.elements:,}",
                    f"{o.mismatches:,}",
                    "" if o.max_difference is None else str(o.max_difference),
                    (o.first or o.first_unspecified).text()
                    if (o.first or o.first_unspecified)
                    else "",
                ]
                for o in v.outputs
            ],
            "outputs",
        ),
        _table(
            "Runners",
            ["side", "runner", "runs"],
            [
                [side, r, str(n)]
                for side in ("reference", "candidate")
                for r, n in v.runners(side).items()
            ],
            "runners",
        ),
        _table(
            "Trials",
            ["trial", "inputs", "result", "reference ran in", "candidate ran in", "note"],
            [
                [
                    str(t.index),
                    t.label,
                    _status_text(t.status),
                    t.reference_runner or "-",
                    t.candidate_runner or "-",
                    t.note or "",
                ]
                for t in v.trials
            ],
            "trials",
        ),
    ]
    for divergence in (v.divergence, v.unspecified_divergence):
        if divergence is not None:
            parts.append(
                "<h3>First diverging node</h3><p class='divergence'>"
                + escape(divergence.line())
                + "</p>"
            )
    if diverging is not None:
        parts.append(_divergence_drawing(stages, drawn, diverging))
    if v.notes:
        parts.append(
            "<ul class='notes'>" + "".join(f"<li>{escape(n)}</li>" for n in v.notes) + "</ul>"
        )
    parts.append("</section>")
    return "".join(parts)


def _status_text(status: str) -> Markup:
    labels = {
        "equal": "✓ equal",
        "different": "✗ DIFFERENT",
        "skipped": "skipped",
        "not accepted": "an edge the model does not accept",
        "unspecified": "~ unspecified by ONNX (NaN)",
        "not compared": "no elements compared",
    }
    css = {"equal": "ok", "different": "bad"}.get(status, "unknown")
    return Markup(f"<span class='status {css}'>{escape(labels.get(status, status))}</span>")


def _divergence_drawing(stages, drawn, value: str) -> str:
    """The node computing the diverging value on each side, with its neighbours' values;
    also when no rewrite drawing holds it (then it is the only place it is shown)."""
    in_sites = [k + 1 for k, (_, s) in enumerate(drawn) if _holds_value(s, value)]
    links = ", ".join(f"<a href='#site-{k}'>rewrite {k}</a>" for k in in_sites)
    where_text = f"<p>Highlighted in {links}.</p>" if links else ""
    reference = next(producers_of(stages[0].before, value), None)
    candidate = next(producers_of(stages[-1].after, value), None)
    if reference is None and candidate is None:
        return where_text
    halves = []
    for found, model in ((reference, stages[0].before), (candidate, stages[-1].after)):
        if found is None:
            halves.append(Half([], [], [value], {}))
            continue
        where, node = found
        types = dict(scopes(model)[where].types)
        halves.append(
            Half([node], [i for i in node.input if i], [o for o in node.output if o], types)
        )
    shared = [
        n
        for n in dict.fromkeys([*halves[0].inputs, *halves[0].outputs])
        if n in {*halves[1].inputs, *halves[1].outputs}
    ]
    svg = site_svg(
        halves[0],
        halves[1],
        shared,
        title=f"First diverging value {value}: the node on each side",
        diverging=value,
        css_class="divergence-drawing",
        labels=("REFERENCE", "vs", "CANDIDATE"),
    )
    return where_text + f"<div class='scroll'>{svg}</div>"


# --- version table ------------------------------------------------------------------------


def _versions_section(stages: list[Stage], drawn) -> str:
    """The table of every node that changed, as data the page's script shows and filters:
    a model can relabel 50,000 nodes, and as rows of HTML that is 8 MB the browser lays
    out at once; as data (each distinct name and change written once) it is a tenth of
    that, and the script shows the first TABLE_ROWS rows that match the filter."""
    drawing_of = {}
    for k, (stage, site) in enumerate(drawn):
        drawing_of.setdefault((stage.name, site.where, site.node), k + 1)
    names: dict[str, int] = {}
    changes: dict[tuple[str, ...], int] = {}
    rows: list[int] = []  # (name, change, drawing) for each row, flat
    for stage in stages:
        for r in stage.records:
            change = (r.op_type, r.step, r.kind, r.message, r.where)
            rows += [
                names.setdefault(r.node, len(names)),
                changes.setdefault(change, len(changes)),
                drawing_of.get((stage.name, r.where, r.node), 0),
            ]
    data = json.dumps({"names": list(names), "changes": list(changes), "rows": rows})
    data = data.replace("<", "\\u003c")  # no "</script>" or "<!--" can end the data early
    total = len(rows) // 3
    return (
        '<section id="versions" aria-labelledby="versions-h">'
        f'<h2 id="versions-h">Every node that changed ({total:,})</h2>'
        '<p><label for="filter">Filter the table (node, op, step, kind, message or place): '
        '</label><input type="search" id="filter" autocomplete="off" '
        'placeholder="e.g. ReduceMax or 18→13"> <span id="table-status" role="status" '
        f'aria-live="polite">{total:,} rows</span></p>'
        "<noscript><p>The table needs JavaScript; the drawings above do not.</p></noscript>"
        '<div class="scroll"><table id="version-table" data-limit="'
        f'{TABLE_ROWS}"><thead><tr>'
        "<th scope='col'>node</th><th scope='col'>op</th><th scope='col'>from → to</th>"
        "<th scope='col'>how</th><th scope='col'>what was done</th><th scope='col'>where</th>"
        "<th scope='col'>drawing</th></tr></thead><tbody></tbody></table></div>"
        '<script type="application/json" id="table-data">'
        f"{data}</script></section>"
    )


def _table(caption: str, header: list[str], rows: Iterable[list[str]], css: str) -> str:
    head = "".join(f"<th scope='col'>{escape(h)}</th>" for h in header)
    body = "".join(
        "<tr>" + "".join(f"<td>{html_text(c)}</td>" for c in row) + "</tr>" for row in rows
    )
    return (
        f"<div class='scroll'><table class='{css}'><caption>{escape(caption)}</caption>"
        f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>"
    )


_SHARED_FILLS = "".join(f".value.s{k}{{fill:{c}}}" for k, c in enumerate(PALETTE))

_CSS = (
    """
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;
 color:#111827;background:#fff;margin:0}
header{background:#1e293b;color:#fff;padding:12px 24px}
h1{font-size:22px;margin:0;word-break:break-all}
main{padding:8px 24px 40px;max-width:1600px}
h2{font-size:19px;border-bottom:2px solid #cbd5e1;padding-bottom:4px;margin-top:28px}
h3{font-size:16px;margin:0 0 4px}
code{font-family:ui-monospace,"DejaVu Sans Mono",monospace;font-size:14px}
table{border-collapse:collapse;margin:6px 0 12px;font-size:14px}
caption{text-align:left;font-weight:600;padding:4px 0}
th,td{border:1px solid #cbd5e1;padding:3px 8px;text-align:left;vertical-align:top}
thead th{background:#f1f5f9}
td.num{text-align:right;font-variant-numeric:tabular-nums}
.cards{display:flex;flex-wrap:wrap;gap:24px;align-items:flex-start}
.ops{max-height:none}
.verdict{font-weight:600;padding:1px 6px;border-radius:4px}
.verdict.ok,.status.ok{color:#14532d;background:#dcfce7}
.verdict.bad,.status.bad{color:#7f1d1d;background:#fee2e2}
.verdict.unknown,.verdict.none,.status.unknown{color:#1f2937;background:#f3f4f6}
.legend{background:#f8fafc;border-left:4px solid #64748b;padding:6px 10px}
.site{border:1px solid #cbd5e1;border-radius:8px;padding:10px 14px;margin:14px 0}
.site .stage{font-weight:400;font-size:13px;color:#374151;border:1px solid #9ca3af;
 border-radius:10px;padding:0 8px;margin-left:6px}
.path{margin:0 0 6px;color:#1f2937;font-size:14px}
.path span{font-family:ui-monospace,"DejaVu Sans Mono",monospace}
.site-body{display:flex;flex-wrap:wrap;gap:16px;align-items:flex-start}
.site-body aside{flex:1 1 280px;min-width:240px}
aside h4{margin:0 0 4px;font-size:14px}
aside ul{margin:0;padding-left:18px}
.sizes{color:#374151;font-size:13px}
.scroll{overflow:auto;max-width:100%}
.diverging-note{color:#7f1d1d;font-weight:600}
p.divergence{background:#fef2f2;border-left:4px solid #b91c1c;padding:8px;overflow-wrap:anywhere}
details{margin-top:8px}
summary{cursor:pointer;font-weight:600;color:#1e3a8a}
#filter{font:inherit;padding:3px 6px;width:22em;border:1px solid #475569;border-radius:4px}
svg text{font:12px ui-monospace,"DejaVu Sans Mono",monospace;fill:#111827}
svg .panel{stroke-width:1.5}
svg .panel.before{fill:#eff6ff;stroke:#1e40af}
svg .panel.after{fill:#f0fdf4;stroke:#166534}
svg .panel-label{font-weight:700;font-size:13px;letter-spacing:.08em}
svg .panel-label.before{fill:#1e3a8a}
svg .panel-label.after{fill:#14532d}
svg .op{fill:#fff;stroke:#334155;stroke-width:1.2}
svg .op.diverging{fill:#fee2e2;stroke:#b91c1c;stroke-width:3}
svg .diverging-text{fill:#7f1d1d;font-weight:700}
svg .group{fill:#f8fafc;stroke:#334155;stroke-dasharray:5 3;stroke-width:1.5}
svg .op-text{font-weight:700}
svg .name-text{fill:#374151}
svg .value{fill:#fff;stroke:#475569}
svg .value.shared{stroke:#111827;stroke-width:1.3}
svg .badge{fill:#111827}
svg text.badge-text{fill:#fff;font-weight:700;text-anchor:middle}
svg .edge{fill:none;stroke:#475569;stroke-width:1.2}
svg .head{fill:#475569}
svg .becomes{fill:none;stroke:#111827;stroke-width:2}
svg .becomes-label{text-anchor:middle;font-size:11px;fill:#374151}
"""
    + _SHARED_FILLS
)

_SCRIPT = """
(function () {
  'use strict';
  var table = document.getElementById('version-table');
  var body = table.tBodies[0];
  var limit = Number(table.getAttribute('data-limit'));
  var box = document.getElementById('filter');
  var status = document.getElementById('table-status');
  var data = JSON.parse(document.getElementById('table-data').textContent);
  var total = data.rows.length / 3;
  var changeTexts = data.changes.map(function (c) { return c.join(' ').toLowerCase(); });
  var nameTexts = data.names.map(function (n) { return n.toLowerCase(); });
  function cell(row, text) {
    var td = document.createElement('td');
    td.textContent = text;
    row.appendChild(td);
    return td;
  }
  function addRow(fragment, k) {
    var change = data.changes[data.rows[3 * k + 1]];
    var drawing = data.rows[3 * k + 2];
    var row = document.createElement('tr');
    cell(row, data.names[data.rows[3 * k]]);
    cell(row, change[0]);
    cell(row, change[1]);
    cell(row, change[2]);
    cell(row, change[3]);
    cell(row, change[4]);
    var last = cell(row, '');
    if (drawing) {
      var link = document.createElement('a');
      link.href = '#site-' + drawing;
      link.textContent = 'rewrite ' + drawing;
      last.appendChild(link);
    }
    fragment.appendChild(row);
  }
  function apply() {
    var query = box.value.trim().toLowerCase();
    var fragment = document.createDocumentFragment();
    var matched = 0;
    for (var k = 0; k < total; k++) {
      if (query !== '' && nameTexts[data.rows[3 * k]].indexOf(query) === -1 &&
          changeTexts[data.rows[3 * k + 1]].indexOf(query) === -1) {
        continue;
      }
      if (matched < limit) { addRow(fragment, k); }
      matched++;
    }
    body.replaceChildren(fragment);
    var text = (query === '' ? total.toLocaleString('en') + ' rows' :
      matched.toLocaleString('en') + ' of ' + total.toLocaleString('en') + ' rows match');
    if (matched > limit) {
      text += '; the first ' + limit.toLocaleString('en') + ' are shown (type to narrow)';
    }
    status.textContent = text;
  }
  box.addEventListener('input', apply);
  apply();
})();
"""

_FOOT = f"</main><script>{_SCRIPT}</script></body></html>\n"
