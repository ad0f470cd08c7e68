"""``?name=`` on the agents, datasets and evals lists (a pawl addition, ``docs/dynamodb.md``).

The page holds the project's one resource of that exact name, or nothing; a key of another
project finds nothing by the same name (its list is its own project's); IAM is the list's.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.runs import Plugins, make_suite

LISTS = ("/api/v1/agents", "/api/v1/datasets", "/api/v1/evals")


def _names(api: Any, path: str, query: str) -> list[tuple[str, str]]:
    response = api.get(f"{path}?{query}")
    assert response.status == 200, response
    return [(row["id"], row["name"]) for row in response.json["data"]]


@pytest.fixture
def suites(api: Any, project: dict[str, Any], plugins: Plugins) -> dict[str, Any]:
    first = make_suite(api, project, [("echo:a", "a")], name="support-faq")
    second = make_suite(api, project, [("echo:b", "b")], name="support-faq-2")
    return {"first": first, "second": second, "p": f"project_id={project['id']}"}


def test_the_page_holds_the_one_of_that_exact_name(api: Any, suites: dict[str, Any]) -> None:
    first, p = suites["first"], suites["p"]
    expected = {
        "/api/v1/agents": (first.agent["id"], "support-faq-agent"),
        "/api/v1/datasets": (first.dataset["id"], "support-faq"),
        "/api/v1/evals": (first.eval["id"], "support-faq"),
    }
    for path, (resource_id, name) in expected.items():
        page = api.get(f"{path}?{p}&name={name}").json
        assert [row["id"] for row in page["data"]] == [resource_id], path
        assert page["data"][0] == api.get(f"{path}/{resource_id}").json  # the whole row
        assert page["total"] == 1 and page["next_cursor"] is None
        assert _names(api, path, f"{p}&name={name[:-1]}") == []  # exact, not a prefix
        assert len(_names(api, path, p)) == 2  # without the filter, both


def test_a_key_of_another_project_finds_nothing_by_that_name(
    api: Any, suites: dict[str, Any]
) -> None:
    other = api.post("/api/v1/projects", {"name": "elsewhere"}).json
    key = api.post("/api/v1/api-keys", {"project_id": other["id"], "name": "ci"}).json["key"]
    foreign = api.as_key(key)
    for path in LISTS:
        name = "support-faq-agent" if path.endswith("agents") else "support-faq"
        assert _names(foreign, path, f"name={name}") == [], path
        named_project = foreign.get(f"{path}?{suites['p']}&name={name}")
        assert named_project.status == 403, named_project  # not its project to list


def test_a_bad_name_query_is_a_400(api: Any, suites: dict[str, Any]) -> None:
    for path in LISTS:
        for query in ("name=", "name=" + "x" * 201, "name=a&name=b"):
            refused = api.get(f"{path}?{suites['p']}&{query}")
            assert refused.status == 400, (path, query, refused)
