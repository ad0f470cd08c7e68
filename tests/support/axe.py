"""axe-core over a page in the test browser: the accessibility violations it finds.

The vendored ``axe.min.js`` (``tests/console/vendor/axe-core/``, never fetched) is injected
with ``page.add_script_tag(content=...)``. The console's CSP has no ``script-src``, so the
page must come from a browser context made with ``bypass_csp=True`` (see
:func:`axe_context`); every other browser test keeps the CSP on.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

AXE_JS = Path(__file__).resolve().parents[1] / "console" / "vendor" / "axe-core" / "axe.min.js"
#: The impacts a test fails on (axe's scale: minor, moderate, serious, critical).
FAILING_IMPACTS = frozenset({"serious", "critical"})


@cache
def axe_source() -> str:
    return AXE_JS.read_text(encoding="utf-8")


def axe_context(browser: Any, **options: Any) -> Any:
    """A Playwright context that lets an injected script run (for axe only)."""
    return browser.new_context(bypass_csp=True, **options)


def violations(page: Any, impacts: frozenset[str] = FAILING_IMPACTS) -> list[dict[str, Any]]:
    """axe's violations on the page as it is now, of the given impacts (WCAG 2.x A and AA
    rules and axe's best practices)."""
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.add_script_tag(content=axe_source())
    found: list[dict[str, Any]] = page.evaluate(
        """async () => {
            const result = await axe.run(document, {resultTypes: ['violations']});
            return result.violations.map(v => ({
                id: v.id, impact: v.impact, help: v.help,
                nodes: v.nodes.map(n => ({target: n.target.join(' '), summary: n.failureSummary})),
            }));
        }"""
    )
    return [v for v in found if v["impact"] in impacts]


def describe(found: list[dict[str, Any]]) -> str:
    """Violations as lines a failing assertion prints."""
    lines = []
    for violation in found:
        lines.append(f"{violation['impact']}: {violation['id']} ({violation['help']})")
        for node in violation["nodes"][:5]:
            lines.append(f"    {node['target']}: {node['summary']}".replace("\n", " "))
    return "\n".join(lines)
