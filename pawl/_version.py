"""pawl's version: one place, read by packaging (pyproject, the Lambda zip) and ``pawl.__version__``."""

__version__ = "0.2.0"
