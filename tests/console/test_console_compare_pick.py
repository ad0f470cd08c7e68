"""Choosing what to compare (chalice.test.Client, moto): the eval page's picker, the compare
page's picker paged through every run of the eval, several trials per item, and a run of
another tenant named by URL."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote

import pytest

from chalicelib.console import compare
from chalicelib.store import tenancy
from tests.api.test_comparison_trials import trials_pair
from tests.api.test_run_comparison import pair
from tests.support.console import Browser
from tests.support.runs import Plugins, Suite, make_suite

__all__ = ["pair", "trials_pair"]


@pytest.fixture
def browser(api: Any) -> Browser:
    return Browser(api.client)


def compare_path(suite: Suite, run_id: str, query: str = "") -> str:
    path = f"/console/evals/{suite.eval['id']}/runs/{run_id}/compare"
    return path + (f"?{query}" if query else "")


def options(text: str) -> list[str]:
    """The run ids the compare page's "Other run" select offers, in order."""
    select = text.split('<select name="with">')[1].split("</select>")[0]
    return re.findall(r'<option value="([^"]+)"', select)


def foreign_browser(api: Any) -> tuple[Browser, Any]:
    stranger = api.post("/api/v1/projects", {"name": "initech"}).json
    outsider = Browser(api.client)
    outsider.sign_in(tenancy.create_api_key(stranger["id"], "foreign", []).key)
    return outsider, stranger


# --- the eval page's picker -------------------------------------------------------------------


def test_the_eval_page_picks_two_runs_and_lands_on_their_comparison(
    api: Any, browser: Browser, project_key: str, pair: Any
) -> None:
    suite, baseline, current = pair
    browser.sign_in(project_key)
    eval_page = browser.get(f"/console/evals/{suite.eval['id']}")
    pick = f"/console/evals/{suite.eval['id']}/compare"
    assert f'<form id="compare-pick" method="get" action="{pick}"' in eval_page.text
    for name in ("run", "with"):
        for run in (baseline, current):
            assert f'form="compare-pick" name="{name}" value="{run["id"]}"' in eval_page.text
    # Reversed: the baseline compared with the newer run (what no link on the page offers).
    sent = browser.get(f"{pick}?run={baseline['id']}&with={current['id']}")
    assert sent.status == 303
    assert sent.location == compare_path(suite, baseline["id"], f"with={current['id']}")
    landed = browser.get(sent.location)
    assert landed.status == 200
    assert "1 regressed" in landed.text and "2 improved" in landed.text
    by_baseline = browser.get(f"{pick}?run={current['id']}&with=")  # "with its baseline"
    assert by_baseline.location == compare_path(suite, current["id"])
    assert "2 regressed" in browser.get(by_baseline.location).text


def test_a_bad_pick_is_a_400_and_a_foreign_eval_the_apis_404(
    api: Any, browser: Browser, project_key: str, pair: Any
) -> None:
    suite, _, current = pair
    pick = f"/console/evals/{suite.eval['id']}/compare"
    browser.sign_in(project_key)
    nothing = browser.get(pick)
    assert nothing.status == 400 and "Pick the run to compare" in nothing.text
    same = browser.get(f"{pick}?run={current['id']}&with={current['id']}")
    assert same.status == 400 and "two different runs" in same.text
    odd = browser.get(f"{pick}?run={quote('../../x?y', safe='')}")
    assert odd.status == 303 and odd.location == compare_path(suite, "..%2F..%2Fx%3Fy")
    assert browser.get(odd.location).status == 404  # the API's: no such run
    outsider, _ = foreign_browser(api)
    foreign = outsider.get(f"{pick}?run={current['id']}")
    assert foreign.status == 404 and current["id"] not in foreign.text


# --- the compare page's picker, paged -------------------------------------------------------------


def test_the_picker_pages_through_every_run_of_the_eval(
    api: Any,
    browser: Browser,
    project: Any,
    project_key: str,
    plugins: Plugins,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(compare, "PICKER_SIZE", 2)
    suite = make_suite(api, project, [("echo:a", "a"), ("echo:b", "c")], name="many")
    runs = [api.post(suite.runs_path, {"wait": True}).json["id"] for _ in range(4)]
    oldest, second, third, newest = runs
    browser.sign_in(project_key)
    first = browser.get(compare_path(suite, newest))
    assert first.status == 200 and "has no baseline" in first.text
    assert options(first.text) == [third]  # the newest page of 2, less the run itself
    older = re.search(r'<a href="\?([^"]*runs_cursor=[^"]+)">older runs</a>', first.text)
    assert older is not None
    page_two = browser.get(compare_path(suite, newest, older.group(1).replace("&amp;", "&")))
    assert options(page_two.text) == [second, oldest]
    assert 'name="runs_cursor"' in page_two.text and "newest runs</a>" in page_two.text
    assert "older runs</a>" not in page_two.text
    cursor = re.search(r'name="runs_cursor" value="([^"]+)"', page_two.text)
    assert cursor is not None
    # The oldest run, chosen from the second page: the picker keeps its page and the choice.
    runs_cursor = quote(cursor.group(1).replace("&#43;", "+"), safe="")
    chosen = browser.get(compare_path(suite, newest, f"with={oldest}&runs_cursor={runs_cursor}"))
    assert chosen.status == 200 and f"Compare <code>{newest}</code> with" in chosen.text
    assert f'<option value="{oldest}" selected>' in chosen.text
    # Chosen while the picker shows the newest page: still offered (first), and selected.
    shown = browser.get(compare_path(suite, newest, f"with={oldest}"))
    assert options(shown.text) == [oldest, third]
    assert f'<option value="{oldest}" selected>' in shown.text
    forged = browser.get(compare_path(suite, newest, "runs_cursor=forged"))
    assert forged.status == 400  # the API's own cursor check


# --- several trials ----------------------------------------------------------------------------


def test_several_trials_show_each_trials_output_beside_the_reduced_outcome(
    browser: Browser, project_key: str, trials_pair: Any
) -> None:
    suite, _, current = trials_pair
    browser.sign_in(project_key)
    page = browser.get(compare_path(suite, current["id"]))
    assert page.status == 200
    section = page.text.split('<section class="compared kind-regressed">')[1].split("</section>")[0]
    this_run, other_run = section.split('<div class="side">')[1:]
    assert "3 trials, reduced by <code>any</code> to failed" in this_run
    assert "3 trials, reduced by <code>any</code> to passed (flaky" in other_run
    for side in (this_run, other_run):
        assert re.findall(r"trial (\d) · ", side) == ["1", "2", "3"]
    assert this_run.count('<pre class="text">flipped</pre>') == 3
    assert other_run.count('<pre class="text">flipped</pre>') == 2
    assert other_run.count('<pre class="text">yes</pre>') == 1
    assert '<span class="outcome-word-passed">passed</span>' in other_run
    assert "diff (trial 1)" in section or "The same output in both runs (trial 1)." in section
    assert f'{current["id"]}/comparison?limit=6"' in page.text  # 20 // 3 trials an item


def test_a_page_lists_fewer_items_the_more_trials_each_has() -> None:
    assert compare.page_size({"trials": 1}) == compare.PAGE_SIZE == 20
    assert compare.page_size({}) == 20
    assert compare.page_size({"trials": 3}) == 6
    assert compare.page_size({"trials": 10}) == compare.MIN_PAGE_SIZE == 5


# --- another tenant's run by URL ----------------------------------------------------------------


def test_another_tenants_run_in_with_is_the_apis_404(
    api: Any, project: Any, plugins: Plugins, pair: Any
) -> None:
    """A foreign key's session on its own run, naming a run of ours in ``?with=``: the
    API's 404 for that run, and nothing of it on the page."""
    suite, baseline, _ = pair
    outsider, stranger = foreign_browser(api)
    theirs = make_suite(api, stranger, [("echo:mine", "mine")], name="theirs")
    their_run = api.post(theirs.runs_path, {"wait": True}).json
    assert outsider.get(compare_path(theirs, their_run["id"])).status == 200  # their own
    probe = outsider.get(compare_path(theirs, their_run["id"], f"with={baseline['id']}"))
    assert probe.status == 404 and f"eval_run {baseline['id']} not found" in probe.text
    assert "quick brown" not in probe.text
    ours_by_their_eval = outsider.get(compare_path(suite, baseline["id"]))
    assert ours_by_their_eval.status == 404
