"""A key's attached policies reach its Caller on every request, and intersect its project."""

from __future__ import annotations

from typing import Any

import pytest

from chalicelib.api.auth import authenticate
from chalicelib.errors import ValidationFailed
from chalicelib.iam.document import PolicyDocument
from chalicelib.iam.evaluate import Decision
from chalicelib.iam.srn import srn
from chalicelib.store import policies, tenancy
from chalicelib.store.models import PolicyModel
from chalicelib.store.pagination import Window
from tests.conftest import ADMIN_KEY


def _document(*statements: dict[str, Any]) -> PolicyDocument:
    return PolicyDocument.model_validate({"statement": list(statements)})


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture
def projects(aws_env: None) -> tuple[str, str]:
    return tenancy.create_project("acme").id, tenancy.create_project("globex").id


def test_a_key_without_policies_reaches_all_of_its_project_only(projects: tuple[str, str]) -> None:
    mine, theirs = projects
    caller = authenticate(_bearer(tenancy.create_api_key(mine, "ci").key))
    assert caller.policies is None
    assert caller.allows("evaluations:DeleteEval", srn(mine, "eval", "eval_1"))
    assert not caller.allows("evaluations:GetEval", srn(theirs, "eval", "eval_1"))
    assert caller.policies_name_project(mine) and not caller.policies_name_project(theirs)


def test_admin_bypasses_policies(projects: tuple[str, str]) -> None:
    caller = authenticate(_bearer(ADMIN_KEY))
    assert caller.is_admin and caller.policies is None
    assert caller.allows("policies:DeletePolicy", srn(projects[1], "eval", "eval_1"))


def test_a_key_with_policies_is_the_intersection(projects: tuple[str, str]) -> None:
    mine, theirs = projects
    run_one = policies.create_policy(
        "run-one",
        None,
        _document(
            {
                "effect": "Allow",
                "action": ["evaluations:RunEval", "evaluations:GetEval"],
                # Names the other project too: the key's own project still bounds it.
                "resource": [srn(mine, "eval", "eval_1"), srn(theirs, "eval", "eval_1")],
            }
        ),
    )
    key = tenancy.create_api_key(mine, "ci", [run_one.id])
    assert key.policy_ids == [run_one.id]
    caller = authenticate(_bearer(key.key))
    assert caller.policies is not None and len(caller.policies) == 1
    assert caller.allows("evaluations:RunEval", srn(mine, "eval", "eval_1"))
    assert not caller.allows("evaluations:RunEval", srn(mine, "eval", "eval_2"))
    assert not caller.allows("evaluations:DeleteEval", srn(mine, "eval", "eval_1"))
    assert not caller.allows("evaluations:RunEval", srn(theirs, "eval", "eval_1"))
    assert caller.decision("evaluations:DeleteEval", srn(mine, "eval", "eval_1")) is (
        Decision.IMPLICIT_DENY
    )


def test_a_policy_change_holds_from_the_next_request(projects: tuple[str, str]) -> None:
    mine, _ = projects
    target = srn(mine, "dataset", "dset_1")
    policy = policies.create_policy(
        "curate", None, _document({"effect": "Allow", "action": ["evaluations:*"]})
    )
    token = tenancy.create_api_key(mine, "curator", [policy.id]).key
    assert authenticate(_bearer(token)).allows("evaluations:CreateDataset", target)
    policies.update_policy(
        policy,
        None,
        document=_document(
            {"effect": "Allow", "action": ["evaluations:*"]},
            {"effect": "Deny", "action": ["evaluations:CreateDataset"], "resource": [target]},
        ),
    )
    caller = authenticate(_bearer(token))
    assert caller.decision("evaluations:CreateDataset", target) is Decision.EXPLICIT_DENY
    assert caller.allows("evaluations:GetDataset", target)


def test_a_missing_attached_policy_fails_closed(projects: tuple[str, str]) -> None:
    mine, _ = projects
    policy = policies.create_policy("all", None, _document({"effect": "Allow", "action": ["*"]}))
    token = tenancy.create_api_key(mine, "ci", [policy.id]).key
    # Not possible through the API (a delete is refused while a key is attached): a row
    # removed behind pawl's back must not widen the key to "no policies".
    PolicyModel(id=policy.id).delete()
    caller = authenticate(_bearer(token))
    assert caller.policies == ()
    assert not caller.allows("evaluations:GetEval", srn(mine, "eval", "eval_1"))


def test_attaching_a_missing_policy_is_refused_before_any_write(projects: tuple[str, str]) -> None:
    mine, _ = projects
    with pytest.raises(ValidationFailed, match="policy pol_missing not found"):
        policies.check_attachable(["pol_missing"])
    with pytest.raises(ValidationFailed, match="policy pol_missing not found"):
        tenancy.create_api_key(mine, "ci", ["pol_missing"])
    assert tenancy.list_api_keys(mine, Window(limit=10)).items == []
