"""Generations: an agent called outside an eval, curation into a dataset, content purge."""

from __future__ import annotations

from typing import Any

from chalicelib import aws
from chalicelib.settings import get_settings
from tests.support import agents
from tests.support.runs import Plugins, all_results, make_agent, make_suite

DATASETS = "/api/v1/datasets"


def _generate(api: Any, agent: dict[str, Any], text: str, **body: Any) -> Any:
    return api.post(
        f"/api/v1/agents/{agent['id']}/generate",
        {"input": [{"role": "user", "content": text}], **body},
    )


def _dataset(api: Any, project: dict[str, Any], name: str = "curated") -> dict[str, Any]:
    response = api.post(DATASETS, {"project_id": project["id"], "name": name})
    assert response.status == 201, response
    return dict(response.json)


def _curate(api: Any, dataset: dict[str, Any], **body: Any) -> Any:
    return api.post(f"{DATASETS}/{dataset['id']}/items/from-generation", body)


def test_generate_outside_an_eval(
    api: Any, project: Any, project_key: str, plugins: Plugins
) -> None:
    agent = make_agent(api, project)
    response = _generate(api, agent, "echo:hello", tool_context={"tenant": "acme"})
    assert response.status == 201, response
    generation = response.json
    assert generation["id"].startswith("gen_") and generation["status"] == "completed"
    assert generation["output"] == "hello" and generation["source"] is None
    assert generation["run_id"] is None and generation["agent_version"] == agent["version"]
    assert generation["input"] == [{"role": "user", "content": "echo:hello"}]
    assert generation["latency_ms"] >= 0 and generation["project_id"] == project["id"]
    assert agents.CALLS[0]["tool_context"] == {"tenant": "acme"}
    assert api.get(f"/api/v1/generations/{generation['id']}").json == generation
    assert api.as_key(project_key).get(f"/api/v1/generations/{generation['id']}").status == 200

    failed = _generate(api, agent, "fail").json
    assert failed["status"] == "failed" and failed["error"]["code"] == "GENERATION_FAILED"
    assert failed["output"] is None

    refused = _generate(api, agent, "x", tool_context={"no spaces": "v"})
    assert refused.status == 400 and refused.code == "INVALID_TOOL_CONTEXT_KEY"
    assert api.post(f"/api/v1/agents/{agent['id']}/generate", {"input": []}).status == 400


def test_generations_are_invisible_across_projects(
    api: Any, project: Any, plugins: Plugins
) -> None:
    agent = make_agent(api, project)
    generation = _generate(api, agent, "echo:a").json
    stranger = api.post("/api/v1/projects", {"name": "globex"}).json
    key = api.post("/api/v1/api-keys", {"project_id": stranger["id"], "name": "k"}).json["key"]
    outsider = api.as_key(key)
    hidden = outsider.get(f"/api/v1/generations/{generation['id']}")
    missing = outsider.get("/api/v1/generations/gen_missing000000000")
    assert hidden.status == missing.status == 404 and hidden.code == missing.code
    assert outsider.delete(f"/api/v1/generations/{generation['id']}/content").status == 404
    assert _generate(outsider, agent, "echo:a").status == 404
    # A generation of another project reads as missing when curated into this one.
    foreign_dataset = _dataset(api, stranger)
    assert _curate(api, foreign_dataset, generation_id=generation["id"]).status == 404


def test_curate_an_item_from_a_generation(api: Any, project: Any, plugins: Plugins) -> None:
    agent = make_agent(api, project)
    dataset = _dataset(api, project)
    generation = _generate(api, agent, "echo:answer").json

    omitted = _curate(api, dataset, generation_id=generation["id"])
    assert omitted.status == 201, omitted
    item = omitted.json
    assert item["input"] == generation["input"] and item["expected_output"] == "answer"
    assert item["source_generation_id"] == generation["id"] and item["dataset_id"] == dataset["id"]

    overridden = _curate(api, dataset, generation_id=generation["id"], expected_output="better")
    assert overridden.json["expected_output"] == "better"
    cleared = _curate(
        api, dataset, generation_id=generation["id"], expected_output=None, metadata={"k": "v"}
    )
    assert cleared.status == 201 and cleared.json["expected_output"] is None
    assert cleared.json["metadata"] == {"k": "v"}

    paused = _generate(api, agent, "pause").json
    failed = _generate(api, agent, "fail").json
    for refused_generation in (paused, failed):
        refused = _curate(api, dataset, generation_id=refused_generation["id"])
        assert refused.status == 409 and refused.code == "GENERATION_NOT_COMPLETED"
    assert _curate(api, dataset, generation_id="gen_missing000000000").status == 404
    assert _curate(api, dataset, generation_id=generation["id"], extra=1).status == 400
    assert _curate(api, dataset).status == 400

    assert api.delete(f"/api/v1/generations/{generation['id']}/content").status == 204
    purged = _curate(api, dataset, generation_id=generation["id"])
    assert purged.status == 409 and purged.code == "GENERATION_CONTENT_UNAVAILABLE"
    # The curated copy survives the purge of its source.
    kept = api.get(f"{DATASETS}/{dataset['id']}/items/{item['id']}").json
    assert kept["input"] == item["input"] and kept["expected_output"] == "answer"
    listed = api.get(f"{DATASETS}/{dataset['id']}/items").json["data"]
    assert len(listed) == 3


def test_purge_clears_result_outputs_and_nothing_else(
    api: Any, project: Any, plugins: Plugins
) -> None:
    size = 300_000
    suite = make_suite(api, project, [("echo:a", "a"), (f"big:{size}", "x" * size)])
    run = api.post(suite.runs_path, {"wait": True}).json
    before = {r["dataset_item_id"]: r for r in all_results(api, suite, run["id"])}
    small, large = suite.items
    for item in (small, large):
        generation_id = before[item["id"]]["generation_id"]
        assert api.delete(f"/api/v1/generations/{generation_id}/content").status == 204
        generation = api.get(f"/api/v1/generations/{generation_id}").json
        assert generation["input"] is None and generation["output"] is None
        assert generation["object"] is None and generation["content_purged"] is True
        assert generation["status"] == "completed" and generation["run_id"] == run["id"]
    after = {r["dataset_item_id"]: r for r in all_results(api, suite, run["id"])}
    for item_id, result in after.items():
        assert result["output"] is None
        unchanged = {k: v for k, v in before[item_id].items() if k != "output"}
        assert {k: v for k, v in result.items() if k != "output"} == unchanged
    assert api.get(suite.run_path(run["id"])).json == run
    items = api.get(f"{DATASETS}/{suite.dataset['id']}/items").json["data"]
    assert [i["input"] for i in items] == [small["input"], large["input"]]
    # The large output's blob is gone too (the run's outcome digest is under runs/).
    bucket = aws.client("s3").list_objects_v2(Bucket=get_settings().bucket, Prefix="generations/")
    assert bucket.get("KeyCount", 0) == 0


def test_an_eval_generation_keeps_one_copy_of_its_content_on_its_result(
    api: Any, project: Any, plugins: Plugins
) -> None:
    """The generation row of an eval item holds its metadata and where its result is; its
    input and output are read from the result (one copy, not two), by id and in lists."""
    from chalicelib.store.models import GenerationModel

    suite = make_suite(api, project, [("echo:one", "one"), ("echo:two", "two")])
    run = api.post(suite.runs_path, {"wait": True}).json
    results = all_results(api, suite, run["id"])
    for result in results:
        row = GenerationModel.get(result["generation_id"])
        assert row.input is None and row.output is None and row.result_key
        generation = api.get(f"/api/v1/generations/{result['generation_id']}").json
        assert generation["input"] == result["input"]
        assert generation["output"] == result["output"]
        assert generation["run_id"] == run["id"] and generation["source"] == "eval"
    listed = api.get(f"/api/v1/generations?project_id={project['id']}").json["data"]
    by_id = {g["id"]: g for g in listed}
    for result in results:
        assert by_id[result["generation_id"]]["output"] == result["output"]
