"""The run page over HTTP (chalice.test.Client, moto): every filter and the sort passed
through to list-eval-results, paging that keeps them, the per-group plot with hostile
group values, flaky items, usage by source, and the live progress endpoint."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from markupsafe import escape

from chalicelib.console import run_charts
from chalicelib.console.figures import as_text
from chalicelib.store import tenancy
from tests.console.test_console_http import CSP, assert_security_headers
from tests.support.console import HOSTILE, LIVE_MARKUP, Browser
from tests.support.drain import drain_queues
from tests.support.runs import Plugins, Suite, make_suite

OUTCOME = re.compile(r'class="outcome-(\w+)"')
OUTPUT = re.compile(r'<td class="text">[^<]*</td><td class="text">([^<]*)</td>')


@pytest.fixture
def browser(api: Any, project_key: str) -> Browser:
    signed_in = Browser(api.client)
    signed_in.sign_in(project_key)
    return signed_in


@pytest.fixture
def grouped(api: Any, project: Any, plugins: Plugins) -> tuple[Suite, str]:
    """Five items in three groups, two trials each: one flaky, one failing, one errored."""
    cases: list[Any] = [
        ("echo:Alpha one", "Alpha one", {"lang": "en"}),
        ("flip:beta", "beta", {"lang": "en"}),
        ("echo:GAMMA alpha", "GAMMA alpha", {"lang": "fr"}),
        ("echo:delta", "no", {"lang": "de"}),
        ("fail", "x", {"lang": "fr"}),
    ]
    suite = make_suite(api, project, cases, name="grouped", group_by="lang", trials=2)
    run = api.post(suite.runs_path, {"wait": True}).json
    assert run["status"] == "completed", run
    return suite, f"/console/evals/{suite.eval['id']}/runs/{run['id']}"


def _outputs(text: str) -> list[str]:
    return OUTPUT.findall(text)


def test_each_filter_and_the_sort_reach_the_api_and_show_their_rows(
    browser: Browser, grouped: tuple[Suite, str]
) -> None:
    _, path = grouped
    flaky = browser.get(f"{path}?outcome=flaky")
    assert flaky.status == 200
    assert sorted(_outputs(flaky.text)) == ["beta", "flipped"]
    fr = sorted(_outputs(browser.get(f"{path}?group=fr").text))
    assert fr == ["", "", "GAMMA alpha", "GAMMA alpha"]
    assert sorted(set(_outputs(browser.get(f"{path}?text=ALPHA").text))) == [
        "Alpha one",
        "GAMMA alpha",
    ]
    low = browser.get(f"{path}?scorer=probe&max_score=0.5")
    assert sorted(_outputs(low.text)) == ["delta", "delta", "flipped"]
    assert set(OUTCOME.findall(low.text)) == {"failed"}
    ordered = browser.get(f"{path}?scorer=probe&sort=score_asc")
    scores = re.findall(r"<td>probe: ([0-9.]+)</td>", ordered.text)
    assert scores == sorted(scores) and scores[0] == "0" and scores[-1] == "1"
    descending = re.findall(
        r"<td>probe: ([0-9.]+)</td>", browser.get(f"{path}?scorer=probe&sort=score_desc").text
    )
    assert descending == sorted(descending, reverse=True)
    # The form shows what was chosen, and the JSON link carries the same query.
    combined = browser.get(f"{path}?group=en&outcome=passed&text=alpha")
    assert _outputs(combined.text) == ["Alpha one", "Alpha one"]
    assert 'name="group" list="run-groups" value="en"' in combined.text
    assert '<option value="passed" selected>' in combined.text
    assert "/results?outcome=passed&amp;group=en&amp;text=alpha" in combined.text


def test_a_refused_filter_is_the_apis_400_with_its_message_on_the_page(
    browser: Browser, grouped: tuple[Suite, str]
) -> None:
    _, path = grouped
    bad_range = browser.get(f"{path}?scorer=probe&min_score=0.9&max_score=0.1")
    assert bad_range.status == 400
    assert "min_score 0.9 is above max_score 0.1" in bad_range.text
    assert OUTCOME.findall(bad_range.text) == []
    assert browser.get(f"{path}?sort=score_desc").status == 400  # sort needs a scorer
    assert browser.get(f"{path}?min_score=abc&scorer=probe").status == 400


def test_refined_paging_keeps_its_filters(
    api: Any, app: Any, browser: Browser, project: Any, plugins: Plugins
) -> None:
    cases = [(f"echo:{i}", "no") for i in range(53)] + [("echo:ok", "ok")] * 2
    many = make_suite(api, project, cases, name="many")
    run_id = api.post(many.runs_path, {}).json["id"]
    drain_queues(app)
    path = f"/console/evals/{many.eval['id']}/runs/{run_id}"
    first = browser.get(f"{path}?scorer=probe&sort=score_desc&max_score=0.5")
    assert first.text.count('class="outcome-') == 50 and "(53)" in first.text
    following = re.search(r'href="(\?[^"]*cursor=[^"]+)"', first.text)
    assert following and "max_score=0.5" in following.group(1)
    second = browser.get(path + following.group(1).replace("&amp;", "&"))
    assert second.status == 200
    assert second.text.count('class="outcome-failed"') == 3
    seen = _outputs(first.text) + _outputs(second.text)
    assert sorted(seen) == sorted(str(i) for i in range(53))


def test_the_group_plot_and_flaky_items_and_hostile_group_values_are_text(
    api: Any, browser: Browser, project: Any, plugins: Plugins
) -> None:
    cases: list[Any] = [(f"echo:{i}", str(i), {"team": text}) for i, text in enumerate(HOSTILE)]
    cases += [("flip:x", "x", {"team": HOSTILE[0]})]
    suite = make_suite(api, project, cases, name="hostile", group_by="team", trials=2)
    run = api.post(suite.runs_path, {"wait": True}).json
    page = browser.get(f"/console/evals/{suite.eval['id']}/runs/{run['id']}")
    assert page.status == 200
    assert page.text.count("<svg") == 1 and '<svg class="group-plot"' in page.text
    assert page.text.count('<rect class="bar"') == len(HOSTILE)
    for markup in [m for m in LIVE_MARKUP if m != "<svg"]:
        assert markup not in page.text, markup
    for text in HOSTILE:  # each group's label in the plot, cut and escaped
        assert (
            f'text-anchor="end">{escape(as_text(text, run_charts.LABEL_CHARS))}</text>' in page.text
        )
    # The flaky item is listed with its trials' outcomes and links to its item page.
    flip_item = suite.items[-1]["id"]
    assert re.search(
        rf"items/{flip_item}\"><code>{flip_item}</code></a>: (passed, failed|failed, passed)",
        page.text,
    )
    assert "Flaky items (1)" in page.text and 'href="?outcome=flaky"' in page.text
    hostile_filter = browser.get(
        f"/console/evals/{suite.eval['id']}/runs/{run['id']}?group=%3Cscript%3Ealert('xss')%3C%2Fscript%3E"
    )
    assert hostile_filter.status == 200 and hostile_filter.text.count('class="outcome-') == 4
    assert "<script>alert" not in hostile_filter.text


def test_usage_and_cost_by_source_come_from_the_usage_api(
    api: Any, browser: Browser, project: Any, plugins: Plugins
) -> None:
    suite = make_suite(api, project, [("paid:a", "a"), ("paid:b", "b")], name="paid")
    run = api.post(suite.runs_path, {"wait": True}).json
    page = browser.get(f"/console/evals/{suite.eval['id']}/runs/{run['id']}")
    assert "Usage and cost by source" in page.text
    assert re.search(r"<td>eval</td><td>2</td><td>20 in / 4 out</td><td>\$0\.0020</td>", page.text)
    assert re.search(r"<td>total</td><td>2</td>", page.text)


# --- live progress ------------------------------------------------------------------------------


def _queued(api: Any, project: Any) -> tuple[Suite, dict[str, Any]]:
    suite = make_suite(
        api, project, [("echo:1", "1"), ("echo:2", "no"), ("echo:3", "3")], name="live"
    )
    run = api.post(suite.runs_path, {}).json
    assert run["status"] == "queued", run
    return suite, run


def test_progress_json_follows_the_run_and_the_page_ships_the_script_only_while_it_runs(
    api: Any, app: Any, browser: Browser, project: Any, plugins: Plugins
) -> None:
    suite, run = _queued(api, project)
    page_path = f"/console/evals/{suite.eval['id']}/runs/{run['id']}"
    running_page = browser.get(page_path)
    assert f'data-progress="{page_path}/progress.json"' in running_page.text
    assert '<script src="/console/static/run_progress.js" defer></script>' in running_page.text
    assert '<dd data-field="status">queued</dd>' in running_page.text
    before = browser.get(f"{page_path}/progress.json")
    assert before.status == 200
    assert before.headers["Content-Type"] == "application/json"
    assert_security_headers(before)
    assert before.set_cookies() == []  # polling is not use: the idle clock is not reset
    figures = json.loads(before.text)
    assert figures["status"] == "queued" and figures["finished"] is False
    assert figures["recorded"] in ("0/0", "0/3") and figures["pass_rate"] == "—"
    drain_queues(app)
    after = json.loads(browser.get(f"{page_path}/progress.json").text)
    assert after["status"] == "completed" and after["finished"] is True
    assert after["recorded"] == "3/3" and after["pass_rate"] == "66.7%"
    finished_page = browser.get(page_path)
    assert "data-progress" not in finished_page.text and "<script" not in finished_page.text


def test_progress_json_refuses_a_signed_out_and_a_foreign_session(
    api: Any, browser: Browser, project: Any, plugins: Plugins
) -> None:
    suite, run = _queued(api, project)
    url = f"/console/evals/{suite.eval['id']}/runs/{run['id']}/progress.json"
    signed_out = Browser(api.client).get(url)
    assert signed_out.status == 401 and signed_out.headers["Content-Type"] == "application/json"
    assert signed_out.headers["Content-Security-Policy"] == CSP
    assert json.loads(signed_out.text)["error"]["code"] == "UNAUTHORIZED"
    other = api.post("/api/v1/projects", {"name": "other"}).json
    foreign = Browser(api.client)
    foreign.sign_in(tenancy.create_api_key(other["id"], "foreign", []).key)
    refused = foreign.get(url)
    assert refused.status == 404
    api_answer = api.as_key(tenancy.create_api_key(other["id"], "k2", []).key).get(
        suite.run_path(run["id"])
    )
    assert json.loads(refused.text)["error"]["message"] == api_answer.json["error"]["message"]
    assert "queued" not in refused.text


def test_the_project_page_lists_runs_in_progress_with_live_progress(
    api: Any, app: Any, browser: Browser, project: Any, plugins: Plugins
) -> None:
    suite, run = _queued(api, project)
    home = browser.get("/console")
    assert "Runs in progress" in home.text
    assert (
        f'data-progress="/console/evals/{suite.eval["id"]}/runs/{run["id"]}/progress.json"'
        in home.text
    )
    assert '<td data-field="status">queued</td>' in home.text
    assert '<script src="/console/static/run_progress.js" defer></script>' in home.text
    drain_queues(app)
    assert "Runs in progress" not in browser.get("/console").text


def test_the_progress_script_is_served_as_javascript(browser: Browser) -> None:
    script = browser.get("/console/static/run_progress.js")
    assert script.status == 200
    assert script.headers["Content-Type"] == "text/javascript; charset=utf-8"
    assert "data-progress" in script.text and "location.reload" in script.text
    assert browser.get("/console/static/other.js").status == 404


def _results_reads(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, dict[str, str]]]:
    """Each API read the console makes from here on (path template, query), in order."""
    from chalicelib.console import reads

    seen: list[tuple[str, dict[str, str]]] = []
    real_get = reads.get

    def spying(caller: Any, path: str, query: Any = None, /, **params: str) -> Any:
        seen.append((path, dict(query or {})))
        return real_get(caller, path, query, **params)

    monkeypatch.setattr(reads, "get", spying)
    return seen


def test_the_pass_rate_so_far_is_the_runs_counter_at_any_size(
    api: Any,
    browser: Browser,
    project: Any,
    project_key: str,
    plugins: Plugins,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from chalicelib.store.models import RunModel

    suite, run = _queued(api, project)
    assert (run["passed_count"], run["failed_count"]) == (0, 0)
    # The run as if mid-way through 100,000 results: its row's counters, as recording
    # keeps them (nothing drained: no result row exists to count).
    RunModel.get(run["id"]).update(
        actions=[
            RunModel.status.set("running"),
            RunModel.item_count.set(200_000),
            RunModel.completed_count.set(90_000),
            RunModel.errored_count.set(10_000),
            RunModel.passed_count.set(81_000),
            RunModel.failed_count.set(9_000),
        ]
    )
    seen = _results_reads(monkeypatch)
    browser.sign_in(project_key)
    page_path = f"/console/evals/{suite.eval['id']}/runs/{run['id']}"
    progress = browser.get(f"{page_path}/progress.json")
    assert progress.status == 200
    figures = json.loads(progress.text)
    assert figures["pass_rate"] == "90.0%" and figures["recorded"] == "100000/200000"
    assert '<span data-field="pass_rate">90.0%</span>' in browser.get(page_path).text
    counted = [query for path, query in seen if "outcome" in query]
    assert counted == [], seen  # no outcome=passed read (its COUNT), neither poll nor page


def test_a_run_without_counters_is_counted_only_up_to_the_limit(
    api: Any,
    app: Any,
    project: Any,
    project_key: str,
    plugins: Plugins,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from chalicelib.api.auth import authenticate
    from chalicelib.console import figures, run_page
    from chalicelib.store.models import RunModel

    suite, run = _queued(api, project)
    drain_queues(app)
    answer = api.get(suite.run_path(run["id"])).json
    assert (answer["passed_count"], answer["failed_count"]) == (2, 1)  # the API's own counts
    # A run recorded before the counters existed: its row has no ``outcomes_counted``.
    RunModel.get(run["id"]).update(actions=[RunModel.outcomes_counted.remove()])
    old = {**api.get(suite.run_path(run["id"])).json, "status": "running"}
    assert old["passed_count"] is None and old["failed_count"] is None
    old["aggregate_scores"] = None
    caller = authenticate({"authorization": f"Bearer {project_key}"})
    seen = _results_reads(monkeypatch)
    assert run_page.passed_so_far(caller, old) == 2  # the API's outcome=passed total
    assert seen == [(run_page.RESULTS_PATH, {"outcome": "passed", "limit": "1"})]
    assert figures.progress(old, 2)["pass_rate"] == "66.7%"
    monkeypatch.setattr(run_page, "PASS_RATE_SO_FAR_MAX_RESULTS", 2)  # 3 recorded: past it
    assert run_page.passed_so_far(caller, old) is None
    assert figures.progress(old, None)["pass_rate"] == "—"


def test_a_big_runs_flaky_items_are_a_link_not_a_read(
    browser: Browser, grouped: tuple[Suite, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from chalicelib.console import run_page

    _, path = grouped
    assert '<ul class="flaky">' in browser.get(path).text
    monkeypatch.setattr(run_page, "FLAKY_LIST_MAX_RESULTS", 1)
    page = browser.get(path)
    assert "Flaky items (1)" in page.text and 'href="?outcome=flaky"' in page.text
    assert '<ul class="flaky">' not in page.text


def test_the_verdict_shows_the_smallest_drop_the_runs_items_could_detect(
    api: Any, browser: Browser, project: Any, plugins: Plugins
) -> None:
    cases: list[Any] = [("flip:a", "a"), ("flip:b", "b")]
    cases += [(f"echo:s{i}", f"s{i}") for i in range(8)]
    suite = make_suite(api, project, cases, name="gated", max_regression=0.05)
    baseline = api.post(suite.runs_path, {"wait": True}).json
    plain = browser.get(f"/console/evals/{suite.eval['id']}/runs/{baseline['id']}")
    assert plain.status == 200 and "Smallest detectable drop" not in plain.text  # no gate
    run = api.post(suite.runs_path, {"wait": True, "baseline_run_id": baseline["id"]}).json
    (gate,) = [r for r in run["verdict_reasons"] if r["gate"] == "max_regression"]
    smallest = gate["min_detectable_regression"]
    assert smallest is not None and 0.05 < smallest < 1
    page = browser.get(f"/console/evals/{suite.eval['id']}/runs/{run['id']}")
    assert page.status == 200
    shown = f"{smallest * 100:.1f}% (80.0% power, 10 compared items)"
    assert f'<dd class="detectable">{shown}</dd>' in page.text
    # Beside the verdict: the row right after it in the run's facts.
    assert page.text.index("Verdict") < page.text.index("Smallest detectable drop")
    assert page.text.index("Smallest detectable drop") < page.text.index("Pass rate")


def test_why_names_the_gates_answer_and_an_early_stop_what_it_decided_and_saved(
    api: Any, app: Any, browser: Browser, project: Any, plugins: Plugins
) -> None:
    """The regression gate's line carries its own sentence (regressed, not worse or
    inconclusive with the items that would decide), and an early-stopped run's facts say
    what the sequential test decided, the items it skipped and the spend it saved."""
    cases: list[Any] = [("flip:a", "a"), ("flip:b", "b")]
    cases += [(f"echo:s{i}", f"s{i}") for i in range(18)]
    small = make_suite(api, project, cases, name="small-gate", max_regression=0.05)
    baseline = api.post(small.runs_path, {"wait": True}).json
    run = api.post(small.runs_path, {"wait": True, "baseline_run_id": baseline["id"]}).json
    (gate,) = [r for r in run["verdict_reasons"] if r["gate"] == "max_regression"]
    assert gate["conclusion"] == "inconclusive" and gate["more_items_needed"] > 0
    page = browser.get(f"/console/evals/{small.eval['id']}/runs/{run['id']}")
    assert page.status == 200 and "Stopped early" not in page.text
    assert "Inconclusive: pass rate delta -0.100" in page.text
    assert f"about {gate['more_items_needed']} more compared items would decide" in page.text

    lines = [(f"flip:r{i}", f"r{i}") for i in range(120)]
    lines += [(f"echo:s{i}", f"s{i}") for i in range(280)]
    big = make_suite(api, project, lines, name="stopping", max_regression=0.05)
    first = api.post(big.runs_path, {})
    assert first.status == 201, first
    drain_queues(app)
    body = {"baseline_run_id": first.json["id"], "early_stop": True}
    started = api.post(big.runs_path, body)
    assert started.status == 201, started
    drain_queues(app)
    stopped = api.get(big.run_path(started.json["id"])).json
    block = stopped["aggregate_scores"]["early_stop"]
    assert block["decision"] == "regressed" and block["items_skipped"] > 0
    page = browser.get(f"/console/evals/{big.eval['id']}/runs/{stopped['id']}")
    shown = (
        f"regressed after {block['decided_after_items']} items; {block['items_run']} ran, "
        f"{block['items_skipped']} skipped, about $0.0000 of agent spend saved"
    )
    assert f'<dd class="stopped-early">{shown}</dd>' in page.text
    assert "Stopped early: after" in page.text  # the gate's sentence, in Why
