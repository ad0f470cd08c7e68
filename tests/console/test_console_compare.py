"""The compare page over HTTP (chalice.test.Client, moto): a view of the API's comparison,
read as the signed-in key, with tenant outputs escaped in both columns and in the diff."""

from __future__ import annotations

import re
from typing import Any

import pytest

from chalicelib.store import tenancy
from tests.api.test_authorization import allow, key_with
from tests.api.test_run_comparison import pair
from tests.support.console import HOSTILE, LIVE_MARKUP, Browser
from tests.support.runs import Plugins, Suite, make_suite

__all__ = ["pair"]


@pytest.fixture
def browser(api: Any) -> Browser:
    return Browser(api.client)


def compare_path(suite: Suite, run_id: str, query: str = "") -> str:
    path = f"/console/evals/{suite.eval['id']}/runs/{run_id}/compare"
    return path + (f"?{query}" if query else "")


def test_the_page_shows_the_apis_figures_and_the_flips_regressions_first(
    api: Any, browser: Browser, project_key: str, pair: Any
) -> None:
    suite, baseline, current = pair
    first, second, third, *_ = suite.items
    browser.sign_in(project_key)
    run_page = browser.get(f"/console/evals/{suite.eval['id']}/runs/{current['id']}")
    assert f'href="{compare_path(suite, current["id"])}"' in run_page.text
    page = browser.get(compare_path(suite, current["id"]))
    assert page.status == 200, page.text[:400]
    text = page.text
    assert "2 regressed" in text and "1 improved" in text
    assert "-20.0 pt over 5 items" in text  # (1 - 2) / 5
    answer = (
        api.as_key(project_key)
        .get(f"/api/v1/evals/{suite.eval['id']}/runs/{current['id']}/comparison")
        .json
    )
    assert f"{answer['comparison']['p_value']:.3g}" in text
    shown = re.findall(r"<h3><span class=\"kind\">(\w+)</span>", text)
    assert shown == ["regression", "regression", "improvement"]
    assert third["id"] not in text.split("In one run only")[0].split("<h2>Items")[1]
    assert "<del>quick brown</del><ins>slow</ins>" in text
    assert '<td class="text">probe</td><td>-0.2</td><td>-20.0 pt</td>' in text  # scorers
    assert text.count("The same output in both runs.") == 1  # the improvement: a new expected
    item_link = f"/console/evals/{suite.eval['id']}/runs/{baseline['id']}/items/{first['id']}"
    assert f'href="{item_link}"' in text
    assert f"/api/v1/evals/{suite.eval['id']}/runs/{current['id']}/comparison?" in text
    assert f'<option value="{baseline["id"]}" selected>' in text  # the picker
    assert "added ·" in text and "removed ·" in text
    assert second["id"] in text


def test_the_filters_are_the_apis(browser: Browser, project_key: str, pair: Any) -> None:
    suite, _, current = pair
    _, _, third, fourth, *_ = suite.items
    browser.sign_in(project_key)
    unchanged = browser.get(compare_path(suite, current["id"], "changed=false"))
    assert re.findall(r"<h3><span class=\"kind\">(\w+)</span>", unchanged.text) == ["unchanged"] * 2
    assert third["id"] in unchanged.text and fourth["id"] in unchanged.text
    group_b = browser.get(compare_path(suite, current["id"], "group=b"))
    assert re.findall(r"<h3><span class=\"kind\">(\w+)</span>", group_b.text) == ["regression"]
    refused = browser.get(compare_path(suite, current["id"], "changed=maybe"))
    assert refused.status == 400


def test_without_a_baseline_the_page_asks_which_run(
    browser: Browser, project_key: str, pair: Any
) -> None:
    suite, baseline, current = pair
    browser.sign_in(project_key)
    page = browser.get(compare_path(suite, baseline["id"]))
    assert page.status == 200 and "has no baseline" in page.text
    assert f'<option value="{current["id"]}"' in page.text
    chosen = browser.get(compare_path(suite, baseline["id"], f"with={current['id']}"))
    assert chosen.status == 200
    assert "1 regressed" in chosen.text and "2 improved" in chosen.text


def test_a_run_or_baseline_the_key_may_not_read_is_the_apis_404(
    api: Any, browser: Browser, project: Any, pair: Any
) -> None:
    suite, _, current = pair
    stranger = api.post("/api/v1/projects", {"name": "initech"}).json
    foreign = Browser(api.client)
    foreign.sign_in(tenancy.create_api_key(stranger["id"], "foreign", []).key)
    assert foreign.get(compare_path(suite, current["id"])).status == 404
    hidden = make_suite(api, project, [("echo:a", "a")], name="hidden")
    hidden_run = api.post(hidden.runs_path, {"wait": True}).json
    srn = f"srn:{project['id']}:eval:{suite.eval['id']}"
    limited = key_with(
        api, project["id"], allow(["evaluations:GetEval", "evaluations:ListEvals"], srn)
    )
    browser.sign_in(limited.key)
    assert browser.get(compare_path(suite, current["id"])).status == 200
    denied = browser.get(compare_path(suite, current["id"], f"with={hidden_run['id']}"))
    assert denied.status == 404 and f"eval_run {hidden_run['id']} not found" in denied.text


@pytest.fixture
def hostile_pair(api: Any, project: Any, plugins: Plugins) -> tuple[Suite, dict[str, Any]]:
    """Every hostile text an output of both runs, changed between them (so in the diff)."""
    cases = [(f"echo:{text} before", f"{text} before") for text in HOSTILE]
    suite = make_suite(api, project, cases, name="hostile")
    baseline = api.post(suite.runs_path, {"wait": True}).json
    items = f"/api/v1/datasets/{suite.dataset['id']}/items"
    for item, text in zip(suite.items, HOSTILE, strict=True):
        changed = [{"role": "user", "content": f"echo:{text} after"}]
        assert api.put(f"{items}/{item['id']}", {"input": changed}).status == 200
    current = api.post(suite.runs_path, {"wait": True, "baseline_run_id": baseline["id"]}).json
    return suite, current


def test_hostile_outputs_are_text_in_both_columns_and_in_the_diff(
    browser: Browser, project_key: str, hostile_pair: tuple[Suite, dict[str, Any]]
) -> None:
    suite, current = hostile_pair
    browser.sign_in(project_key)
    page = browser.get(compare_path(suite, current["id"]))
    assert page.status == 200
    text = page.text
    assert text.count('<section class="compared') == len(HOSTILE)
    for marker in LIVE_MARKUP:
        assert marker not in text, marker
    escaped = "&lt;script&gt;alert(&#39;xss&#39;)&lt;/script&gt;"
    assert f'<pre class="text">{escaped} after</pre>' in text  # this run's column
    assert f'<pre class="text">{escaped} before</pre>' in text  # the other run's
    assert "<del>before</del><ins>after</ins>" in text  # the diff
    assert f"<span>{escaped} </span>" in text  # the diff's unchanged words, escaped too
