"""exact_match, contains, json_logic and output_schema: pure functions and Scorer objects."""

from __future__ import annotations

from typing import Any

import pytest

from chalicelib.jsonvalues import jsonlogic
from chalicelib.plugins.manager import plugins
from chalicelib.scoring import deterministic
from chalicelib.scoring.contract import ItemContext, ScoreOutcome, ScorerFailed, ScoringEnv

SCHEMA = {
    "type": "object",
    "required": ["category"],
    "properties": {"category": {"enum": ["billing", "other"]}},
}
ENV = ScoringEnv(project_id="proj_a")


def _item(**overrides: Any) -> ItemContext:
    fields: dict[str, Any] = {
        "input": [{"role": "user", "content": "When is my invoice issued?"}],
        "output": "  On the 1st of each month. ",
        "expected": "On the 1st of each month.",
        "item_metadata": {"topic": "billing", "tags": ["a"]},
        **overrides,
    }
    return ItemContext(**fields)


def _typed(obj: Any = None, **overrides: Any) -> ItemContext:
    """An item of an agent that has an output_schema (so ``object`` is present)."""
    return _item(object=obj, has_object=True, output_schema=SCHEMA, **overrides)


def _score(config: dict[str, Any], item: ItemContext) -> ScoreOutcome:
    scorer = plugins().scorer(config["type"])
    result: ScoreOutcome = scorer.score(scorer.config_model.model_validate(config), item, ENV)
    return result


def test_exact_match() -> None:
    assert deterministic.exact_match(" yes\n", "yes") == ScoreOutcome(1.0, True)
    assert deterministic.exact_match("yes", " yes ") == ScoreOutcome(1.0, True)
    assert deterministic.exact_match("Yes", "yes") == ScoreOutcome(0.0, False)
    assert deterministic.exact_match("yes", None) == ScoreOutcome(0.0, False)
    assert deterministic.exact_match(None, "yes") == ScoreOutcome(0.0, False)
    assert deterministic.exact_match("", "") == ScoreOutcome(1.0, True)
    assert _score({"type": "exact_match"}, _item()).passed is True
    assert _score({"type": "exact_match"}, _item(expected=None)) == ScoreOutcome(0.0, False)


def test_contains() -> None:
    assert deterministic.contains("Your INVOICE is ready", "invoice").passed is True
    assert (
        deterministic.contains("Your INVOICE is ready", "invoice", case_sensitive=True).score == 0
    )
    assert deterministic.contains("Your invoice", "invoice", case_sensitive=True).score == 1
    assert deterministic.contains("STRASSE", "straße").passed is True  # casefold, not lower
    assert deterministic.contains(None, "x").passed is False
    assert _score({"type": "contains", "value": "1ST"}, _item()).score == 1.0
    assert _score({"type": "contains", "value": "1ST", "case_sensitive": True}, _item()).score == 0


def test_json_logic_sees_the_item_variables() -> None:
    def verdict(expression: dict[str, Any], item: ItemContext) -> bool:
        return deterministic.json_logic(expression, item).passed

    item = _item()
    assert verdict({"in": ["invoice", {"var": "input.0.content"}]}, item)
    assert verdict({"==": [{"var": "item.metadata.topic"}, "billing"]}, item)
    assert verdict({"==": [{"var": "expected"}, "On the 1st of each month."]}, item)
    assert verdict({"in": ["1st", {"var": "output"}]}, item)
    assert not verdict({"==": [{"var": "item.metadata.topic"}, "shipping"]}, item)
    assert deterministic.json_logic({"var": "item.metadata.tags"}, item).score == 1.0
    assert deterministic.json_logic({"var": "item.metadata.missing"}, item).score == 0.0
    assert deterministic.json_logic({"filter": [[], True]}, item).score == 0.0  # [] is falsy


def test_json_logic_object_is_absent_without_an_output_schema() -> None:
    over_object = {"==": [{"var": "object.category"}, "billing"]}
    untyped = _item(object={"category": "billing"}, has_object=False)
    assert "object" not in untyped.as_variables()
    assert deterministic.json_logic(over_object, untyped) == ScoreOutcome(0.0, False)
    assert deterministic.json_logic({"missing": ["object"]}, untyped).passed is True
    typed = _typed({"category": "billing"})
    assert deterministic.json_logic(over_object, typed) == ScoreOutcome(1.0, True)
    assert deterministic.json_logic({"missing": ["object"]}, typed).passed is False


def test_json_logic_that_cannot_evaluate_errors_the_item() -> None:
    with pytest.raises(ScorerFailed) as division:
        deterministic.json_logic({"/": [1, 0]}, _item())
    assert division.value.code == "EVAL_SCORING_FAILED"
    with pytest.raises(ScorerFailed):
        deterministic.json_logic({"frobnicate": [1]}, _item())  # written around validation
    with pytest.raises(ScorerFailed):
        deterministic.json_logic({"log": ["x"]}, _item())  # refused at config time too
    with pytest.raises(ScorerFailed):
        _score({"type": "json_logic", "expression": {"/": [{"var": "output"}, 0]}}, _item())


def test_jsonlogic_helpers() -> None:
    assert jsonlogic.rule_problem({"if": [{"var": "a"}, 1, 0]}) is None
    assert "nope" in (jsonlogic.rule_problem({"or": [True, {"nope": 1}]}) or "")
    assert jsonlogic.operation_problem(True) is not None
    assert jsonlogic.mapping_problem({"a": {"var": "output"}, "b": 3}) is None
    assert jsonlogic.evaluate_mapping({"a": {"var": "x"}, "b": 3}, {"x": 1}) == {"a": 1, "b": 3}
    assert jsonlogic.evaluate_mapping({"var": "x"}, {"x": {"k": 1}}) == {"k": 1}
    assert jsonlogic.truthy(0) is False and jsonlogic.truthy("0") is True


def test_output_schema() -> None:
    valid, invalid = {"category": "billing"}, {"category": "weather"}
    assert deterministic.output_schema(None, _typed(valid)) == ScoreOutcome(1.0, True)
    assert deterministic.output_schema(None, _typed(invalid)) == ScoreOutcome(0.0, False)
    assert deterministic.output_schema(None, _typed({})) == ScoreOutcome(0.0, False)
    # The scorer's own schema wins over the agent's.
    loose = {"type": "object"}
    assert deterministic.output_schema(loose, _typed(invalid)) == ScoreOutcome(1.0, True)
    # No structured output: 0, not an error.
    assert deterministic.output_schema(None, _typed(None)) == ScoreOutcome(0.0, False)
    no_object = _item(has_object=False, output_schema=SCHEMA)
    assert deterministic.output_schema(None, no_object) == ScoreOutcome(0.0, False)
    with pytest.raises(ScorerFailed):
        deterministic.output_schema(None, _item(object=valid, has_object=True))
    assert _score({"type": "output_schema"}, _typed(valid)).passed is True
    assert _score({"type": "output_schema", "schema": loose}, _typed(invalid)).passed is True
    assert _score({"type": "output_schema", "schema": {"type": "array"}}, _typed(valid)).score == 0
