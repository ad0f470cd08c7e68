"""Skip markers: the work items an early-stop run did not execute once its test decided.

A cancelled run never settles, so its dropped work needs no trace. An early-stopped run
settles as ``completed``, and the settle must wait until every work item is either recorded
or known never to be: the claim's ``recorded_count = item_count``. So a worker that drops
a stopped run's work writes a marker per (item, trial) (``skip#<result key>`` in the
``run-items`` table, a conditional create: a redelivered message adds nothing) and adds the
number of new markers to ``skipped_count`` and ``recorded_count`` in the same transaction.
No result row, generation or usage is written for a skipped item, and ``completed_count +
errored_count`` still equals the result rows (invariant 3).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator

from pynamodb.exceptions import TransactWriteError

from chalicelib import clock
from chalicelib.store.base import transact_write
from chalicelib.store.models import FrozenItemModel, RunModel
from chalicelib.store.runs import SKIP_PREFIX

log = logging.getLogger("pawl.store.skips")

#: Markers per transaction: 99 conditional puts and the counter update.
MARKERS_PER_TRANSACTION = 99
_BATCH_GET = 100
_ATTEMPTS = 4


def _marker_key(result_key: str) -> str:
    return f"{SKIP_PREFIX}{result_key}"


def _existing(run_id: str, result_keys: list[str]) -> set[str]:
    found: set[str] = set()
    for start in range(0, len(result_keys), _BATCH_GET):
        keys = [(run_id, _marker_key(k)) for k in result_keys[start : start + _BATCH_GET]]
        for model in FrozenItemModel.batch_get(
            keys, consistent_read=True, attributes_to_get=["run_id", "dataset_item_id"]
        ):
            found.add(model.dataset_item_id.removeprefix(SKIP_PREFIX))
    return found


def _write(run_id: str, result_keys: list[str]) -> None:
    puts = [
        FrozenItemModel(
            run_id=run_id, dataset_item_id=_marker_key(key)
        ).get_save_kwargs_from_instance(condition=FrozenItemModel.dataset_item_id.does_not_exist())
        for key in result_keys
    ]
    counters = RunModel(id=run_id).get_update_kwargs_from_instance(
        actions=[
            RunModel.skipped_count.add(len(result_keys)),
            RunModel.recorded_count.add(len(result_keys)),
            RunModel.last_activity_at.set(clock.now_iso()),
        ],
        condition=RunModel.id.exists(),
    )
    transact_write(puts, [counters])


def skip(run_id: str, result_keys: Iterable[str]) -> int:
    """Mark these work items skipped and count them, each once. Returns how many were new."""
    wanted = sorted(set(result_keys))
    added = 0
    for start in range(0, len(wanted), MARKERS_PER_TRANSACTION):
        chunk = wanted[start : start + MARKERS_PER_TRANSACTION]
        for _ in range(_ATTEMPTS):
            done = _existing(run_id, chunk)
            chunk = [key for key in chunk if key not in done]
            if not chunk:
                break
            try:
                _write(run_id, chunk)
                added += len(chunk)
                break
            except TransactWriteError:
                # Another delivery of the same work marked some of them meanwhile (or a
                # conflict): read again which are marked and write the rest.
                log.info("run %s: skip markers raced; reading them again", run_id)
        else:
            raise RuntimeError(f"run {run_id}: skip markers kept conflicting")
    return added


def iter_skipped_keys(run_id: str) -> Iterator[str]:
    """The result keys of the run's skipped work items."""
    for model in FrozenItemModel.query(
        run_id,
        range_key_condition=FrozenItemModel.dataset_item_id.startswith(SKIP_PREFIX),
        attributes_to_get=["run_id", "dataset_item_id"],
        consistent_read=True,
    ):
        yield model.dataset_item_id.removeprefix(SKIP_PREFIX)
