"""Config models of the eight built-in scorer types.

Shape rules only (unknown keys refused, required fields, ranges, JSON Logic and JSON
Schema well-formedness); rules that need other resources live in each scorer's
``check`` (:mod:`chalicelib.scoring.plugin`). Numbers and booleans are strict: ``"0.5"``
or ``1`` for a boolean is refused rather than coerced.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from jsonschema.exceptions import SchemaError
from jsonschema.validators import validator_for
from pydantic import ConfigDict, Field, WithJsonSchema, field_validator

from chalicelib.iam.references import reads
from chalicelib.ids import AiProviderId, DeciderId, ToolId
from chalicelib.jsonvalues import jsonlogic
from chalicelib.jsonvalues.json_schema import (
    JSON_LOGIC_MAPPING,
    JSON_LOGIC_OPERATION,
    JSON_LOGIC_REF,
)
from chalicelib.plugins.scorer_contract import ScorerConfig, ScorerName

Threshold = Annotated[float, Field(ge=0, le=1)]
#: Keys the engine injects into a tool scorer's input; presets may not overwrite them.
RESERVED_TOOL_KEYS = frozenset({"input", "output", "object", "expected", "item"})
#: Resources a scorer names: the eval's author must be able to read each (iam.md). Denied,
#: each answers what its scorer's ``check`` answers for a missing one.
ScorerTool = Annotated[
    ToolId, reads("tool", message="{field}: tool {id} not found in this project")
]
ScorerDecider = Annotated[
    DeciderId, reads("decider", message="{field}: decider {id} not found in this project")
]
ScorerProvider = Annotated[
    AiProviderId,
    reads("ai-provider", message="{field}: ai_provider {id} not found in this project"),
]


class BuiltinConfig(ScorerConfig):
    model_config = ConfigDict(extra="forbid", strict=True)


def _check_rule(rule: Any) -> Any:
    problem = jsonlogic.rule_problem(rule)
    if problem:
        raise ValueError(problem)
    return rule


def check_json_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Refuse a schema its own metaschema rejects (ValueError naming the bad spot)."""
    try:
        validator_for(schema).check_schema(schema)
    except SchemaError as exc:
        where = ".".join(str(p) for p in exc.path)
        raise ValueError(
            f"not a valid JSON Schema{f' at {where}' if where else ''}: {exc.message}"
        ) from None
    return schema


class ExactMatchConfig(BuiltinConfig):
    type: Literal["exact_match"]


class ContainsConfig(BuiltinConfig):
    type: Literal["contains"]
    value: str = Field(min_length=1)
    case_sensitive: bool = False


class JsonLogicConfig(BuiltinConfig):
    type: Literal["json_logic"]
    expression: Annotated[dict[str, Any], WithJsonSchema(JSON_LOGIC_OPERATION)]

    @field_validator("expression")
    @classmethod
    def _operation(cls, expression: dict[str, Any]) -> dict[str, Any]:
        problem = jsonlogic.operation_problem(expression)
        if problem:
            raise ValueError(problem)
        return expression


class OutputSchemaConfig(BuiltinConfig):
    type: Literal["output_schema"]
    # ``schema`` would shadow a BaseModel attribute: stored under an alias.
    schema_: dict[str, Any] | None = Field(None, alias="schema")

    @field_validator("schema_")
    @classmethod
    def _valid_schema(cls, schema: dict[str, Any] | None) -> dict[str, Any] | None:
        return None if schema is None else check_json_schema(schema)


class EmbeddingSimilarityConfig(BuiltinConfig):
    type: Literal["embedding_similarity"]
    pass_threshold: Threshold


class LlmJudgeConfig(BuiltinConfig):
    type: Literal["llm_judge"]
    prompt: str = Field(min_length=1, max_length=100_000)
    pass_threshold: Threshold
    ai_provider_id: ScorerProvider | None = None
    model: str | None = Field(None, min_length=1, max_length=200)


class ToolScorerConfig(BuiltinConfig):
    type: Literal["tool"]
    name: ScorerName
    tool_id: ScorerTool
    action: str | None = Field(None, min_length=1, max_length=200)
    preset_parameters: dict[str, Any] | None = None
    pass_threshold: Threshold | None = None

    @field_validator("preset_parameters")
    @classmethod
    def _no_reserved_keys(cls, presets: dict[str, Any] | None) -> dict[str, Any] | None:
        clashes = sorted(RESERVED_TOOL_KEYS & set(presets or {}))
        if clashes:
            raise ValueError(
                f"keys {clashes} are reserved for the engine-injected item context "
                f"({', '.join(sorted(RESERVED_TOOL_KEYS))})"
            )
        return presets


class DeciderScorerConfig(BuiltinConfig):
    type: Literal["decider"]
    name: ScorerName
    decider_id: ScorerDecider
    score: Annotated[Any, WithJsonSchema(JSON_LOGIC_REF)] = Field(
        description="JSON Logic over {answers, answers_by_name}"
    )
    pass_threshold: Threshold
    input: Annotated[dict[str, Any], WithJsonSchema(JSON_LOGIC_MAPPING)] | None = Field(
        None,
        description="One JSON Logic operation, or {key: rule}, over the item context; "
        "omitted, the decision's input is the item context itself",
    )

    @field_validator("score")
    @classmethod
    def _score_rule(cls, score: Any) -> Any:
        if score is None:
            raise ValueError("score is required: a JSON Logic expression yielding 0-1")
        return _check_rule(score)

    @field_validator("input")
    @classmethod
    def _input_mapping(cls, mapping: dict[str, Any] | None) -> dict[str, Any] | None:
        problem = None if mapping is None else jsonlogic.mapping_problem(mapping)
        if problem:
            raise ValueError(problem)
        return mapping


BUILTIN_CONFIGS: dict[str, type[BuiltinConfig]] = {
    "exact_match": ExactMatchConfig,
    "contains": ContainsConfig,
    "json_logic": JsonLogicConfig,
    "output_schema": OutputSchemaConfig,
    "embedding_similarity": EmbeddingSimilarityConfig,
    "llm_judge": LlmJudgeConfig,
    "tool": ToolScorerConfig,
    "decider": DeciderScorerConfig,
}
