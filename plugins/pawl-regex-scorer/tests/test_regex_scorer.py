"""The regex scorer on its own: config validation, matching, and its refusals."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from pawl_regex_scorer import scorer as regex_scorer
from pawl_regex_scorer.scorer import regex_scorer as scorer
from pydantic import BaseModel, ValidationError

from chalicelib.plugins.scorer_contract import Scorer
from pawl.plugins import ItemContext, ScorerFailed, ScoringEnv, ValidationFailed


@dataclass
class CheckEnv:
    """The smallest ValidationEnv: the regex scorer looks nothing up."""

    project_id: str = "proj_test"
    phase: str = "create"
    agent_output_schema: dict[str, Any] | None = None

    def lookup(self, kind: str, resource_id: str) -> Any | None:
        return None

    def project_default(self, setting: str) -> Any | None:
        return None


ENV = ScoringEnv(project_id="proj_test")


def item(output: str | None) -> ItemContext:
    return ItemContext(input=[], output=output, expected=None, item_metadata={})


def config(**fields: Any) -> BaseModel:
    return scorer.config_model.model_validate({"type": "regex", **fields})


def test_implements_the_scorer_contract() -> None:
    assert isinstance(scorer, Scorer)
    assert scorer.type == "regex" and scorer.named is False and scorer.calls_out is False
    assert set(scorer.config_model.model_fields) == {"type", "pattern", "flags", "full_match"}


def test_the_function_stays_callable_on_its_own() -> None:
    outcome = scorer(item("order #7"), pattern=r"#\d", full_match=False)
    assert outcome.passed and outcome.reasoning == "matched at [6, 8)"


def test_config_is_strict() -> None:
    with pytest.raises(ValidationError):
        config(pattern="a", full_match="true")


def test_search_scores_one_when_the_output_matches() -> None:
    outcome = scorer.score(config(pattern=r"order #\d+"), item("see order #42 ok"), ENV)
    assert (outcome.score, outcome.passed) == (1.0, True)
    assert outcome.reasoning == "matched at [4, 13)"


def test_no_match_scores_zero() -> None:
    outcome = scorer.score(config(pattern=r"refund"), item("no money back"), ENV)
    assert (outcome.score, outcome.passed) == (0.0, False)


def test_full_match_requires_the_whole_output() -> None:
    whole = config(pattern=r"\d+", full_match=True)
    assert scorer.score(whole, item("123"), ENV).passed is True
    assert scorer.score(whole, item("123 apples"), ENV).passed is False


def test_flags_change_matching() -> None:
    plain = config(pattern=r"^yes.done$")
    flagged = config(pattern=r"^yes.done$", flags=["IGNORECASE", "DOTALL"])
    text = "YES\ndone"
    assert scorer.score(plain, item(text), ENV).passed is False
    assert scorer.score(flagged, item(text), ENV).passed is True
    multiline = config(pattern=r"^done$", flags=["MULTILINE"])
    assert scorer.score(multiline, item("first\ndone\nlast"), ENV).passed is True


def test_check_refuses_an_invalid_pattern_naming_the_field() -> None:
    with pytest.raises(ValidationFailed) as refused:
        scorer.check(config(pattern="(unclosed"), CheckEnv())
    assert refused.value.meta["field"] == "pattern"
    scorer.check(config(pattern="fine"), CheckEnv())


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"pattern": ""}, "pattern"),
        ({"pattern": "a", "flags": ["VERBOSE"]}, "flags"),
        ({"pattern": "a", "colour": "red"}, "colour"),
        ({}, "pattern"),
    ],
)
def test_config_shape_is_refused(fields: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationError) as refused:
        config(**fields)
    assert refused.value.errors()[0]["loc"][0] == field


def test_missing_output_errors_the_item_instead_of_scoring_zero() -> None:
    with pytest.raises(ScorerFailed) as failed:
        scorer.score(config(pattern="x"), item(None), ENV)
    assert failed.value.meta["reason"] == "no_output"


def test_catastrophic_backtracking_errors_the_item(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(regex_scorer, "MATCH_TIMEOUT_S", 0.05)
    # Exponential in the length of the run of "a"s: never finishes without the timeout.
    evil = config(pattern=r"^(a|a)*$")
    with pytest.raises(ScorerFailed) as failed:
        scorer.score(evil, item("a" * 60 + "b"), ENV)
    assert failed.value.meta["reason"] == "timeout"
