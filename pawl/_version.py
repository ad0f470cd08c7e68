"""pawl's version: the one number the package metadata (pyproject's dynamic version), the
client's User-Agent and ``pawl.__version__`` read, so a plugin can declare ``pawl>=X,<Y``."""

__version__ = "0.2.0"
