"""pawl-regex-scorer: an example third-party pawl plugin adding the ``regex`` scorer.

pawl finds it through the ``pawl`` entry point declared in ``pyproject.toml``, which
names :mod:`pawl_regex_scorer.plugin`.
"""

from pawl_regex_scorer.scorer import regex_scorer

__all__ = ["regex_scorer"]
__version__ = "0.1.0"
