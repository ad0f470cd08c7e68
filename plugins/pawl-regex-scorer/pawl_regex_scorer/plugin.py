"""The module pawl registers (the ``pawl`` entry point names it): pawl collects the
``@scorer`` objects in its namespace, so importing the scorer is all it takes."""

from pawl_regex_scorer.scorer import regex_scorer

__all__ = ["regex_scorer"]
