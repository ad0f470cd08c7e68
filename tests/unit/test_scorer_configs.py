"""Scorer config validation: every rule of the scorers list, without AWS."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from chalicelib.errors import ValidationFailed
from chalicelib.plugins.collect import as_plugin
from chalicelib.plugins.manager import plugins
from chalicelib.scoring import plugin
from chalicelib.scoring.validation import (
    CatalogValidationEnv,
    evals_needing_output_schema,
    register_lookup,
    scorer_key,
    validate_scorers,
)

PROJECT = "proj_a"
SCHEMA = {"type": "object", "properties": {"category": {"type": "string"}}}
KNOWN = {
    "tool": {
        "tool_http": {"project_id": PROJECT, "type": "http"},
        "tool_client": {"project_id": PROJECT, "type": "client"},
        "tool_builtin": {
            "project_id": PROJECT,
            "type": "builtin",
            "config": {"actions": ["grade"]},
        },
        "tool_other": {"project_id": "proj_b", "type": "http"},
    },
    "decider": {"dcd_1": {"project_id": PROJECT}},
    "ai_provider": {"aip_1": {"project_id": PROJECT}, "aip_other": {"project_id": "proj_b"}},
}


@pytest.fixture(autouse=True)
def lookups() -> Iterator[None]:
    previous = {
        kind: register_lookup(kind, lambda _project, rid, kind=kind: KNOWN[kind].get(rid))
        for kind in KNOWN
    }
    yield
    for kind, fn in previous.items():
        register_lookup(kind, fn)


def _env(
    schema: dict[str, Any] | None = SCHEMA, default: str | None = None
) -> CatalogValidationEnv:
    return CatalogValidationEnv(
        project_id=PROJECT,
        phase="create",
        agent_output_schema=schema,
        project_defaults={"default_ai_provider_id": default},
    )


def _refusal(scorers: Any, env: CatalogValidationEnv | None = None) -> ValidationFailed:
    with pytest.raises(ValidationFailed) as refused:
        validate_scorers(scorers, env or _env())
    return refused.value


def _field(scorers: Any, env: CatalogValidationEnv | None = None) -> str:
    return str(_refusal(scorers, env).meta["field"])


BUILTIN_TYPES = (
    "exact_match",
    "contains",
    "json_logic",
    "output_schema",
    "embedding_similarity",
    "llm_judge",
    "tool",
    "decider",
)
TOOL = {"type": "tool", "name": "tone", "tool_id": "tool_http"}
DECIDER = {
    "type": "decider",
    "name": "review",
    "decider_id": "dcd_1",
    "score": {"var": "answers_by_name.ok.probability"},
    "pass_threshold": 0.7,
}
JUDGE = {"type": "llm_judge", "prompt": "Rate {{output}}", "pass_threshold": 0.5}

VALID = [
    {"type": "exact_match"},
    {"type": "contains", "value": "invoice", "case_sensitive": True},
    {"type": "json_logic", "expression": {"and": [{"in": ["a", {"var": "output"}]}, True]}},
    {"type": "output_schema", "schema": SCHEMA},
    {"type": "embedding_similarity", "pass_threshold": 0.85},
    {**JUDGE, "ai_provider_id": "aip_1", "model": "small"},
    {**TOOL, "preset_parameters": {"strict": True}, "pass_threshold": 0.5},
    {**DECIDER, "input": {"customer": {"var": "input.0.content"}, "reply": {"var": "output"}}},
]


def test_the_builtins_register_through_the_hook() -> None:
    # The module holds @scorer objects; the host registers them through the hook.
    registered = as_plugin(plugin).pawl_register_scorers()  # type: ignore[attr-defined]
    types = [s.type for s in registered]
    # The eight general ones, and /v2's scorer of an OpenWOP task's own expected block.
    expected = {*BUILTIN_TYPES, "openwop_expected"}
    assert set(types) == expected and len(types) == len(expected)
    assert {s.type for s in registered if s.named} == {"tool", "decider"}
    for scorer_type in types:
        assert plugins().scorer(scorer_type).type == scorer_type


def test_valid_list_is_normalized_in_order() -> None:
    normalized = validate_scorers(VALID, _env())
    assert [s["type"] for s in normalized] == [s["type"] for s in VALID]
    assert normalized[0] == {"type": "exact_match"}
    assert normalized[3] == {"type": "output_schema", "schema": SCHEMA}
    assert validate_scorers([{"type": "contains", "value": "x"}], _env()) == [
        {"type": "contains", "value": "x", "case_sensitive": False}
    ]
    # What is stored validates again as is (the engine re-parses stored configs).
    for config in normalized:
        plugins().scorer(config["type"]).config_model.model_validate(config)
    assert validate_scorers(normalized, _env()) == normalized


def test_list_shape() -> None:
    assert _field([]) == "scorers"
    assert _field({"type": "exact_match"}) == "scorers"
    assert _field(None) == "scorers"
    assert _field(["exact_match"]) == "scorers.0"
    assert _field([{"value": 1}]) == "scorers.0.type"
    assert _field([{"type": 3}]) == "scorers.0.type"
    with pytest.raises(ValidationFailed) as custom:
        validate_scorers([], _env(), field_prefix="eval.scorers")
    assert custom.value.meta["field"] == "eval.scorers"


def test_unknown_type_names_the_field_and_lists_known_types() -> None:
    refused = _refusal([{"type": "exact_match"}, {"type": "bleu"}])
    assert refused.meta["field"] == "scorers.1.type"
    for known in ("exact_match", "contains", "json_logic", "llm_judge", "tool", "decider"):
        assert known in refused.message


def test_builtin_types_at_most_once_named_types_many() -> None:
    for scorer in VALID[:6]:
        assert _field([scorer, scorer]) == "scorers.1.type"
    tools = [TOOL, {**TOOL, "name": "tone2"}, {**DECIDER, "name": "r2"}, DECIDER]
    assert len(validate_scorers(tools, _env())) == 4


def test_names_are_distinct_and_shadow_no_type() -> None:
    assert _field([TOOL, {**TOOL}]) == "scorers.1.name"
    assert _field([TOOL, {**DECIDER, "name": "tone"}]) == "scorers.1.name"
    for shadow in ("exact_match", "llm_judge", "tool", "decider"):
        assert _field([{**TOOL, "name": shadow}]) == "scorers.0.name"
    for bad in ("", "has space", "1leading-digit", "x" * 65, "dotted.name"):
        assert _field([{**TOOL, "name": bad}]) == "scorers.0.name", bad
    assert _field([{k: v for k, v in TOOL.items() if k != "name"}]) == "scorers.0.name"


def test_unknown_keys_are_refused_for_every_type() -> None:
    for scorer in VALID:
        assert _field([{**scorer, "colour": "red"}]) == "scorers.0.colour", scorer["type"]


def test_contains_rules() -> None:
    assert _field([{"type": "contains"}]) == "scorers.0.value"
    assert _field([{"type": "contains", "value": ""}]) == "scorers.0.value"
    assert _field([{"type": "contains", "value": 5}]) == "scorers.0.value"
    bad_flag = [{"type": "contains", "value": "x", "case_sensitive": "yes"}]
    assert _field(bad_flag) == "scorers.0.case_sensitive"


def test_json_logic_rules() -> None:
    def field(expression: Any) -> str:
        return _field([{"type": "json_logic", "expression": expression}])

    assert _field([{"type": "json_logic"}]) == "scorers.0.expression"
    assert field([1, 2]) == "scorers.0.expression"
    assert field("output") == "scorers.0.expression"
    assert field({}) == "scorers.0.expression"
    assert field({"==": [1, 1], "!=": [1, 2]}) == "scorers.0.expression"
    refused = _refusal([{"type": "json_logic", "expression": {"and": [{"frobnicate": [1]}]}}])
    assert refused.meta["field"] == "scorers.0.expression"
    assert "frobnicate" in refused.message and "and.0" in refused.message
    assert field({"log": "x"}) == "scorers.0.expression"
    deep: Any = {"var": "output"}
    for _ in range(70):
        deep = {"!": deep}
    assert field(deep) == "scorers.0.expression"
    # An object of several keys nested inside an operation is a literal, not an operation.
    literal = {"==": [{"var": "object"}, {"a": 1, "b": 2}]}
    assert validate_scorers([{"type": "json_logic", "expression": literal}], _env())


def test_output_schema_rules() -> None:
    assert validate_scorers([{"type": "output_schema"}], _env()) == [{"type": "output_schema"}]
    assert _field([{"type": "output_schema"}], _env(schema=None)) == "scorers.0.type"
    own_schema = [{"type": "output_schema", "schema": SCHEMA}]
    assert _field(own_schema, _env(schema=None)) == "scorers.0.type"
    assert _field([{"type": "output_schema", "schema": {"type": 12}}]) == "scorers.0.schema"
    assert _field([{"type": "output_schema", "schema": "object"}]) == "scorers.0.schema"


def test_embedding_similarity_rules() -> None:
    for threshold in (None, -0.1, 1.1, "0.8", True):
        scorer: dict[str, Any] = {"type": "embedding_similarity"}
        if threshold is not None:
            scorer["pass_threshold"] = threshold
        assert _field([scorer]) == "scorers.0.pass_threshold", threshold
    assert validate_scorers([{"type": "embedding_similarity", "pass_threshold": 1}], _env())


def test_llm_judge_rules() -> None:
    no_default = _refusal([JUDGE])
    assert no_default.meta["field"] == "scorers.0.ai_provider_id"
    assert no_default.code == "VALIDATION_FAILED" and "default" in no_default.message
    assert validate_scorers([JUDGE], _env(default="aip_1")) == [JUDGE]
    assert validate_scorers([{**JUDGE, "ai_provider_id": "aip_1"}], _env())
    assert _field([{**JUDGE, "ai_provider_id": "aip_missing"}]) == "scorers.0.ai_provider_id"
    assert _field([{**JUDGE, "ai_provider_id": "aip_other"}]) == "scorers.0.ai_provider_id"
    without_prompt = {k: v for k, v in JUDGE.items() if k != "prompt"}
    assert _field([without_prompt], _env(default="aip_1")) == "scorers.0.prompt"
    without_threshold = {k: v for k, v in JUDGE.items() if k != "pass_threshold"}
    assert _field([without_threshold], _env(default="aip_1")) == "scorers.0.pass_threshold"
    assert _field([{**JUDGE, "model": ""}], _env(default="aip_1")) == "scorers.0.model"


def test_tool_rules() -> None:
    assert validate_scorers([TOOL], _env()) == [TOOL]
    assert _field([{**TOOL, "tool_id": "tool_missing"}]) == "scorers.0.tool_id"
    assert _field([{**TOOL, "tool_id": "tool_other"}]) == "scorers.0.tool_id"
    assert _field([{**TOOL, "tool_id": "tool_client"}]) == "scorers.0.tool_id"
    assert _field([{**TOOL, "tool_id": "tool_builtin"}]) == "scorers.0.action"
    assert validate_scorers([{**TOOL, "tool_id": "tool_builtin", "action": "grade"}], _env())
    for reserved in ("input", "output", "object", "expected", "item"):
        presets = {"preset_parameters": {reserved: 1, "fine": 2}}
        refused = _refusal([{**TOOL, **presets}])
        assert (
            refused.meta["field"] == "scorers.0.preset_parameters" and reserved in refused.message
        )
    assert _field([{**TOOL, "pass_threshold": 2}]) == "scorers.0.pass_threshold"
    assert _field([{k: v for k, v in TOOL.items() if k != "tool_id"}]) == "scorers.0.tool_id"


def test_decider_rules() -> None:
    assert validate_scorers([DECIDER], _env()) == [DECIDER]
    assert _field([{**DECIDER, "decider_id": "dcd_missing"}]) == "scorers.0.decider_id"
    for missing in ("score", "pass_threshold", "decider_id", "name"):
        partial = {k: v for k, v in DECIDER.items() if k != missing}
        assert _field([partial]) == f"scorers.0.{missing}", missing
    assert _field([{**DECIDER, "score": None}]) == "scorers.0.score"
    assert _field([{**DECIDER, "score": {"nope": 1}}]) == "scorers.0.score"
    assert validate_scorers([{**DECIDER, "score": 0.5}], _env())
    assert _field([{**DECIDER, "input": {"reply": {"nope": 1}}}]) == "scorers.0.input"
    assert _field([{**DECIDER, "input": "output"}]) == "scorers.0.input"
    assert validate_scorers([{**DECIDER, "input": {"var": "output"}}], _env())


def test_lookup_registry_defaults_to_not_found() -> None:
    previous = register_lookup("tool", None)
    try:
        assert _field([TOOL]) == "scorers.0.tool_id"
    finally:
        register_lookup("tool", previous)
    assert _env().lookup("unheard_of_kind", "x") is None


def test_scorer_key() -> None:
    assert scorer_key({"type": "contains", "value": "x"}) == "contains"
    assert scorer_key(TOOL) == "tone"
    assert scorer_key(DECIDER) == "review"
    assert scorer_key({"type": "not_installed", "name": "n"}) == "n"
    assert scorer_key({"type": "not_installed"}) == "not_installed"


def test_evals_needing_output_schema() -> None:
    from chalicelib.domain.catalog import Eval

    def make(eval_id: str, scorers: list[dict[str, Any]]) -> Eval:
        return Eval(
            id=eval_id,
            project_id=PROJECT,
            name=eval_id,
            agent_id="agt_1",
            dataset_id="dset_1",
            scorers=scorers,
            created_at="t",
            updated_at="t",
        )

    evals = [make("a", [{"type": "output_schema"}]), make("b", [{"type": "exact_match"}])]
    assert [e.id for e in evals_needing_output_schema(evals)] == ["a"]
