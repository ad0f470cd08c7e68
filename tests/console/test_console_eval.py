"""The eval page over HTTP (chalice.test.Client, moto): its pass-rate chart, starting a run
from its form with each baseline choice, cancelling one, and every refusal (the API's 400
on the form, CSRF, a policy that denies RunEval, a foreign key) changing nothing."""

from __future__ import annotations

import html
import re
from typing import Any

import pytest
from markupsafe import escape

from chalicelib.console import eval_page, reads
from chalicelib.store import tenancy
from tests.api.test_authorization import allow, key_with
from tests.support.console import Browser, Page
from tests.support.runs import Plugins, Suite, make_suite


@pytest.fixture
def browser(api: Any) -> Browser:
    return Browser(api.client)


@pytest.fixture
def suite(api: Any, project: dict[str, Any], plugins: Plugins) -> Suite:
    cases = [("echo:4", "4"), ("echo:5", "4"), ("fail", "x")]
    return make_suite(api, project, cases, name="qa", pass_threshold=0.5)


@pytest.fixture
def done(api: Any, suite: Suite) -> list[dict[str, Any]]:
    """Two completed runs, the second against the first; newest first."""
    first = api.post(suite.runs_path, {"wait": True, "metadata": {"commit": "9f2c1ab"}}).json
    second = api.post(suite.runs_path, {"wait": True, "baseline_run_id": first["id"]}).json
    assert first["status"] == second["status"] == "completed"
    return [second, first]


def eval_path(suite: Suite) -> str:
    return f"/console/evals/{suite.eval['id']}"


def run_ids(api: Any, suite: Suite) -> list[str]:
    return [r["id"] for r in api.get(f"{suite.runs_path}?limit=100").json["data"]]


def signed_in_eval_page(browser: Browser, key: str, suite: Suite) -> Page:
    browser.sign_in(key)
    page = browser.get(eval_path(suite))
    assert page.status == 200, page.text[:300]
    return page


def start(browser: Browser, suite: Suite, csrf: str, **fields: str) -> Page:
    return browser.post(f"{eval_path(suite)}/runs", {"csrf": csrf, **fields})


# --- the chart and the table ----------------------------------------------------------------


def test_the_eval_page_charts_its_runs_with_bands_baseline_links_and_versions(
    browser: Browser, project_key: str, suite: Suite, done: list[dict[str, Any]]
) -> None:
    page = signed_in_eval_page(browser, project_key, suite)
    second, first = done
    assert page.text.count('<circle class="run') == 2
    assert page.text.count('<line class="band"') == 2
    compare = f"{eval_path(suite)}/runs/{second['id']}/compare"
    assert f'<a href="{compare}" class="baseline-link">' in page.text  # the pair, on the chart
    assert f'<a href="{compare}">compare</a>' in page.text  # and in the table
    assert '<text class="version-label"' in page.text and ">v1</text>" in page.text
    assert f"{first['id']}: 50.0% (" in page.text  # each point's title
    assert '<td class="text">commit=9f2c1ab</td>' in page.text
    assert 'style="' not in page.text  # CSP: style-src 'self' allows no style attribute


def test_the_chart_plots_the_tables_page_and_the_runs_before_it(
    api: Any,
    browser: Browser,
    project_key: str,
    suite: Suite,
    done: list[dict[str, Any]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for _ in range(3):
        api.post(suite.runs_path, {"wait": True})
    monkeypatch.setattr(reads, "PAGE_SIZE", 3)  # five runs: a page of three, then two
    monkeypatch.setattr(eval_page, "CHART_RUNS", 4)
    page = signed_in_eval_page(browser, project_key, suite)
    assert page.text.count('<circle class="run') == 4
    assert page.text.split("<tbody>")[1].count("<tr>") == 3  # the table: its page only
    assert "4 scored of 4 runs: the 3 in the table below and the 1 before them" in page.text
    older = re.search(r'href="\?cursor=([^"]+)">Older runs', page.text)
    assert older is not None, "the table links its next page"
    page = browser.get(f"{eval_path(suite)}?cursor={html.unescape(older.group(1))}")
    assert page.status == 200 and page.text.count('<circle class="run') == 2
    assert "2 scored of 2 runs: the 2 in the table below" in page.text


def test_the_project_page_has_a_sparkline_per_eval(
    browser: Browser, project_key: str, suite: Suite, done: list[dict[str, Any]]
) -> None:
    browser.sign_in(project_key)
    home = browser.get("/console")
    (spark,) = re.findall(r'<svg class="spark".*?</svg>', home.text)
    assert "pass rate over the last 2 scored runs: 50.0%, 50.0%" in spark
    assert spark.count(",") >= 2 and "<polyline points=" in spark


# --- starting a run -------------------------------------------------------------------------


@pytest.mark.parametrize("choice", ["none", "latest", "specific"])
def test_starting_a_run_with_each_baseline_choice(
    api: Any,
    browser: Browser,
    project_key: str,
    suite: Suite,
    done: list[dict[str, Any]],
    choice: str,
) -> None:
    second, first = done
    page = signed_in_eval_page(browser, project_key, suite)
    assert f'<option value="{first["id"]}">' in page.text
    field = {"none": "none", "latest": "latest", "specific": first["id"]}[choice]
    started = start(browser, suite, page.csrf, baseline=field, max_concurrency="2")
    assert started.status == 303
    new_ids = [i for i in run_ids(api, suite) if i not in {first["id"], second["id"]}]
    assert len(new_ids) == 1
    assert started.location == f"{eval_path(suite)}/runs/{new_ids[0]}"
    created = api.get(suite.run_path(new_ids[0])).json
    expected = {"none": None, "latest": second["id"], "specific": first["id"]}[choice]
    assert created["baseline_run_id"] == expected
    assert created["status"] in ("queued", "running")
    assert browser.get(started.location).status == 200


def test_latest_completed_with_no_completed_run_is_refused_on_the_form(
    api: Any, browser: Browser, project_key: str, suite: Suite
) -> None:
    page = signed_in_eval_page(browser, project_key, suite)
    refused = start(browser, suite, page.csrf, baseline="latest")
    assert refused.status == 400 and "no completed run to compare with" in refused.text
    assert run_ids(api, suite) == []


@pytest.mark.parametrize("value", ["0", "abc", "100000"])
def test_a_bad_concurrency_is_the_apis_400_on_the_form_and_no_run(
    api: Any, browser: Browser, project_key: str, suite: Suite, value: str
) -> None:
    sent: Any = int(value) if value.isdigit() else value
    api_answer = api.post(suite.runs_path, {"max_concurrency": sent})
    assert api_answer.status == 400
    page = signed_in_eval_page(browser, project_key, suite)
    refused = start(browser, suite, page.csrf, baseline="none", max_concurrency=value)
    assert refused.status == 400
    assert f'<p class="notice" role="alert">{escape(api_answer.json["error"]["message"])}' in (
        refused.text
    )
    assert f'name="max_concurrency" inputmode="numeric" size="6" value="{value}"' in refused.text
    assert run_ids(api, suite) == []


def test_a_baseline_that_is_not_a_run_of_this_eval_is_the_apis_400(
    api: Any, browser: Browser, project: Any, project_key: str, suite: Suite
) -> None:
    other = make_suite(api, project, [("echo:z", "z")], name="other")
    foreign_run = api.post(other.runs_path, {"wait": True}).json["id"]
    page = signed_in_eval_page(browser, project_key, suite)
    for baseline in [foreign_run, "evrun_0000000000000000", "not-a-run"]:
        refused = start(browser, suite, page.csrf, baseline=baseline)
        assert refused.status == 400, baseline
        assert '<p class="notice" role="alert">' in refused.text
    assert run_ids(api, suite) == []


@pytest.mark.parametrize("token", [None, "", "hmac1.00"])
def test_starting_without_its_csrf_token_is_403_and_no_run(
    api: Any, browser: Browser, project_key: str, suite: Suite, token: str | None
) -> None:
    signed_in_eval_page(browser, project_key, suite)
    fields = {"baseline": "none"} if token is None else {"baseline": "none", "csrf": token}
    refused = browser.post(f"{eval_path(suite)}/runs", fields)
    assert refused.status == 403
    assert run_ids(api, suite) == []


def test_signed_out_the_forms_change_nothing(api: Any, browser: Browser, suite: Suite) -> None:
    queued = api.post(suite.runs_path, {}).json
    assert browser.post(f"{eval_path(suite)}/runs", {"baseline": "none"}).status == 303
    cancel = f"{eval_path(suite)}/runs/{queued['id']}/cancel"
    assert browser.post(cancel, {}).status == 303
    assert run_ids(api, suite) == [queued["id"]]
    assert api.get(suite.run_path(queued["id"])).json["status"] == "queued"


# --- cancelling -----------------------------------------------------------------------------


def test_cancel_works_and_is_refused_when_its_csrf_token_is_wrong(
    api: Any, browser: Browser, project_key: str, suite: Suite, done: list[dict[str, Any]]
) -> None:
    queued = api.post(suite.runs_path, {}).json
    page = signed_in_eval_page(browser, project_key, suite)
    cancel = f"{eval_path(suite)}/runs/{queued['id']}/cancel"
    assert page.text.count('/cancel"') == 1  # only the queued run has a cancel button
    assert f'action="{cancel}"' in page.text
    for fields in [{}, {"csrf": "hmac1.bad"}]:
        assert browser.post(cancel, fields).status == 403
        assert api.get(suite.run_path(queued["id"])).json["status"] == "queued"
    cancelled = browser.post(cancel, {"csrf": page.csrf})
    assert (cancelled.status, cancelled.location) == (303, eval_path(suite))
    assert api.get(suite.run_path(queued["id"])).json["status"] == "canceled"
    again = browser.post(cancel, {"csrf": page.csrf})  # the API's own refusal: not active
    assert again.status == 400


# --- authorization --------------------------------------------------------------------------


def test_a_key_whose_policy_denies_run_eval_gets_the_apis_refusal(
    api: Any, browser: Browser, project: Any, suite: Suite
) -> None:
    queued = api.post(suite.runs_path, {}).json
    eval_srn = f"srn:{project['id']}:eval:{suite.eval['id']}"
    limited = key_with(
        api, project["id"], allow(["evaluations:GetEval", "evaluations:ListEvals"], eval_srn)
    )
    api_start = limited.post(suite.runs_path, {})
    api_cancel = limited.post(f"{suite.run_path(queued['id'])}/cancel")
    assert api_start.status in (403, 404) and api_cancel.status in (403, 404)
    page = signed_in_eval_page(browser, limited.key, suite)
    refused = start(browser, suite, page.csrf, baseline="none")
    assert refused.status == api_start.status
    assert str(escape(api_start.json["error"]["message"])) in refused.text
    cancel = f"{eval_path(suite)}/runs/{queued['id']}/cancel"
    refused_cancel = browser.post(cancel, {"csrf": page.csrf})
    assert refused_cancel.status == api_cancel.status
    assert run_ids(api, suite) == [queued["id"]]
    assert api.get(suite.run_path(queued["id"])).json["status"] == "queued"


def test_a_foreign_keys_session_gets_the_apis_404_and_changes_nothing(
    api: Any, browser: Browser, suite: Suite, done: list[dict[str, Any]]
) -> None:
    queued = api.post(suite.runs_path, {}).json
    other = api.post("/api/v1/projects", {"name": "other"}).json
    foreign_key = tenancy.create_api_key(other["id"], "foreign", []).key
    browser.sign_in(foreign_key)
    csrf = browser.get("/console").csrf
    page = browser.get(eval_path(suite))
    assert page.status == 404 and "qa" not in page.text.split("<main>")[1]
    assert start(browser, suite, csrf, baseline="latest").status == 404
    cancel = f"{eval_path(suite)}/runs/{queued['id']}/cancel"
    assert browser.post(cancel, {"csrf": csrf}).status == 404
    assert len(run_ids(api, suite)) == 3
    assert api.get(suite.run_path(queued["id"])).json["status"] == "queued"
