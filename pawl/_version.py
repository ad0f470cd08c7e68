"""pawl's version, in one place: pyproject, the Lambda zip and ``pawl.__version__`` read it."""

__version__ = "0.2.0"
