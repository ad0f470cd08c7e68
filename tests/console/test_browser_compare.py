"""The compare page in a real browser (Debian's Chromium under Playwright, over the real HTTP
front): signs in, follows the run page's compare link, filters to the changed items with
the page's own form, screenshots at 1280 and 420 px with no horizontal overflow, and the
hostile corpus fires no dialog and no script error. Picking two runs in the eval page's
runs table lands on their comparison; the picker pages to an older run; an item run three
times shows each trial (``compare-trials-*.png``).

``PAWL_CONSOLE_SCREENSHOTS=docs/console`` writes ``compare-1280.png`` / ``compare-420.png``
there (the docs' pictures), else to the test's temporary directory.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.api.test_comparison_trials import trials_pair
from tests.console.conftest import WIDTHS, screenshots_dir, sign_in, signed_in_page, watch
from tests.support.console import HOSTILE
from tests.support.http_front import serving
from tests.support.runs import Plugins, Suite, make_suite

pytestmark = pytest.mark.slow
__all__ = ["trials_pair"]


@pytest.fixture
def compared(api: Any, project: Any, plugins: Plugins) -> tuple[Suite, dict[str, Any]]:
    """Two runs: 2 regressions (one hostile), 1 improvement, 2 unchanged, groups by topic."""
    cases: list[Any] = [
        ("echo:Paris is the capital of France", "Paris is the capital of France", {"topic": "geo"}),
        ("echo:4", "four", {"topic": "math"}),
        ("echo:blue", "blue", {"topic": "colour"}),
        ("echo:7", "7", {"topic": "math"}),
        ("echo:no", "yes", {"topic": "geo"}),
        (
            f"echo:{HOSTILE[0]} then {HOSTILE[1]}",
            f"{HOSTILE[0]} then {HOSTILE[1]}",
            {"topic": "xss"},
        ),
    ]
    suite = make_suite(api, project, cases, name="checkout flow", group_by="topic")
    baseline = api.post(suite.runs_path, {"wait": True}).json
    items = f"/api/v1/datasets/{suite.dataset['id']}/items"
    edits = {
        0: {"input": [{"role": "user", "content": "echo:Lyon is the capital city of France"}]},
        1: {"expected_output": "4"},
        5: {"input": [{"role": "user", "content": f"echo:{HOSTILE[3]} then {HOSTILE[1]}"}]},
    }
    for index, body in edits.items():
        assert api.put(f"{items}/{suite.items[index]['id']}", body).status == 200
    current = api.post(suite.runs_path, {"wait": True, "baseline_run_id": baseline["id"]}).json
    return suite, current


def test_a_browser_compares_two_runs_and_filters_to_the_changed_items(
    app: Any,
    chromium: Any,
    project_key: str,
    compared: tuple[Suite, dict[str, Any]],
    tmp_path: Path,
) -> None:
    suite, current = compared
    shots = screenshots_dir(tmp_path)
    with serving(app) as server:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        context, page, dialogs, script_errors = signed_in_page(chromium, base, project_key)

        run_path = f"/console/evals/{suite.eval['id']}/runs/{current['id']}"
        page.goto(base + run_path)
        page.click("text=compare with its baseline")
        page.wait_for_url(f"{base}{run_path}/compare")
        assert page.locator("section.compared").count() == 3  # changed only, by default

        page.select_option("select[name=changed]", "all")
        page.click("form.compare-form button[type=submit]")
        page.wait_for_url("**changed=all**")
        assert page.locator("section.compared").count() == 6
        page.select_option("select[name=changed]", "true")  # back to the changed items
        page.click("form.compare-form button[type=submit]")
        page.wait_for_url("**changed=true**")
        kinds = page.locator("section.compared .kind").all_inner_texts()
        assert kinds == ["regression", "regression", "improvement"]
        assert page.locator("section.compared del").count() >= 2
        assert page.locator("script, img, svg, iframe, a[href^='javascript']").count() == 0
        assert HOSTILE[0] in page.inner_text("body")

        for width in WIDTHS:
            page.set_viewport_size({"width": width, "height": 900})
            page.reload()
            overflow = page.evaluate(
                "document.documentElement.scrollWidth - document.documentElement.clientWidth"
            )
            assert overflow <= 0, (width, overflow)
            page.screenshot(path=str(shots / f"compare-{width}.png"), full_page=True)
        context.close()
    assert dialogs == []
    assert script_errors == []


def _signed_in(chromium: Any, base: str, key: str, width: int = WIDTHS[0]) -> Any:
    context = chromium.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    watch(page, errors, errors)  # a dialog is as much an error here as a script's
    sign_in(page, base, key)
    return context, page, errors


def test_a_browser_picks_two_runs_on_the_eval_page_and_pages_the_picker(
    app: Any,
    chromium: Any,
    project_key: str,
    compared: tuple[Suite, dict[str, Any]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from chalicelib.console import compare

    monkeypatch.setattr(compare, "PICKER_SIZE", 1)  # two runs: a picker page each
    suite, current = compared
    baseline = current["baseline_run_id"]
    eval_path = f"/console/evals/{suite.eval['id']}"
    with serving(app) as server:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        context, page, errors = _signed_in(chromium, base, project_key)
        page.goto(base + eval_path)
        # Reversed: the baseline compared with the newer run, picked in the runs table.
        page.check(f"input[name=run][value={baseline}]")
        page.check(f"input[name=with][value={current['id']}]")
        page.click("text=Compare the picked runs")
        page.wait_for_url(f"{base}{eval_path}/runs/{baseline}/compare?with={current['id']}")
        assert page.locator("h1").inner_text() == f"Compare {baseline} with {current['id']}"
        kinds = page.locator("section.compared .kind").all_inner_texts()
        assert kinds == ["regression", "improvement", "improvement"]  # the flips, reversed

        # The picker of the newer run lists one run a page: the baseline is on the second.
        page.goto(f"{base}{eval_path}/runs/{current['id']}/compare?changed=all")
        page.click("text=older runs")
        page.wait_for_url("**runs_cursor=**")
        offered = page.locator("select[name=with] option").evaluate_all(
            "options => options.map(o => o.value)"
        )
        assert offered == [baseline]
        page.select_option("select[name=with]", baseline)
        page.click("form.compare-form button[type=submit]")
        page.wait_for_url("**with=**")
        assert "runs_cursor=" in page.url and "changed=all" in page.url
        assert page.locator("section.compared").count() == 6
        page.click("text=newest runs")
        page.wait_for_url(lambda url: "runs_cursor" not in url)
        context.close()
    assert errors == []


def test_a_browser_sees_each_trial_of_an_item_run_several_times(
    app: Any,
    chromium: Any,
    project_key: str,
    trials_pair: Any,
    tmp_path: Path,
) -> None:
    suite, _, current = trials_pair
    shots = screenshots_dir(tmp_path)
    path = f"/console/evals/{suite.eval['id']}/runs/{current['id']}/compare"
    with serving(app) as server:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        context, page, errors = _signed_in(chromium, base, project_key)
        page.goto(base + path)
        regressed = page.locator("section.compared.kind-regressed")
        assert regressed.locator("li.trial").count() == 6  # three trials a side
        sides = regressed.locator(".side").all_inner_texts()
        assert "3 trials, reduced by any to failed" in sides[0]
        assert "3 trials, reduced by any to passed (flaky" in sides[1]
        for width in WIDTHS:
            page.set_viewport_size({"width": width, "height": 900})
            page.reload()
            overflow = page.evaluate(
                "document.documentElement.scrollWidth - document.documentElement.clientWidth"
            )
            assert overflow <= 0, (width, overflow)
            page.screenshot(path=str(shots / f"compare-trials-{width}.png"), full_page=True)
        context.close()
    assert errors == []
