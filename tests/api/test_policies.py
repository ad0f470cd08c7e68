"""/api/v1/policies (admin only) and API keys' policy_ids."""

from __future__ import annotations

from typing import Any

import pytest

from chalicelib.store.models import ApiKeyModel, PolicyModel

RUN_ONE = {
    "statement": [
        {
            "effect": "Allow",
            "action": ["evaluations:RunEval", "evaluations:GetEval"],
            "resource": ["srn:proj_A:eval:eval_1"],
        }
    ]
}


def _create(api: Any, name: str = "run-one", document: Any = None, **extra: Any) -> Any:
    return api.post("/api/v1/policies", {"name": name, "document": document or RUN_ONE, **extra})


def test_policy_crud(api: Any) -> None:
    created = _create(api, description="CI may run eval_1")
    assert created.status == 201, created
    policy = created.json
    assert policy["id"].startswith("pol_") and policy["name"] == "run-one"
    assert policy["description"] == "CI may run eval_1"
    assert policy["document"] == RUN_ONE and policy["created_at"] == policy["updated_at"]
    assert api.get(f"/api/v1/policies/{policy['id']}").json == policy
    listed = api.get("/api/v1/policies")
    assert listed.status == 200 and [p["id"] for p in listed.json["data"]] == [policy["id"]]

    replaced = {"statement": [{"effect": "Deny", "action": ["*"]}]}
    updated = api.put(
        f"/api/v1/policies/{policy['id']}", {"document": replaced, "description": None}
    )
    assert updated.status == 200, updated
    assert updated.json["name"] == "run-one" and updated.json["description"] is None
    assert updated.json["document"] == {
        "statement": [{"effect": "Deny", "action": ["*"], "resource": ["*"]}]
    }
    renamed = api.put(f"/api/v1/policies/{policy['id']}", {"name": "deny-all"})
    assert (
        renamed.json["name"] == "deny-all" and renamed.json["document"] == updated.json["document"]
    )

    assert api.delete(f"/api/v1/policies/{policy['id']}").status == 204
    assert api.get(f"/api/v1/policies/{policy['id']}").code == "RESOURCE_NOT_FOUND"
    assert api.delete(f"/api/v1/policies/{policy['id']}").status == 404
    # The name is free again once the policy is gone.
    assert _create(api, "run-one").status == 201


def test_policy_names_are_unique(api: Any) -> None:
    first = _create(api, "ci").json
    again = _create(api, "ci")
    assert again.status == 409 and again.code == "NAME_CONFLICT"
    other = _create(api, "other").json
    clash = api.put(f"/api/v1/policies/{other['id']}", {"name": "ci"})
    assert clash.status == 409 and clash.code == "NAME_CONFLICT"
    assert api.get(f"/api/v1/policies/{first['id']}").json["name"] == "ci"


def test_policies_page(api: Any) -> None:
    made = {_create(api, f"p{i}").json["id"] for i in range(3)}
    first = api.get("/api/v1/policies?limit=2").json
    assert len(first["data"]) == 2 and first["next_cursor"]
    rest = api.get(f"/api/v1/policies?limit=2&cursor={first['next_cursor']}").json
    assert {p["id"] for p in first["data"] + rest["data"]} == made
    assert api.get("/api/v1/policies?cursor=nonsense").status == 400


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"name": "x", "document": RUN_ONE, "colour": "red"}, "colour"),
        ({"name": "x"}, "document"),
        ({"document": RUN_ONE}, "name"),
        ({"name": "", "document": RUN_ONE}, "name"),
        ({"name": "x", "document": {"statement": [{"effect": "Allow"}]}}, "document"),
        (
            {
                "name": "x",
                "document": {"statement": [{"effect": "Allow", "action": ["*"], "x": 1}]},
            },
            "document",
        ),
        (
            {
                "name": "x",
                "document": {
                    "statement": [
                        {"effect": "Allow", "action": ["*"], "resource": ["srn:proj_A:eval:ev*"]}
                    ]
                },
            },
            "document",
        ),
        (
            {
                "name": "x",
                "document": {"statement": [{"effect": "Allow", "action": ["evaluations:Run*"]}]},
            },
            "document",
        ),
    ],
)
def test_a_bad_policy_body_is_a_400_naming_the_field(
    api: Any, body: dict[str, Any], field: str
) -> None:
    refused = api.post("/api/v1/policies", body)
    assert refused.status == 400 and refused.code == "VALIDATION_FAILED", refused
    assert refused.json["error"]["meta"]["field"].split(".")[0] == field
    assert api.get("/api/v1/policies").json["data"] == []


def test_a_partial_wildcard_refusal_says_why(api: Any) -> None:
    document = {"statement": [{"effect": "Allow", "action": ["evaluations:Get*"]}]}
    refused = _create(api, document=document)
    assert "whole segment" in refused.json["error"]["message"]


def test_update_refuses_null_name_and_unknown_fields(api: Any) -> None:
    policy = _create(api).json
    assert api.put(f"/api/v1/policies/{policy['id']}", {"name": None}).status == 400
    assert api.put(f"/api/v1/policies/{policy['id']}", {"document": None}).status == 400
    assert api.put(f"/api/v1/policies/{policy['id']}", {"tags": {}}).status == 400
    assert api.put("/api/v1/policies/pol_missing", {"name": "x"}).status == 404
    assert api.get(f"/api/v1/policies/{policy['id']}").json == policy


def test_a_project_key_may_not_touch_policies(api: Any, project_key: str) -> None:
    policy = _create(api).json
    scoped = api.as_key(project_key)
    for response in (
        scoped.get("/api/v1/policies"),
        scoped.get(f"/api/v1/policies/{policy['id']}"),
        scoped.post("/api/v1/policies", {"name": "mine", "document": RUN_ONE}),
        # Refused before the body is read: a malformed one gets the same 403.
        scoped.post("/api/v1/policies", {"colour": "red"}),
        scoped.put(f"/api/v1/policies/{policy['id']}", {"document": "nonsense"}),
        scoped.put(f"/api/v1/policies/{policy['id']}", {"name": "mine"}),
        scoped.delete(f"/api/v1/policies/{policy['id']}"),
    ):
        assert response.status == 403 and response.code == "FORBIDDEN", response
    assert api.get(f"/api/v1/policies/{policy['id']}").json == policy
    assert [p["id"] for p in api.get("/api/v1/policies").json["data"]] == [policy["id"]]


def test_no_key_and_a_garbage_key_are_401(api: Any) -> None:
    assert api.as_key(None).get("/api/v1/policies").status == 401
    assert api.as_key("pawl.key_x.y").post("/api/v1/policies", {}).status == 401


# --- attaching policies to keys --------------------------------------------------------------


def _key(api: Any, project: dict[str, Any], **extra: Any) -> Any:
    return api.post("/api/v1/api-keys", {"project_id": project["id"], "name": "ci", **extra})


def test_a_key_takes_policies_at_create_and_by_update(api: Any, project: dict[str, Any]) -> None:
    first, second = _create(api, "a").json["id"], _create(api, "b").json["id"]
    created = _key(api, project, policy_ids=[first])
    assert created.status == 201 and created.json["policy_ids"] == [first]
    key_id = created.json["id"]
    assert api.get(f"/api/v1/api-keys/{key_id}").json["policy_ids"] == [first]
    plain = _key(api, project).json
    assert plain["policy_ids"] == []

    swapped = api.put(f"/api/v1/api-keys/{key_id}", {"policy_ids": [second, first]})
    assert swapped.status == 200 and swapped.json["policy_ids"] == [second, first]
    assert _key_ids(first) == _key_ids(second) == {key_id}
    renamed = api.put(f"/api/v1/api-keys/{key_id}", {"name": "ci-2"})
    assert renamed.json["name"] == "ci-2" and renamed.json["policy_ids"] == [second, first]
    dropped = api.put(f"/api/v1/api-keys/{key_id}", {"policy_ids": [second]})
    assert dropped.json["policy_ids"] == [second]
    assert _key_ids(first) == set() and _key_ids(second) == {key_id}
    cleared = api.put(f"/api/v1/api-keys/{key_id}", {"policy_ids": []})
    assert cleared.json["policy_ids"] == [] and _key_ids(second) == set()


def _key_ids(policy_id: str) -> set[str]:
    return set(PolicyModel.get(policy_id, consistent_read=True).key_ids or [])


def test_a_missing_policy_is_a_400_naming_it_and_writes_nothing(
    api: Any, project: dict[str, Any]
) -> None:
    real = _create(api).json["id"]
    refused = _key(api, project, policy_ids=[real, "pol_missing"])
    assert refused.status == 400 and refused.code == "VALIDATION_FAILED"
    assert "pol_missing" in refused.json["error"]["message"]
    assert refused.json["error"]["meta"]["field"] == "policy_ids"
    assert api.get(f"/api/v1/api-keys?project_id={project['id']}").json["data"] == []
    assert _key_ids(real) == set()

    key = _key(api, project, policy_ids=[real]).json
    again = api.put(f"/api/v1/api-keys/{key['id']}", {"policy_ids": ["pol_gone"], "name": "n"})
    assert again.status == 400 and "pol_gone" in again.json["error"]["message"]
    shown = api.get(f"/api/v1/api-keys/{key['id']}").json
    assert shown["policy_ids"] == [real] and shown["name"] == "ci"


@pytest.mark.parametrize(
    "body",
    [
        {"policy_ids": ["not-a-policy-id"]},
        {"policy_ids": "pol_x"},
        {"policy_ids": [f"pol_{i}" for i in range(11)]},
        {"policy_ids": None},
        {"name": None},
        {"project_id": "proj_x"},
    ],
)
def test_a_bad_key_update_is_a_400(api: Any, project: dict[str, Any], body: Any) -> None:
    key = api.get(f"/api/v1/api-keys/{_key(api, project).json['id']}").json
    refused = api.put(f"/api/v1/api-keys/{key['id']}", body)
    assert refused.status == 400 and refused.code == "VALIDATION_FAILED", refused
    assert api.get(f"/api/v1/api-keys/{key['id']}").json == key


def test_a_policy_named_twice_is_refused(api: Any, project: dict[str, Any]) -> None:
    real = _create(api).json["id"]
    refused = _key(api, project, policy_ids=[real, real])
    assert refused.status == 400 and "twice" in refused.json["error"]["message"]


def test_a_policy_in_use_cannot_be_deleted(api: Any, project: dict[str, Any]) -> None:
    policy = _create(api).json["id"]
    keys = sorted(_key(api, project, policy_ids=[policy]).json["id"] for _ in range(2))
    refused = api.delete(f"/api/v1/policies/{policy}")
    assert refused.status == 409 and refused.code == "POLICY_IN_USE"
    assert refused.json["error"]["meta"]["key_ids"] == keys
    assert all(k in refused.json["error"]["message"] for k in keys)
    assert api.get(f"/api/v1/policies/{policy}").status == 200
    # Revoking one key and detaching from the other frees it.
    assert api.delete(f"/api/v1/api-keys/{keys[0]}").status == 204
    assert api.put(f"/api/v1/api-keys/{keys[1]}", {"policy_ids": []}).status == 200
    assert api.delete(f"/api/v1/policies/{policy}").status == 204


def test_only_the_admin_attaches_policies(api: Any, project: dict[str, Any]) -> None:
    policy = _create(api).json["id"]
    created = _key(api, project, policy_ids=[policy]).json
    restricted = api.as_key(created["key"])
    freed = restricted.put(f"/api/v1/api-keys/{created['id']}", {"policy_ids": []})
    assert freed.status == 403 and freed.code == "FORBIDDEN"
    # Even a key without policies (full access to its project) may not attach or detach.
    unbounded = api.as_key(_key(api, project).json["key"])
    grab = unbounded.put(f"/api/v1/api-keys/{created['id']}", {"policy_ids": []})
    assert grab.status == 403 and grab.code == "FORBIDDEN"
    assert api.get(f"/api/v1/api-keys/{created['id']}").json["policy_ids"] == [policy]
    row = ApiKeyModel.get(created["id"], consistent_read=True)
    assert list(row.policy_ids or []) == [policy]


def test_a_foreign_key_cannot_update_another_projects_key(
    api: Any, project: dict[str, Any], project_key: str
) -> None:
    other = api.post("/api/v1/projects", {"name": "globex"}).json
    theirs = _key(api, other).json
    response = api.as_key(project_key).put(f"/api/v1/api-keys/{theirs['id']}", {"name": "x"})
    assert response.status in (403, 404)
    assert api.get(f"/api/v1/api-keys/{theirs['id']}").json["name"] == "ci"
