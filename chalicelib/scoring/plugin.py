"""The built-in scorers, registered through the same hook a third-party plugin uses.

Eight general ones, plus ``openwop_expected`` for ``/v2`` suites.

``check`` raises :class:`ValidationFailed` with ``field`` relative to the scorer's own
config (``"ai_provider_id"``); :func:`chalicelib.scoring.validation.validate_scorers`
prefixes it with the scorer's position (``scorers.2.ai_provider_id``).

``embedding_similarity``, ``llm_judge``, ``tool`` and ``decider`` live in their own modules
(:mod:`chalicelib.scoring.embedding_similarity`, :mod:`chalicelib.scoring.llm_judge`,
:mod:`chalicelib.scoring.tool_scorer`, :mod:`chalicelib.scoring.decider_scorer`).
"""

from __future__ import annotations

import builtins
from typing import TypeVar

from chalicelib.errors import ValidationFailed
from chalicelib.plugins.markers import hookimpl
from chalicelib.scoring import configs, deterministic, llm_judge
from chalicelib.scoring.contract import (
    ItemContext,
    ScoreOutcome,
    Scorer,
    ScorerConfig,
    ScorerFailed,
    ScoringEnv,
    ValidationEnv,
)
from chalicelib.scoring.decider_scorer import DeciderScorer
from chalicelib.scoring.embedding_similarity import EmbeddingSimilarityScorer
from chalicelib.scoring.openwop_expected import OpenwopExpectedScorer
from chalicelib.scoring.tool_scorer import ToolScorer

C = TypeVar("C", bound=ScorerConfig)


def _as(model: type[C], config: ScorerConfig) -> C:
    """``config`` as this scorer's model (the engine may hand over a base-typed config)."""
    if isinstance(config, model):
        return config
    return model.model_validate(config.model_dump(by_alias=True))


class _Builtin:
    config_model: builtins.type[ScorerConfig] = ScorerConfig
    type = ""
    named = False
    #: Scores in-process (no call out): the engine scores with it even once the run ended.
    calls_out = False

    def check(self, config: ScorerConfig, env: ValidationEnv) -> None:
        return None

    def score(self, config: ScorerConfig, item: ItemContext, env: ScoringEnv) -> ScoreOutcome:
        raise ScorerFailed(
            f"the {self.type} scorer is not available in this version of pawl",
            code="SCORER_UNAVAILABLE",
            scorer=self.type,
        )


class ExactMatchScorer(_Builtin):
    type = "exact_match"
    config_model = configs.ExactMatchConfig

    def score(self, config: ScorerConfig, item: ItemContext, env: ScoringEnv) -> ScoreOutcome:
        return deterministic.exact_match(item.output, item.expected)


class ContainsScorer(_Builtin):
    type = "contains"
    config_model = configs.ContainsConfig

    def score(self, config: ScorerConfig, item: ItemContext, env: ScoringEnv) -> ScoreOutcome:
        parsed = _as(configs.ContainsConfig, config)
        return deterministic.contains(item.output, parsed.value, parsed.case_sensitive)


class JsonLogicScorer(_Builtin):
    type = "json_logic"
    config_model = configs.JsonLogicConfig

    def score(self, config: ScorerConfig, item: ItemContext, env: ScoringEnv) -> ScoreOutcome:
        return deterministic.json_logic(_as(configs.JsonLogicConfig, config).expression, item)


class OutputSchemaScorer(_Builtin):
    type = "output_schema"
    config_model = configs.OutputSchemaConfig

    def check(self, config: ScorerConfig, env: ValidationEnv) -> None:
        # Structured output exists only when the agent's own schema constrains it.
        if env.agent_output_schema is None:
            raise ValidationFailed(
                "an output_schema scorer needs an agent with an output_schema (even when the "
                "scorer brings its own schema): this agent produces no structured output",
                field="type",
            )

    def score(self, config: ScorerConfig, item: ItemContext, env: ScoringEnv) -> ScoreOutcome:
        return deterministic.output_schema(_as(configs.OutputSchemaConfig, config).schema_, item)


BUILTIN_SCORERS: tuple[type[Scorer], ...] = (
    ExactMatchScorer,
    ContainsScorer,
    JsonLogicScorer,
    OutputSchemaScorer,
    EmbeddingSimilarityScorer,
    llm_judge.LlmJudgeScorer,
    ToolScorer,
    DeciderScorer,
    OpenwopExpectedScorer,
)


@hookimpl
def pawl_register_scorers() -> list[Scorer]:
    return [cls() for cls in BUILTIN_SCORERS]
