"""The documentation holds together: every relative link in README.md and docs/*.md leads to
a file that exists, and every `#anchor` to a heading of its page (GitHub's anchor slugs);
README links every page of docs/ and stays short (issue 25: the topics live in docs/)."""

from __future__ import annotations

import pathlib
import re

import pytest

from tests.doc_pages import PAGES, README, ROOT, anchors, prose, slug, text

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?: \"[^\"]*\")?\)")
SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*:", re.I)  # https:, mailto:: not checked here
README_LIMIT = 15 * 1024


def links(markdown: str) -> list[str]:
    """The targets of the links and images outside code (fenced blocks and `code` spans)."""
    return LINK.findall(re.sub(r"`[^`\n]*`", "", prose(markdown)))


def broken(page: pathlib.Path, target: str) -> str | None:
    """Why `target`, linked from `page`, leads nowhere; None when it resolves."""
    path, _, anchor = target.partition("#")
    linked = (page.parent / path).resolve() if path else page
    if not linked.is_relative_to(ROOT):
        return "leads out of the repository"
    if not linked.exists():
        return "no such file"
    if anchor and linked.suffix != ".md":
        return "an anchor into a file that is not a Markdown page"
    if anchor and anchor not in anchors(text(linked)):
        return f"no heading of {linked.relative_to(ROOT)} has the anchor #{anchor}"
    return None


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_and_anchor_resolves(page: pathlib.Path):
    targets = [t for t in links(text(page)) if not SCHEME.match(t)]
    failures = {t: why for t in targets if (why := broken(page, t))}
    assert failures == {}


def test_readme_links_every_page_and_stays_short():
    linked = {
        (README.parent / t.partition("#")[0]).resolve()
        for t in links(text(README))
        if not SCHEME.match(t)
    }
    assert set(PAGES[1:]) <= linked, set(PAGES[1:]) - linked
    assert len(README.read_bytes()) <= README_LIMIT


def test_the_checker_sees_a_broken_link():
    """The checks above could not fail if these did not."""
    assert broken(README, "docs/no-such-page.md") == "no such file"
    assert broken(README, "#no-such-heading") is not None
    assert broken(README, "docs/proof.md#every-shipped-rule") is None
    assert broken(README, "../outside.md") == "leads out of the repository"


@pytest.mark.parametrize(
    ("heading", "anchor"),
    [
        ("Proof of a run's sites", "proof-of-a-runs-sites"),
        ("The longer run (n ≤ 8)", "the-longer-run-n--8"),
        ("`maxlower inspect IN [--opset N] [--debug]`", "maxlower-inspect-in---opset-n---debug"),
        ("Lowering and profiles", "lowering-and-profiles"),
        ("[Link](x.md) and **bold**", "link-and-bold"),
    ],
)
def test_slugs_are_githubs(heading: str, anchor: str):
    assert slug(heading) == anchor


def test_repeated_headings_are_numbered_and_code_is_no_heading():
    page = "# A\n## A\n```toml\n# not a heading\n```\n## B\n"
    assert anchors(page) == {"a", "a-1", "b"}


# A file of the project named in the text: `maxlower/changes.py`, `passes/version/max.py`.
SOURCE_PATH = re.compile(
    r"(?<![\w/.-])((?:maxlower|passes|tests|benchmarks|examples)/[\w/.-]+\.py)\b"
)


def named_sources(markdown: str) -> set[str]:
    return set(SOURCE_PATH.findall(markdown))


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_source_file_a_page_names_exists(page: pathlib.Path):
    """A page that names a module by its path names one that is there (files move: the
    layers of issue 25 moved maxlower/report/sites.py to maxlower/changes.py)."""
    missing = sorted(p for p in named_sources(text(page)) if not (ROOT / p).is_file())
    assert missing == []


def test_the_source_check_sees_a_moved_file():
    names = named_sources("see `maxlower/report/sites.py` and maxlower/changes.py.")
    assert names == {"maxlower/report/sites.py", "maxlower/changes.py"}
    assert not (ROOT / "maxlower/report/sites.py").exists()
