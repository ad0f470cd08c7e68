"""What ``pawl`` logs where: warnings and errors on stderr; the engine's story in a file.

A person running ``pawl demo`` or ``pawl serve`` reads the lines the command prints for
them; the engine's INFO lines ("queued for 0 webhook(s)", a poller's start) used to land
between those. Now stderr shows WARNING and above unless ``--verbose`` (INFO) or
``PAWL_LOG_LEVEL`` (any level; the more verbose of the two wins) asks for more, and the
commands that run the engine write INFO and above to ``pawl.log`` in their state directory
(:func:`file_log`, its path in ``pawl serve``'s banner), rotated so it cannot fill a disk.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # logging loads when a command configures it, not for `pawl --help`
    import logging

ENV_VARIABLE = "PAWL_LOG_LEVEL"
#: logging's own numbers for its levels.
DEBUG, INFO, WARNING, ERROR = 10, 20, 30, 40
LEVELS = {"DEBUG": DEBUG, "INFO": INFO, "WARNING": WARNING, "ERROR": ERROR}
FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
LOG_FILE_NAME = "pawl.log"
#: One file of this size and this many older ones: about 40 MB at most.
MAX_LOG_BYTES = 10 * 1024 * 1024
LOG_BACKUPS = 3
#: Libraries whose INFO lines say nothing a pawl user acts on (one per request), shown at
#: DEBUG only.
NOISY = ("botocore", "urllib3", "werkzeug", "httpx", "httpcore", "pynamodb")

#: The handlers this module installed (so a second ``configure`` replaces, not doubles).
_installed: list[logging.Handler] = []


def console_level(verbose: bool, environ: Mapping[str, str]) -> int:
    """The level stderr shows: WARNING, INFO with ``--verbose``, or ``PAWL_LOG_LEVEL``'s
    (``ValueError`` naming the choices when it is not a level)."""
    level = WARNING
    configured = environ.get(ENV_VARIABLE, "").strip()
    if configured:
        if configured.upper() not in LEVELS:
            raise ValueError(
                f"{ENV_VARIABLE}={configured!r} is not a level: give one of {', '.join(LEVELS)}"
            )
        level = LEVELS[configured.upper()]
    return min(level, INFO) if verbose else level


def configure(level: int) -> None:
    """stderr shows ``level`` and above; nothing is written anywhere else (yet)."""
    import logging

    root = logging.getLogger()
    for handler in _installed:
        root.removeHandler(handler)
    _installed.clear()
    console = _stderr_handler()
    console.setLevel(level)
    console.setFormatter(logging.Formatter(FORMAT))
    root.addHandler(console)
    _installed.append(console)
    root.setLevel(level)
    for name in NOISY:
        logging.getLogger(name).setLevel(DEBUG if level <= DEBUG else WARNING)


def _stderr_handler() -> logging.Handler:
    """A handler writing to whatever ``sys.stderr`` is when a record comes, not the stream
    it was when configured (``main()`` run in-process under a capture, then the capture
    closed, would otherwise make every later record a logging error)."""
    import logging
    import sys

    class CurrentStderr(logging.StreamHandler):
        @property
        def stream(self) -> Any:
            return sys.stderr

        @stream.setter
        def stream(self, _: Any) -> None:
            pass

    return CurrentStderr()


@contextmanager
def file_log(directory: Path) -> Iterator[Path]:
    """While open, INFO and above (or the console's level, if lower) also go to
    ``DIRECTORY/pawl.log``; yields the file's path. Closed on exit, before a temporary
    directory that holds it is removed."""
    import logging.handlers  # sockets, pickle, queues: only for the commands that keep a file

    directory.mkdir(parents=True, exist_ok=True)
    path = directory / LOG_FILE_NAME
    root = logging.getLogger()
    previous = root.level
    level = min(previous or WARNING, INFO)
    handler = logging.handlers.RotatingFileHandler(
        path, maxBytes=MAX_LOG_BYTES, backupCount=LOG_BACKUPS, encoding="utf-8"
    )
    handler.setLevel(level)
    handler.setFormatter(logging.Formatter(FORMAT))
    root.addHandler(handler)
    root.setLevel(level)
    try:
        yield path
    finally:
        root.removeHandler(handler)
        handler.close()
        root.setLevel(previous)
