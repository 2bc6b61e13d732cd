"""Every string a model supplies is text in the --report page, never markup: pages built
from a model whose every name, doc string, domain, op type and metadata entry is HTML
(tests/hostile_pages.py), through verify --report, convert --verify --report and lower
--verify --report, parsed with html.parser as a browser's tokenizer reads them. The same
pages in Chromium: tests/test_report_browser.py."""

from __future__ import annotations

import pytest

from maxlower.report.page import Markup, _table, html_text
from tests import hostile_pages


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    return hostile_pages.pages(tmp_path_factory.mktemp("hostile"))


def test_the_checker_sees_an_injected_element():
    """The check below could fail: a payload written as it is is found."""
    name = hostile_pages.TEMPLATES[0].format(k=99)
    page = f"<html><body><table><tr><td>{name}</td></tr></table><script></script><script>"
    assert hostile_pages.injected(page + "</script>") != []
    assert hostile_pages.injected(page.replace(name, html_text(name)) + "</script>") == []


@pytest.mark.parametrize("door", ["verify", "convert", "lower", "prove"])
def test_no_element_of_the_model_is_in_the_page(pages, door):
    page, exit_code = pages[door]
    text = page.read_text("utf-8")
    assert exit_code in (0, 1, 5)  # (a difference, or a proof inconclusive: still a page)
    assert hostile_pages.injected(text) == []
    # the names are on the page, as text: the page shows them, escaped
    assert "&lt;span&gt;&lt;img src=x onerror=" in text


def test_a_cell_that_starts_like_markup_is_text():
    """The old rule wrote a cell as it was when its text started with `<span`."""
    cell = "<span><img src=x onerror=alert(1)>"
    table = _table("t", ["h"], [[cell]], "c")
    assert "<img" not in table and "&lt;span&gt;&lt;img" in table
    badge = Markup("<span class='status ok'>ok</span>")
    assert badge in _table("t", ["h"], [[badge]], "c")
