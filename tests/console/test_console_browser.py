"""The console in a real browser: Debian's Chromium driven by Playwright, over the real HTTP
front. Signs in, walks the pages (filtering a run's results by outcome), screenshots them
at 1280 and 420 px (no horizontal overflow), and checks the hostile corpus fires no dialog
and no script error.

Screenshots go to ``PAWL_CONSOLE_SCREENSHOTS`` when set (how ``docs/console/`` is made),
else to the test's temporary directory.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from chalicelib.console.figures import as_text
from tests.console.conftest import WIDTHS, screenshots_dir, signed_in_page
from tests.support.console import HOSTILE
from tests.support.http_front import serving
from tests.support.runs import Plugins, Suite, make_suite

pytestmark = pytest.mark.slow


@pytest.fixture
def hostile_suite(api: Any, project: Any, plugins: Plugins) -> tuple[Suite, dict[str, Any]]:
    cases = [("echo:4", "4"), ("echo:5", "4"), ("fail", "x")]
    cases += [(f"echo:{text}", text) for text in HOSTILE]
    suite = make_suite(api, project, cases, name="checkout flow", pass_threshold=0.5)
    api.post(suite.runs_path, {"wait": True})
    run = api.post(suite.runs_path, {"wait": True}).json
    return suite, run


def test_a_browser_signs_in_walks_the_pages_and_nothing_hostile_runs(
    app: Any,
    chromium: Any,
    project_key: str,
    hostile_suite: tuple[Suite, dict[str, Any]],
    tmp_path: Path,
) -> None:
    suite, run = hostile_suite
    shots = screenshots_dir(tmp_path)
    with serving(app) as server:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        context, page, dialogs, script_errors = signed_in_page(chromium, base, project_key)
        assert page.locator("text=checkout flow").count() == 1

        page.click("text=checkout flow")
        page.wait_for_url(f"{base}/console/evals/{suite.eval['id']}")
        assert page.locator("table tbody tr").count() == 2  # two runs

        page.click(f"table >> text={run['id']}")  # not the chart's title or the form's option
        page.wait_for_url(f"{base}/console/evals/{suite.eval['id']}/runs/{run['id']}")
        body = page.inner_text("body")
        for text in HOSTILE:
            assert as_text(text) in body, text[:40]
        # The corpus is text nodes only: the DOM holds no element it spelled.
        assert page.locator("script, img, svg, iframe, a[href^='javascript']").count() == 0

        page.click("nav.filters >> text=failed")  # the outcome filter
        assert page.locator("table.results tbody tr").count() == 1
        page.click("table.results tbody tr a")  # the item page of the failed item
        assert page.locator("section.trial").count() == 1

        hostile_item = suite.items[3]["id"]  # the corpus's first text
        paths = {
            "project": "/console",
            "eval": f"/console/evals/{suite.eval['id']}",
            "run": f"/console/evals/{suite.eval['id']}/runs/{run['id']}",
            "item": f"/console/evals/{suite.eval['id']}/runs/{run['id']}/items/{hostile_item}",
        }
        for width in WIDTHS:
            page.set_viewport_size({"width": width, "height": 900})
            for name, path in paths.items():
                page.goto(base + path)
                overflow = page.evaluate(
                    "document.documentElement.scrollWidth - document.documentElement.clientWidth"
                )
                assert overflow <= 0, (name, width, overflow)
                if name != "run":  # the run page's shots are test_browser_run.py's
                    page.screenshot(path=str(shots / f"{name}-{width}.png"), full_page=True)

        page.goto(base + paths["run"])
        page.click("text='Sign out'")
        page.wait_for_url(f"{base}/console")
        assert page.locator("#key").count() == 1
        page.goto(base + paths["run"])
        assert page.locator("#key").count() == 1  # signed out: back to the sign-in form
        context.close()
    assert dialogs == []
    assert script_errors == []
