"""The dataset page in a real browser (Debian's Chromium under Playwright, over the real
HTTP front): from an eval to its dataset, a search, an item's history across runs;
screenshots at 1280 and 420 px with no horizontal overflow, no dialog, no script error.

``PAWL_CONSOLE_SCREENSHOTS=docs/console`` writes ``dataset-*.png`` and ``history-*.png``
there (see ``docs/console.md``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.console.conftest import WIDTHS, screenshots_dir, signed_in_page
from tests.support.console import HOSTILE
from tests.support.http_front import serving
from tests.support.runs import Plugins, Suite, make_suite

pytestmark = pytest.mark.slow


@pytest.fixture
def flipping_suite(api: Any, project: Any, plugins: Plugins) -> tuple[Suite, list[str]]:
    """A dataset with ordinary and hostile items, and three runs in which the first item
    passes, fails, then passes again (its expected answer changed between runs)."""
    cases: list[Any] = [("echo:refund 4", "refund 4", {"team": "billing", "tier": "gold"})]
    cases += [(f"echo:question {n}", f"question {n}", {"n": n}) for n in range(6)]
    cases += [(f"echo:{text}", text, {"hostile": text[:80]}) for text in HOSTILE]
    suite = make_suite(api, project, cases, name="support triage")
    item_path = f"/api/v1/datasets/{suite.dataset['id']}/items/{suite.items[0]['id']}"
    runs = []
    for expected in ("refund 4", "refund 5", "refund 4"):
        assert api.put(item_path, {"expected_output": expected}).status == 200
        runs.append(api.post(suite.runs_path, {"wait": True}).json["id"])
    return suite, runs


def _no_overflow(page: Any) -> int:
    return int(
        page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
    )


def test_a_browser_opens_the_dataset_searches_and_opens_an_items_history(
    app: Any,
    chromium: Any,
    project_key: str,
    flipping_suite: tuple[Suite, list[str]],
    tmp_path: Path,
) -> None:
    suite, runs = flipping_suite
    shots = screenshots_dir(tmp_path)
    with serving(app) as server:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        context, page, dialogs, script_errors = signed_in_page(chromium, base, project_key)

        page.goto(f"{base}/console/evals/{suite.eval['id']}")
        page.click(f"text={suite.dataset['id']}")  # the eval's header links its dataset
        page.wait_for_url(f"**/console/datasets/{suite.dataset['id']}?eval_id=*")
        assert page.locator("table.items tbody tr").count() == len(suite.items)
        assert page.locator("script, img, svg, iframe, a[href^='javascript']").count() == 0
        dataset_url = page.url

        page.fill("#q", "REFUND")  # any case
        page.click("form.search button[type=submit]")
        page.wait_for_url("**q=REFUND*")
        assert page.locator("table.items tbody tr").count() == 1
        assert "team=billing, tier=gold" in page.inner_text("table.items")
        search_url = page.url

        page.click(f"text={suite.items[0]['id']}")  # the item's history across runs
        page.wait_for_url(f"**/console/evals/{suite.eval['id']}/items/{suite.items[0]['id']}")
        assert page.locator("table.history tbody tr").count() == len(runs)
        assert "Flaky:" in page.inner_text("main")
        history_url = page.url

        for width in WIDTHS:
            page.set_viewport_size({"width": width, "height": 900})
            for name, url in (("dataset", dataset_url), ("search", search_url)):
                page.goto(url)
                assert _no_overflow(page) <= 0, (name, width)
                if name == "dataset":
                    page.screenshot(path=str(shots / f"dataset-{width}.png"), full_page=True)
            page.goto(history_url)
            assert _no_overflow(page) <= 0, ("history", width)
            page.screenshot(path=str(shots / f"history-{width}.png"), full_page=True)
        context.close()
    assert dialogs == []
    assert script_errors == []
