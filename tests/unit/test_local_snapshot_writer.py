"""The forked snapshot writer's process rules (``local/standin_state.py``)."""

from __future__ import annotations

import gc
import os
import sys
import time
import weakref
from pathlib import Path

import pytest

from pawl.local import standin_state


class _Cycle:
    def __init__(self) -> None:
        self.me = self


def test_freezing_the_state_first_collects_cyclic_garbage() -> None:
    """What is garbage at a cut is collected, not frozen for good."""
    cycle = _Cycle()
    gone = weakref.ref(cycle)
    gc.collect()  # the cycle reaches the oldest generation while still referenced
    del cycle
    try:
        assert standin_state.keep_out_of_collections() > 0
        gc.collect()
        assert gone() is None
    finally:
        gc.unfreeze()


def _is_gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state in ("Z", "X")  # killed, waiting to be reaped by whoever adopted it


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl is Linux's")
def test_a_writer_dies_with_the_stand_in_that_forked_it() -> None:
    """The test plays the stand-in's parent; its child plays the stand-in, which forks a
    writer and is then killed: the writer must not outlive it."""
    read_end, write_end = os.pipe()
    stand_in = os.fork()
    if stand_in == 0:  # pragma: no cover (runs in the forked stand-in)
        os.close(read_end)
        parent = os.getpid()
        writer = os.fork()
        if writer == 0:
            standin_state.die_with(parent)
            os.write(write_end, f"{os.getpid()}\n".encode())
            time.sleep(60)
            os._exit(0)
        time.sleep(0.5)  # let the writer ask for its death signal
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end) as pipe:
        writer_pid = int(pipe.readline())
    os.waitpid(stand_in, 0)
    deadline = time.monotonic() + 20
    while not _is_gone(writer_pid) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert _is_gone(writer_pid)
