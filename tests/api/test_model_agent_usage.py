"""A ``model`` agent's generation records the usage its OpenAI-compatible endpoint
reported, cost included (like LLM judges and deciders). The endpoint is a real HTTP
server on 127.0.0.1."""

from __future__ import annotations

from typing import Any

from tests.support.servers import Reply, Request, serve


def _completion(usage: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "local-model",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": "4"}, "finish_reason": "stop"}
        ],
        "usage": usage,
    }


def _generate_with(api: Any, project: Any, usage: dict[str, Any]) -> dict[str, Any]:
    def answer(_: Request) -> Reply:
        return Reply(200, _completion(usage))

    with serve(answer) as server:
        agent = api.post(
            "/api/v1/agents",
            {
                "project_id": project["id"],
                "name": "model",
                "type": "model",
                "config": {"base_url": f"{server.url}/v1", "model": "local-model"},
            },
        ).json
        response = api.post(
            f"/api/v1/agents/{agent['id']}/generate",
            {"input": [{"role": "user", "content": "2+2?"}]},
        )
        assert [r.path for r in server.requests] == ["/v1/chat/completions"]
    assert response.status == 201, response
    assert response.json["status"] == "completed" and response.json["output"] == "4"
    return dict(response.json)


def test_model_agent_generation_records_reported_cost(api: Any, project: Any) -> None:
    usage = {"prompt_tokens": 21, "completion_tokens": 5, "total_tokens": 26, "cost": 0.00042}
    generation = _generate_with(api, project, usage)
    expected = {"input_tokens": 21, "output_tokens": 5, "cost_usd": 0.00042}
    assert generation["usage"] == expected
    assert api.get(f"/api/v1/generations/{generation['id']}").json["usage"] == expected


def test_model_agent_generation_without_reported_cost_costs_zero(api: Any, project: Any) -> None:
    generation = _generate_with(api, project, {"prompt_tokens": 3, "completion_tokens": 1})
    assert generation["usage"] == {"input_tokens": 3, "output_tokens": 1, "cost_usd": 0.0}
