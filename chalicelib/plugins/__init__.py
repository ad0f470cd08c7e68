"""pawl's plugin system: the contracts plugins implement, the hook specs, the decorators
(``@scorer`` and friends), the host and the facade the engine calls.

The public face is :mod:`pawl.plugins` (:mod:`chalicelib.plugins.public`); this package
init stays light (the markers only) so importing one submodule loads no other.
"""

from chalicelib.plugins.markers import hookimpl, hookspec

__all__ = ["hookimpl", "hookspec"]
