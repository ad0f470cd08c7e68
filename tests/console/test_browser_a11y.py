"""Every console page passes axe-core (no ``serious`` or ``critical`` violation) in
Debian's Chromium over the real HTTP front: sign-in, the admin's project picker, project,
eval, run, a filtered run, item, an error page (the API's 404) and the not-found page.

axe is the vendored ``tests/console/vendor/axe-core/axe.min.js``, injected into a
``bypass_csp`` context (:mod:`tests.support.axe`); the other browser tests keep the CSP on.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import ADMIN_KEY
from tests.console.conftest import WIDTHS
from tests.support.axe import axe_context, describe, violations
from tests.support.http_front import serving
from tests.support.runs import Plugins, Suite, make_suite

pytestmark = pytest.mark.slow


@pytest.fixture
def walked_suite(api: Any, project: Any, plugins: Plugins) -> tuple[Suite, dict[str, Any]]:
    cases = [("echo:4", "4"), ("echo:5", "4"), ("fail", "x"), ("echo:<b>bold</b>", "<b>")]
    suite = make_suite(api, project, cases, name="checkout flow", pass_threshold=0.5)
    first = api.post(suite.runs_path, {"wait": True}).json
    run = api.post(suite.runs_path, {"wait": True, "baseline_run_id": first["id"]}).json
    return suite, run


def assert_accessible(page: Any, name: str) -> None:
    found = violations(page)
    assert found == [], f"{name} ({page.url}):\n{describe(found)}"


def test_every_console_page_has_no_serious_accessibility_violation(
    app: Any, chromium: Any, walked_suite: tuple[Suite, dict[str, Any]]
) -> None:
    suite, run = walked_suite
    run_path = f"/console/evals/{suite.eval['id']}/runs/{run['id']}"
    #: Each page, and what shows it is that page (so no check passes on a blank page).
    signed_in_pages = {
        "project": ("/console", "text=checkout flow"),
        "eval": (f"/console/evals/{suite.eval['id']}", "table tbody tr"),
        "run": (run_path, "table.results tbody tr"),
        "run-filtered": (f"{run_path}?outcome=failed", "table.results tbody tr"),
        "item": (f"{run_path}/items/{suite.items[0]['id']}", "section.trial"),
        "compare": (f"{run_path}/compare?changed=all", "section.compared"),
        "error (the API's 404)": ("/console/evals/eval_0000000000000000", "h1:text('Not found')"),
        "not found": ("/console/static/missing.css", "h1:text('Not found')"),
    }
    with serving(app) as server:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        for width in WIDTHS:
            context = axe_context(chromium, viewport={"width": width, "height": 900})
            page = context.new_page()
            page.goto(f"{base}/console/")
            assert page.locator("#key").count() == 1
            assert_accessible(page, "sign-in")
            page.fill("#key", ADMIN_KEY)
            page.click("button[type=submit]")
            page.wait_for_url(f"{base}/console")
            assert page.locator("h1:text('Pick a project')").count() == 1
            assert_accessible(page, "project picker")
            page.click(f"text={suite.project['name']}")
            page.wait_for_url(f"{base}/console")
            for name, (path, shown_by) in signed_in_pages.items():
                page.goto(base + path)
                assert page.locator(shown_by).count() > 0, name
                assert_accessible(page, f"{name} at {width} px")
            context.close()


def test_the_check_finds_a_violation(chromium: Any) -> None:
    """The helper is not vacuous: an unlabelled input and low-contrast text are reported."""
    context = axe_context(chromium)
    page = context.new_page()
    page.set_content(
        '<html lang="en"><head><title>t</title></head><body><main>'
        '<p style="color:#ccc;background:#fff">faint</p><input type="text"></main></body></html>'
    )
    found = {v["id"] for v in violations(page)}
    context.close()
    assert {"color-contrast", "label"} <= found
