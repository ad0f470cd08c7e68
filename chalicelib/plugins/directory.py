"""One-off plugins: the modules of a directory (``PAWL_PLUGINS_DIR``).

Every ``*.py`` file and every package (a folder with ``__init__.py``) directly in the
directory is a plugin named after its file, imported as ``pawl_plugins_dir.<name>`` so it
can never shadow an installed module (``json.py`` in the folder is not ``json``) and a
package's relative imports work. Files and folders whose name starts with ``_`` or ``.``
are ignored. What cannot be imported is reported by the host, like a broken entry point.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

#: The package every directory plugin is imported under.
PACKAGE = "pawl_plugins_dir"


@dataclass(frozen=True)
class DirectoryPlugin:
    name: str
    path: Path


def candidates(directory: Path) -> Iterator[DirectoryPlugin]:
    """The plugin modules in ``directory``, by name."""
    for path in sorted(directory.iterdir()):
        if path.name.startswith(("_", ".")):
            continue
        if path.is_file() and path.suffix == ".py":
            yield DirectoryPlugin(path.stem, path)
        elif path.is_dir() and (path / "__init__.py").is_file():
            yield DirectoryPlugin(path.name, path)


def _package(directory: Path) -> ModuleType:
    """The parent package whose ``__path__`` is ``directory`` (made once per process; a
    second directory replaces the first, as a changed setting would)."""
    package = sys.modules.get(PACKAGE)
    if package is None or list(getattr(package, "__path__", [])) != [str(directory)]:
        package = ModuleType(PACKAGE, f"pawl's one-off plugins from {directory}")
        package.__path__ = [str(directory)]
        sys.modules[PACKAGE] = package
        for name in [m for m in sys.modules if m.startswith(f"{PACKAGE}.")]:
            del sys.modules[name]
    return package


def load(directory: Path, plugin: DirectoryPlugin) -> ModuleType:
    """Import one directory plugin; raises what its import raises (the host reports it)."""
    if not plugin.name.isidentifier():
        raise ImportError(f"{plugin.path.name}: {plugin.name!r} is not a Python module name")
    _package(directory)
    qualified = f"{PACKAGE}.{plugin.name}"
    try:
        return importlib.import_module(qualified)
    except BaseException:
        sys.modules.pop(qualified, None)  # a half-imported module must not look loaded
        raise
