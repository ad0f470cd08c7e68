"""Capacity model of a deployed pawl: per-item AWS work, cost per 1,000 items, ceilings.

Computes ``docs/scaling.md``'s tables from the engine's measured calls per item
(``bench/run_throughput.py``: 1,000 items, queued run, sharded) and AWS's published limits and
on-demand list prices (us-east-1), so the doc is reproducible: ``python bench/capacity.py``
prints the markdown the doc holds between its ``capacity:begin``/``capacity:end`` markers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from chalicelib.domain.catalog import DEFAULT_MAX_CONCURRENCY
from chalicelib.engine.fanout import CHUNK_ITEMS
from chalicelib.infra.definitions import queue_specs
from chalicelib.infra.template import FUNCTION_MEMORY_MB
from chalicelib.settings import get_settings
from chalicelib.workers.queues import ITEM_BATCH_SIZE

# --- measured: engine AWS calls per item (bench/run_throughput.py, queued run, 1,000 items
# with PAWL_RUN_SHARD_ITEMS=100, so the run had 10 shards; session 32, docs/scaling.md)
ENGINE_CALLS_PER_ITEM = {
    ("dynamodb", "BatchWriteItem"): 0.051,  # eval generations' rows (25 a call); fan-out pages
    ("dynamodb", "BatchExecuteStatement"): 0.046,  # results' conditional creates, 25 a call
    ("dynamodb", "BatchGetItem"): 0.031,  # per batch: the run, counter rows, result keys; and
    # the finish check's sum of the counter rows once the batch has recorded
    ("dynamodb", "TransactWriteItems"): 0.025,  # per commit: its counters and usage row
    ("dynamodb", "Query"): 0.020,  # fan-out counts and pages the dataset; settle, per shard
    ("sqs", "SendMessageBatch"): 0.010,  # fan-out: 10 messages of 10 work items per call
    ("dynamodb", "GetItem"): 0.009,
    ("dynamodb", "UpdateItem"): 0.007,
    ("s3", "PutObject"): 0.002,  # the settled run's outcome digest
    ("sqs", "SendMessage"): 0.001,
}
#: Lambda's event source mapping: ReceiveMessage + DeleteMessageBatch, 10 messages of 10
#: work items per call (the local pollers measured 0.05-0.06/item, empty polls included).
EVENT_SOURCE_SQS_PER_ITEM = 0.02
#: Items one counting transaction counts (the measured transactions per item, inverted).
ITEMS_PER_COMMIT = 1 / ENGINE_CALLS_PER_ITEM[("dynamodb", "TransactWriteItems")]
#: A DynamoDB round trip from Lambda, for a batch's own time beside its agent calls.
AWS_CALL_S = 0.01

# --- the engine's shape and the deployed stack's, read from where they are defined
ITEM_BATCH = ITEM_BATCH_SIZE
FANOUT_CHUNK = CHUNK_ITEMS
ITEM_MAX_CONCURRENCY = next(q.max_concurrency for q in queue_specs() if q.role == "items")
#: Agent calls one invocation makes at once for a run at the default max_concurrency
#: (chalicelib/engine/concurrency.py: the limit holds per invocation).
CALLS_AT_ONCE = min(ITEM_BATCH_SIZE, DEFAULT_MAX_CONCURRENCY)
FUNCTION_MEMORY_GB = FUNCTION_MEMORY_MB / 1024
#: A large run's shards (results, frozen items, counter rows): the most a run gets, from
#: PAWL_RUN_SHARD_ITEMS work items each (store/shards.py); a smaller run has fewer, and
#: finishes before a partition's limit matters.
SHARDS = get_settings().run_max_shards
ITEMS_PER_SHARD = get_settings().run_shard_items
#: What one run is asked for (issue 27).
TARGET_ITEMS_PER_S = 2000

# --- item sizes the engine writes, for a typical item (1 KB input, 1 KB output)
RESULT_KB = 2.5  # results row: input + expected + output + scores + keys
GENERATION_KB = 0.5  # an eval generation's row: ids, usage, latency, where its result is
RUN_ITEM_KB = 1.2  # an item's share of a run-items page row: frozen input + expected
RUN_ROW_KB = 2.0  # runs row: the snapshot of the eval (read by each batch)
COUNTER_ROW_KB = 0.3  # a counter row: its counters and last activity
USAGE_KB_PER_ITEM = 0.15  # an item's usage event in its commit's usage row

# --- AWS limits and on-demand list prices (us-east-1, checked when this was written)
PARTITION_WCU_PER_S = 1000  # one partition (one hash key with no split) absorbs this
TABLE_WCU_PER_S = 40_000  # on-demand table's default maximum (raisable by quota request)
ACCOUNT_CONCURRENCY = 1000  # Lambda's default concurrent executions per region
PRICE_PER_MILLION_WRU = 0.625
PRICE_PER_MILLION_RRU = 0.125
PRICE_PER_MILLION_SQS = 0.40  # per 64 KB chunk
PRICE_PER_MILLION_LAMBDA = 0.20
PRICE_PER_GB_S = 0.0000166667


def wcu(size_kb: float, transactional: bool = False) -> float:
    """Write request units of one item write (1 KB each, doubled in a transaction)."""
    return math.ceil(size_kb) * (2 if transactional else 1)


def rcu(size_kb: float, consistent: bool = True) -> float:
    """Read request units of one item read (4 KB each; eventually consistent: half)."""
    return math.ceil(size_kb / 4) * (1.0 if consistent else 0.5)


@dataclass(frozen=True)
class PerItem:
    writes: float  # write request units
    reads: float  # read request units
    sqs_requests: float
    invocations: float
    gb_seconds: float


def writes_per_item() -> dict[str, float]:
    """Write request units per item, by what writes them."""
    return {
        "result (conditional create)": wcu(RESULT_KB),
        "generation row (no content)": wcu(GENERATION_KB),
        # fan-out freezes the item (in a page row: rounded up once per page)
        "frozen item": RUN_ITEM_KB,
        # per commit, in one transaction: the counter row's update and the usage row
        "counters": wcu(COUNTER_ROW_KB, True) / ITEMS_PER_COMMIT,
        "usage": wcu(USAGE_KB_PER_ITEM * ITEMS_PER_COMMIT, True) / ITEMS_PER_COMMIT,
    }


def per_item(agent_latency_s: float = 1.0) -> PerItem:
    """What one item costs on AWS. A batch's items run :data:`CALLS_AT_ONCE` at a time, so
    its invocation lasts that many rounds of agent calls plus its own AWS round trips."""
    reads = (
        rcu(RUN_ITEM_KB)  # the batch reads its frozen items
        + rcu(RESULT_KB)  # ... and whether results exist (a miss still costs a unit)
        + (rcu(RUN_ROW_KB) + SHARDS * rcu(COUNTER_ROW_KB)) / ITEM_BATCH  # ... the run
        + SHARDS * rcu(COUNTER_ROW_KB) / ITEM_BATCH  # the finish check sums the counters
        + rcu(RUN_ITEM_KB, consistent=False) / 3  # fan-out's dataset query (~3 per 4 KB)
        + rcu(RESULT_KB, consistent=False) * RESULT_KB / 4  # settle streams results once
    )  # fmt: skip
    sqs = sum(n for (service, _), n in ENGINE_CALLS_PER_ITEM.items() if service == "sqs")
    invocations = 1 / ITEM_BATCH + 1 / FANOUT_CHUNK
    rounds = math.ceil(ITEM_BATCH / CALLS_AT_ONCE)
    own = sum(n for (service, _), n in ENGINE_CALLS_PER_ITEM.items() if service == "dynamodb")
    batch_seconds = rounds * agent_latency_s + own * ITEM_BATCH * AWS_CALL_S
    return PerItem(
        writes=sum(writes_per_item().values()),
        reads=reads,
        sqs_requests=sqs + EVENT_SOURCE_SQS_PER_ITEM,
        invocations=invocations,
        gb_seconds=batch_seconds * FUNCTION_MEMORY_GB / ITEM_BATCH,
    )


def cost_per_1000(item: PerItem) -> dict[str, float]:
    thousand = 1000 / 1_000_000
    return {
        "DynamoDB writes": item.writes * thousand * PRICE_PER_MILLION_WRU,
        "DynamoDB reads": item.reads * thousand * PRICE_PER_MILLION_RRU,
        "SQS": item.sqs_requests * thousand * PRICE_PER_MILLION_SQS,
        "Lambda requests": item.invocations * thousand * PRICE_PER_MILLION_LAMBDA,
        "Lambda duration": item.gb_seconds * 1000 * PRICE_PER_GB_S,
    }


def ceilings(agent_latency_s: float = 1.0) -> dict[str, float]:
    """Items/s at which each shared resource of ONE large run saturates."""
    return {
        # a run's results spread over its shards' hash keys: a partition each, unless split
        f"results partitions ({SHARDS} shards)": SHARDS * PARTITION_WCU_PER_S / wcu(RESULT_KB),
        # one counting transaction per commit, on one of the run's counter rows
        f"counter rows ({SHARDS})": (
            SHARDS * PARTITION_WCU_PER_S / wcu(COUNTER_ROW_KB, True) * ITEMS_PER_COMMIT
        ),
        # fan-out's frozen rows are sharded the same way
        f"run-items partitions ({SHARDS}, fan-out)": SHARDS * PARTITION_WCU_PER_S / RUN_ITEM_KB,
        # usage rows share their project's hash key: every run of the project writes there
        "usage partition (project_id)": PARTITION_WCU_PER_S / writes_per_item()["usage"],
        # the mapping's invocations x a run's calls at once in each / how long a call lasts
        "Lambda (items mapping)": ITEM_MAX_CONCURRENCY * CALLS_AT_ONCE / agent_latency_s,
    }


def many_runs_ceilings(agent_latency_s: float = 1.0) -> dict[str, float]:
    """Items/s for many concurrent runs: partitions spread, shared limits remain."""
    return {
        "results table": TABLE_WCU_PER_S / wcu(RESULT_KB),
        "generations table": TABLE_WCU_PER_S / wcu(GENERATION_KB),
        "Lambda (items mapping)": ITEM_MAX_CONCURRENCY * CALLS_AT_ONCE / agent_latency_s,
        "Lambda (account, mapping raised)": ACCOUNT_CONCURRENCY * CALLS_AT_ONCE / agent_latency_s,
    }


def calls_at_once_needed(items_per_s: float = TARGET_ITEMS_PER_S, latency_s: float = 1.0) -> float:
    """The per-invocation concurrency (a run's ``max_concurrency``) the items mapping's
    invocations need for one run to reach ``items_per_s``."""
    return items_per_s * latency_s / ITEM_MAX_CONCURRENCY


def report(agent_latency_s: float = 1.0) -> str:
    item = per_item(agent_latency_s)
    lines = ["| per item | amount |", "| --- | --- |"]
    lines += [
        f"| DynamoDB write request units | {item.writes:.2f} |",
        *(f"| &nbsp;&nbsp;{name} | {value:.2f} |" for name, value in writes_per_item().items()),
        f"| DynamoDB read request units | {item.reads:.2f} |",
        f"| SQS requests (engine {item.sqs_requests - EVENT_SOURCE_SQS_PER_ITEM:.3f}"
        f" + event source {EVENT_SOURCE_SQS_PER_ITEM:.3f}) | {item.sqs_requests:.3f} |",
        f"| Lambda invocations | {item.invocations:.4f} |",
        f"| Lambda GB-seconds (agent {agent_latency_s:g} s) | {item.gb_seconds:.3f} |",
        "",
        "| cost per 1,000 items (USD) | |",
        "| --- | --- |",
    ]
    costs = cost_per_1000(item)
    lines += [f"| {name} | {value:.4f} |" for name, value in costs.items()]
    lines += [f"| **total** | **{sum(costs.values()):.4f}** |", ""]
    limits = ceilings(agent_latency_s)
    lines += ["| one run saturates | items/s |", "| --- | --- |"]
    lines += [f"| {name} | {value:,.0f} |" for name, value in limits.items()]
    tightest = sorted(limits, key=lambda name: limits[name])
    lines.append(f"| **one run's ceiling** ({tightest[0]}) | **{limits[tightest[0]]:,.0f}** |")
    lines.append(f"| next ceiling ({tightest[1]}) | {limits[tightest[1]]:,.0f} |")
    lines.append(
        f"| per-invocation concurrency for {TARGET_ITEMS_PER_S:,} items/s "
        f"(mapping at {ITEM_MAX_CONCURRENCY}) | {calls_at_once_needed():g} |"
    )
    many = many_runs_ceilings(agent_latency_s)
    lines += ["", "| many concurrent runs saturate | items/s |", "| --- | --- |"]
    lines += [f"| {name} | {value:,.0f} |" for name, value in many.items()]
    lines.append(
        f"| **as deployed (mapping at {ITEM_MAX_CONCURRENCY})** | **{min(many.values()):,.0f}** |"
    )
    settle = settle_rows()
    if settle:
        lines += ["", "| settle | amount |", "| --- | --- |"]
        lines += [f"| {name} | {amount} |" for name, amount in settle]
    return "\n".join(lines)


# --- settle at size (engine.settle_slices; measured by bench/settle_sliced.py) -------------
#: pawl's CPU per settled item (read, reduce, label, accumulate, digest): the slowest
#: slice of bench/settle_sliced.py at 100,000 items in 4 slices (2026-12-07, load 7.5 on 2
#: shared cores: 153 us; the mean slice 130 us, one pass 104 us).
SETTLE_CPU_S_PER_ITEM = 153e-6
#: Lambda's CPU share grows with its memory: one full vCPU at 1,769 MB.
LAMBDA_VCPU = min(1.0, FUNCTION_MEMORY_MB / 1769)
#: One Query stream of 1 MB result pages (~100 ms a page: ~250 MB in ~25 s at 100,000).
SETTLE_READ_MB_PER_S = 10.0
#: What a slice adds besides its items: the invocation and SQS hop, the stored partial
#: (one S3 put), the done counter (one update); the combine's share: one S3 get each.
SLICE_OVERHEAD_S = 2.0
COMBINE_S_PER_SLICE = 0.1
SETTLE_MAX_CONCURRENCY = next(q.max_concurrency for q in queue_specs() if q.role == "runs")
SETTLE_FANOUT_ITEMS = 100_000  # settings.settle_fanout_items' default
SETTLE_SLICE_ITEMS = 50_000  # settings.settle_slice_items' default
LAMBDA_LIMIT_S = 900


def settle_item_seconds() -> float:
    """One item's settle on Lambda: its CPU at the function's vCPU share or its read,
    whichever is slower (the next page is read while this one is reduced)."""
    return max(SETTLE_CPU_S_PER_ITEM / LAMBDA_VCPU, RESULT_KB / 1024 / SETTLE_READ_MB_PER_S)


def settle_seconds(
    items: int,
    slice_items: int = SETTLE_SLICE_ITEMS,
    parallelism: int = SETTLE_MAX_CONCURRENCY,
    fanout_items: int = SETTLE_FANOUT_ITEMS,
) -> tuple[float, float]:
    """(the settle's wall time, the longest one invocation works) for a run of ``items``:
    one pass up to ``fanout_items``, else ``ceil(items / slice_items)`` slices run
    ``parallelism`` at a time, the last one combining the partials."""
    per_item = settle_item_seconds()
    if items <= fanout_items:
        return items * per_item, items * per_item
    slices = math.ceil(items / slice_items)
    one_slice = items / slices * per_item + SLICE_OVERHEAD_S
    combine = slices * COMBINE_S_PER_SLICE
    waves = math.ceil(slices / parallelism)
    return waves * one_slice + combine, one_slice + combine


def settle_rows(items: int = 1_000_000) -> list[tuple[str, str]]:
    """The settle's figures, (what, amount) rows of their own table in :func:`report`: one
    item's settle on Lambda, and a run of ``items`` settled in slices, its wall time and
    the longest any one invocation works, against Lambda's 15 minutes."""
    wall, longest = settle_seconds(items)
    slices = math.ceil(items / SETTLE_SLICE_ITEMS)
    return [
        (
            f"one item's settle (Lambda at {FUNCTION_MEMORY_MB} MB)",
            f"{settle_item_seconds() * 1e3:.2f} ms",
        ),
        (
            f"{items:,} items: {slices} slices, {SETTLE_MAX_CONCURRENCY} at once, wall",
            f"{wall:,.0f} s",
        ),
        (f"{items:,} items: longest invocation (limit {LAMBDA_LIMIT_S} s)", f"{longest:,.0f} s"),
    ]


if __name__ == "__main__":
    print(report())
