"""list-generations: SOAT's filters, cursor and offset paging, tenancy and IAM; and the
agent delete that answers AGENT_HAS_DEPENDENTS with its counts unless forced."""

from __future__ import annotations

from typing import Any

from chalicelib import aws
from chalicelib.settings import get_settings
from chalicelib.store import results
from chalicelib.store.models import ResultModel
from tests.api.test_authorization import allow, key_with
from tests.support.runs import Plugins, make_agent, make_suite

GENERATIONS = "/api/v1/generations"


def _generate(api: Any, agent: dict[str, Any], text: str) -> dict[str, Any]:
    body = {"input": [{"role": "user", "content": text}]}
    response = api.post(f"/api/v1/agents/{agent['id']}/generate", body)
    assert response.status == 201, response
    return dict(response.json)


def _list(api: Any, query: str = "") -> Any:
    response = api.get(f"{GENERATIONS}?{query}")
    assert response.status == 200, response
    return response.json


def _ids(page: dict[str, Any]) -> list[str]:
    return [g["id"] for g in page["data"]]


def _world(api: Any, project: dict[str, Any]) -> dict[str, Any]:
    """Agent A with three generations (one failed), agent B with two, oldest first."""
    a, b = make_agent(api, project, name="a"), make_agent(api, project, name="b")
    made = [
        _generate(api, a, "echo:one"),
        _generate(api, b, "echo:two"),
        _generate(api, a, "fail"),
        _generate(api, b, "echo:four"),
        _generate(api, a, "echo:five"),
    ]
    return {"a": a, "b": b, "made": made, "p": f"project_id={project['id']}"}


def test_filters_newest_first(api: Any, project: dict[str, Any], plugins: Plugins) -> None:
    w = _world(api, project)
    made, p = w["made"], w["p"]
    everything = _list(api, p)
    assert _ids(everything) == [g["id"] for g in reversed(made)]
    assert everything["total"] == 5 and everything["next_cursor"] is None
    assert everything["data"][0] == api.get(f"{GENERATIONS}/{made[4]['id']}").json  # whole rows
    of_a = _list(api, f"{p}&agent_id={w['a']['id']}")
    assert _ids(of_a) == [made[4]["id"], made[2]["id"], made[0]["id"]] and of_a["total"] == 3
    failed = _list(api, f"{p}&status=failed")
    assert _ids(failed) == [made[2]["id"]] and failed["data"][0]["error"] is not None
    done_b = _list(api, f"{p}&agent_id={w['b']['id']}&status=completed")
    assert _ids(done_b) == [made[3]["id"], made[1]["id"]]
    assert _list(api, f"{p}&status=in_progress")["data"] == []
    # pawl records no traces and no sub-agent calls: those filters match nothing.
    for nothing in ("trace_id=trace_abc123", f"initiator_generation_id={made[0]['id']}"):
        empty = _list(api, f"{p}&{nothing}")
        assert empty["data"] == [] and empty["total"] == 0


def test_eval_generations_are_listed_with_their_run(
    api: Any, project: dict[str, Any], plugins: Plugins
) -> None:
    suite = make_suite(api, project, [("echo:a", "a"), ("echo:b", "b")])
    run = api.post(suite.runs_path, {"wait": True}).json
    listed = _list(api, f"project_id={project['id']}&agent_id={suite.agent['id']}")
    assert listed["total"] == 2
    assert {(g["source"], g["run_id"]) for g in listed["data"]} == {("eval", run["id"])}


def test_cursor_and_offset_pages(api: Any, project: dict[str, Any], plugins: Plugins) -> None:
    w = _world(api, project)
    p, expected = w["p"], [g["id"] for g in reversed(w["made"])]
    seen: list[str] = []
    page = _list(api, f"{p}&limit=2")
    while True:
        seen.extend(_ids(page))
        assert page["total"] == 5 and page["limit"] == 2
        if page["next_cursor"] is None:
            break
        page = _list(api, f"{p}&limit=2&cursor={page['next_cursor']}")
    assert seen == expected
    skipped = _list(api, f"{p}&limit=2&offset=2")
    assert _ids(skipped) == expected[2:4] and skipped["offset"] == 2
    filtered = _list(api, f"{p}&agent_id={w['a']['id']}&limit=1")
    # A cursor belongs to its list: another filter refuses it before reading anything.
    crossed = api.get(f"{GENERATIONS}?{p}&limit=1&cursor={filtered['next_cursor']}")
    assert crossed.status == 400 and crossed.json["error"]["meta"]["field"] == "cursor"
    other_status = f"{p}&agent_id={w['a']['id']}&status=failed&limit=1"
    crossed = api.get(f"{GENERATIONS}?{other_status}&cursor={filtered['next_cursor']}")
    assert crossed.status == 400


def test_bad_queries_are_refused(api: Any, project: dict[str, Any]) -> None:
    p = f"project_id={project['id']}"
    for query, field in (
        ("colour=red", "colour"),
        ("status=pending", "status"),
        ("agent_id=not-an-agent", "agent_id"),
        ("initiator_generation_id=agt_0123456789abcdef", "initiator_generation_id"),
        ("limit=0", "limit"),
        ("cursor=forged.0123", "cursor"),
        ("cursor=abc&offset=3", "offset"),
    ):
        refused = api.get(f"{GENERATIONS}?{p}&{query}")
        assert refused.status == 400, (query, refused)
        assert refused.json["error"]["meta"]["field"] == field, (query, refused.json)
    assert api.get(GENERATIONS).status == 400  # the admin key names the project


def test_a_foreign_key_sees_only_its_project(
    api: Any, project: dict[str, Any], plugins: Plugins
) -> None:
    w = _world(api, project)
    stranger = api.post("/api/v1/projects", {"name": "globex"}).json
    key = api.post("/api/v1/api-keys", {"project_id": stranger["id"], "name": "k"}).json["key"]
    outsider = api.as_key(key)
    assert _list(outsider)["data"] == []
    # Another project's agent: the same empty page as an agent that does not exist.
    assert _list(outsider, f"agent_id={w['a']['id']}")["data"] == []
    assert _list(outsider, "agent_id=agt_0123456789abcdef")["data"] == []
    refused = outsider.get(f"{GENERATIONS}?project_id={project['id']}")
    assert refused.status == 403 and refused.code == "API_KEY_PROJECT_SCOPE"
    own = api.post("/api/v1/api-keys", {"project_id": project["id"], "name": "k"}).json["key"]
    assert len(_list(api.as_key(own))["data"]) == 5


def test_a_key_limited_to_one_agent_lists_that_agents_generations_only(
    api: Any, project: dict[str, Any], plugins: Plugins
) -> None:
    w = _world(api, project)
    pid, a, b = project["id"], w["a"]["id"], w["b"]["id"]
    one_agent = key_with(api, pid, allow(["generations:ListGenerations"], f"srn:{pid}:agent:{a}"))
    assert len(_list(one_agent, f"agent_id={a}")["data"]) == 3
    assert _list(one_agent, f"agent_id={b}")["data"] == []
    assert _list(one_agent)["data"] == []  # every generation needs srn:<p>:generation:*
    everything = key_with(
        api, pid, allow(["generations:ListGenerations"], f"srn:{pid}:generation:*")
    )
    assert len(_list(everything)["data"]) == 5
    assert len(_list(everything, f"agent_id={b}")["data"]) == 2
    denied = key_with(
        api,
        pid,
        allow(["generations:GetGeneration"], f"srn:{pid}:generation:*"),
        {"effect": "Deny", "action": ["generations:ListGenerations"], "resource": ["*"]},
    )
    assert _list(denied)["data"] == [] and _list(denied, f"agent_id={a}")["data"] == []


def test_agent_delete_names_its_dependents_and_force_deletes_them(
    api: Any, project: dict[str, Any], plugins: Plugins
) -> None:
    agent = make_agent(api, project)
    small = _generate(api, agent, "echo:hi")
    large = _generate(api, agent, f"big:{get_settings().large_output_bytes + 10}")
    [blob] = _objects(f"generations/{large['id']}/")
    refused = api.delete(f"/api/v1/agents/{agent['id']}")
    assert refused.status == 409 and refused.code == "AGENT_HAS_DEPENDENTS", refused
    meta = refused.json["error"]["meta"]
    assert (meta["generationCount"], meta["traceCount"], meta["runCount"]) == (2, 0, 0)
    advice = f"DELETE /api/v1/agents/{agent['id']}?force=true"
    assert advice in refused.json["error"]["message"]
    assert api.get(f"/api/v1/agents/{agent['id']}").status == 200  # nothing deleted
    assert api.delete(advice.split(" ", 1)[1]).status == 204
    assert api.get(f"/api/v1/agents/{agent['id']}").status == 404
    for generation in (small, large):
        assert api.get(f"{GENERATIONS}/{generation['id']}").status == 404
    assert _list(api, f"project_id={project['id']}")["data"] == []
    assert blob and _objects(f"generations/{large['id']}/") == []


def test_an_agent_with_runs_follows_each_advice_to_its_delete(
    api: Any, project: dict[str, Any], plugins: Plugins
) -> None:
    suite = make_suite(api, project, [("echo:a", "a")])
    run = api.post(suite.runs_path, {"wait": True}).json
    path = f"/api/v1/agents/{suite.agent['id']}"
    in_use = api.delete(f"{path}?force=true")  # force never takes an eval's agent away
    assert in_use.status == 409 and in_use.code == "AGENT_IN_USE", in_use
    assert "delete them or bind them to another agent" in in_use.json["error"]["message"]
    assert api.delete(f"/api/v1/evals/{suite.eval['id']}").status == 204
    dependents = api.delete(path)
    assert dependents.code == "AGENT_HAS_DEPENDENTS"
    meta = dependents.json["error"]["meta"]
    assert (meta["generationCount"], meta["runCount"]) == (1, 1)
    assert api.delete(f"{path}?force=true").status == 204
    [kept] = [results.from_model(row) for row in ResultModel.query(run["id"])]
    assert kept.output == "a" and kept.generation_id is not None  # the run keeps it whole


def _objects(prefix: str) -> list[str]:
    listed = aws.client("s3").list_objects_v2(Bucket=get_settings().bucket, Prefix=prefix)
    return [o["Key"] for o in listed.get("Contents", [])]
