"""``pawl.Client`` and ``pawl.AsyncClient`` against pawl's app on a real 127.0.0.1 port.

The app runs behind the local HTTP front over an in-process moto (tests.support.http_front);
the agent of the run is a real HTTP server too. Nothing is mocked between the client and
the routes.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest

import pawl
from tests.conftest import ADMIN_KEY
from tests.support.http_front import app_over_http
from tests.support.servers import Reply, Request, serve


@pytest.fixture(scope="module")
def front() -> Iterator[str]:
    with app_over_http() as server:
        yield server.url


@pytest.fixture(scope="module")
def project_key(front: str) -> str:
    """A project key, made through the client with the admin key."""
    with pawl.Client(front, ADMIN_KEY) as admin:
        project = admin.create_project(name="sdk")
        key = admin.create_api_key(project_id=project["id"], name="sdk-tests")
    return str(key["key"])


@pytest.fixture
def client(front: str, project_key: str) -> Iterator[pawl.Client]:
    with pawl.Client(front, project_key) as client:
        yield client


def _dataset_with_items(client: pawl.Client, name: str, count: int) -> dict[str, Any]:
    dataset = client.create_dataset(name=name, description="made by the sdk test")
    for i in range(count):
        client.create_dataset_item(
            dataset["id"], input=[{"role": "user", "content": f"case {i}"}], expected_output="ok"
        )
    return dataset


def test_create_get_update_list_and_delete_through_typed_methods(client: pawl.Client) -> None:
    dataset = client.create_dataset(name="faq")
    assert dataset["name"] == "faq"
    assert client.get_dataset(dataset["id"])["id"] == dataset["id"]
    # body= is a whole body; a keyword overrides its field.
    renamed = client.update_dataset(
        dataset["id"], body={"name": "x", "description": "d"}, name="faq2"
    )
    assert (renamed["name"], renamed["description"]) == ("faq2", "d")
    names = [d["name"] for d in client.list_datasets(limit=100)["data"]]
    assert "faq2" in names
    assert client.delete_dataset(dataset["id"]) is None
    with pytest.raises(pawl.NotFoundError):
        client.get_dataset(dataset["id"])


def test_iterators_follow_the_cursor_across_pages(client: pawl.Client) -> None:
    dataset = _dataset_with_items(client, "paged", 5)
    first = client.list_dataset_items(dataset["id"], limit=2)
    assert len(first["data"]) == 2 and first["next_cursor"]
    items = list(client.iter_dataset_items(dataset["id"], limit=2))
    assert [item["input"][0]["content"] for item in items] == [f"case {i}" for i in range(5)]
    by_name = list(client.paginate("list_dataset_items", dataset["id"], limit=3))
    assert [item["id"] for item in by_name] == [item["id"] for item in items]


def test_a_404_is_not_found_with_the_envelopes_code_and_message(client: pawl.Client) -> None:
    with pytest.raises(pawl.NotFoundError) as caught:
        client.get_eval("eval_doesnotexist")
    error = caught.value
    assert isinstance(error, pawl.ApiError)
    assert (error.status, error.code) == (404, "RESOURCE_NOT_FOUND")
    assert "eval_doesnotexist" in error.message
    assert (error.method, error.path) == ("GET", "/api/v1/evals/eval_doesnotexist")


def test_a_400_names_the_field_that_was_wrong(client: pawl.Client) -> None:
    with pytest.raises(pawl.BadRequestError) as caught:
        client.create_dataset(name="")
    error = caught.value
    assert (error.status, error.code) == (400, "VALIDATION_FAILED")
    assert error.field == "name"
    with pytest.raises(pawl.BadRequestError) as unknown:
        client.create_dataset(body={"name": "n", "colour": "red"})
    assert unknown.value.field == "colour"


def test_a_path_parameter_is_one_segment_however_it_is_spelled(client: pawl.Client) -> None:
    with pytest.raises(pawl.NotFoundError) as caught:
        client.get_dataset("../projects")
    # Unquoted, httpx would resolve the dot segment and ask for /api/v1/projects (a 200).
    assert "../projects" in caught.value.message, caught.value.message


def test_no_key_and_a_wrong_key_are_authentication_errors(front: str) -> None:
    with pawl.Client(front, "pawl_wrong") as wrong, pytest.raises(pawl.AuthenticationError):
        wrong.list_evals()
    with pawl.Client(front) as anonymous:
        assert anonymous.get_health()["status"]  # a public route answers without a key


def test_the_environment_configures_a_client(
    front: str, project_key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PAWL_SERVER", front + "/")
    monkeypatch.setenv("PAWL_API_KEY", project_key)
    with pawl.Client() as client:
        assert client.base_url == front
        assert isinstance(client.list_evals()["data"], list)


def test_import_dataset_items_sends_json_lines(client: pawl.Client) -> None:
    dataset = client.create_dataset(name="imported")
    lines = "\n".join(json.dumps({"input": f"q{i}", "expected_output": "a"}) for i in range(3))
    client.import_dataset_items(dataset["id"], body=lines)
    assert len(list(client.iter_dataset_items(dataset["id"]))) == 3


def _answers_ok(request: Request) -> Reply:
    return Reply(200, {"output": "ok"})


def test_a_run_end_to_end_and_its_results(client: pawl.Client) -> None:
    with serve(_answers_ok) as agent_server:
        agent = client.create_agent(name="ok", type="http", config={"url": agent_server.url})
        dataset = _dataset_with_items(client, "run-cases", 3)
        evaluation = client.create_eval(
            name="sdk-run",
            agent_id=agent["id"],
            dataset_id=dataset["id"],
            scorers=[{"type": "contains", "value": "ok"}],
        )
        run = client.start_eval_run(evaluation["id"], wait=True)
    assert run["status"] == "completed", run
    assert [r["id"] for r in client.iter_eval_runs(evaluation["id"])] == [run["id"]]
    results = list(client.iter_eval_results(evaluation["id"], run["id"], limit=2))
    assert len(results) == 3 and all(result["passed"] for result in results)


def test_the_async_client_does_the_same(front: str, project_key: str) -> None:
    async def scenario() -> None:
        async with pawl.AsyncClient(front, project_key) as client:
            dataset = await client.create_dataset(name="async")
            for i in range(3):
                message = {"role": "user", "content": f"q{i}"}
                await client.create_dataset_item(dataset["id"], input=[message])
            got = await client.get_dataset(dataset["id"])
            assert got["name"] == "async"
            items = [item async for item in client.iter_dataset_items(dataset["id"], limit=2)]
            assert [item["input"][0]["content"] for item in items] == ["q0", "q1", "q2"]
            paged = [item async for item in client.paginate("list_datasets", limit=1)]
            assert dataset["id"] in {d["id"] for d in paged}
            with pytest.raises(pawl.NotFoundError) as caught:
                await client.get_dataset("ds_missing")
            assert caught.value.code == "RESOURCE_NOT_FOUND"
            with pytest.raises(pawl.BadRequestError) as bad:
                await client.create_dataset(name="")
            assert bad.value.field == "name"

    asyncio.run(scenario())


def test_a_server_that_is_not_there_is_server_unreachable() -> None:
    with serve(_answers_ok) as gone:
        url = gone.url
    with (
        pawl.Client(url, "k", timeout=5) as client,
        pytest.raises(pawl.ServerUnreachable) as caught,
    ):
        client.list_evals()
    assert url in str(caught.value) and "PAWL_SERVER" in str(caught.value)

    async def scenario() -> None:
        async with pawl.AsyncClient(url, "k", timeout=5) as client:
            await client.list_evals()

    with pytest.raises(pawl.ServerUnreachable):
        asyncio.run(scenario())
