"""The ``numeric`` test scorer: a trial's score is the number its output holds.

With the ``scores`` agent (``tests.support.agents:scores``) it gives a test exact per-trial
scores: continuous ones for the paired tests on scores, 1/0 for pass/fail. A trial passes
when its score is at least :data:`PASS_AT`. An output that is not a number in 0..1 is the
scorer's failure (an errored item), never a zero.
"""

from __future__ import annotations

import builtins
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

PASS_AT = 0.5


class NumericConfig(ScorerConfig):
    type: Literal["numeric"] = "numeric"


class NumericScorer:
    type = "numeric"
    config_model: builtins.type[ScorerConfig] = NumericConfig
    named = False
    calls_out = False

    def check(self, config: ScorerConfig, env: Any) -> None:
        return None

    def score(self, config: ScorerConfig, item: ItemContext, env: ScoringEnv) -> ScoreOutcome:
        try:
            value = float((item.output or "").strip())
        except ValueError:
            raise ScorerFailed("the output is not a number", code="NUMERIC_UNREADABLE") from None
        if not (math.isfinite(value) and 0.0 <= value <= 1.0):
            raise ScorerFailed("the score is outside 0..1", code="NUMERIC_UNREADABLE")
        return ScoreOutcome(score=value, passed=value >= PASS_AT)


class NumericPlugin:
    def __init__(self) -> None:
        self.scorer = NumericScorer()

    @hookimpl
    def pawl_register_scorers(self) -> list[Any]:
        return [self.scorer]
