"""``pawl list-evals | head``: a reader that stops early ends the command quietly.

Python ignores SIGPIPE, so a write to a pipe whose reader has gone raises BrokenPipeError,
and without care the user sees a traceback (and a second one when the interpreter flushes
stdout at exit). :func:`quiet_when_stdout_closes` turns that into exit status 141, what a
shell reports for a program SIGPIPE ended (``cat``, ``grep``, ``seq`` under ``| head``), so
a ``set -o pipefail`` script sees the same as with any other tool, and output that was cut
short is never mistaken for a command that finished. SIGPIPE itself is not restored: it
would kill ``pawl serve`` before it saved its state.
"""

from __future__ import annotations

import os
import select
import sys
from collections.abc import Callable

#: 128 + SIGPIPE (13): the shell's status for a program a closed pipe ended.
EXIT_CLOSED_PIPE = 141


def stdout_closed() -> bool:
    """Whether stdout is a pipe (or socket) whose reader has gone."""
    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
    except (AttributeError, OSError, ValueError):  # no poll (Windows), or no real stdout
        return False
    return any(event & (select.POLLERR | select.POLLHUP) for _, event in poller.poll(0))


def quiet_when_stdout_closes(work: Callable[[], int]) -> int:
    """``work()``'s exit status, or :data:`EXIT_CLOSED_PIPE` with nothing printed when its
    stdout was closed under it. A broken pipe elsewhere (a socket) is raised as it was."""
    try:
        code = work()
        sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's exit
        return code
    except BrokenPipeError:
        if not stdout_closed():
            raise
        # Python flushes stdout again at exit: writes to /dev/null find nothing to report.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return EXIT_CLOSED_PIPE
