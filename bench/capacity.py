"""Capacity model of a deployed pawl: per-item AWS work, cost per 1,000 items, ceilings.

Computes ``docs/scaling.md``'s tables from the engine's measured calls per item
(``bench/run_throughput.py``: 1,000 items, queued run) and AWS's published limits and
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
from chalicelib.workers.queues import ITEM_BATCH_SIZE

# --- measured: engine AWS calls per item (bench/run_throughput.py, queued run, 1,000 items)
ENGINE_CALLS_PER_ITEM = {
    ("dynamodb", "TransactWriteItems"): 0.029,  # two per batch of 90 (49 results+generations)
    ("dynamodb", "BatchGetItem"): 0.013,  # one per batch: the run and its result keys
    ("dynamodb", "GetItem"): 0.011,
    ("dynamodb", "Query"): 0.010,  # fan-out pages the dataset (200 a page); settle streams
    ("sqs", "SendMessageBatch"): 0.010,  # fan-out: 10 messages of 10 work items per call
    ("dynamodb", "UpdateItem"): 0.008,
    ("dynamodb", "BatchWriteItem"): 0.005,  # fan-out freezes a page of small items in a row
    ("dynamodb", "PutItem"): 0.001,
    ("sqs", "SendMessage"): 0.001,
}
#: Lambda's event source mapping: ReceiveMessage + DeleteMessageBatch, 10 messages of 10
#: work items per call (the local pollers measured 0.05-0.06/item, empty polls included).
EVENT_SOURCE_SQS_PER_ITEM = 0.02

# --- the engine's shape and the deployed stack's, read from where they are defined
ITEM_BATCH = ITEM_BATCH_SIZE
FANOUT_CHUNK = CHUNK_ITEMS
ITEM_MAX_CONCURRENCY = next(q.max_concurrency for q in queue_specs() if q.role == "items")
#: Agent calls one invocation makes at once for a run at the default max_concurrency
#: (chalicelib/engine/concurrency.py: the limit holds per invocation).
CALLS_AT_ONCE = min(ITEM_BATCH_SIZE, DEFAULT_MAX_CONCURRENCY)
FUNCTION_MEMORY_GB = FUNCTION_MEMORY_MB / 1024

# --- item sizes the engine writes, for a typical item (1 KB input, 1 KB output)
RESULT_KB = 2.5  # results row: input + expected + output + scores + keys
GENERATION_KB = 2.5  # generations row: input + output + usage
RUN_ITEM_KB = 1.2  # an item's share of a run-items page row: frozen input + expected
RUN_ROW_KB = 2.0  # runs row: counters, snapshot of the eval

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


def per_item(agent_latency_s: float = 1.0) -> PerItem:
    """What one item costs on AWS. A batch's items run :data:`CALLS_AT_ONCE` at a time, so
    its invocation lasts that many rounds of agent calls plus its own AWS round trips."""
    writes = (
        wcu(RESULT_KB, True) + wcu(GENERATION_KB, True)  # the batch transaction, per item
        + wcu(RUN_ROW_KB, True) / ITEM_BATCH  # its one run-counter update
        + RUN_ITEM_KB  # fan-out freezes the item (in a page row: rounded up once per page)
    )  # fmt: skip
    reads = (
        rcu(RUN_ITEM_KB)  # the batch reads its frozen items
        + rcu(RESULT_KB)  # ... and whether results exist (a miss still costs a unit)
        + rcu(RUN_ROW_KB) / ITEM_BATCH  # ... and the run
        + rcu(RUN_ITEM_KB, consistent=False) / 3  # fan-out's dataset query (~3 per 4 KB)
        + rcu(RESULT_KB, consistent=False) * RESULT_KB / 4  # settle streams results once
    )  # fmt: skip
    sqs = sum(n for (service, _), n in ENGINE_CALLS_PER_ITEM.items() if service == "sqs")
    invocations = 1 / ITEM_BATCH + 1 / FANOUT_CHUNK
    rounds = math.ceil(ITEM_BATCH / CALLS_AT_ONCE)
    batch_seconds = rounds * agent_latency_s + 0.1  # + the batch's reads and transactions
    return PerItem(
        writes=writes,
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
    """Items/s at which each shared resource of ONE run saturates."""
    return {
        # every result of a run shares the hash key run_id: one partition unless split
        "results partition (run_id)": PARTITION_WCU_PER_S / wcu(RESULT_KB, True),
        # one counter update per batch of 10, on the single runs row
        "run counter item": PARTITION_WCU_PER_S / wcu(RUN_ROW_KB, True) * ITEM_BATCH,
        # fan-out's frozen rows share the hash key run_id too
        "run-items partition (fan-out)": PARTITION_WCU_PER_S / RUN_ITEM_KB,
        # the mapping's invocations x a run's calls at once in each / how long a call lasts
        "Lambda (items mapping)": ITEM_MAX_CONCURRENCY * CALLS_AT_ONCE / agent_latency_s,
    }


def many_runs_ceilings(agent_latency_s: float = 1.0) -> dict[str, float]:
    """Items/s for many concurrent runs: partitions spread, shared limits remain."""
    return {
        "results table": TABLE_WCU_PER_S / wcu(RESULT_KB, True),
        "generations table": TABLE_WCU_PER_S / wcu(GENERATION_KB, True),
        "Lambda (items mapping)": ITEM_MAX_CONCURRENCY * CALLS_AT_ONCE / agent_latency_s,
        "Lambda (account, mapping raised)": ACCOUNT_CONCURRENCY * CALLS_AT_ONCE / agent_latency_s,
    }


def report(agent_latency_s: float = 1.0) -> str:
    item = per_item(agent_latency_s)
    lines = ["| per item | amount |", "| --- | --- |"]
    lines += [
        f"| DynamoDB write request units | {item.writes:.2f} |",
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
    lines.append(f"| **one run's ceiling** | **{min(limits.values()):,.0f}** |")
    many = many_runs_ceilings(agent_latency_s)
    lines += ["", "| many concurrent runs saturate | items/s |", "| --- | --- |"]
    lines += [f"| {name} | {value:,.0f} |" for name, value in many.items()]
    lines.append(
        f"| **as deployed (mapping at {ITEM_MAX_CONCURRENCY})** | **{min(many.values()):,.0f}** |"
    )
    lines += ["", *settle_table()]
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


def settle_table() -> list[str]:
    """The report's row: a million items' settle, sliced, against Lambda's 15 minutes."""
    items = 1_000_000
    wall, longest = settle_seconds(items)
    slices = math.ceil(items / SETTLE_SLICE_ITEMS)
    return [
        f"| settle (Lambda at {FUNCTION_MEMORY_MB} MB, {settle_item_seconds() * 1e3:.2f} ms an "
        f"item; limit {LAMBDA_LIMIT_S} s) | wall s | longest invocation s |",
        "| --- | --- | --- |",
        f"| {items:,} items: {slices} slices, {SETTLE_MAX_CONCURRENCY} at once "
        f"| {wall:,.0f} | {longest:,.0f} |",
    ]


if __name__ == "__main__":
    print(report())
