"""The map covers the code: every package and top-level module of ``chalicelib`` has its
line in the README's "Architecture" section and in ``docs/architecture.md``, and the
glossary names the concepts issue 10 asks for."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHALICELIB = ROOT / "chalicelib"


def _code_paths() -> list[str]:
    packages = sorted(
        f"chalicelib/{p.name}/" for p in CHALICELIB.iterdir() if (p / "__init__.py").is_file()
    )
    modules = sorted(
        f"chalicelib/{p.name}" for p in CHALICELIB.glob("*.py") if p.name != "__init__.py"
    )
    return ["app.py", *packages, *modules]


def _section(text: str, heading: str) -> str:
    """The text from ``heading`` up to the next heading of the same level."""
    level = heading.split(" ", 1)[0] + " "
    start = text.index(f"\n{heading}\n")
    end = text.find(f"\n{level}", start + len(heading) + 2)
    return text[start : end if end != -1 else None]


MAPS = {
    "README.md": ("## Architecture",),
    "docs/architecture.md": ("## Packages and modules",),
}


@pytest.mark.parametrize("doc", sorted(MAPS))
def test_every_package_and_module_has_a_line(doc: str) -> None:
    (heading,) = MAPS[doc]
    section = _section((ROOT / doc).read_text(), heading)
    lines = section.splitlines()
    missing = [
        path for path in _code_paths() if not any(line.startswith(f"{path} ") for line in lines)
    ]
    assert missing == [], f"{doc} {heading!r} has no line for {missing}"


def _glossary() -> str:
    return _section((ROOT / "docs/architecture.md").read_text(), "## Glossary")


def _code_text() -> str:
    return "\n".join(p.read_text() for p in sorted(CHALICELIB.rglob("*.py")))


def test_glossary_names_each_concept_at_the_top() -> None:
    text = (ROOT / "docs/architecture.md").read_text()
    glossary = _glossary()
    assert text.index("## Glossary") < text.index("## Layers")
    for term in ("run", "item", "work item", "result", "settle", "delivery"):
        assert f"| **{term}** |" in glossary, term


def test_every_type_the_glossary_names_exists() -> None:
    named = set(re.findall(r"`(?:[a-z_.]+\.)?([A-Z][A-Za-z]+)(?:\.[a-z_]+)?`", _glossary()))
    code = _code_text()
    missing = sorted(n for n in named if not re.search(rf"^class {n}\b", code, re.MULTILINE))
    assert named and missing == [], missing


#: Names the glossary retired (issue 10): each concept has one name, so these are gone.
RETIRED = (
    "RunItemModel",  # FrozenItemModel
    "ItemRecord",  # ResultRecord
    "class Delivery:",  # the SQS one is engine.work.ReceivedWork; Delivery is webhooks only
    "may_finish_run",  # may_settle_run
    "def finish(",  # store.runs.settle
    "def complete(",  # lifecycle.settle_completed (completions.complete is a chat completion)
    "RESERVED_CONTEXT_KEYS = ",  # once, in outbound/tool_context.py
)


def test_retired_names_are_gone() -> None:
    code = _code_text()
    allowed = {
        "def complete(": code.count("def complete(endpoint: ChatEndpoint"),
        "RESERVED_CONTEXT_KEYS = ": 1,
    }
    found = {n: code.count(n) for n in RETIRED if code.count(n) > allowed.get(n, 0)}
    assert found == {}, found
