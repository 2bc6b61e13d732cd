"""Fuzzing the report: random family models (tests/strategies.py: subgraphs, loops,
functions, every opset), converted and lowered by a random job with `report=`. Whenever the
job succeeds, the page is written and is well-formed HTML, and every node the pipeline says
it changed otherwise than by a relabelling is drawn: as a site of its own, or (a node an
earlier step of the same stage made) inside the AFTER side of the site that made it, whose
nodes compute the site's outputs from values that existed before. A refused job writes
nothing.

Budget: EXAMPLES cases in the slow tier, a small share in the default tier (tests/budget.py)."""

from __future__ import annotations

import html.parser
import re

import onnx
from hypothesis import HealthCheck, given

import maxlower
from maxlower.changes import records, stages
from maxlower.errors import InvalidModelError
from tests import budget
from tests.strategies import FuzzCase, fuzz_cases

EXAMPLES = 40


_VOID = frozenset({"meta", "input", "br", "img", "link"})  # (SVG's shapes close themselves)


class _Balanced(html.parser.HTMLParser):
    """Fails on an end tag that closes no open element: a page broken by unescaped text."""

    def __init__(self) -> None:
        super().__init__()
        self.open: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag not in _VOID:
            self.open.append(tag)

    def handle_startendtag(self, tag, attrs):
        pass

    def handle_endtag(self, tag):
        assert self.open and self.open[-1] == tag, (tag, self.open[-5:])
        self.open.pop()


@budget.fuzz(
    EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(fuzz_cases())
def test_every_successful_job_writes_a_page_that_draws_its_rewrites(tmp_path_factory, case):
    directory = tmp_path_factory.mktemp("report")
    page_path = directory / "r.html"
    try:
        _, report = _run(case, page_path)
    except (maxlower.ConversionError, InvalidModelError):
        assert list(directory.iterdir()) == []  # nothing on a refusal
        return
    page = page_path.read_text(encoding="utf-8")
    parser = _Balanced()
    parser.feed(page)
    parser.close()
    assert parser.open == []
    drawn = _sites(case)
    assert len(re.findall(r'<svg [^>]*class="site-drawing"', page)) == len(drawn)
    for record in records(report):  # each said beside a drawing
        if record.kind != "relabelled":
            said = [m for site in drawn if site.where == record.where for m in site.messages]
            assert any(record.message in m for m in said), record


def _sites(case: FuzzCase) -> list:
    """The sites of the job's stages, found as the page finds them, each checked."""
    from maxlower import pipeline
    from maxlower.changes import all_value_names, sites
    from maxlower.profiles import load_profile

    model = onnx.ModelProto()
    model.CopyFrom(case.model)
    prepared = pipeline.prepare(model, "<model>", directory_known=False)
    before = onnx.ModelProto()
    before.CopyFrom(prepared)
    profile = load_profile(case.profile) if case.profile else None
    job = pipeline.Job(case.target, profile)
    outcome = pipeline.run(prepared, job, ".")
    drawn = []
    for stage in stages(before, outcome, job):
        stage_sites, unplaced = sites(stage.before, stage.after, stage.records)
        assert unplaced == []
        existed = all_value_names(stage.before)
        for site in stage_sites:
            made = {o for n in site.after for o in n.output}
            assert set(site.outputs) <= made
            read = {i for n in site.after for i in n.input if i} - made
            assert read <= {*site.inputs, *site.new_constants} | existed
        drawn += stage_sites
    return drawn


def _run(case: FuzzCase, page_path):
    model = onnx.ModelProto()
    model.CopyFrom(case.model)
    if case.profile is None:
        return maxlower.convert_with_report(model, case.target, report=page_path)
    return maxlower.convert_and_lower(model, case.target, case.profile, report=page_path)
