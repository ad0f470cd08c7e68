"""The IAM evaluator: SRNs, document syntax, and AWS-IAM decisions (pure, no I/O)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from chalicelib import ids
from chalicelib.iam.document import (
    ACTION_REGEX,
    CONDITION_KEY_REGEX,
    PolicyDocument,
    check_action_pattern,
    check_condition_key,
)
from chalicelib.iam.evaluate import Decision, action_matches, decide, names_project
from chalicelib.iam.srn import (
    PATTERN_REGEX,
    RESOURCE_TYPES,
    InvalidSrn,
    check_pattern,
    matches,
    parse_srn,
    srn,
)

P, Q = "proj_A", "proj_B"
EVAL_1, EVAL_2 = srn(P, "eval", "eval_1"), srn(P, "eval", "eval_2")
DSET_1 = srn(P, "dataset", "dset_1")


def doc(*statements: dict[str, Any]) -> PolicyDocument:
    return PolicyDocument.model_validate({"statement": list(statements)})


def statement(effect: str, action: list[str], resource: list[str] | None, **extra: Any) -> Any:
    body = {"effect": effect, "action": action, **extra}
    return body if resource is None else {**body, "resource": resource}


def allow(action: list[str], resource: list[str] | None = None, **extra: Any) -> dict[str, Any]:
    return statement("Allow", action, resource, **extra)


def deny(action: list[str], resource: list[str] | None = None, **extra: Any) -> dict[str, Any]:
    return statement("Deny", action, resource, **extra)


# --- SRNs ----------------------------------------------------------------------------------


def test_srn_round_trips_for_every_resource_type() -> None:
    for resource_type, kind in RESOURCE_TYPES.items():
        rid = ids.new_id(kind)
        text = srn(P, resource_type, rid)
        assert text == f"srn:{P}:{resource_type}:{rid}"
        parsed = parse_srn(text)
        assert (parsed.project_id, parsed.resource_type, parsed.resource_id) == (
            P,
            resource_type,
            rid,
        )
        assert str(parsed) == text


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("srn:proj_A:eval", "expected srn:"),
        ("arn:proj_A:eval:eval_1", "expected srn:"),
        ("srn:proj_A:eval:eval_1:x", "expected srn:"),
        ("srn:proj_A:evaluation:eval_1", "unknown resource type 'evaluation'"),
        ("srn:proj_A:eval:dset_1", "a eval id starts with eval_"),
        ("srn:acme:eval:eval_1", "not a project id"),
        ("srn:proj_A:eval:eval_1*", "partial one"),
        ("srn:proj_*:eval:eval_1", "partial one"),
        ("srn:proj_A:ev*:eval_1", "partial one"),
        ("srn:proj_A:eval:", "empty"),
    ],
)
def test_malformed_srns_are_refused_with_the_reason(text: str, why: str) -> None:
    with pytest.raises(InvalidSrn, match=why.replace("*", r"\*")):
        parse_srn(text)


@pytest.mark.parametrize(
    ("pattern", "resource", "covered"),
    [
        ("*", EVAL_1, True),
        ("srn:*:*:*", EVAL_1, True),
        (EVAL_1, EVAL_1, True),
        (EVAL_1, EVAL_2, False),
        ("srn:proj_A:eval:*", EVAL_1, True),
        ("srn:proj_A:eval:*", DSET_1, False),
        ("srn:proj_B:eval:*", EVAL_1, False),
        ("srn:*:eval:*", EVAL_1, True),
        ("srn:proj_A:*:*", DSET_1, True),
        # A question about every dataset is covered only by a wildcard, not by one dataset.
        (DSET_1, "srn:proj_A:dataset:*", False),
        ("srn:proj_A:dataset:*", "srn:proj_A:dataset:*", True),
    ],
)
def test_resource_patterns_match_whole_segments(pattern: str, resource: str, covered: bool) -> None:
    assert matches(pattern, parse_srn(resource)) is covered


# --- actions -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "action", "covered"),
    [
        ("*", "evaluations:RunEval", True),
        ("evaluations:*", "evaluations:RunEval", True),
        ("evaluations:*", "agents:GetAgent", False),
        ("*:GetEval", "evaluations:GetEval", True),
        ("*:GetEval", "evaluations:GetEvalRun", False),
        ("evaluations:RunEval", "evaluations:RunEval", True),
        ("evaluations:RunEval", "evaluations:Run", False),
    ],
)
def test_action_patterns(pattern: str, action: str, covered: bool) -> None:
    assert action_matches(check_action_pattern(pattern), action) is covered


@pytest.mark.parametrize(
    "pattern",
    [
        "evaluations:Get*",
        "eval*:GetEval",
        "evaluations",
        "evaluations:GetEval:x",
        "Evals:GetEval",
        "evaluations:getEval",
        "",
    ],
)
def test_malformed_action_patterns_are_refused(pattern: str) -> None:
    with pytest.raises(ValidationError):
        doc(allow([pattern]))


# --- documents -----------------------------------------------------------------------------


def test_resource_defaults_to_everything() -> None:
    statement = doc(allow(["evaluations:GetEval"])).statement[0]
    assert statement.resource == ["*"]


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"statement": []},
        {"statement": [{"effect": "allow", "action": ["*"]}]},
        {"statement": [{"effect": "Allow", "action": []}]},
        {"statement": [{"effect": "Allow", "action": "evaluations:GetEval"}]},
        {"statement": [{"effect": "Allow", "action": ["*"], "resource": []}]},
        {"statement": [{"effect": "Allow", "action": ["*"], "principal": "x"}]},
        {"statement": [{"effect": "Allow", "action": ["*"]}], "version": "2012-10-17"},
        {"statement": [allow(["*"], ["srn:proj_A:eval:eval_1*"])]},
        {"statement": [allow(["*"], condition={"NumericEquals": {"soat:ResourceType": "eval"}})]},
        {"statement": [allow(["*"], condition={"StringEquals": {"aws:SourceIp": "1.2.3.4"}})]},
        {"statement": [allow(["*"], condition={"StringEquals": {"soat:ResourceTag/": "x"}})]},
        {"statement": [allow(["*"], condition={"StringEquals": {"soat:ResourceType": []}})]},
        {"statement": [allow(["*"], condition={"StringEquals": {"soat:ResourceType": 7}})]},
    ],
)
def test_malformed_documents_are_refused(body: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        PolicyDocument.model_validate(body)


# --- decisions -----------------------------------------------------------------------------

RUN, GET, LIST = "evaluations:RunEval", "evaluations:GetEval", "evaluations:ListEvals"

DECISIONS = [
    # (documents, action, resource, expected)
    ([], GET, EVAL_1, Decision.IMPLICIT_DENY),
    ([doc(allow(["*"]))], GET, EVAL_1, Decision.ALLOW),
    ([doc(allow([RUN], [EVAL_1]))], RUN, EVAL_1, Decision.ALLOW),
    ([doc(allow([RUN], [EVAL_1]))], RUN, EVAL_2, Decision.IMPLICIT_DENY),
    ([doc(allow([RUN], [EVAL_1]))], GET, EVAL_1, Decision.IMPLICIT_DENY),
    ([doc(allow(["evaluations:*"], ["srn:proj_A:eval:*"]))], RUN, EVAL_2, Decision.ALLOW),
    ([doc(allow(["evaluations:*"], ["srn:proj_A:eval:*"]))], RUN, DSET_1, Decision.IMPLICIT_DENY),
    ([doc(allow(["evaluations:*"], ["srn:proj_B:*:*"]))], RUN, EVAL_1, Decision.IMPLICIT_DENY),
    # Explicit deny wins, within one document or across documents, whatever the order.
    ([doc(allow(["*"]), deny([RUN], [EVAL_1]))], RUN, EVAL_1, Decision.EXPLICIT_DENY),
    ([doc(deny([RUN], [EVAL_1]), allow(["*"]))], RUN, EVAL_1, Decision.EXPLICIT_DENY),
    ([doc(allow(["*"])), doc(deny(["evaluations:*"]))], GET, EVAL_1, Decision.EXPLICIT_DENY),
    ([doc(allow(["*"]), deny([RUN], [EVAL_1]))], RUN, EVAL_2, Decision.ALLOW),
    ([doc(deny(["*"]))], GET, EVAL_1, Decision.EXPLICIT_DENY),
    # Listing: a policy naming one eval does not cover the question "all evals".
    ([doc(allow([LIST], [EVAL_1]))], LIST, "srn:proj_A:eval:*", Decision.IMPLICIT_DENY),
    ([doc(allow([LIST], ["srn:proj_A:eval:*"]))], LIST, "srn:proj_A:eval:*", Decision.ALLOW),
]


@pytest.mark.parametrize(("documents", "action", "resource", "expected"), DECISIONS)
def test_decide(
    documents: list[PolicyDocument], action: str, resource: str, expected: Decision
) -> None:
    assert decide(documents, action, resource) is expected


def _cond(operator: str, key: str, value: Any) -> list[PolicyDocument]:
    return [doc(allow(["*"], condition={operator: {key: value}}))]


TAG = "soat:ResourceTag/team"

CONDITIONS = [
    # (operator, key, policy value, context, allowed)
    ("StringEquals", TAG, "ml", {TAG: "ml"}, True),
    ("StringEquals", TAG, "ml", {TAG: "ML"}, False),  # exact, no case folding
    ("StringEquals", TAG, ["ops", "ml"], {TAG: "ml"}, True),
    ("StringEquals", TAG, "ml", {TAG: ["web", "ml"]}, True),
    ("StringEquals", TAG, "ml", {}, False),  # absent key: a positive operator fails
    ("StringNotEquals", TAG, "ml", {TAG: "ops"}, True),
    ("StringNotEquals", TAG, "ml", {TAG: "ml"}, False),
    ("StringNotEquals", TAG, ["ml", "ops"], {TAG: "ops"}, False),
    ("StringNotEquals", TAG, "ml", {}, True),  # absent key: the negation holds (AWS)
    ("StringLike", TAG, "eng-*", {TAG: "eng-platform"}, True),
    ("StringLike", TAG, "eng-*", {TAG: "sales"}, False),
    ("StringLike", TAG, "v?", {TAG: "v2"}, True),
    ("StringLike", TAG, "v?", {TAG: "v22"}, False),
    ("StringLike", TAG, "a.c", {TAG: "abc"}, False),  # only * and ? are special
    ("StringLike", TAG, "*", {}, False),
    # soat:ResourceType comes from the SRN itself.
    ("StringEquals", "soat:ResourceType", "eval", {}, True),
    ("StringEquals", "soat:ResourceType", "dataset", {}, False),
    ("StringLike", "soat:ResourceType", "ev*", {}, True),
]


@pytest.mark.parametrize(("operator", "key", "value", "context", "allowed"), CONDITIONS)
def test_condition_operators(
    operator: str, key: str, value: Any, context: dict[str, Any], allowed: bool
) -> None:
    expected = Decision.ALLOW if allowed else Decision.IMPLICIT_DENY
    assert decide(_cond(operator, key, value), GET, EVAL_1, context) is expected


def test_every_condition_must_hold() -> None:
    documents = [
        doc(
            allow(
                ["*"],
                condition={
                    "StringEquals": {TAG: "ml", "soat:ResourceType": "eval"},
                    "StringNotEquals": {"soat:ResourceTag/env": "prod"},
                },
            )
        )
    ]
    env = "soat:ResourceTag/env"
    assert decide(documents, GET, EVAL_1, {TAG: "ml", env: "dev"}) is Decision.ALLOW
    assert decide(documents, GET, EVAL_1, {TAG: "ml", env: "prod"}) is Decision.IMPLICIT_DENY
    assert decide(documents, GET, DSET_1, {TAG: "ml"}) is Decision.IMPLICIT_DENY


def test_a_conditional_deny_only_denies_when_it_holds() -> None:
    documents = [doc(allow(["*"]), deny(["*"], condition={"StringEquals": {TAG: "secret"}}))]
    assert decide(documents, GET, EVAL_1, {TAG: "secret"}) is Decision.EXPLICIT_DENY
    assert decide(documents, GET, EVAL_1, {TAG: "open"}) is Decision.ALLOW
    assert decide(documents, GET, EVAL_1) is Decision.ALLOW


def test_names_project() -> None:
    assert names_project([doc(allow(["*"]))], P)
    assert names_project([doc(allow([GET], ["srn:*:eval:*"]))], P)
    assert names_project([doc(allow([GET], [EVAL_1]))], P)
    assert not names_project([doc(allow([GET], ["srn:proj_B:eval:*"]))], P)
    assert not names_project([doc(deny(["*"]))], P)
    assert not names_project([], P)


# --- properties ----------------------------------------------------------------------------

_ids = st.text("abcXYZ019", min_size=1, max_size=6)
_resource = st.builds(
    lambda proj, kind, rid: srn(f"proj_{proj}", kind, f"{_prefix(kind)}_{rid}"),
    _ids,
    st.sampled_from(sorted(RESOURCE_TYPES)),
    _ids,
)
_action = st.builds(
    lambda module, verb: f"{module}:{verb}",
    st.sampled_from(["evaluations", "agents", "tools", "policies"]),
    st.sampled_from(["GetEval", "RunEval", "CreateDataset", "GetAgent", "DeletePolicy"]),
)


def _prefix(resource_type: str) -> str:
    return ids.PREFIXES[RESOURCE_TYPES[resource_type]]


def _pattern_of(resource: str, keep: list[bool]) -> str:
    parts = resource.split(":")
    return ":".join([parts[0], *(p if k else "*" for p, k in zip(parts[1:], keep, strict=True))])


@given(_resource, _action, st.lists(st.booleans(), min_size=3, max_size=3))
def test_a_segment_wildcard_of_a_resource_covers_it(
    resource: str, action: str, keep: list[bool]
) -> None:
    pattern = _pattern_of(resource, keep)
    assert decide([doc(allow([action], [pattern]))], action, resource) is Decision.ALLOW
    assert decide([doc(allow(["*"]), deny([action], [pattern]))], action, resource) is (
        Decision.EXPLICIT_DENY
    )


@given(st.lists(_resource, max_size=4), _resource, _action, st.booleans())
def test_deny_always_overrides_allow(
    allowed: list[str], resource: str, action: str, deny_first: bool
) -> None:
    statements = [allow([action], [*allowed, resource]), deny([action], [resource])]
    if deny_first:
        statements.reverse()
    assert decide([doc(*statements)], action, resource) is Decision.EXPLICIT_DENY


@given(_resource, _resource, _action)
def test_a_concrete_resource_covers_only_itself(named: str, asked: str, action: str) -> None:
    expected = Decision.ALLOW if named == asked else Decision.IMPLICIT_DENY
    assert decide([doc(allow([action], [named]))], action, asked) is expected


# --- the OpenAPI document states the same rules as the validators -----------------------------


@given(st.from_regex(ACTION_REGEX, fullmatch=True))
def test_every_action_the_schema_allows_is_accepted(pattern: str) -> None:
    assert check_action_pattern(pattern) == pattern


@given(st.from_regex(PATTERN_REGEX, fullmatch=True))
def test_every_resource_pattern_the_schema_allows_is_accepted(pattern: str) -> None:
    assert check_pattern(pattern) == pattern


@given(st.from_regex(CONDITION_KEY_REGEX, fullmatch=True))
def test_every_condition_key_the_schema_allows_is_accepted(key: str) -> None:
    assert check_condition_key(key) == key


@given(st.text("srn:proj_Aeval*-1", max_size=30))
def test_what_the_validators_accept_the_schema_allows(text: str) -> None:
    try:
        check_pattern(text)
    except InvalidSrn:
        assert not re.fullmatch(PATTERN_REGEX, text)
    else:
        assert re.fullmatch(PATTERN_REGEX, text)
