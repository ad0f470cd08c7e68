"""A scorer plugin for continuous scores in engine tests: the agent's output is the score.

``output_score`` reads the output as a number in 0..1 (the scripted agent answers
``echo:0.73`` with ``0.73``), so a dataset decides every item's score in each run; it
passes at 0.5 or above. An output that is not such a number errors the item.
"""

from __future__ import annotations

import math
from typing import Any, Literal

from chalicelib.plugins.markers import hookimpl
from chalicelib.scoring.contract import (
    ItemContext,
    ScoreOutcome,
    ScorerConfig,
    ScorerFailed,
    ScoringEnv,
)


class OutputScoreConfig(ScorerConfig):
    type: Literal["output_score"] = "output_score"


class OutputScoreScorer:
    type = "output_score"
    config_model = OutputScoreConfig
    named = False
    calls_out = False

    def check(self, config: ScorerConfig, env: Any) -> None:
        return None

    def score(self, config: ScorerConfig, item: ItemContext, env: ScoringEnv) -> ScoreOutcome:
        try:
            value = float(item.output or "")
        except ValueError:
            raise ScorerFailed("the output is not a number", code="NOT_A_SCORE") from None
        if not (math.isfinite(value) and 0.0 <= value <= 1.0):
            raise ScorerFailed("the output is not a score in 0..1", code="NOT_A_SCORE")
        return ScoreOutcome(score=value, passed=value >= 0.5)


class OutputScorePlugin:
    @hookimpl
    def pawl_register_scorers(self) -> list[Any]:
        return [OutputScoreScorer()]
