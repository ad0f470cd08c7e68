"""The eval row's run counter (list-eval-runs' ``total``) and the runs list's summary view.

The counter is added in the transaction that writes a run and taken off in the one that
withdraws it, so it matches the rows after every create, withdrawal and refusal; an eval
written before the counter existed still answers the right ``total`` (a COUNT). The
summary view (``?view=summary``, a pawl addition) answers each run whole but for
``aggregate_scores``: its headline figures, also for a run settled before headlines.
"""

from __future__ import annotations

from typing import Any

import pytest

from chalicelib.domain.runs import headline_of
from chalicelib.errors import NotFound
from chalicelib.store import evals, runs
from chalicelib.store.models import EvalModel, RunModel
from tests.support.runs import Plugins, Suite, make_suite


@pytest.fixture
def suite(api: Any, project: dict[str, Any], plugins: Plugins) -> Suite:
    cases = [("echo:4", "4"), ("echo:5", "4"), ("fail", "x")]
    return make_suite(api, project, cases, name="counted", pass_threshold=0.5)


def counter(suite: Suite) -> int | None:
    return evals.get_eval_and_run_count(suite.eval["id"])[1]


def listed(api: Any, suite: Suite, query: str = "") -> dict[str, Any]:
    response = api.get(f"{suite.runs_path}?limit=2{query}")
    assert response.status == 200, response
    return dict(response.json)


def start(api: Any, suite: Suite, **body: Any) -> dict[str, Any]:
    response = api.post(suite.runs_path, body)
    assert response.status == 201, response
    return dict(response.json)


def rows_of(suite: Suite) -> int:
    return sum(1 for _ in RunModel.by_eval.query(suite.eval["id"]))


# --- the counter ---------------------------------------------------------------------------


def test_the_counter_matches_the_run_rows_after_sync_and_queued_creates(
    api: Any, suite: Suite
) -> None:
    assert counter(suite) == 0
    first = start(api, suite, wait=True)
    start(api, suite)  # queued: the run row and the count, before the fan-out is sent
    start(api, suite, wait=True, baseline_run_id=first["id"])
    assert counter(suite) == rows_of(suite) == 3
    page = listed(api, suite)
    assert page["total"] == 3 and len(page["data"]) == 2


def test_a_refused_create_changes_no_count(api: Any, suite: Suite) -> None:
    start(api, suite, wait=True)
    refusals = [
        {"baseline_run_id": "evrun_0000000000000000"},  # not a run of this eval: 400
        {"max_concurrency": 0},  # out of range: 400
        {"unknown_field": True},  # unknown field: 400
        {"metadata": {"notes": "z" * 900_000}},  # over the size limit: 400
    ]
    for body in refusals:
        refused = api.post(suite.runs_path, body)
        assert refused.status == 400, (body, refused)
    assert counter(suite) == rows_of(suite) == 1
    assert listed(api, suite)["total"] == 1


def test_a_withdrawn_run_is_taken_off_the_count(api: Any, suite: Suite) -> None:
    import boto3

    from chalicelib import queues
    from chalicelib.bootstrap import ensure_resources
    from chalicelib.settings import get_settings

    start(api, suite, wait=True)
    boto3.client("sqs").delete_queue(QueueUrl=queues.queue_url(get_settings().run_queue))
    queues.reset()  # the next send finds the queue gone: the run is written, then withdrawn
    failed = api.post(suite.runs_path, {})
    assert failed.status == 500, failed
    assert counter(suite) == rows_of(suite) == 1
    ensure_resources()
    queues.reset()
    start(api, suite)
    assert counter(suite) == rows_of(suite) == 2
    assert listed(api, suite)["total"] == 2


def test_a_run_of_an_eval_deleted_before_its_write_is_a_404_and_writes_nothing(
    api: Any, suite: Suite
) -> None:
    run = start(api, suite, wait=True)
    state = runs.get_run(run["id"])
    assert api.delete(f"/api/v1/evals/{suite.eval['id']}").status == 204
    orphan = state.model_copy(
        update={"run": state.run.model_copy(update={"id": "evrun_orphan0000000000"})}
    )
    with pytest.raises(NotFound):
        runs.create_run(orphan)
    assert runs.find_run("evrun_orphan0000000000") is None
    assert EvalModel.count(suite.eval["id"]) == 0  # no eval row was made by the count


def test_an_eval_from_before_the_counter_still_answers_the_right_total(
    api: Any, suite: Suite
) -> None:
    for _ in range(3):
        start(api, suite, wait=True)
    # What such a row holds: no flag, and a count partial (runs before the counter) or none.
    EvalModel(id=suite.eval["id"]).update(
        actions=[EvalModel.runs_counted.remove(), EvalModel.run_count.set(1)]
    )
    assert counter(suite) is None
    first = listed(api, suite)
    assert first["total"] == 3  # counted: a COUNT over the eval's runs
    assert listed(api, suite, "&view=summary")["total"] == 3
    second = api.get(f"{suite.runs_path}?limit=2&cursor={first['next_cursor']}").json
    assert second["total"] == 3 and len(second["data"]) == 1
    start(api, suite, wait=True)
    assert listed(api, suite)["total"] == 4


# --- the summary view ----------------------------------------------------------------------


def test_the_summary_is_the_run_but_for_its_aggregate_which_is_its_headline(
    api: Any, suite: Suite
) -> None:
    first = start(api, suite, wait=True)
    start(api, suite, wait=True, baseline_run_id=first["id"])
    start(api, suite)  # queued: no aggregate yet
    full = api.get(f"{suite.runs_path}?limit=10").json
    summary = api.get(f"{suite.runs_path}?limit=10&view=summary").json
    assert [r["id"] for r in summary["data"]] == [r["id"] for r in full["data"]]
    assert summary["total"] == full["total"] == 3
    for whole, short in zip(full["data"], summary["data"], strict=True):
        assert set(short) == set(whole)
        expected = headline_of(whole["aggregate_scores"]) or None
        assert short["aggregate_scores"] == expected
        assert {**short, "aggregate_scores": None} == {**whole, "aggregate_scores": None}
    newest_settled = summary["data"][1]["aggregate_scores"]
    assert set(newest_settled) == {"pass_rate", "pass_rate_interval", "baseline"}
    assert set(newest_settled["baseline"]) == {"pass_rate_delta", "p_value"}


def test_a_run_settled_before_headlines_summarizes_from_its_aggregate(
    api: Any, suite: Suite
) -> None:
    run = start(api, suite, wait=True)
    RunModel(id=run["id"]).update(actions=[RunModel.headline.remove()])
    (short,) = api.get(f"{suite.runs_path}?view=summary").json["data"]
    assert short["aggregate_scores"] == headline_of(run["aggregate_scores"])
    assert short["aggregate_scores"]["pass_rate"] == run["aggregate_scores"]["pass_rate"]


def test_the_two_views_share_one_cursor(api: Any, suite: Suite) -> None:
    made = [start(api, suite, wait=True)["id"] for _ in range(3)]
    page = listed(api, suite, "&view=summary")
    rest = api.get(f"{suite.runs_path}?limit=2&cursor={page['next_cursor']}").json
    assert [r["id"] for r in page["data"] + rest["data"]] == made[::-1]


def test_the_summary_view_refuses_what_the_list_refuses(
    api: Any, suite: Suite, project: dict[str, Any]
) -> None:
    start(api, suite, wait=True)
    bad = api.get(f"{suite.runs_path}?view=brief")
    assert bad.status == 400 and bad.code == "VALIDATION_FAILED", bad
    assert api.get(f"{suite.runs_path}?view=summary&fields=all").status == 400
    other = api.post("/api/v1/projects", {"name": "globex"}).json
    key = api.post("/api/v1/api-keys", {"project_id": other["id"], "name": "k"}).json["key"]
    foreign = api.as_key(key).get(f"{suite.runs_path}?view=summary")
    assert foreign.status == 404 and foreign.code == "RESOURCE_NOT_FOUND", foreign
