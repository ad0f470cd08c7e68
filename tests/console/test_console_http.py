"""The console over HTTP (chalice.test.Client, moto): sessions, CSRF, headers, tenancy,
IAM policies and every page, with real runs of a real eval."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest

from chalicelib import clock
from chalicelib.console import session
from chalicelib.store import tenancy
from tests.api.test_authorization import allow, key_with
from tests.conftest import ADMIN_KEY
from tests.support.console import Browser, Page
from tests.support.drain import drain_queues
from tests.support.runs import Plugins, Suite, make_suite
from tests.support.triggers import FakeClock

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)


@pytest.fixture
def browser(api: Any) -> Browser:
    return Browser(api.client)


@pytest.fixture
def suite(api: Any, project: dict[str, Any], plugins: Plugins) -> Suite:
    return make_suite(
        api,
        project,
        [("echo:4", "4"), ("echo:5", "4"), ("fail", "x")],
        name="qa",
        pass_threshold=0.5,
    )


@pytest.fixture
def run(api: Any, suite: Suite) -> dict[str, Any]:
    started = api.post(suite.runs_path, {"wait": True, "metadata": {"commit": "9f2c1ab"}})
    assert started.status == 201, started
    return started.json


def pages_of(suite: Suite, run: dict[str, Any]) -> list[str]:
    eval_id = suite.eval["id"]
    return ["/console", f"/console/evals/{eval_id}", f"/console/evals/{eval_id}/runs/{run['id']}"]


def assert_security_headers(page: Page) -> None:
    assert page.headers["Content-Security-Policy"] == CSP
    assert page.headers["X-Content-Type-Options"] == "nosniff"
    assert page.headers["Referrer-Policy"] == "no-referrer"


def session_cookie(page: Page) -> str:
    (cookie,) = [c for c in page.set_cookies() if c.startswith(f"{session.SESSION_COOKIE}=")]
    return cookie


# --- signing in and out --------------------------------------------------------------------


def test_signed_out_every_page_redirects_to_sign_in(
    browser: Browser, suite: Suite, run: dict[str, Any]
) -> None:
    for path in pages_of(suite, run)[1:]:
        page = browser.get(path)
        assert (page.status, page.location) == (303, "/console"), path
        assert_security_headers(page)
    home = browser.get("/console")
    assert home.status == 200 and 'action="/console/sign-in"' in home.text
    assert_security_headers(home)


def test_sign_in_sets_a_sealed_http_only_strict_cookie(browser: Browser, project_key: str) -> None:
    page = browser.sign_in(project_key)
    assert (page.status, page.location) == (303, "/console")
    cookie = session_cookie(page)
    flags = {part.strip() for part in cookie.split(";")[1:]}
    assert {"HttpOnly", "SameSite=Strict", "Path=/console", "Max-Age=43200"} <= flags
    assert "Secure" not in flags  # plain HTTP: a Secure cookie would never come back
    assert project_key not in cookie and project_key.split(".")[1] not in cookie
    assert browser.get("/console").status == 200


def test_over_https_the_cookies_are_secure(browser: Browser, project_key: str) -> None:
    browser.https = True
    form = browser.get("/console")
    assert all("; Secure" in c for c in form.set_cookies())
    signed_in = browser.post("/console/sign-in", {"key": project_key, "csrf": form.csrf})
    assert "; Secure" in session_cookie(signed_in)
    assert all("; Secure" in c for c in browser.get("/console").set_cookies())


def test_a_wrong_key_is_refused_and_gets_no_session(browser: Browser, project_key: str) -> None:
    for key in ["pawl.key_nothere.abc", "", "x" * 2000, project_key + "x"]:
        page = browser.sign_in(key)
        assert page.status == 401 and "not valid" in page.text, key[:20]
        assert session.SESSION_COOKIE not in browser.cookies


@pytest.mark.parametrize("token", [None, "", "hmac1.00", "forged"])
def test_sign_in_without_its_csrf_token_is_403(
    browser: Browser, project_key: str, token: str | None
) -> None:
    browser.get("/console")
    fields = {"key": project_key} if token is None else {"key": project_key, "csrf": token}
    page = browser.post("/console/sign-in", fields)
    assert page.status == 403
    assert session.SESSION_COOKIE not in browser.cookies


def test_a_sign_in_token_is_bound_to_its_own_browser(api: Any, project_key: str) -> None:
    """Another browser's valid token (a login-CSRF attacker's) does not sign this one in."""
    attacker, victim = Browser(api.client), Browser(api.client)
    token = attacker.get("/console").csrf
    victim.get("/console")
    assert victim.post("/console/sign-in", {"key": project_key, "csrf": token}).status == 403


def test_sign_out_needs_its_csrf_token_and_then_ends_the_session(
    browser: Browser, project_key: str
) -> None:
    browser.sign_in(project_key)
    home = browser.get("/console")
    for fields in [{}, {"csrf": "hmac1.bad"}]:
        refused = browser.post("/console/sign-out", fields)
        assert refused.status == 403
        assert browser.get("/console").text.count('action="/console/sign-out"') == 1  # still in
    page = browser.post("/console/sign-out", {"csrf": home.csrf})
    assert (page.status, page.location) == (303, "/console")
    assert session.SESSION_COOKIE not in browser.cookies
    assert 'action="/console/sign-in"' in browser.get("/console").text


def test_a_session_idle_for_12_hours_is_over(
    browser: Browser, project_key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = FakeClock(clock.now()).install(monkeypatch)
    browser.sign_in(project_key)
    fake.advance(hours=11, minutes=59)
    assert "sign-out" in browser.get("/console").text  # using it renews it
    fake.advance(hours=11, minutes=59)
    assert "sign-out" in browser.get("/console").text
    fake.advance(hours=12, seconds=1)
    assert 'action="/console/sign-in"' in browser.get("/console").text


def test_a_tampered_or_foreign_cookie_is_no_session(browser: Browser, project_key: str) -> None:
    browser.sign_in(project_key)
    sealed = browser.cookies[session.SESSION_COOKIE]
    for value in [sealed[:-4] + "AAAA", "sb1.0.x", project_key, ""]:
        browser.cookies[session.SESSION_COOKIE] = value
        assert 'action="/console/sign-in"' in browser.get("/console").text


def test_a_revoked_key_ends_its_sessions(api: Any, browser: Browser, project: Any) -> None:
    created = api.post("/api/v1/api-keys", {"project_id": project["id"], "name": "short"}).json
    browser.sign_in(created["key"])
    assert "sign-out" in browser.get("/console").text
    assert api.delete(f"/api/v1/api-keys/{created['id']}").status in (200, 204)
    assert 'action="/console/sign-in"' in browser.get("/console").text


# --- pages ---------------------------------------------------------------------------------


def test_a_project_key_walks_project_eval_and_run_pages(
    browser: Browser, project_key: str, suite: Suite, run: dict[str, Any]
) -> None:
    browser.sign_in(project_key)
    home, eval_page, run_page = (browser.get(path) for path in pages_of(suite, run))
    for page in (home, eval_page, run_page):
        assert page.status == 200
        assert_security_headers(page)
    assert suite.eval["name"] in home.text and run["id"] in home.text
    assert "50.0%" in home.text  # pass rate of the latest run: 1 of 2 scored
    assert f"/console/evals/{suite.eval['id']}/runs/{run['id']}" in eval_page.text
    assert re.search(r"<td>2/3</td>\s*<td>1</td>", eval_page.text)  # scored, errored
    assert '<td class="text">commit=9f2c1ab</td>' in eval_page.text
    assert "Pass threshold" in run_page.text and "probe" in run_page.text
    assert run_page.text.count('class="outcome-') == 3
    assert {"passed", "failed", "errored"} <= set(
        re.findall(r'class="outcome-(\w+)"', run_page.text)
    )


def test_the_run_page_pages_its_results_on_the_server(
    api: Any, app: Any, browser: Browser, project: Any, project_key: str, plugins: Plugins
) -> None:
    many = make_suite(api, project, [(f"echo:{i}", str(i)) for i in range(55)], name="many")
    run_id = api.post(many.runs_path, {}).json["id"]
    drain_queues(app)
    assert api.get(many.run_path(run_id)).json["status"] == "completed"
    browser.sign_in(project_key)
    first = browser.get(f"/console/evals/{many.eval['id']}/runs/{run_id}")
    assert first.text.count('class="outcome-') == 50
    cursor = re.search(r'href="\?cursor=([^"]+)"', first.text)
    assert cursor
    second = browser.get(f"/console/evals/{many.eval['id']}/runs/{run_id}?cursor={cursor.group(1)}")
    assert second.text.count('class="outcome-') == 5


def test_a_forged_cursor_is_the_apis_400_not_a_crash(
    browser: Browser, project_key: str, suite: Suite, run: dict[str, Any]
) -> None:
    browser.sign_in(project_key)
    page = browser.get(f"/console/evals/{suite.eval['id']}/runs/{run['id']}?cursor=forged")
    assert page.status == 400


def test_another_projects_run_is_the_apis_404(
    api: Any, browser: Browser, suite: Suite, run: dict[str, Any]
) -> None:
    other = api.post("/api/v1/projects", {"name": "other"}).json
    foreign_key = tenancy.create_api_key(other["id"], "foreign", []).key
    browser.sign_in(foreign_key)
    for path in pages_of(suite, run)[1:]:
        page = browser.get(path)
        assert page.status == 404, path
        assert suite.eval["name"] not in page.text and "echo:4" not in page.text
    assert suite.eval["name"] not in browser.get("/console").text
    api_answer = api.as_key(foreign_key).get(f"/api/v1/evals/{suite.eval['id']}")
    assert api_answer.status == 404
    assert api_answer.json["error"]["message"] in browser.get(pages_of(suite, run)[1]).text


def test_a_key_limited_to_one_eval_sees_only_that_eval(
    api: Any, browser: Browser, project: Any, suite: Suite, run: dict[str, Any]
) -> None:
    hidden = make_suite(api, project, [("echo:z", "z")], name="secret-eval")
    hidden_run = api.post(hidden.runs_path, {"wait": True}).json
    eval_srn = f"srn:{project['id']}:eval:{suite.eval['id']}"
    limited = key_with(
        api, project["id"], allow(["evaluations:GetEval", "evaluations:ListEvals"], eval_srn)
    )
    browser.sign_in(limited.key)
    assert browser.get(f"/console/evals/{suite.eval['id']}").status == 200
    assert browser.get(f"/console/evals/{suite.eval['id']}/runs/{run['id']}").status == 200
    assert browser.get(f"/console/evals/{hidden.eval['id']}").status == 404
    assert browser.get(f"/console/evals/{hidden.eval['id']}/runs/{hidden_run['id']}").status == 404
    home = browser.get("/console")
    assert (
        "secret-eval" not in home.text and hidden.eval["id"] not in home.text
    )  # listing evals is not allowed: the API's empty page


def test_the_admin_picks_a_project_with_a_csrf_token(
    browser: Browser, project: Any, suite: Suite, run: dict[str, Any]
) -> None:
    browser.sign_in(ADMIN_KEY)
    picker = browser.get("/console")
    assert project["id"] in picker.text and "Pick a project" in picker.text
    refused = browser.post("/console/project", {"project_id": project["id"]})
    assert refused.status == 403
    assert "Pick a project" in browser.get("/console").text  # nothing changed
    missing = browser.post("/console/project", {"project_id": "proj_nothere", "csrf": picker.csrf})
    assert missing.status == 404
    picked = browser.post("/console/project", {"project_id": project["id"], "csrf": picker.csrf})
    assert picked.status == 303
    home = browser.get("/console")
    assert suite.eval["name"] in home.text and run["id"] in home.text


def test_a_project_key_cannot_pick_another_project(
    api: Any, browser: Browser, project_key: str, suite: Suite
) -> None:
    other = api.post("/api/v1/projects", {"name": "other"}).json
    home = browser.sign_in(project_key) and browser.get("/console")
    page = browser.post("/console/project", {"project_id": other["id"], "csrf": home.csrf})
    assert page.status == 403
    assert suite.eval["name"] in browser.get("/console").text


def test_static_css_is_served_and_nothing_else_is(browser: Browser) -> None:
    css = browser.get("/console/static/console.css")
    assert css.status == 200 and css.headers["Content-Type"].startswith("text/css")
    assert_security_headers(css)
    for name in ["..%2Froutes.py", "routes.py", "sign_in.html"]:
        assert browser.get(f"/console/static/{name}").status == 404


def test_a_session_cookie_reaches_no_api_route(
    browser: Browser, project_key: str, suite: Suite
) -> None:
    """The API takes bearer keys only: a page of another origin cannot ride the cookie."""
    browser.sign_in(project_key)
    assert browser.get(f"/api/v1/evals/{suite.eval['id']}").status == 401


def test_session_nonce_expiry_boundary() -> None:
    started = session.start("k")
    sealed = session.seal(started)
    assert session.open_cookie(sealed, started.last_used + session.IDLE_SECONDS) is not None
    assert session.open_cookie(sealed, started.last_used + session.IDLE_SECONDS + 1) is None
    assert session.open_cookie(sealed, started.last_used - 1) is None  # from the future
    assert timedelta(seconds=session.IDLE_SECONDS) == timedelta(hours=12)


def test_the_run_page_filters_by_outcome_through_the_api(
    browser: Browser, project_key: str, suite: Suite, run: dict[str, Any]
) -> None:
    browser.sign_in(project_key)
    path = f"/console/evals/{suite.eval['id']}/runs/{run['id']}"
    for outcome in ("passed", "failed", "errored"):
        page = browser.get(f"{path}?outcome={outcome}")
        assert page.status == 200
        assert re.findall(r'class="outcome-(\w+)"', page.text) == [outcome], outcome
    refused = browser.get(f"{path}?outcome=bogus")
    assert refused.status == 400  # the API's validation, shown on the page
    assert "outcome" in refused.text and 'class="outcome-' not in refused.text


def test_filtered_paging_keeps_its_outcome(
    api: Any, app: Any, browser: Browser, project: Any, project_key: str, plugins: Plugins
) -> None:
    cases = [(f"echo:{i}", "no") for i in range(52)] + [("echo:ok", "ok")] * 3
    many = make_suite(api, project, cases, name="mostly-failing")
    run_id = api.post(many.runs_path, {}).json["id"]
    drain_queues(app)
    browser.sign_in(project_key)
    path = f"/console/evals/{many.eval['id']}/runs/{run_id}"
    first = browser.get(f"{path}?outcome=failed")
    assert set(re.findall(r'class="outcome-(\w+)"', first.text)) == {"failed"}
    assert first.text.count('class="outcome-') == 50 and "failed (52)" in first.text
    following = re.search(r'href="(\?outcome=failed&amp;cursor=[^"]+)"', first.text)
    assert following, first.text[-800:]
    second = browser.get(path + following.group(1).replace("&amp;", "&"))
    assert re.findall(r'class="outcome-(\w+)"', second.text) == ["failed", "failed"]


def test_the_item_page_shows_each_trial_whole(
    api: Any, browser: Browser, project: Any, project_key: str, plugins: Plugins
) -> None:
    cases = [("echo:4", "4"), ("fail", "x")]
    two = make_suite(api, project, cases, name="trials", trials=2)
    run = api.post(two.runs_path, {"wait": True}).json
    browser.sign_in(project_key)
    run_page = browser.get(f"/console/evals/{two.eval['id']}/runs/{run['id']}")
    good, bad = two.items
    base = f"/console/evals/{two.eval['id']}/runs/{run['id']}/items"
    assert f'href="{base}/{good["id"]}"' in run_page.text
    page = browser.get(f"{base}/{good['id']}")
    assert page.status == 200
    assert page.text.count('class="trial"') == 2  # both trials
    assert '<span class="role">user</span><pre class="text">echo:4</pre>' in page.text
    assert '<h3>Expected</h3>\n<pre class="text">4</pre>' in page.text
    assert "<td>probe</td><td>1</td><td>pass</td>" in page.text
    assert "<dt>Attempts</dt><dd>1</dd>" in page.text
    assert re.search(r"<dt>Latency</dt><dd>\d+ ms</dd>", page.text)
    errored = browser.get(f"{base}/{bad['id']}")
    assert "<h3>Error</h3>" in errored.text and "errored" in errored.text
    assert browser.get(f"{base}/dsit_0000000000000000").status == 404
    assert browser.get(f"{base}/not-an-item").status == 400


def test_another_projects_item_is_the_apis_404(
    api: Any, browser: Browser, suite: Suite, run: dict[str, Any]
) -> None:
    other = api.post("/api/v1/projects", {"name": "other"}).json
    browser.sign_in(tenancy.create_api_key(other["id"], "foreign", []).key)
    item = suite.items[0]["id"]
    page = browser.get(f"/console/evals/{suite.eval['id']}/runs/{run['id']}/items/{item}")
    assert page.status == 404 and "echo:4" not in page.text


def test_a_run_against_its_baseline_shows_delta_and_p(
    api: Any, browser: Browser, project_key: str, suite: Suite, run: dict[str, Any]
) -> None:
    second = api.post(suite.runs_path, {"wait": True, "baseline_run_id": run["id"]}).json
    baseline = second["aggregate_scores"]["baseline"]
    browser.sign_in(project_key)
    eval_page = browser.get(f"/console/evals/{suite.eval['id']}")
    link = f'href="/console/evals/{suite.eval["id"]}/runs/{run["id"]}">+0.0 pt</a>'
    assert link in eval_page.text and baseline["pass_rate_delta"] == 0
    run_page = browser.get(f"/console/evals/{suite.eval['id']}/runs/{second['id']}")
    assert f"+0.0 pt, p = {baseline['p_value']:.3g}" in run_page.text
