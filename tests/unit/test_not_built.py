"""README's "What is not built" and docs/not-built.md list the same parts, link for link."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to dashes."""
    return re.sub(r"[^a-z0-9 -]", "", heading.lower()).replace(" ", "-")


def test_every_line_links_to_a_section_and_every_section_is_listed() -> None:
    readme = (ROOT / "README.md").read_text()
    start = readme.index("## What is not built")
    section = readme[start : readme.index("\n## ", start + 1)]
    linked = re.findall(r"^- \[.+?\]\(docs/not-built\.md#([a-z0-9-]+)\)$", section, re.M)
    doc = (ROOT / "docs" / "not-built.md").read_text()
    headings = [_anchor(h) for h in re.findall(r"^## (.+)$", doc, re.M)]
    assert linked and linked == headings
