"""The run page in a real browser (Debian's Chromium under Playwright, the real HTTP front):
a run left running shows its progress change without a reload and reloads once when it
ends; the project page follows it too; the filter form works; screenshots at 1280 and
420 px with no horizontal overflow; no script or console error (a CSP violation is one).

Screenshots go to ``PAWL_CONSOLE_SCREENSHOTS`` when set (``docs/console/``), else to the
test's temporary directory.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from chalicelib.console import run_page
from tests.console.conftest import WIDTHS, screenshots_dir, sign_in
from tests.support import agents
from tests.support.drain import drain_queues
from tests.support.http_front import serving
from tests.support.runs import Plugins, Suite, make_suite

pytestmark = pytest.mark.slow

#: How long the page may take to show what the script fetched (it polls every 2 s).
SHOWS_WITHIN_MS = 15_000


def _grouped_run(api: Any, project: Any) -> tuple[Suite, dict[str, Any]]:
    """A finished run with groups, a flaky item, a failure, an error and paid usage."""
    cases: list[Any] = [
        ("paid:checkout ok", "checkout ok", {"area": "checkout"}),
        ("paid:cart ok", "cart ok", {"area": "checkout"}),
        ("flip:refund ok", "refund ok", {"area": "refunds"}),
        ("paid:refund denied", "refund ok", {"area": "refunds"}),
        ("paid:search ok", "search ok", {"area": "search"}),
        ("fail", "x", {"area": "search"}),
    ]
    suite = make_suite(
        api, project, cases, name="support bot", group_by="area", trials=2, pass_threshold=0.5
    )
    run = api.post(suite.runs_path, {"wait": True}).json
    assert run["status"] == "completed", run
    return suite, run


def _watch_errors(page: Any, errors: list[str]) -> None:
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on(
        "console",
        lambda message: errors.append(message.text) if message.type == "error" else None,
    )


def _at_each_width(
    app: Any, chromium: Any, key: str, path: str, check: Callable[[Any], None], shot: Path
) -> None:
    """Signed in with ``key``, ``path`` at each of :data:`WIDTHS`: ``check`` holds, nothing
    overflows sideways, a screenshot goes to ``shot``-WIDTH.png, and no script errs."""
    errors: list[str] = []
    with serving(app) as server:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        context = chromium.new_context(viewport={"width": WIDTHS[0], "height": 900})
        page = context.new_page()
        _watch_errors(page, errors)
        sign_in(page, base, key)
        for width in WIDTHS:
            page.set_viewport_size({"width": width, "height": 900})
            page.goto(f"{base}{path}")
            check(page)
            overflow = page.evaluate(
                "document.documentElement.scrollWidth - document.documentElement.clientWidth"
            )
            assert overflow <= 0, (width, overflow)
            page.screenshot(path=f"{shot}-{width}.png", full_page=True)
        context.close()
    assert errors == []


def _follow_a_running_run(
    page: Any, base: str, app: Any, suite: Suite, run_id: str, errors: list[str]
) -> None:
    """Open the queued run's page and the project page, work the run's items with one held
    in the agent, and watch both change in place; then release it and see the run page
    reload once to the verdict."""
    home = page.context.new_page()
    _watch_errors(home, errors)
    home.goto(f"{base}/console")
    assert home.inner_text("table.in-progress [data-field=status]") == "queued"
    home.evaluate("window.pawlNotReloaded = true")
    path = f"{base}/console/evals/{suite.eval['id']}/runs/{run_id}"
    page.goto(path)
    assert page.inner_text("[data-field=status]") == "queued"
    page.evaluate("window.pawlNotReloaded = true")
    worker = threading.Thread(target=drain_queues, args=(app,), daemon=True)
    worker.start()
    try:
        assert agents.wait_until_blocked(suite.items[2]["id"])
        expect(page.locator("[data-field=recorded]")).to_have_text("2/3", timeout=SHOWS_WITHIN_MS)
        assert page.inner_text("[data-field=status]") == "running"
        assert page.inner_text("[data-field=pass_rate]") == "50.0%"  # 1 of 2 scored so far
        assert page.evaluate("window.pawlNotReloaded") is True  # changed in place
        in_progress = home.locator("table.in-progress [data-field=recorded]")
        expect(in_progress).to_have_text("2/3", timeout=SHOWS_WITHIN_MS)
        assert home.evaluate("window.pawlNotReloaded") is True
        home.close()
        with page.expect_navigation(timeout=SHOWS_WITHIN_MS):  # the run ends: one reload
            agents.RELEASE.set()
    finally:
        agents.RELEASE.set()
        worker.join(60)
    assert page.evaluate("window.pawlNotReloaded") is None
    assert page.inner_text("[data-field=status]") == "completed"
    assert page.locator("[data-progress]").count() == 0
    assert page.inner_text("dd.verdict-pass") == "pass"  # 2 of 3 against a threshold of 0.5


def test_a_running_run_updates_in_place_and_the_filters_work(
    api: Any,
    app: Any,
    chromium: Any,
    project: Any,
    project_key: str,
    plugins: Plugins,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    shots = screenshots_dir(tmp_path)
    grouped, finished = _grouped_run(api, project)
    live = make_suite(
        api,
        project,
        [("echo:a", "a"), ("echo:b", "no"), ("block", "released")],
        name="live",
        pass_threshold=0.5,
    )
    queued = api.post(live.runs_path, {}).json
    assert queued["status"] == "queued"
    errors: list[str] = []
    with serving(app) as server:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        context = chromium.new_context(viewport={"width": WIDTHS[0], "height": 900})
        page = context.new_page()
        _watch_errors(page, errors)
        sign_in(page, base, project_key)
        assert page.locator("table.in-progress tbody tr").count() == 1
        # The pass rate so far is the run row's counter: the COUNT a run without one
        # needs is switched off, so a figure on the page can only come from the counter.
        monkeypatch.setattr(run_page, "PASS_RATE_SO_FAR_MAX_RESULTS", -1)
        _follow_a_running_run(page, base, app, live, queued["id"], errors)

        run_path = f"{base}/console/evals/{grouped.eval['id']}/runs/{finished['id']}"
        page.goto(run_path)
        assert page.locator("svg.group-plot rect.bar").count() == 3
        assert page.locator("ul.flaky li").count() == 1
        assert "eval" in page.inner_text("table.usage")
        page.select_option("select[name=outcome]", "failed")
        page.fill("input[name=group]", "refunds")
        page.click("form.refine button[type=submit]")
        page.wait_for_url("**outcome=failed**")
        outcomes = page.locator("table.results tbody tr").evaluate_all(
            "rows => rows.map(row => row.className)"
        )
        assert outcomes == ["outcome-failed"] * 3  # refund denied twice, the flipped trial
        page.fill("input[name=scorer]", "probe")
        page.select_option("select[name=sort]", "score_desc")
        page.select_option("select[name=outcome]", "")
        page.fill("input[name=group]", "")
        page.click("form.refine button[type=submit]")
        page.wait_for_url("**sort=score_desc**")
        scores = page.locator("table.results tbody tr td:last-child").all_inner_texts()
        assert scores[0] == "probe: 1" and scores[-1] == "probe: 0"  # only scored rows

        for width in WIDTHS:
            page.set_viewport_size({"width": width, "height": 900})
            page.goto(run_path)
            overflow = page.evaluate(
                "document.documentElement.scrollWidth - document.documentElement.clientWidth"
            )
            assert overflow <= 0, (width, overflow)
            page.screenshot(path=str(shots / f"run-{width}.png"), full_page=True)
        context.close()
    assert errors == []


def test_the_verdict_shows_the_smallest_detectable_drop_beside_it(
    api: Any,
    app: Any,
    chromium: Any,
    project: Any,
    project_key: str,
    plugins: Plugins,
    tmp_path: Path,
) -> None:
    shots = screenshots_dir(tmp_path)
    cases: list[Any] = [("flip:refund ok", "refund ok"), ("flip:cart ok", "cart ok")]
    cases += [(f"echo:answer {i}", f"answer {i}") for i in range(18)]
    suite = make_suite(api, project, cases, name="gated bot", max_regression=0.05)
    baseline = api.post(suite.runs_path, {"wait": True}).json
    run = api.post(suite.runs_path, {"wait": True, "baseline_run_id": baseline["id"]}).json
    (gate,) = [r for r in run["verdict_reasons"] if r["gate"] == "max_regression"]
    expected = f"{gate['min_detectable_regression'] * 100:.1f}% (80.0% power, 20 compared items)"

    def beside_the_verdict(page: Any) -> None:
        shown = page.locator("dd.detectable")
        expect(shown).to_be_visible()
        assert shown.inner_text() == expected
        # Beside the verdict: the facts row right below it, before the pass rate.
        verdict = page.locator("dl.facts dd").nth(1).bounding_box()
        box = shown.bounding_box()
        assert verdict is not None and box is not None
        assert 0 < box["y"] - verdict["y"] < 80, (verdict, box)

    path = f"/console/evals/{suite.eval['id']}/runs/{run['id']}"
    _at_each_width(app, chromium, project_key, path, beside_the_verdict, shots / "run-detectable")


def test_an_early_stopped_run_says_what_it_decided_and_saved_and_why(
    api: Any,
    app: Any,
    chromium: Any,
    project: Any,
    project_key: str,
    plugins: Plugins,
    tmp_path: Path,
) -> None:
    shots = screenshots_dir(tmp_path)
    cases: list[Any] = [(f"flip:refund {i}", f"refund {i}") for i in range(120)]
    cases += [(f"echo:answer {i}", f"answer {i}") for i in range(280)]
    suite = make_suite(api, project, cases, name="stopping bot", max_regression=0.05)
    first = api.post(suite.runs_path, {})
    assert first.status == 201, first
    drain_queues(app)
    started = api.post(suite.runs_path, {"baseline_run_id": first.json["id"], "early_stop": True})
    assert started.status == 201, started
    drain_queues(app)
    run = api.get(suite.run_path(started.json["id"])).json
    block = run["aggregate_scores"]["early_stop"]
    assert block["decision"] == "regressed", block

    def decided_and_saved(page: Any) -> None:
        stopped = page.locator("dd.stopped-early")
        expect(stopped).to_be_visible()
        assert stopped.inner_text().startswith(
            f"regressed after {block['decided_after_items']} items; "
        )
        expect(page.get_by_text("Stopped early: after", exact=False)).to_be_visible()

    path = f"/console/evals/{suite.eval['id']}/runs/{run['id']}"
    _at_each_width(app, chromium, project_key, path, decided_and_saved, shots / "run-early-stop")
