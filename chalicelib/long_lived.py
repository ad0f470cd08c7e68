"""Keeping the start-up heap out of the garbage collector's way.

A process that serves runs imports botocore's service models, pydantic's schemas, the
app and its plugins before its first request: about 170,000 objects that live as long as
the process. CPython's full (generation 2) collection walks every one of them, about
0.1 s during which no other thread runs. In a run of 1,000 items against a 200 ms agent
at concurrency 40 that one pause left every agent slot idle for 87 ms (``bench/latency.py``,
``docs/scaling.md``). ``gc.freeze()`` moves what exists now to a permanent generation the
collector never walks: a full collection then takes about 5 ms. Frozen objects are still
freed when their last reference goes; only a cycle among them would outlive its use, and
start-up objects are kept for the process's life anyway.

The young generations are collected less often too (every :data:`YOUNG_THRESHOLD` net
allocations instead of 700): the serving path allocates fast (each agent call, each AWS
call's request and response), so at 700 a run of 1,000 items made ~180 young collections,
~65 ms of pauses in all; at 20,000 it makes two or three, 20-40 ms. Objects that die by
their reference count, which is nearly all of them, never wait for a collection.
"""

from __future__ import annotations

import gc
import os

#: Net allocations between young collections (CPython's default: 700).
YOUNG_THRESHOLD = 20_000


def freeze_start_up_heap() -> None:
    """Collect once, freeze what survives and collect the young generation less often
    (call when start-up is done)."""
    gc.collect()
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, middle, old)


def freeze_in_lambda() -> None:
    """:func:`freeze_start_up_heap` in a Lambda container (its module load is its start-up);
    elsewhere (tests, ``chalice local``) nothing."""
    if os.environ.get("AWS_LAMBDA_FUNCTION_NAME"):
        freeze_start_up_heap()
