"""Finding 3 of the audit: every malformed body is a 400 envelope and nothing is written.

Each case sends through the real app (chalice.test.Client over moto) and then reads back
through the API to show that no row was kept and no run executed.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.support import agents
from tests.support.runs import Plugins, make_suite

DATASETS = "/api/v1/datasets"
QUESTION = [{"role": "user", "content": "hi"}]
EXACT = [{"type": "exact_match"}]
QUESTIONS = [{"name": "ok", "kind": "predicate", "prompt": "Is it fine?"}]
BACKEND = {"type": "tool", "tool_id": "tool_aaaaaaaaaaaaaaaa"}
HTTP_AGENT = {"type": "http", "config": {"url": "http://127.0.0.1:9/agent"}}


def _refused(response: Any, field: str | None = None) -> dict[str, Any]:
    assert response.status == 400, response
    assert response.code == "VALIDATION_FAILED", response
    error: dict[str, Any] = response.json["error"]
    if field is not None:
        assert error["meta"]["field"] == field, error
    return error


def _dataset(api: Any, project: dict[str, Any]) -> str:
    response = api.post(DATASETS, {"project_id": project["id"], "name": "d"})
    assert response.status == 201, response
    return str(response.json["id"])


def _items(api: Any, dataset_id: str) -> list[Any]:
    listed = api.get(f"{DATASETS}/{dataset_id}/items")
    assert listed.status == 200, listed
    return list(listed.json["data"])


def _nested(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = {"k": value}
    return value


# --- nesting --------------------------------------------------------------------------------


def test_metadata_nested_400_deep_is_refused_and_the_list_still_works(
    api: Any, project: dict[str, Any]
) -> None:
    dataset_id = _dataset(api, project)
    body = {"input": QUESTION, "metadata": _nested(400)}
    error = _refused(api.post(f"{DATASETS}/{dataset_id}/items", body), "metadata")
    assert error["meta"]["limit"] == 32
    assert _items(api, dataset_id) == []


def test_nesting_at_the_limit_is_accepted(api: Any, project: dict[str, Any]) -> None:
    dataset_id = _dataset(api, project)
    # The body object is level 1, metadata level 2: 30 more objects reach exactly 32.
    body = {"input": QUESTION, "metadata": _nested(30)}
    assert api.post(f"{DATASETS}/{dataset_id}/items", body).status == 201
    assert len(_items(api, dataset_id)) == 1


def test_a_100k_deep_array_is_a_400_not_a_recursion_error(
    api: Any, project: dict[str, Any]
) -> None:
    dataset_id = _dataset(api, project)
    raw = b"[" * 100_000 + b"]" * 100_000
    _refused(api.post(f"{DATASETS}/{dataset_id}/items", raw=raw), "body")
    unclosed = b'{"input": ' + b"[" * 100_000
    _refused(api.post(f"{DATASETS}/{dataset_id}/items", raw=unclosed), "input")
    assert _items(api, dataset_id) == []


# --- strings ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        (b'{"input": [{"role": "user", "content": "a\\udfffb"}]}', "input.0.content"),
        (b'{"input": [{"role": "user", "content": "hi"}], "metadata": {"\\ud800": 1}}', "metadata"),
        (b'{"input": [{"role": "user", "content": "hi"}], "expected_output": "\\udc00"}', None),
    ],
)
def test_lone_surrogates_in_an_item_are_refused(
    api: Any, project: dict[str, Any], raw: bytes, field: str | None
) -> None:
    dataset_id = _dataset(api, project)
    error = _refused(api.post(f"{DATASETS}/{dataset_id}/items", raw=raw), field)
    assert "surrogate" in error["message"]
    assert _items(api, dataset_id) == []


def test_a_valid_surrogate_pair_is_accepted(api: Any, project: dict[str, Any]) -> None:
    dataset_id = _dataset(api, project)
    raw = b'{"input": [{"role": "user", "content": "\\ud83d\\ude00"}]}'
    created = api.post(f"{DATASETS}/{dataset_id}/items", raw=raw)
    assert created.status == 201, created
    assert created.json["input"][0]["content"] == "\U0001f600"


def test_a_lone_surrogate_in_an_agent_header_value_is_refused(
    api: Any, project: dict[str, Any]
) -> None:
    raw = (
        b'{"project_id": "%s", "name": "a", "type": "http", "config": '
        b'{"url": "http://127.0.0.1:9/a", "headers": {"Authorization": "Bearer \\udfff"}}}'
    ) % project["id"].encode()
    _refused(api.post("/api/v1/agents", raw=raw), "config.headers.Authorization")
    assert api.get(f"/api/v1/agents?project_id={project['id']}").json["data"] == []


# --- numbers ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "number",
    [
        *(b"NaN", b"Infinity", b"-Infinity", b"1e400", b"-1e400", b"1e-400", b"1e-131"),
        *(b"1" * 39, b"1" + b"0" * 38, b"-2e38", b"1e126"),
    ],
)
def test_numbers_dynamodb_cannot_store_are_refused(
    api: Any, project: dict[str, Any], number: bytes
) -> None:
    dataset_id = _dataset(api, project)
    raw = b'{"input": [{"role": "user", "content": "hi"}], "metadata": {"score": %s}}' % number
    _refused(api.post(f"{DATASETS}/{dataset_id}/items", raw=raw), "metadata.score")
    assert _items(api, dataset_id) == []


def test_storable_numbers_round_trip(api: Any, project: dict[str, Any]) -> None:
    dataset_id = _dataset(api, project)
    metadata = {"big": int("9" * 38), "small": 1e-130, "zero": 0.0, "neg": -9.99e37}
    created = api.post(f"{DATASETS}/{dataset_id}/items", {"input": QUESTION, "metadata": metadata})
    assert created.status == 201, created
    assert created.json["metadata"] == metadata


# --- empty and malformed ids -----------------------------------------------------------------

CREATES = [
    ("/api/v1/datasets", {"name": "x"}),
    ("/api/v1/agents", {"name": "x", **HTTP_AGENT}),
    ("/api/v1/tools", {"name": "x", **HTTP_AGENT}),
    ("/api/v1/deciders", {"name": "x", "questions": QUESTIONS, "backend": BACKEND}),
    (
        "/api/v1/ai-providers",
        {"name": "x", "base_url": "http://127.0.0.1:9/v1", "default_model": "m"},
    ),
    ("/api/v1/evals", {"name": "x", "agent_id": "agt_x", "dataset_id": "dset_x", "scorers": EXACT}),
    ("/api/v1/webhooks", {"url": "http://127.0.0.1:9/hook", "events": ["eval_run.completed"]}),
    ("/api/v1/api-keys", {"name": "x"}),
]
LISTS = [
    "/api/v1/datasets",
    "/api/v1/agents",
    "/api/v1/tools",
    "/api/v1/deciders",
    "/api/v1/ai-providers",
    "/api/v1/evals",
    "/api/v1/webhooks",
    "/api/v1/api-keys",
]


@pytest.mark.parametrize(("path", "body"), CREATES)
@pytest.mark.parametrize("project_id", ["", " ", "dset_aaaaaaaaaaaaaaaa", "proj_" + "a" * 300])
def test_a_malformed_project_id_on_create_is_a_400(
    api: Any, path: str, body: dict[str, Any], project_id: str
) -> None:
    _refused(api.post(path, {**body, "project_id": project_id}), "project_id")


@pytest.mark.parametrize("path", LISTS)
@pytest.mark.parametrize("project_id", ["", "%20", "proj_%00"])
def test_a_malformed_project_id_on_list_is_a_400(api: Any, path: str, project_id: str) -> None:
    _refused(api.get(f"{path}?project_id={project_id}"), "project_id")


def test_malformed_ids_in_bodies_name_their_field(api: Any, project: dict[str, Any]) -> None:
    body = {"project_id": project["id"], "name": "e", "scorers": [{"type": "exact_match"}]}
    _refused(
        api.post("/api/v1/evals", {**body, "agent_id": "", "dataset_id": "dset_a"}), "agent_id"
    )
    _refused(
        api.post("/api/v1/evals", {**body, "agent_id": "agt_a", "dataset_id": ""}), "dataset_id"
    )
    assert api.get(f"/api/v1/evals?project_id={project['id']}").json["data"] == []


# --- item size -------------------------------------------------------------------------------


def test_a_500kb_contains_value_is_refused_naming_the_field_and_size(
    api: Any, project: dict[str, Any], plugins: Plugins
) -> None:
    suite = make_suite(api, project, [("echo:a", "a")])
    value = "x" * 500_000
    body = {
        "project_id": project["id"],
        "name": "huge",
        "agent_id": suite.agent["id"],
        "dataset_id": suite.dataset["id"],
        "scorers": [{"type": "contains", "value": value}],
    }
    error = _refused(api.post("/api/v1/evals", body), "scorers.0.value")
    assert error["meta"]["size_bytes"] > 400 * 1024
    assert error["meta"]["limit_bytes"] == 400 * 1024
    names = [e["name"] for e in api.get(f"/api/v1/evals?project_id={project['id']}").json["data"]]
    assert names == ["suite"]


def test_a_large_item_update_is_refused_and_the_item_kept(
    api: Any, project: dict[str, Any]
) -> None:
    dataset_id = _dataset(api, project)
    item = api.post(f"{DATASETS}/{dataset_id}/items", {"input": QUESTION}).json
    path = f"{DATASETS}/{dataset_id}/items/{item['id']}"
    error = _refused(api.put(path, {"metadata": {"blob": "y" * 450_000}}), "metadata.blob")
    assert error["meta"]["size_bytes"] > 400 * 1024
    assert api.get(path).json == item


# --- runs: refused before anything is written or executed -----------------------------------


def _runs(api: Any, suite: Any) -> list[Any]:
    return list(api.get(suite.runs_path).json["data"])


@pytest.mark.parametrize("wait", [True, False])
def test_run_metadata_with_a_lone_surrogate_neither_writes_nor_runs(
    api: Any, project: dict[str, Any], plugins: Plugins, wait: bool
) -> None:
    suite = make_suite(api, project, [("echo:a", "a")])
    raw = b'{"wait": %s, "metadata": {"commit": "\\udfff"}}' % (b"true" if wait else b"false")
    _refused(api.post(suite.runs_path, raw=raw), "metadata.commit")
    assert _runs(api, suite) == []
    assert agents.calls_for(suite.items[0]["id"]) == 0


@pytest.mark.parametrize("wait", [True, False])
def test_900kb_run_metadata_is_refused_before_the_run_exists(
    api: Any, project: dict[str, Any], plugins: Plugins, wait: bool
) -> None:
    suite = make_suite(api, project, [("echo:a", "a")])
    body = {"wait": wait, "metadata": {"notes": "z" * 900_000}}
    error = _refused(api.post(suite.runs_path, body), "metadata.notes")
    assert error["meta"]["size_bytes"] > 900_000
    assert _runs(api, suite) == []
    assert agents.calls_for(suite.items[0]["id"]) == 0


def test_a_run_whose_fanout_cannot_be_sent_is_withdrawn_and_a_retry_runs_once(
    api: Any, project: dict[str, Any], plugins: Plugins
) -> None:
    import boto3

    from chalicelib import queues
    from chalicelib.bootstrap import ensure_resources
    from chalicelib.settings import get_settings

    suite = make_suite(api, project, [("echo:a", "a")])
    sqs = boto3.client("sqs")
    sqs.delete_queue(QueueUrl=queues.queue_url(get_settings().run_queue))
    queues.reset()  # forget the cached URL: the next send finds the queue gone
    failed = api.post(suite.runs_path, {"metadata": {"attempt": 1}})
    assert failed.status == 500 and failed.code == "INTERNAL_ERROR", failed
    assert _runs(api, suite) == []

    ensure_resources()
    queues.reset()
    retried = api.post(suite.runs_path, {"metadata": {"attempt": 2}})
    assert retried.status == 201, retried
    assert [r["id"] for r in _runs(api, suite)] == [retried.json["id"]]
