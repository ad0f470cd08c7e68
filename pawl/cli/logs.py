"""What ``pawl`` logs where: warnings and errors on stderr; the engine's story in a file.

A person running ``pawl demo`` or ``pawl serve`` reads the lines the command prints for
them; the engine's INFO lines ("queued for 0 webhook(s)", a poller's start) used to land
between those. Now stderr shows WARNING and above unless ``--verbose`` (INFO) or
``PAWL_LOG_LEVEL`` (any level; the more verbose of the two wins) asks for more, and the
commands that run the engine write INFO and above to ``pawl.log`` in their state directory
(:func:`file_log`, its path in ``pawl serve``'s banner), rotated so it cannot fill a disk.

Imported by :func:`pawl.cli.main.main` after the command line is parsed (``pawl --help``
never loads logging).
"""

from __future__ import annotations

import collections
import logging
import os
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ENV_VARIABLE = "PAWL_LOG_LEVEL"
LEVELS = {name: getattr(logging, name) for name in ("DEBUG", "INFO", "WARNING", "ERROR")}
FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
LOG_FILE_NAME = "pawl.log"
#: As private as the runtime makes a state dir and its files (docs/local-runtime.md).
STATE_DIR_MODE, LOG_FILE_MODE = 0o700, 0o600
#: One file of this size and this many older ones: about 40 MB at most.
MAX_LOG_BYTES = 10 * 1024 * 1024
LOG_BACKUPS = 3
#: Records kept while the state dir does not exist yet (the runtime is starting).
MAX_HELD = 10_000
#: Libraries whose INFO lines say nothing a pawl user acts on (one per request), shown at
#: DEBUG only.
NOISY = ("botocore", "urllib3", "werkzeug", "httpx", "httpcore", "pynamodb")

#: The handlers ``configure`` installed (so a second ``configure`` replaces, not doubles).
_installed: list[logging.Handler] = []


def console_level(verbose: bool, environ: Mapping[str, str]) -> int:
    """The level stderr shows: WARNING, INFO with ``--verbose``, or ``PAWL_LOG_LEVEL``'s
    (``ValueError`` naming the choices when it is not a level)."""
    level = logging.WARNING
    configured = environ.get(ENV_VARIABLE, "").strip()
    if configured:
        if configured.upper() not in LEVELS:
            raise ValueError(
                f"{ENV_VARIABLE}={configured!r} is not a level: give one of {', '.join(LEVELS)}"
            )
        level = LEVELS[configured.upper()]
    return min(level, logging.INFO) if verbose else level


class CurrentStderr(logging.StreamHandler):
    """Writes to whatever ``sys.stderr`` is when a record comes, not the stream it was when
    configured (``main()`` run in-process under a capture, then the capture closed, would
    otherwise make every later record a logging error)."""

    @property
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, _: Any) -> None:
        pass


def configure(level: int) -> None:
    """stderr shows ``level`` and above; nothing is written anywhere else (yet)."""
    root = logging.getLogger()
    for handler in _installed:
        root.removeHandler(handler)
    _installed.clear()
    console = CurrentStderr()
    console.setLevel(level)
    console.setFormatter(logging.Formatter(FORMAT))
    root.addHandler(console)
    _installed.append(console)
    root.setLevel(level)
    for name in NOISY:
        logging.getLogger(name).setLevel(
            logging.DEBUG if level <= logging.DEBUG else logging.WARNING
        )


class _Held(logging.Handler):
    """Keeps records until the log file can be opened (at most ``MAX_HELD``, the newest)."""

    def __init__(self, level: int) -> None:
        super().__init__(level)
        self.records: collections.deque[logging.LogRecord] = collections.deque(maxlen=MAX_HELD)

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


class FileLog:
    """``DIRECTORY/pawl.log``, held in memory until :meth:`open` (the directory is the
    runtime's state dir: a command refused before the runtime made it must not make it)."""

    def __init__(self, directory: Path, level: int) -> None:
        self.path = directory / LOG_FILE_NAME
        self._handler: logging.Handler = _Held(level)
        logging.getLogger().addHandler(self._handler)

    def open(self) -> Path:
        """Write what was held, and from now on every record, to the file; its path."""
        held = self._handler
        if not isinstance(held, _Held):
            return self.path
        import logging.handlers  # sockets, pickle, queues: not for a command that keeps no file

        self.path.parent.mkdir(mode=STATE_DIR_MODE, parents=True, exist_ok=True)
        os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, LOG_FILE_MODE))
        handler = logging.handlers.RotatingFileHandler(
            self.path, maxBytes=MAX_LOG_BYTES, backupCount=LOG_BACKUPS, encoding="utf-8"
        )
        handler.setLevel(held.level)
        handler.setFormatter(logging.Formatter(FORMAT))
        root = logging.getLogger()
        root.addHandler(handler)
        root.removeHandler(held)
        for record in held.records:
            handler.handle(record)
        self._handler = handler
        return self.path

    def close(self) -> None:
        logging.getLogger().removeHandler(self._handler)
        self._handler.close()


@contextmanager
def file_log(directory: Path) -> Iterator[FileLog]:
    """While open, INFO and above (or the console's level, if lower) also go to
    ``DIRECTORY/pawl.log`` once :meth:`FileLog.open` is called (until then, to memory).
    Closed on exit, before a temporary directory that holds it is removed."""
    root = logging.getLogger()
    previous = root.level
    level = min(previous or logging.WARNING, logging.INFO)
    root.setLevel(level)
    log = FileLog(directory, level)
    try:
        yield log
    finally:
        log.close()
        root.setLevel(previous)
