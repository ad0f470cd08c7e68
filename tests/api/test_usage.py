"""The usage API: every metered call of a real eval as an event, and rollups that add up
to the run's own ``aggregate_scores.usage``.

The agent and the judge are real HTTP servers on 127.0.0.1 that report tokens and cost.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.drain import drain_queues
from tests.support.servers import Reply, Request, Server, serve

ITEMS = 7
AGENT_USAGE = {"input_tokens": 12, "output_tokens": 3, "cost_usd": 0.0021}
JUDGE_USAGE = {"prompt_tokens": 40, "completion_tokens": 6, "cost": 0.00035}


def agent_reply(request: Request) -> Reply:
    return Reply(200, {"output": "ok", "usage": AGENT_USAGE})


def judge_reply(request: Request) -> Reply:
    body = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "judge-small",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": '{"score": 0.9, "reasoning": "ok"}'},
                "finish_reason": "stop",
            }
        ],
        "usage": JUDGE_USAGE,
    }
    return Reply(200, body)


def make_eval(
    api: Any, project: dict[str, Any], agent: Server, judge: Server | None, **fields: Any
) -> dict[str, Any]:
    pid = project["id"]
    created = api.post(
        "/api/v1/agents",
        {"project_id": pid, "name": "metered", "type": "http", "config": {"url": agent.url}},
    )
    assert created.status == 201, created
    dataset = api.post("/api/v1/datasets", {"project_id": pid, "name": "metered"}).json
    for i in range(fields.pop("items", ITEMS)):
        item = api.post(
            f"/api/v1/datasets/{dataset['id']}/items",
            {"input": [{"role": "user", "content": f"case {i}"}], "expected_output": "ok"},
        )
        assert item.status == 201, item
    scorers: list[dict[str, Any]] = [{"type": "contains", "value": "ok"}]
    if judge is not None:
        provider = api.post(
            "/api/v1/ai-providers",
            {
                "project_id": pid,
                "name": "judge",
                "base_url": f"{judge.url}/v1",
                "default_model": "judge-small",
            },
        ).json
        scorers.append(
            {
                "type": "llm_judge",
                "prompt": "Grade {{output}} against {{expected}}",
                "ai_provider_id": provider["id"],
                "pass_threshold": 0.5,
            }
        )
    body = {
        "project_id": pid,
        "name": fields.pop("name", "metered"),
        "agent_id": created.json["id"],
        "dataset_id": dataset["id"],
        "scorers": scorers,
        **fields,
    }
    evaluation = api.post("/api/v1/evals", body)
    assert evaluation.status == 201, evaluation
    return dict(evaluation.json)


def every_event(api: Any, query: str, limit: int = 3) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    cursor = None
    for _ in range(200):
        url = f"/api/v1/usage/events?{query}&limit={limit}"
        page = api.get(url + (f"&cursor={cursor}" if cursor else ""))
        assert page.status == 200, page
        assert len(page.json["data"]) <= limit and page.json["limit"] == limit
        assert page.json["offset"] == len(events)  # where the page sits in the whole
        events += page.json["data"]
        assert page.json["total"] >= len(events)
        cursor = page.json["next_cursor"]
        if cursor is None:
            return events
    raise AssertionError("the event list never ended")


def queued_run(api: Any, app: Any, evaluation: dict[str, Any], **body: Any) -> dict[str, Any]:
    runs = f"/api/v1/evals/{evaluation['id']}/runs"
    started = api.post(runs, body)
    assert started.status == 201, started
    drain_queues(app)
    return dict(api.get(f"{runs}/{started.json['id']}").json)


@pytest.fixture
def admin(api: Any) -> Any:
    return api


def test_a_real_eval_s_events_add_up_to_the_run_s_usage(
    admin: Any, project: dict[str, Any], project_key: str, app: Any
) -> None:
    api = admin.as_key(project_key)
    with serve(agent_reply) as agent, serve(judge_reply) as judge:
        evaluation = make_eval(api, project, agent, judge)
        run = queued_run(api, app, evaluation)
        # Ordinary traffic beside the eval: one generation outside any run.
        generated = api.post(
            f"/api/v1/agents/{evaluation['agent_id']}/generate",
            {"input": [{"role": "user", "content": "hello"}]},
        )
        assert generated.status == 201, generated
    assert run["status"] == "completed", run
    usage = run["aggregate_scores"]["usage"]
    assert usage["by_source"]["eval"]["calls"] == ITEMS
    assert usage["by_source"]["eval_judge"]["calls"] == ITEMS

    events = every_event(api, f"eval_run_id={run['id']}")
    assert len(events) == usage["total"]["calls"] == 2 * ITEMS
    assert len({e["id"] for e in events}) == len(events)
    for event in events:
        assert event["id"].startswith("ue_")
        assert event["project_id"] == project["id"]
        assert (event["eval_id"], event["eval_run_id"]) == (evaluation["id"], run["id"])
        assert event["meter_type"] == "llm_tokens" and event["generation_id"].startswith("gen_")
    judged = [e for e in events if e["source"] == "eval_judge"]
    assert {e["model"] for e in judged} == {"judge-small"}
    assert judged[0]["components"][:2] == [
        {
            "component": "input_tokens",
            "quantity": 40,
            "unit": "token",
            "billable": True,
            "unit_price": None,
            "cost_usd": None,
            "price_id": None,
        },
        {
            "component": "output_tokens",
            "quantity": 6,
            "unit": "token",
            "billable": True,
            "unit_price": None,
            "cost_usd": None,
            "price_id": None,
        },
    ]

    aggregate = api.get(f"/api/v1/usage/aggregate?group_by=source&eval_run_id={run['id']}")
    assert aggregate.status == 200, aggregate
    groups = {g["key"]: g for g in aggregate.json["groups"]}
    for source, spent in usage["by_source"].items():
        assert groups[source]["event_count"] == spent["calls"]
        assert groups[source]["input_tokens"] == spent["input_tokens"]
        assert groups[source]["output_tokens"] == spent["output_tokens"]
        assert groups[source]["cost_usd"] == spent["cost_usd"]
    assert aggregate.json["totals"]["cost_usd"] == usage["total"]["cost_usd"]
    assert usage["total"]["cost_usd"] == round(ITEMS * (0.0021 + 0.00035), 6)

    # The whole project: the standalone generation is the null-source group.
    project_wide = api.get("/api/v1/usage/aggregate?group_by=source").json
    assert [g["key"] for g in project_wide["groups"]] == ["eval", "eval_judge", None]
    assert project_wide["groups"][-1]["event_count"] == 1
    assert project_wide["groups"][-1]["cost_usd"] == 0.0021
    by_eval = api.get("/api/v1/usage/aggregate?group_by=eval_id").json["groups"]
    assert [(g["key"], g["event_count"]) for g in by_eval] == [
        (evaluation["id"], 2 * ITEMS),
        (None, 1),
    ]
    by_model = api.get("/api/v1/usage/aggregate?group_by=model").json["groups"]
    assert [(g["key"], g["event_count"]) for g in by_model] == [
        ("judge-small", ITEMS),
        (None, ITEMS + 1),
    ]
    by_day = api.get("/api/v1/usage/aggregate?group_by=day").json
    assert [g["key"] for g in by_day["groups"]] == [run["created_at"][:10]]
    assert by_day["totals"] == project_wide["totals"]

    judge_only = every_event(api, f"source=eval_judge&eval_id={evaluation['id']}", limit=5)
    assert [e["id"] for e in judge_only] == [e["id"] for e in judged]
    later = api.get("/api/v1/usage/events?from=2999-01-01T00:00:00Z").json
    assert later == {"data": [], "total": 0, "limit": 50, "offset": 0, "next_cursor": None}
    # SOAT's offset paging: the same events, from the same order.
    by_offset = api.get(f"/api/v1/usage/events?eval_run_id={run['id']}&offset=5&limit=4").json
    assert by_offset["total"] == 2 * ITEMS and by_offset["offset"] == 5
    assert [e["id"] for e in by_offset["data"]] == [e["id"] for e in events[5:9]]
    beyond = api.get(f"/api/v1/usage/events?eval_run_id={run['id']}&offset=99").json
    assert beyond["data"] == [] and beyond["offset"] == 99
    inverted = "from=2999-01-01T00:00:00Z&to=2000-01-01T00:00:00Z&group_by=source"
    assert api.get(f"/api/v1/usage/aggregate?{inverted}").json["groups"] == []
    window = f"from={run['created_at']}&to=2999-01-01T00:00:00Z&eval_run_id={run['id']}"
    assert len(every_event(api, window, limit=100)) == 2 * ITEMS


def test_usage_is_project_scoped(
    api: Any, project: dict[str, Any], project_key: str, app: Any
) -> None:
    with serve(agent_reply) as agent:
        evaluation = make_eval(api, project, agent, None, items=2)
        run = queued_run(api, app, evaluation)
    other = api.post("/api/v1/projects", {"name": "other"}).json
    other_key = api.post("/api/v1/api-keys", {"project_id": other["id"], "name": "k"}).json["key"]
    theirs = api.as_key(other_key)
    # Another project's run or eval matches nothing, exactly like one that does not exist.
    for query in (f"eval_run_id={run['id']}", f"eval_id={evaluation['id']}", ""):
        listed = theirs.get(f"/api/v1/usage/events?{query}").json
        assert listed["data"] == [] and listed["total"] == 0
        rolled = theirs.get(f"/api/v1/usage/aggregate?group_by=source&{query}").json
        assert rolled["groups"] == [] and rolled["totals"]["event_count"] == 0
    for path in ("/api/v1/usage/events", "/api/v1/usage/aggregate?group_by=source&"):
        sep = "&" if path.endswith("&") else "?"
        refused = theirs.get(f"{path}{'' if sep == '&' else '?'}project_id={project['id']}")
        assert refused.status == 403 and refused.code == "API_KEY_PROJECT_SCOPE", refused
    mine = api.as_key(project_key).get(f"/api/v1/usage/events?eval_run_id={run['id']}")
    assert len(mine.json["data"]) == 2
    # The admin key names the project; without one it is told to.
    unnamed = api.get("/api/v1/usage/events")
    assert unnamed.status == 400 and unnamed.json["error"]["meta"]["field"] == "project_id"
    named = api.get(f"/api/v1/usage/events?project_id={project['id']}")
    assert len(named.json["data"]) == 2


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("group_by=tenant", "group_by"),
        ("", "group_by"),
        ("group_by=source&since=2026-01-01", "since"),
        ("group_by=source&from=yesterday", "from"),
        ("group_by=source&eval_run_id=run_1", "eval_run_id"),
        ("group_by=source&source=Eval%20Judge", "source"),
    ],
)
def test_a_bad_aggregate_query_is_refused(
    api: Any, project: dict[str, Any], query: str, field: str
) -> None:
    refused = api.get(f"/api/v1/usage/aggregate?project_id={project['id']}&{query}")
    assert refused.status == 400 and refused.code == "VALIDATION_FAILED", refused
    assert refused.json["error"]["meta"]["field"] == field


@pytest.mark.parametrize("cursor", ["garbage!", "eyJrIjoxfQ", "e30"])
def test_a_malformed_cursor_is_refused(api: Any, project: dict[str, Any], cursor: str) -> None:
    refused = api.get(f"/api/v1/usage/events?project_id={project['id']}&cursor={cursor}")
    assert refused.status == 400 and refused.json["error"]["meta"]["field"] == "cursor"
