"""Skip markers: the work items an early-stop run did not execute once its test decided.

A cancelled run never settles, so its dropped work needs no trace. An early-stopped run
settles as ``completed``, and the settle must wait until every work item is either recorded
or known never to be: the claim's ``recorded_count = item_count``. So a worker that drops
a stopped run's work writes a marker per (item, trial) (``skip#<result key>`` in the
``run-items`` table, a conditional create: a redelivered message adds nothing) and adds the
number of new markers to ``skipped_count`` and ``recorded_count`` in the same transaction.
No result row, generation or usage is written for a skipped item, and ``completed_count +
errored_count`` still equals the result rows (invariant 3).

On a sharded run (``store.shards``) a marker lives under its item's shard key, beside the
item's frozen row and result row, and the counts go to a counter row (the same counters
the settle claim sums and folds, ``store.run_counters``), not the run row.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator

from pynamodb.exceptions import TransactWriteError

from chalicelib.store import run_counters
from chalicelib.store import shards as sharding
from chalicelib.store.base import transact_write
from chalicelib.store.models import FrozenItemModel
from chalicelib.store.run_items import SKIP_PREFIX

log = logging.getLogger("pawl.store.skips")

#: Markers per transaction: 99 conditional puts and the counter update.
MARKERS_PER_TRANSACTION = 99
_BATCH_GET = 100
_ATTEMPTS = 4


def _marker_key(result_key: str) -> str:
    return f"{SKIP_PREFIX}{result_key}"


def _key(run_id: str, result_key: str, shards: int) -> tuple[str, str]:
    """The (hash key, range key) of a marker: under its item's shard."""
    item_id = result_key.rpartition("#")[0]
    return sharding.item_partition(run_id, item_id, shards), _marker_key(result_key)


def _existing(run_id: str, result_keys: list[str], shards: int) -> set[str]:
    found: set[str] = set()
    for start in range(0, len(result_keys), _BATCH_GET):
        keys = [_key(run_id, k, shards) for k in result_keys[start : start + _BATCH_GET]]
        for model in FrozenItemModel.batch_get(
            keys, consistent_read=True, attributes_to_get=["run_id", "dataset_item_id"]
        ):
            found.add(model.dataset_item_id.removeprefix(SKIP_PREFIX))
    return found


def _write(run_id: str, result_keys: list[str], shards: int, counter: int) -> None:
    puts = []
    for key in result_keys:
        partition, marker = _key(run_id, key, shards)
        puts.append(
            FrozenItemModel(run_id=partition, dataset_item_id=marker).get_save_kwargs_from_instance(
                condition=FrozenItemModel.dataset_item_id.does_not_exist()
            )
        )
    counts = {"skipped_count": float(len(result_keys)), "recorded_count": float(len(result_keys))}
    counters = run_counters.update_of(run_id, shards, counter, counts, None)
    transact_write(puts, [counters])


def skip(run_id: str, result_keys: Iterable[str], shards: int = 1, counter: int = 0) -> int:
    """Mark these work items skipped and count them, each once. Returns how many were new.

    ``shards``: the run's shard count; ``counter``: which counter row a sharded run's
    counts go to (the batch's, as its results would)."""
    wanted = sorted(set(result_keys))
    added = 0
    for start in range(0, len(wanted), MARKERS_PER_TRANSACTION):
        chunk = wanted[start : start + MARKERS_PER_TRANSACTION]
        for _ in range(_ATTEMPTS):
            done = _existing(run_id, chunk, shards)
            chunk = [key for key in chunk if key not in done]
            if not chunk:
                break
            try:
                _write(run_id, chunk, shards, counter)
                added += len(chunk)
                break
            except TransactWriteError:
                # Another delivery of the same work marked some of them meanwhile (or a
                # conflict): read again which are marked and write the rest.
                log.info("run %s: skip markers raced; reading them again", run_id)
        else:
            raise RuntimeError(f"run {run_id}: skip markers kept conflicting")
    return added


def iter_skipped_keys(run_id: str, shards: int = 1) -> Iterator[str]:
    """The result keys of the run's skipped work items (shard after shard)."""
    for partition in sharding.partitions(run_id, shards):
        for model in FrozenItemModel.query(
            partition,
            range_key_condition=FrozenItemModel.dataset_item_id.startswith(SKIP_PREFIX),
            attributes_to_get=["run_id", "dataset_item_id"],
            consistent_read=True,
        ):
            yield model.dataset_item_id.removeprefix(SKIP_PREFIX)
