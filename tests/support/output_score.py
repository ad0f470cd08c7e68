"""A scorer plugin for continuous scores in engine tests: the agent's output is the score.

``output_score`` is the ``numeric`` test scorer (``tests.support.numeric``) under its own
type name: it reads the output as a number in 0..1 (the scripted agent answers
``echo:0.73`` with ``0.73``), so a dataset decides every item's score in each run; it
passes at 0.5 or above. An output that is not such a number errors the item.
"""

from __future__ import annotations

from typing import Any, Literal

from chalicelib.plugins.markers import hookimpl
from chalicelib.scoring.contract import ScorerConfig
from tests.support.numeric import NumericScorer


class OutputScoreConfig(ScorerConfig):
    type: Literal["output_score"] = "output_score"


class OutputScoreScorer(NumericScorer):
    type = "output_score"
    config_model = OutputScoreConfig


class OutputScorePlugin:
    @hookimpl
    def pawl_register_scorers(self) -> list[Any]:
        return [OutputScoreScorer()]
