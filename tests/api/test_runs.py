"""Eval run routes: synchronous runs end to end, every start rule, reads, tenancy, cancel."""

from __future__ import annotations

from typing import Any

import pytest

from chalicelib.store import runs as run_store
from tests.support import agents
from tests.support.runs import (
    Plugins,
    Suite,
    all_results,
    assert_counters_match_rows,
    make_item,
    make_suite,
)


def _start(api: Any, suite: Suite, **body: Any) -> Any:
    return api.post(suite.runs_path, body)


def _run_count(api: Any, suite: Suite) -> int:
    return len(api.get(suite.runs_path).json["data"])


# --- a synchronous run, end to end ------------------------------------------------------------


def test_wait_true_runs_scores_and_settles(api: Any, project: Any, plugins: Plugins) -> None:
    suite = make_suite(
        api,
        project,
        [("echo:4", "4"), ("echo:5", "4"), ("pause", "x"), ("fail", "x"), ("unscorable", "x")],
        pass_threshold=0.5,
    )
    response = _start(api, suite, wait=True, metadata={"commit": "9f2c1ab"})
    assert response.status == 201, response
    run = response.json
    assert run["id"].startswith("evrun_") and run["status"] == "completed"
    assert run["agent_version"] == suite.agent["version"] and run["decider_versions"] is None
    assert (run["item_count"], run["completed_count"], run["errored_count"]) == (5, 2, 3)
    assert run["started_at"] and run["finished_at"] and run["metadata"] == {"commit": "9f2c1ab"}
    assert "tool_context" not in run
    aggregate = run["aggregate_scores"]
    # Errors are not zeros: three errored items are in no figure.
    assert aggregate["scored_item_count"] == 2 and aggregate["pass_rate"] == 0.5
    assert aggregate["scorers"]["probe"] == {"mean": 0.5, "pass_rate": 0.5}
    assert aggregate["pass_rate_interval"]["low"] < 0.5 < aggregate["pass_rate_interval"]["high"]
    assert run["passed"] is True and run["verdict_reasons"][0]["gate"] == "pass_threshold"
    assert plugins.events.of(run["id"]) == ["eval_run.completed"]
    assert_counters_match_rows(run)

    by_text = {r["input"][0]["content"]: r for r in all_results(api, suite, run["id"])}
    good = by_text["echo:4"]
    assert good["output"] == "4" and good["passed"] is True and good["error"] is None
    assert good["scores"] == [{"scorer": "probe", "score": 1.0, "passed": True}]
    assert good["expected_output"] == "4" and good["trial"] == 1
    assert good["id"].startswith("evres_") and good["generation_id"].startswith("gen_")
    assert by_text["echo:5"]["passed"] is False and by_text["echo:5"]["scores"][0]["score"] == 0
    paused = by_text["pause"]
    assert paused["error"]["code"] == "GENERATION_NOT_COMPLETED" and paused["output"] is None
    assert paused["scores"] == [] and paused["passed"] is None and paused["generation_id"]
    failed = by_text["fail"]
    assert failed["error"]["code"] == "GENERATION_FAILED" and failed["output"] is None
    unscorable = by_text["unscorable"]
    assert unscorable["error"]["code"] == "PROBE_UNDECIDED"
    assert unscorable["error"]["message"].startswith("Scoring failed:")
    assert unscorable["output"] == "unscorable"  # a scorer error keeps the graded output
    generation = api.get(f"/api/v1/generations/{good['generation_id']}").json
    assert generation["source"] == "eval" and generation["run_id"] == run["id"]
    assert generation["dataset_item_id"] == good["dataset_item_id"]
    assert generation["agent_version"] == run["agent_version"]

    assert api.get(suite.run_path(run["id"])).json == run


def test_a_run_that_scored_nothing_does_not_pass(api: Any, project: Any, plugins: Plugins) -> None:
    suite = make_suite(api, project, [("fail", "x"), ("pause", "x")], pass_threshold=0.0)
    run = _start(api, suite, wait=True).json
    assert run["status"] == "completed" and run["passed"] is False
    assert run["aggregate_scores"]["pass_rate"] is None and run["errored_count"] == 2


def test_no_threshold_reports_without_gating(api: Any, project: Any, plugins: Plugins) -> None:
    suite = make_suite(api, project, [("echo:a", "a")])
    run = _start(api, suite, wait=True).json
    assert run["passed"] is None and run["aggregate_scores"]["pass_rate"] == 1.0


# --- start rules: each refused before anything is written ---------------------------------------


def _nothing_written(api: Any, suite: Suite) -> None:
    assert _run_count(api, suite) == 0
    assert agents.CALLS == []
    assert list(run_store.iter_active_run_ids()) == []


def test_empty_dataset_is_refused(api: Any, project: Any, plugins: Plugins) -> None:
    suite = make_suite(api, project, [])
    for wait in (True, False):
        refused = _start(api, suite, wait=wait)
        assert refused.status == 400 and refused.json["error"]["meta"]["field"] == "dataset_id"
    _nothing_written(api, suite)


def test_26_items_with_wait_is_refused_naming_the_count(
    api: Any, project: Any, plugins: Plugins
) -> None:
    suite = make_suite(api, project, [(f"echo:{i}", str(i)) for i in range(26)])
    refused = _start(api, suite, wait=True)
    assert refused.status == 400 and refused.code == "VALIDATION_FAILED"
    assert "25" in refused.json["error"]["message"] and "26" in refused.json["error"]["message"]
    assert refused.json["error"]["meta"]["field"] == "wait"
    _nothing_written(api, suite)


def test_unknown_agent_version_is_refused(api: Any, project: Any, plugins: Plugins) -> None:
    suite = make_suite(api, project, [("echo:a", "a")])
    refused = _start(api, suite, wait=True, agent_version=99)
    assert refused.status == 400 and refused.json["error"]["meta"]["field"] == "agent_version"
    _nothing_written(api, suite)


def test_body_shape_refusals(api: Any, project: Any, plugins: Plugins) -> None:
    suite = make_suite(api, project, [("echo:a", "a")])
    cases = [
        ({"metadata": ["not", "an", "object"]}, "metadata", "VALIDATION_FAILED"),
        ({"metadata": "text"}, "metadata", "VALIDATION_FAILED"),
        ({"wait": "yes"}, "wait", "VALIDATION_FAILED"),
        ({"agent_version": "1"}, "agent_version", "VALIDATION_FAILED"),
        ({"colour": "red"}, "colour", "VALIDATION_FAILED"),
        ({"tool_context": {"bad key": "v"}}, "tool_context.bad key", "INVALID_TOOL_CONTEXT_KEY"),
        ({"tool_context": {"ok": 7}}, "tool_context.ok", "VALIDATION_FAILED"),
    ]
    for body, field, code in cases:
        refused = _start(api, suite, **{"wait": True, **body})
        assert refused.status == 400 and refused.code == code, (body, refused)
        assert refused.json["error"]["meta"]["field"] == field, (body, refused)
    _nothing_written(api, suite)


def test_baseline_must_be_a_finished_run_of_this_eval(
    api: Any, project: Any, plugins: Plugins
) -> None:
    suite = make_suite(api, project, [("echo:a", "a")])
    other = make_suite(api, project, [("echo:a", "a")], name="other")
    other_run = _start(api, other, wait=True).json
    queued = _start(api, suite).json  # queued, never drained: not terminal
    cancelled = _start(api, suite).json
    assert api.post(f"{suite.run_path(cancelled['id'])}/cancel").status == 200
    stranger = api.post("/api/v1/projects", {"name": "globex"}).json
    foreign = make_suite(api, stranger, [("echo:a", "a")], name="foreign")
    foreign_run = _start(api, foreign, wait=True).json

    messages = set()
    for baseline in (
        "evrun_missing00000000",
        other_run["id"],
        queued["id"],
        cancelled["id"],
        foreign_run["id"],
    ):
        refused = _start(api, suite, wait=True, baseline_run_id=baseline)
        assert refused.status == 400 and refused.json["error"]["meta"]["field"] == "baseline_run_id"
        messages.add(refused.json["error"]["message"])
    assert len(messages) == 1 and baseline not in messages.pop()
    assert _run_count(api, suite) == 2


# --- metadata, tool_context, version pinning ------------------------------------------------------


def test_metadata_round_trips_on_every_read(api: Any, project: Any, plugins: Plugins) -> None:
    suite = make_suite(api, project, [("echo:a", "a")])
    meta = {"commit_sha": "9f2c1ab", "status": "ours", "nested": {"n": [1, 2]}}
    run = _start(api, suite, wait=True, metadata=meta).json
    assert run["metadata"] == meta and run["status"] == "completed"
    assert api.get(suite.run_path(run["id"])).json["metadata"] == meta
    assert api.get(suite.runs_path).json["data"][0]["metadata"] == meta


def test_tool_context_is_forwarded_write_only_and_cleared(
    api: Any, project: Any, plugins: Plugins
) -> None:
    suite = make_suite(api, project, [("context", None)])
    context = {"ocaToken": "secret-token-value", "tenant": "acme", "Session_ID": "s1"}
    run = _start(api, suite, wait=True, tool_context=context).json
    results = all_results(api, suite, run["id"])
    # Reserved identity keys are dropped in any casing; the rest reach the agent.
    assert results[0]["output"] == '{"ocaToken": "secret-token-value", "tenant": "acme"}'
    for read in (run, api.get(suite.run_path(run["id"])).json, api.get(suite.runs_path).json):
        assert "secret-token-value" not in str(read)
    assert run_store.get_run(run["id"]).tool_context == {}


def test_run_pins_the_requested_agent_version(api: Any, project: Any, plugins: Plugins) -> None:
    suite = make_suite(api, project, [("echo:a", "a")])
    updated = api.put(
        f"/api/v1/agents/{suite.agent['id']}",
        {"config": {"callable": "tests.support.agents:instant"}},
    )
    assert updated.status == 200 and updated.json["version"] == suite.agent["version"] + 1, updated
    pinned = _start(api, suite, wait=True, agent_version=suite.agent["version"]).json
    assert pinned["agent_version"] == suite.agent["version"]
    assert [c["agent_version"] for c in agents.CALLS] == [suite.agent["version"]]
    current = _start(api, suite, wait=True).json
    assert current["agent_version"] == updated.json["version"]
    assert len(agents.CALLS) == 1  # the current version is the instant agent, not scripted


# --- reads ---------------------------------------------------------------------------------------


def test_list_runs_newest_first_and_paginated(api: Any, project: Any, plugins: Plugins) -> None:
    suite = make_suite(api, project, [("echo:a", "a")])
    started = [_start(api, suite).json["id"] for _ in range(3)]
    first = api.get(f"{suite.runs_path}?limit=2").json
    second = api.get(f"{suite.runs_path}?limit=2&cursor={first['next_cursor']}").json
    assert [r["id"] for r in first["data"] + second["data"]] == started[::-1]
    assert second["next_cursor"] is None
    assert api.get(f"{suite.runs_path}?cursor=garbage").status == 400


def test_results_keep_frozen_inputs_and_null_deleted_items(
    api: Any, project: Any, plugins: Plugins
) -> None:
    suite = make_suite(api, project, [("echo:a", "a"), ("echo:b", "b")])
    run = _start(api, suite, wait=True).json
    first, second = suite.items
    items = f"/api/v1/datasets/{suite.dataset['id']}/items"
    edited = api.put(f"{items}/{first['id']}", {"input": [{"role": "user", "content": "changed"}]})
    assert edited.status == 200, edited
    assert api.delete(f"{items}/{second['id']}").status == 204
    results = {r["input"][0]["content"]: r for r in all_results(api, suite, run["id"], limit=1)}
    assert results["echo:a"]["dataset_item_id"] == first["id"]
    assert results["echo:b"]["dataset_item_id"] is None
    assert results["echo:b"]["expected_output"] == "b" and results["echo:b"]["output"] == "b"


def test_runs_are_reached_only_through_their_eval(
    api: Any, project: Any, project_key: str, plugins: Plugins
) -> None:
    suite = make_suite(api, project, [("echo:a", "a")])
    other = make_suite(api, project, [("echo:a", "a")], name="other")
    run = _start(api, suite, wait=True).json
    assert api.get(other.run_path(run["id"])).status == 404
    assert api.get(f"{other.run_path(run['id'])}/results").status == 404
    assert api.post(f"{other.run_path(run['id'])}/cancel").status == 404
    stranger = api.post("/api/v1/projects", {"name": "globex"}).json
    key = api.post("/api/v1/api-keys", {"project_id": stranger["id"], "name": "k"}).json["key"]
    outsider = api.as_key(key)
    hidden = outsider.get(suite.run_path(run["id"]))
    missing = outsider.get(suite.run_path("evrun_missing00000000"))
    assert hidden.status == missing.status == 404 and hidden.code == missing.code
    assert outsider.post(suite.runs_path, {"wait": True}).status == 404
    assert outsider.get(suite.runs_path).status == 404
    insider = api.as_key(project_key)
    assert insider.get(suite.run_path(run["id"])).json["id"] == run["id"]


def test_cancel_of_a_finished_run_is_refused(api: Any, project: Any, plugins: Plugins) -> None:
    suite = make_suite(api, project, [("echo:a", "a")])
    run = _start(api, suite, wait=True).json
    refused = api.post(f"{suite.run_path(run['id'])}/cancel")
    assert refused.status == 400
    assert api.get(suite.run_path(run["id"])).json == run


# --- baseline deltas and grouping ---------------------------------------------------------------


def test_baseline_comparison_and_groups(api: Any, project: Any, plugins: Plugins) -> None:
    suite = make_suite(
        api,
        project,
        [
            ("echo:a", "a", {"kind": "refusal"}),
            ("echo:b", "b", {"kind": "refusal"}),
            ("echo:c", "c", {"kind": 7}),
        ],
        group_by="kind",
    )
    baseline = _start(api, suite, wait=True).json
    assert baseline["aggregate_scores"]["grouping"]["groups"]["refusal"]["scored_item_count"] == 2
    assert baseline["aggregate_scores"]["grouping"]["ungrouped_item_count"] == 1
    items = f"/api/v1/datasets/{suite.dataset['id']}/items"
    # Make one item regress, relabel another: labels are read when the run settles.
    first, _second, third = suite.items
    api.put(f"{items}/{first['id']}", {"expected_output": "zzz"})
    api.put(f"{items}/{third['id']}", {"metadata": {"kind": "multi_step"}})
    make_item(api, suite.dataset["id"], "echo:d", "d", metadata={"kind": "refusal"})
    current = _start(api, suite, wait=True, baseline_run_id=baseline["id"]).json
    assert current["baseline_run_id"] == baseline["id"]
    comparison = current["aggregate_scores"]["baseline"]
    assert comparison["run_id"] == baseline["id"]
    assert comparison["compared_item_count"] == 3 and comparison["added_item_count"] == 1
    assert comparison["flipped"] == {"improved": 0, "regressed": 1}
    assert comparison["pass_rate_delta"] == pytest.approx(-1 / 3)
    groups = current["aggregate_scores"]["grouping"]["groups"]
    assert set(groups) == {"refusal", "multi_step"}
    assert comparison["grouping"]["groups"]["multi_step"]["compared_item_count"] == 1
