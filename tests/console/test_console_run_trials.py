"""The run page's Trials section: a run of five trials an item shows its trial pass rate,
pass@k and pass^k per k, the noise floor and the paired comparison; a run of one trial
shows no such section."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.support.console import Browser
from tests.support.runs import Plugins, make_suite


@pytest.fixture
def browser(api: Any, project_key: str) -> Browser:
    signed_in = Browser(api.client)
    signed_in.sign_in(project_key)
    return signed_in


def test_the_run_page_shows_the_trial_figures(
    api: Any, project: Any, plugins: Plugins, browser: Browser
) -> None:
    cases: list[Any] = [("trials:11110|11000", "yes")] * 8 + [("trials:11111|11111", "yes")] * 4
    suite = make_suite(api, project, cases, name="trials", trials=5, max_regression=0.1)
    baseline = api.post(suite.runs_path, {"wait": True}).json
    current = api.post(suite.runs_path, {"wait": True, "baseline_run_id": baseline["id"]}).json
    page = browser.get(f"/console/evals/{suite.eval['id']}/runs/{current['id']}")
    assert page.status == 200
    text = page.text
    assert "<h2>Trials (5 per item)</h2>" in text
    # Current run: eight items pass 2 of 5, four pass 5 of 5.
    assert "<dt>Trial pass rate</dt><dd>60.0% (" in text
    rows = re.findall(r"<tr><td>(\d)</td><td>([0-9.]+%)</td><td>([0-9.]+%)</td></tr>", text)
    assert rows[0] == ("1", "60.0%", "60.0%") and rows[-1] == ("5", "100.0%", "33.3%")
    assert len(rows) == 5
    # Six of ten pairs of trials disagree on each of the eight items: 0.6 * 8 / 12.
    assert "40.0% of pairs of trials of one item disagree (12 items)" in text
    assert "-26.7 pt (" in text and "over 12 items, p = 0.00781, exact sign-flip test" in text


def test_a_run_of_one_trial_shows_no_trials_section(
    api: Any, project: Any, plugins: Plugins, browser: Browser
) -> None:
    suite = make_suite(api, project, [("echo:yes", "yes")], name="single")
    run = api.post(suite.runs_path, {"wait": True}).json
    page = browser.get(f"/console/evals/{suite.eval['id']}/runs/{run['id']}")
    assert page.status == 200 and "Trials (" not in page.text
