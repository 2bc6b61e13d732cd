"""The documentation pages, README.md and docs/*.md, and what the tests read from them: their
fenced code blocks and their headings' anchors. README.md stays short; each topic has its
page in docs/, and the tests that parse a table or an example read the page that holds it."""

from __future__ import annotations

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
README = ROOT / "README.md"
# README first: the quick start's commands are the first a newcomer meets.
PAGES = (README, *sorted(DOCS.glob("*.md")))
FENCED = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)


def text(page: pathlib.Path) -> str:
    return page.read_text(encoding="utf-8")


def page(name: str) -> str:
    """The text of docs/<name>.md."""
    return text(DOCS / f"{name}.md")


def blocks(language: str) -> list[tuple[pathlib.Path, str]]:
    """(page, body) of every fenced block in `language`, page by page, in order."""
    return [
        (page, body)
        for page in PAGES
        for lang, body in FENCED.findall(text(page))
        if lang == language
    ]


def prose(markdown: str) -> str:
    """The text outside fenced code blocks (a `#` in a code block is no heading)."""
    return FENCED.sub("", markdown)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: the text as rendered (link text kept, code marks and
    emphasis dropped), lower-cased, every character but letters, digits, `_`, `-` and spaces
    removed, spaces made `-`."""
    rendered = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    rendered = re.sub(r"[`*]", "", rendered).strip().lower()
    return re.sub(r"[^\w\- ]", "", rendered).replace(" ", "-")


def anchors(markdown: str) -> set[str]:
    """The anchors of a page's headings; a repeated heading's get `-1`, `-2`, ... as on GitHub."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    for heading in re.findall(r"^#{1,6} +(.+?) *#* *$", prose(markdown), re.M):
        base = slug(heading)
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found
