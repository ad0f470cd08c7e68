"""A run's counters: what its recorded results add up to, spread over counter rows.

The counters are :data:`COUNTER_NAMES` (one list: a new counter is one more name here and
one more entry in :func:`tally`). A one-shard run keeps them on its run row, as every run
did before. A sharded run (``store.shards``) keeps them on ``N`` counter rows of the runs
table (``<run_id>#counters#<k>``: only an ``id``, the counters and ``last_activity_at``);
each work batch adds to one row, chosen by the batch, so concurrent batches do not meet on
one item. A reader sums the rows (:func:`read`: one consistent BatchGetItem). When a run's
settle is claimed the sums are written onto the run row (``counters_folded``), after
which nothing adds to them and a reader of the run needs the run row alone.

Counters follow the rows they count (``store.results``): a row is created first, then
counted, so the counters never exceed the rows (no settle claimed early). A process that
dies between the two leaves rows uncounted: :func:`reconcile` (recovery after a restart, the
reaper for a quiet run) recounts them from the rows.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from pynamodb.exceptions import TransactWriteError

from chalicelib import clock
from chalicelib.domain.runs import EvalResult
from chalicelib.store import shards as sharding
from chalicelib.store.base import bind, transaction
from chalicelib.store.models import RunModel

#: Each (baseline passed, passed now) of an early-stop run's paired table: the counter it
#: adds to, and the name the table gives it on the wire.
PAIRS = {
    (True, True): ("pair_both", "both_passed"),
    (False, True): ("pair_improved", "improved"),
    (True, False): ("pair_regressed", "regressed"),
    (False, False): ("pair_neither", "neither_passed"),
}
#: The paired count each (baseline passed, passed now) adds to.
PAIR_COUNTER_OF = {pair: counter for pair, (counter, _) in PAIRS.items()}
#: The paired counters by their names on the wire.
PAIR_COUNTER_NAMED = {name: counter for counter, name in PAIRS.values()}
#: The paired counts (what the rows alone cannot recount) and the work items an early-stop
#: run skipped after its decision (``store.skips``; they count in ``recorded_count`` too).
PAIRED = frozenset({*PAIR_COUNTER_OF.values(), "skipped_count"})
#: Every counter a recorded result adds to (attributes of the run row and of counter rows).
#: ``recorded_count`` is completed + errored, kept so a condition can compare it with
#: ``item_count`` (a condition cannot add).
COUNTER_NAMES = (
    "completed_count",
    "errored_count",
    "recorded_count",
    "passed_count",
    "failed_count",
    "spent_usd",
    *PAIR_COUNTER_OF.values(),
    "skipped_count",
)
#: Counters left out of an update that adds nothing to them (every other one is added, 0
#: included, so a run row and a counter row always hold it).
SPARSE_COUNTERS = PAIRED | {"spent_usd"}


@dataclass
class Sums:
    """A run's counters summed over its counter rows, and the latest activity they saw."""

    values: dict[str, float] = field(default_factory=lambda: dict.fromkeys(COUNTER_NAMES, 0))
    last_activity_at: str | None = None

    def __getitem__(self, name: str) -> float:
        return self.values.get(name, 0)


def tally(
    results: Iterable[EvalResult],
    spent_usd: float = 0.0,
    pairs: Iterable[tuple[bool, bool] | None] = (),
) -> dict[str, float]:
    """What recording ``results`` adds to each counter; ``pairs``: an early-stop run's
    (baseline passed, passed now) of each result that counts in its paired table."""
    counts = dict.fromkeys(COUNTER_NAMES, 0.0)
    for pair in pairs:
        if pair is not None:
            counts[PAIR_COUNTER_OF[pair]] += 1
    for result in results:
        errored = result.errored
        counts["errored_count" if errored else "completed_count"] += 1
        counts["recorded_count"] += 1
        # What ``?outcome=passed`` / ``failed`` select: their totals.
        if result.passed is True:
            counts["passed_count"] += 1
        elif result.passed is False:
            counts["failed_count"] += 1
    # DynamoDB adds decimals exactly; rounding drops the float's binary noise.
    counts["spent_usd"] = round(spent_usd, 9)
    return counts


def add_actions(counts: dict[str, float]) -> list[Any]:
    """The UpdateItem actions that add ``counts`` (zeros are left out) and mark activity."""
    actions: list[Any] = [
        getattr(RunModel, name).add(value if name == "spent_usd" else int(value))
        for name, value in counts.items()
        if value or name not in SPARSE_COUNTERS
    ]
    actions.append(RunModel.last_activity_at.set(clock.now_iso()))
    return actions


def update_of(run_id: str, shards: int, k: int, counts: dict[str, float], guard: Any) -> Any:
    """The counter update of one batch as a transaction's operation: on the run row (one
    shard; ``guard`` joins its condition), or on counter row ``k``."""
    if shards <= 1:
        condition = RunModel.id.exists()
        if guard is not None:
            condition = condition & guard
        return RunModel(id=run_id).get_update_kwargs_from_instance(
            actions=add_actions(counts), condition=condition
        )
    row_id = sharding.counter_key(run_id, k % shards, shards)
    return RunModel(id=row_id).get_update_kwargs_from_instance(actions=add_actions(counts))


def token_of(run_id: str, result_keys: Iterable[str]) -> str:
    """A ClientRequestToken for counting these results: a retried request (a timeout after
    it applied) is applied once."""
    digest = hashlib.sha256(run_id.encode())
    for key in sorted(result_keys):
        digest.update(b"\0" + key.encode())
    return digest.hexdigest()[:36]


def read(run_id: str, shards: int) -> Sums:
    """The counters of a sharded run, summed over its counter rows (one BatchGetItem)."""
    bind()
    table = RunModel._get_connection()
    keys: list[Any] = [{"id": key} for key in sharding.counter_keys(run_id, shards)]
    sums = Sums()
    attributes = [*COUNTER_NAMES, "last_activity_at", "id"]
    while keys:
        answer = table.batch_get_item(keys, consistent_read=True, attributes_to_get=attributes)
        for item in answer.get("Responses", {}).get(table.table_name, []):
            add_row(sums, item)
        keys = answer.get("UnprocessedKeys", {}).get(table.table_name, {}).get("Keys", [])
    return sums


def add_row(sums: Sums, item: dict[str, Any]) -> None:
    """Add one counter row, as DynamoDB returned it, to ``sums``."""
    for name in COUNTER_NAMES:
        value = item.get(name)
        if value is not None and "N" in value:
            number = float(value["N"])
            sums.values[name] = sums.values.get(name, 0) + (
                number if name == "spent_usd" else int(number)
            )
    seen = item.get("last_activity_at", {}).get("S")
    if seen and (sums.last_activity_at is None or seen > sums.last_activity_at):
        sums.last_activity_at = seen


def counter_row_keys(run_id: str, shards: int) -> list[dict[str, Any]]:
    """The counter rows' keys as a BatchGetItem names them (none for a one-shard run)."""
    if shards <= 1:
        return []
    return [{"id": {"S": key}} for key in sharding.counter_keys(run_id, shards)]


def reconcile(run_id: str, shards: int, rows: dict[str, float]) -> bool:
    """Make the counters equal ``rows`` (the totals counted from the result rows, read after
    the counters were), adding the difference to counter row 0 (the run row for one shard)
    in one transaction that checks every counter row still holds what was read. False when
    a row moved (a worker is still counting: nothing is written, try again later), when the
    counters are already right, or when they are ahead of ``rows`` (rows landed after the
    read: read again)."""
    before = _per_row(run_id, shards)
    total = Sums()
    for values in before.values():
        for name, value in values.items():
            total.values[name] = total.values.get(name, 0) + value
    # Only what the rows can tell: the paired counts need the baseline's outcome, which a
    # result row does not keep, so rows left uncounted stay out of them.
    missing = {name: rows[name] - total[name] for name in COUNTER_NAMES if name in rows}
    missing["spent_usd"] = max(0.0, round(missing.get("spent_usd", 0.0), 9))
    counted = [name for name in missing if name != "spent_usd"]
    if not any(missing[name] for name in counted) or any(missing[name] < 0 for name in counted):
        return False
    first = sharding.counter_key(run_id, 0, shards)
    try:
        with transaction() as txn:
            for key, values in before.items():
                if key != first:
                    txn.condition_check(RunModel, key, condition=_holds(values))
            txn.update(
                RunModel(id=first),
                actions=add_actions(missing),
                condition=_holds(before[first]),
            )
    except TransactWriteError:
        return False
    return True


def reconcile_before(run_id: str, shards: int) -> Sums:
    """The counters as :func:`reconcile` will compare them (read them before the rows)."""
    total = Sums()
    for values in _per_row(run_id, shards).values():
        for name, value in values.items():
            total.values[name] = total.values.get(name, 0) + value
    return total


def _holds(values: dict[str, float]) -> Any:
    """Condition: a counter row's ``recorded_count`` is what was read (absent: 0)."""
    recorded = int(values.get("recorded_count", 0))
    if recorded:
        return RunModel.recorded_count == recorded
    return RunModel.recorded_count.does_not_exist() | (RunModel.recorded_count == 0)


def _per_row(run_id: str, shards: int) -> dict[str, dict[str, float]]:
    """Each counter row's counters, consistently read, by row id (absent rows as empty)."""
    bind()
    keys = sharding.counter_keys(run_id, shards)
    found: dict[str, dict[str, float]] = {key: {} for key in keys}
    table = RunModel._get_connection()
    pending: list[Any] = [{"id": key} for key in keys]
    while pending:
        answer = table.batch_get_item(
            pending, consistent_read=True, attributes_to_get=["id", *COUNTER_NAMES]
        )
        for item in answer.get("Responses", {}).get(table.table_name, []):
            found[item["id"]["S"]] = {
                name: float(item[name]["N"]) for name in COUNTER_NAMES if "N" in item.get(name, {})
            }
        pending = answer.get("UnprocessedKeys", {}).get(table.table_name, {}).get("Keys", [])
    return found
