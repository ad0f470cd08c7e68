"""The eval page in a real browser (Debian's Chromium under Playwright, over the real HTTP
front): its chart, starting a run from its form, and cancelling the run while an item is
executing (the ``block`` agent). Screenshots eval-1280 and eval-420, no horizontal
overflow at 420 px.

Screenshots go to ``PAWL_CONSOLE_SCREENSHOTS`` when set (how ``docs/console/`` is made),
else to the test's temporary directory.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from tests.console.conftest import WIDTHS, screenshots_dir
from tests.support import agents
from tests.support.drain import drain_queues
from tests.support.http_front import serving
from tests.support.runs import Plugins, Suite, make_item, make_suite

pytestmark = pytest.mark.slow


@pytest.fixture
def history(api: Any, project: Any, plugins: Plugins) -> Suite:
    """An eval with five completed runs: pass rates that move, a run against its baseline,
    and a new agent version; then a ``block`` item, so the next run stays running."""
    cases = [("echo:4", "4"), ("echo:5", "4"), ("fail", "x")]
    suite = make_suite(api, project, cases, name="checkout flow", pass_threshold=0.6)
    previous = None
    for step in range(5):
        if step == 2:  # a new agent version from the third run on
            assert (
                api.put(f"/api/v1/agents/{suite.agent['id']}", {"name": "agent v2"}).status == 200
            )
        if step in (1, 3):  # the dataset grows: the pass rate moves
            make_item(api, suite.dataset["id"], f"echo:ok{step}", f"ok{step}")
        body: dict[str, Any] = {"wait": True, "metadata": {"commit": f"9f2c1a{step}"}}
        if previous is not None and step >= 3:
            body["baseline_run_id"] = previous
        started = api.post(suite.runs_path, body)
        assert started.status == 201 and started.json["status"] == "completed", started.json
        previous = started.json["id"]
    suite.items.append(make_item(api, suite.dataset["id"], "block", "released"))
    return suite


def test_a_browser_starts_a_run_from_the_eval_page_and_cancels_it(
    app: Any, api: Any, chromium: Any, project_key: str, history: Suite, tmp_path: Path
) -> None:
    suite, shots = history, screenshots_dir(tmp_path)
    eval_path = f"/console/evals/{suite.eval['id']}"
    script_errors: list[str] = []
    with serving(app) as server:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        context = chromium.new_context(viewport={"width": WIDTHS[0], "height": 900})
        page = context.new_page()
        page.on("pageerror", lambda error: script_errors.append(str(error)))
        page.on(
            "console",
            lambda message: script_errors.append(message.text) if message.type == "error" else None,
        )
        page.goto(f"{base}/console/")
        page.fill("#key", project_key)
        page.click("button[type=submit]")
        page.wait_for_url(f"{base}/console")
        assert page.locator("svg.spark").count() == 1
        page.click("text=checkout flow")
        page.wait_for_url(base + eval_path)
        assert page.locator("svg.pass-rate circle.run").count() == 5
        assert page.locator("svg.pass-rate a.baseline-link").count() == 2
        assert page.locator("svg.pass-rate text.version-label").all_text_contents() == ["v1", "v2"]

        latest = api.get(f"{suite.runs_path}?limit=1").json["data"][0]["id"]
        page.select_option("select[name=baseline]", "latest")
        page.fill("input[name=max_concurrency]", "2")
        page.click("text=Start run")
        page.wait_for_url(f"{base}{eval_path}/runs/**")
        run_id = page.url.rsplit("/", 1)[1]
        started = api.get(suite.run_path(run_id)).json
        assert started["baseline_run_id"] == latest and started["status"] == "queued"
        worker = threading.Thread(target=drain_queues, args=(app,))
        worker.start()
        try:
            assert agents.wait_until_blocked(suite.items[-1]["id"])  # executing in the agent
            page.goto(base + eval_path)
            row = page.locator("tbody tr", has_text=run_id)
            assert row.locator("td").nth(2).inner_text().split() == ["running", "Cancel"]
            for width in WIDTHS:  # the running run with its Cancel button
                page.set_viewport_size({"width": width, "height": 900})
                page.goto(base + eval_path)
                overflow = page.evaluate(
                    "document.documentElement.scrollWidth - document.documentElement.clientWidth"
                )
                assert overflow <= 0, (width, overflow)
                page.screenshot(path=str(shots / f"eval-{width}.png"), full_page=True)
            row = page.locator("tbody tr", has_text=run_id)
            row.locator("button", has_text="Cancel").click()
            page.wait_for_url(base + eval_path)
            row = page.locator("tbody tr", has_text=run_id)
            assert row.locator("td").nth(2).inner_text() == "canceled"
            assert row.locator("button").count() == 0
        finally:
            agents.RELEASE.set()
            worker.join(60)
        assert api.get(suite.run_path(run_id)).json["status"] == "canceled"
        context.close()
    assert script_errors == []
