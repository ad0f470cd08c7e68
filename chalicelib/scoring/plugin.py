"""The built-in scorers, written with ``@scorer`` as a third-party plugin writes its own.

Eight general ones, plus ``openwop_expected`` for ``/v2`` suites.

``check`` raises :class:`ValidationFailed` with ``field`` relative to the scorer's own
config (``"ai_provider_id"``); :func:`chalicelib.scoring.validation.validate_scorers`
prefixes it with the scorer's position (``scorers.2.ai_provider_id``).

``embedding_similarity``, ``llm_judge``, ``tool`` and ``decider`` live in their own modules
(:mod:`chalicelib.scoring.embedding_similarity`, :mod:`chalicelib.scoring.llm_judge`,
:mod:`chalicelib.scoring.tool_scorer`, :mod:`chalicelib.scoring.decider_scorer`).
"""

from __future__ import annotations

from chalicelib.errors import ValidationFailed
from chalicelib.plugins.decorators import scorer
from chalicelib.plugins.scorer_contract import ItemContext, ScoreOutcome, ValidationEnv
from chalicelib.scoring import configs, deterministic
from chalicelib.scoring.decider_scorer import decider_scorer
from chalicelib.scoring.embedding_similarity import embedding_similarity_scorer
from chalicelib.scoring.llm_judge import llm_judge_scorer
from chalicelib.scoring.openwop_expected import openwop_expected_scorer
from chalicelib.scoring.tool_scorer import tool_scorer

# The four deterministic scorers score in-process (``calls_out=False``): the engine still
# scores with them once a run is cancelled.


@scorer("exact_match", calls_out=False)
def exact_match(config: configs.ExactMatchConfig, item: ItemContext) -> ScoreOutcome:
    return deterministic.exact_match(item.output, item.expected)


@scorer("contains", calls_out=False)
def contains(config: configs.ContainsConfig, item: ItemContext) -> ScoreOutcome:
    return deterministic.contains(item.output, config.value, config.case_sensitive)


@scorer("json_logic", calls_out=False)
def json_logic(config: configs.JsonLogicConfig, item: ItemContext) -> ScoreOutcome:
    return deterministic.json_logic(config.expression, item)


def _needs_structured_output(env: ValidationEnv) -> None:
    # Structured output exists only when the agent's own schema constrains it.
    if env.agent_output_schema is None:
        raise ValidationFailed(
            "an output_schema scorer needs an agent with an output_schema (even when the "
            "scorer brings its own schema): this agent produces no structured output",
            field="type",
        )


@scorer("output_schema", check=_needs_structured_output, calls_out=False)
def output_schema(config: configs.OutputSchemaConfig, item: ItemContext) -> ScoreOutcome:
    return deterministic.output_schema(config.schema_, item)


#: The built-in scorers in registration order (the order the API documents them in): the
#: host collects a module's decorated objects in its ``__all__`` order when it has one.
__all__ = [  # noqa: RUF022 (the order is the registration order, not alphabetical)
    "exact_match",
    "contains",
    "json_logic",
    "output_schema",
    "embedding_similarity_scorer",
    "llm_judge_scorer",
    "tool_scorer",
    "decider_scorer",
    "openwop_expected_scorer",
]
