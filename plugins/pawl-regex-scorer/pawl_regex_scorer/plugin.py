"""The plugin module pawl registers: one ``@hookimpl`` per hook this plugin implements."""

from __future__ import annotations

from chalicelib.plugins import hookimpl
from chalicelib.scoring.contract import Scorer
from pawl_regex_scorer.scorer import RegexScorer


@hookimpl
def pawl_register_scorers() -> list[Scorer]:
    """Provide the ``regex`` scorer."""
    return [RegexScorer()]
