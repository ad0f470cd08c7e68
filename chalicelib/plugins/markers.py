"""The pluggy markers of the ``pawl`` project. Plugin authors import ``hookimpl`` from here."""

import pluggy

PROJECT = "pawl"
ENTRY_POINT_GROUP = "pawl"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)
