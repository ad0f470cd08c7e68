"""pawl's plugin system: hook specs, the manager, and the facade the engine calls."""

from chalicelib.plugins.markers import hookimpl, hookspec

__all__ = ["hookimpl", "hookspec"]
