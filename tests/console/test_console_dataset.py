"""The dataset page, an item's history across an eval's runs, the item page's links and
``/v2`` runs in the console (chalice.test.Client on moto, real runs of real evals)."""

from __future__ import annotations

import html
from typing import Any

import pytest

from chalicelib.store import tenancy
from tests.api.test_authorization import allow, key_with
from tests.support.console import HOSTILE, LIVE_MARKUP, Browser
from tests.support.drain import drain_queues
from tests.support.runs import Plugins, make_item, make_suite
from tests.support.servers import Reply, serve
from tests.v2.conftest import suite as v2_suite


@pytest.fixture
def browser(api: Any) -> Browser:
    return Browser(api.client)


def _foreign_key(api: Any) -> str:
    other = api.post("/api/v1/projects", {"name": "other"}).json
    return tenancy.create_api_key(other["id"], "foreign", []).key


# --- the dataset page -----------------------------------------------------------------------


def test_the_dataset_page_pages_on_the_server_and_searches_through_the_api(
    api: Any, browser: Browser, project: Any, project_key: str, plugins: Plugins
) -> None:
    cases: list[tuple[str, str | None]] = [(f"echo:plain {n}", "x") for n in range(52)]
    cases += [("echo:a needle here", "x"), ("echo:hay", "needle in expected")]
    suite = make_suite(api, project, cases, name="haystack")
    dataset_id, eval_id = suite.dataset["id"], suite.eval["id"]
    browser.sign_in(project_key)
    eval_page = browser.get(f"/console/evals/{eval_id}")
    link = f"/console/datasets/{dataset_id}?eval_id={eval_id}"
    assert f'href="{html.escape(link)}"' in eval_page.text
    first = browser.get(link)
    assert first.status == 200 and "Items (54)" in first.text
    assert first.text.count("<tr>") - 1 == 50 and "echo:plain 0" in first.text
    assert "echo:a needle here" not in first.text  # item 53: on the second page
    cursor = api.get(f"/api/v1/datasets/{dataset_id}/items?limit=50").json["next_cursor"]
    assert f"cursor={cursor}" in first.text
    second = browser.get(f"{link}&cursor={cursor}")
    assert "echo:a needle here" in second.text and "echo:plain 0" not in second.text
    found = browser.get(f"{link}&q=needle")
    assert "Items containing “needle” (2)" in found.text
    assert "echo:a needle here" in found.text and "needle in expected" in found.text
    assert "echo:plain" not in found.text
    item = suite.items[52]["id"]
    assert f'href="/console/evals/{eval_id}/items/{item}"' in found.text
    shouted = browser.get(f"{link}&q=NEEDLE")  # any case
    assert "Items containing “NEEDLE” (2)" in shouted.text
    assert "echo:a needle here" in shouted.text and "needle in expected" in shouted.text
    assert "contain that text (in any case)" in browser.get(f"{link}&q=absent").text
    assert browser.get(f"{link}&q={'x' * 201}").status == 400  # the API's own refusal


def test_hostile_items_render_inert(
    api: Any, browser: Browser, project: Any, project_key: str
) -> None:
    dataset = api.post("/api/v1/datasets", {"project_id": project["id"], "name": "hostile"}).json
    for text in HOSTILE:
        make_item(api, dataset["id"], text, text, metadata={text[:60]: text})
    browser.sign_in(project_key)
    page = browser.get(f"/console/datasets/{dataset['id']}")
    assert page.status == 200
    for live in LIVE_MARKUP:
        assert live not in page.text, live
    assert "&lt;script&gt;alert(&#39;xss&#39;)&lt;/script&gt;" in page.text


def test_a_foreign_key_and_a_policy_without_get_dataset_get_the_apis_404(
    api: Any, browser: Browser, project: Any, plugins: Plugins
) -> None:
    suite = make_suite(api, project, [("echo:secret words", "x")], name="guarded")
    path = f"/console/datasets/{suite.dataset['id']}"
    browser.sign_in(_foreign_key(api))
    foreign = browser.get(path)
    assert foreign.status == 404 and "secret words" not in foreign.text
    eval_srn = f"srn:{project['id']}:eval:{suite.eval['id']}"
    dataset_srn = f"srn:{project['id']}:dataset:{suite.dataset['id']}"
    limited = key_with(
        api,
        project["id"],
        allow(["evaluations:GetEval", "evaluations:ListEvals"], eval_srn),
        allow(["evaluations:ListDatasets"], dataset_srn),
    )
    api_answer = limited.get(f"/api/v1/datasets/{suite.dataset['id']}")
    assert api_answer.status == 404
    limited_browser = Browser(api.client)
    limited_browser.sign_in(limited.key)
    assert limited_browser.get(f"/console/evals/{suite.eval['id']}").status == 200
    denied = limited_browser.get(f"{path}?eval_id={suite.eval['id']}")
    assert denied.status == 404 and "secret words" not in denied.text
    assert html.escape(api_answer.json["error"]["message"]) in denied.text


# --- an item's history -----------------------------------------------------------------------


def test_a_flaky_item_shows_its_mixed_results_across_runs(
    api: Any, browser: Browser, project: Any, project_key: str, plugins: Plugins
) -> None:
    suite = make_suite(api, project, [("echo:4", "4"), ("echo:7", "7")], name="flip")
    flaky, steady = suite.items
    item_path = f"/api/v1/datasets/{suite.dataset['id']}/items/{flaky['id']}"
    runs = []
    for expected in ("4", "5", "4"):  # the expected answer changes: pass, fail, pass
        assert api.put(item_path, {"expected_output": expected}).status == 200
        runs.append(api.post(suite.runs_path, {"wait": True}).json["id"])
    browser.sign_in(project_key)
    history = browser.get(f"/console/evals/{suite.eval['id']}/items/{flaky['id']}")
    assert history.status == 200
    assert "<strong>Flaky:</strong> passed in 2, failed in 1, errored in 0" in history.text
    order = [history.text.index(run_id) for run_id in reversed(runs)]
    assert order == sorted(order)  # newest first
    rows = history.text.split('<tr class="outcome-')[1:]
    assert [row.split('"', 1)[0] for row in rows] == ["passed", "failed", "passed"]
    steady_page = browser.get(f"/console/evals/{suite.eval['id']}/items/{steady['id']}")
    assert "Flaky" not in steady_page.text and "passed in 3, failed in 0" in steady_page.text
    item_page = browser.get(f"/console/evals/{suite.eval['id']}/runs/{runs[0]}/items/{flaky['id']}")
    assert f'href="/console/evals/{suite.eval["id"]}/items/{flaky["id"]}"' in item_page.text
    outsider = Browser(api.client)
    outsider.sign_in(_foreign_key(api))
    foreign = outsider.get(f"/console/evals/{suite.eval['id']}/items/{flaky['id']}")
    assert foreign.status == 404 and "echo:4" not in foreign.text


# --- the item page's links -------------------------------------------------------------------


def test_the_item_page_links_its_generation_and_a_deleted_item_has_no_link(
    api: Any, browser: Browser, project: Any, project_key: str, plugins: Plugins
) -> None:
    suite = make_suite(api, project, [("echo:4", "4"), ("echo:gone", "gone")], name="links")
    run = api.post(suite.runs_path, {"wait": True}).json
    kept, gone = suite.items
    results = api.get(f"{suite.run_path(run['id'])}/results").json["data"]
    generation_id = next(r["generation_id"] for r in results if r["dataset_item_id"] == kept["id"])
    api.delete(f"/api/v1/datasets/{suite.dataset['id']}/items/{gone['id']}")
    browser.sign_in(project_key)
    base = f"/console/evals/{suite.eval['id']}/runs/{run['id']}"
    item_page = browser.get(f"{base}/items/{kept['id']}")
    assert f'href="/api/v1/generations/{generation_id}"' in item_page.text
    run_page = browser.get(base)
    assert f'href="{base}/items/{kept["id"]}"' in run_page.text
    assert gone["id"] not in run_page.text and "(item deleted)" in run_page.text


def test_a_deciders_decision_id_links_to_the_decision(
    api: Any, browser: Browser, project: Any, project_key: str
) -> None:
    from tests.integration.test_decider_scorer import ANSWERS, SCORE_RULE, tool_backed

    with serve(lambda r: Reply(200, ANSWERS)) as server:
        decider = tool_backed(api, project["id"], server.url)
        scorer = {
            "type": "decider",
            "name": "review",
            "decider_id": decider["id"],
            "score": SCORE_RULE,
            "pass_threshold": 0.7,
        }
        suite = make_suite(api, project, [("echo:hi", None)], name="judged", scorers=[scorer])
        run = api.post(suite.runs_path, {"wait": True}).json
    (result,) = api.get(f"{suite.run_path(run['id'])}/results").json["data"]
    decision_id = result["scores"][0]["decision_id"]
    assert decision_id and api.get(f"/api/v1/decisions/{decision_id}").status == 200
    browser.sign_in(project_key)
    page = browser.get(
        f"/console/evals/{suite.eval['id']}/runs/{run['id']}/items/{suite.items[0]['id']}"
    )
    assert f'<a href="/api/v1/decisions/{decision_id}"><code>{decision_id}</code></a>' in page.text


# --- /v2 runs ---------------------------------------------------------------------------------


def test_a_v2_run_is_a_run_of_its_suites_eval_in_the_console(
    api: Any, app: Any, browser: Browser, project: Any, project_key: str
) -> None:
    tenant = api.as_key(project_key)
    tasks = [
        {
            "taskId": t,
            "input": t,
            "expected": {"kind": "golden", "match": {"strategy": "exact", "value": v}},
        }
        for t, v in (("hello", "hello"), ("bye", "ciao"))
    ]
    document = v2_suite(suite_id="acme.evals.console", tasks=tasks)
    assert tenant.post("/v2/eval-suites", document).status == 201
    agent = tenant.post(
        "/api/v1/agents",
        {"name": "echo", "type": "python", "config": {"callable": "tests.support.agents:scripted"}},
    ).json
    body = {"mode": "eval", "evalSuiteRef": "acme.evals.console@1.0.0", "agentId": agent["id"]}
    first = tenant.post("/v2/runs", body).json["runId"]
    drain_queues(app)
    paired = {**body, "evalModes": ["golden", "regression"], "baselineRunId": first}
    second = tenant.post("/v2/runs", paired).json["runId"]
    drain_queues(app)
    summary = tenant.get(f"/v2/runs/{second}/eval-summary").json
    (evaluation,) = tenant.get("/api/v1/evals").json["data"]
    browser.sign_in(project_key)
    home = browser.get("/console")
    assert f'href="/console/evals/{evaluation["id"]}"' in home.text
    eval_page = browser.get(f"/console/evals/{evaluation['id']}")
    assert first in eval_page.text and second in eval_page.text
    run_page = browser.get(f"/console/evals/{evaluation['id']}/runs/{second}")
    assert run_page.status == 200 and "acme.evals.console@1.0.0" in run_page.text
    regression = summary["regression"]
    assert regression["verdict"] == "unchanged" and regression["pairedTaskCount"] == 2
    paired = '<dt>Paired verdict</dt><dd class="paired-unchanged">unchanged</dd>'
    assert paired in run_page.text and "<dd>2: 0 improved, 0 regressed, p = 1</dd>" in run_page.text
    assert f'href="/console/evals/{evaluation["id"]}/runs/{first}"' in run_page.text
    first_page = browser.get(f"/console/evals/{evaluation['id']}/runs/{first}")
    assert "/v2 run" in first_page.text and "Paired verdict" not in first_page.text
    results = tenant.get(f"/api/v1/evals/{evaluation['id']}/runs/{second}/results").json["data"]
    item_id = next(r["dataset_item_id"] for r in results if r["passed"] is False)
    item_page = browser.get(f"/console/evals/{evaluation['id']}/runs/{second}/items/{item_id}")
    assert item_page.status == 200 and "bye" in item_page.text
    assert "outcome-word-failed" in item_page.text
    outsider = Browser(api.client)
    outsider.sign_in(_foreign_key(api))
    eval_path = f"/console/evals/{evaluation['id']}"
    for path in (
        eval_path,
        f"{eval_path}/runs/{second}",
        f"{eval_path}/runs/{second}/items/{item_id}",
    ):
        assert outsider.get(path).status == 404, path


def test_a_source_generation_is_linked_only_when_the_key_may_read_it(
    api: Any, browser: Browser, project: Any, project_key: str, plugins: Plugins
) -> None:
    suite = make_suite(api, project, [("echo:curated", "curated")], name="curation")
    run = api.post(suite.runs_path, {"wait": True}).json
    (result,) = api.get(f"{suite.run_path(run['id'])}/results").json["data"]
    generation_id = result["generation_id"]
    items = f"/api/v1/datasets/{suite.dataset['id']}/items"
    curated = api.post(f"{items}/from-generation", {"generation_id": generation_id})
    assert curated.status == 201 and curated.json["source_generation_id"] == generation_id
    path = f"/console/datasets/{suite.dataset['id']}"
    browser.sign_in(project_key)
    assert f'href="/api/v1/generations/{generation_id}"' in browser.get(path).text
    dataset_srn = f"srn:{project['id']}:dataset:{suite.dataset['id']}"
    reader = key_with(
        api,
        project["id"],
        allow(["evaluations:GetDataset", "evaluations:ListDatasets"], dataset_srn),
    )
    assert reader.get(f"/api/v1/generations/{generation_id}").status == 404
    limited = Browser(api.client)
    limited.sign_in(reader.key)
    page = limited.get(path)
    assert page.status == 200 and f"<code>{generation_id}</code>" in page.text
    assert f'href="/api/v1/generations/{generation_id}"' not in page.text


# --- the history's pure figures ---------------------------------------------------------------


def test_a_runs_outcome_for_an_item_and_when_it_is_flaky() -> None:
    from chalicelib.console.datasets import history_summary, run_outcome

    assert run_outcome([]) == "absent"
    assert run_outcome(["passed", "passed"]) == "passed"
    assert run_outcome(["passed", "failed"]) == "mixed"
    rows = [{"outcome": o} for o in ("passed", "absent", "passed")]
    assert history_summary(rows) == {
        "runs": 2,
        "counts": {"passed": 2, "failed": 0, "errored": 0, "mixed": 0},
        "flaky": False,
    }
    assert history_summary([{"outcome": "passed"}, {"outcome": "errored"}])["flaky"] is True
    assert history_summary([{"outcome": "mixed"}])["flaky"] is True
    assert history_summary([{"outcome": "failed"}, {"outcome": "errored"}])["flaky"] is False
