"""What to install when a command needs a package the core ``pawl`` leaves to an extra.

``pip install pawl`` is the API client, the plugin API and the API commands. The embedded
runtime, rich terminal output and YAML templates come with ``pip install 'pawl[local]'``
(pyproject ``[project.optional-dependencies]``); a command that reaches one of them without
it ends with one line naming what is missing, not a traceback.
"""

from __future__ import annotations

#: Top-level module -> (the distribution that provides it, the extra that installs it).
EXTRA_MODULES = {
    "moto": ("moto[server]", "local"),
    "werkzeug": ("moto[server]", "local"),
    "flask": ("moto[server]", "local"),
    "rich": ("rich", "local"),
    "yaml": ("PyYAML", "local"),
}


def missing_extra_message(command: str, error: ModuleNotFoundError) -> str | None:
    """The line to print for ``error`` raised by ``pawl <command>``, or None when the missing
    module is not one an extra provides (a real bug: let it surface)."""
    top = (error.name or "").split(".", 1)[0]
    if top not in EXTRA_MODULES:
        return None
    distribution, extra = EXTRA_MODULES[top]
    return (
        f"pawl {command}: needs {distribution}, which is not installed: pip install 'pawl[{extra}]'"
    )


def require(*modules: str) -> None:
    """Raise :class:`ModuleNotFoundError` for the first of ``modules`` not installed, found
    without importing it: ``pawl serve`` imports moto's server only in the stand-in's own
    process, whose failure would otherwise be the first sign."""
    import importlib.util

    for module in modules:
        if importlib.util.find_spec(module) is None:
            raise ModuleNotFoundError(f"No module named {module!r}", name=module)
