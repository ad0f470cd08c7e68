"""Structured output through a whole run: the agent's output_schema, the output_schema
scorer falling back to it, and json_logic reading ``object``."""

from __future__ import annotations

import json
from typing import Any

SCHEMA = {
    "type": "object",
    "properties": {"category": {"enum": ["billing", "other"]}},
    "required": ["category"],
}


def classify(payload: dict[str, Any]) -> dict[str, Any]:
    """A python agent answering ``{"category": <the user's text>}`` as its structured output."""
    text = payload["input"][-1]["content"]
    return {"output": json.dumps({"category": text}), "object": {"category": text}}


def test_output_schema_scorer_uses_the_agents_schema(api: Any, project: dict[str, Any]) -> None:
    def post(path: str, body: dict[str, Any]) -> dict[str, Any]:
        response = api.post(path, {"project_id": project["id"], **body})
        assert response.status == 201, response
        return response.json

    agent = post(
        "/api/v1/agents",
        {
            "name": "classifier",
            "type": "python",
            "config": {"callable": "tests.integration.test_structured_output:classify"},
            "output_schema": SCHEMA,
        },
    )
    dataset = post("/api/v1/datasets", {"name": "tickets"})
    for text in ("billing", "other", "spam"):
        item = {"input": [{"role": "user", "content": text}]}
        assert api.post(f"/api/v1/datasets/{dataset['id']}/items", item).status == 201
    scorers = [
        {"type": "output_schema"},
        {"type": "json_logic", "expression": {"==": [{"var": "object.category"}, "billing"]}},
    ]
    evaluation = post(
        "/api/v1/evals",
        {"name": "e", "agent_id": agent["id"], "dataset_id": dataset["id"], "scorers": scorers},
    )
    runs = f"/api/v1/evals/{evaluation['id']}/runs"
    run = api.post(runs, {"wait": True}).json
    assert (run["status"], run["completed_count"], run["errored_count"]) == ("completed", 3, 0)
    results = api.get(f"{runs}/{run['id']}/results").json["data"]
    by_input = {
        r["input"][0]["content"]: {s["scorer"]: s["passed"] for s in r["scores"]} for r in results
    }
    assert by_input == {
        "billing": {"output_schema": True, "json_logic": True},
        "other": {"output_schema": True, "json_logic": False},
        "spam": {"output_schema": False, "json_logic": False},
    }
    assert run["aggregate_scores"]["scorers"]["output_schema"]["pass_rate"] == 2 / 3
