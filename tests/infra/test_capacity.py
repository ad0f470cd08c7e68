"""docs/scaling.md's capacity tables are what bench/capacity.py computes; its arithmetic holds."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bench import capacity

DOC = Path(__file__).resolve().parents[2] / "docs" / "scaling.md"


def test_the_doc_holds_the_scripts_tables() -> None:
    text = DOC.read_text()
    found = re.search(r"<!-- capacity:begin -->\n(.*)\n<!-- capacity:end -->", text, re.S)
    assert found, "docs/scaling.md lost its capacity markers"
    assert found.group(1).strip() == capacity.report().strip(), (
        "run `python bench/capacity.py` and paste its output into docs/scaling.md"
    )


def test_request_units_follow_dynamodb_rounding() -> None:
    assert capacity.wcu(2.5) == 3 and capacity.wcu(2.5, transactional=True) == 6
    assert capacity.wcu(1.0) == 1
    assert capacity.rcu(4.0) == 1 and capacity.rcu(4.1) == 2
    assert capacity.rcu(1.2, consistent=False) == 0.5


def test_one_runs_ceiling_is_its_tightest_resource() -> None:
    limits = capacity.ceilings()
    shards = capacity.SHARDS
    assert limits[f"results partitions ({shards} shards)"] == pytest.approx(shards * 1000 / 3)
    tightest = min(limits, key=lambda k: limits[k])
    assert tightest == "usage partition (project_id)"
    # The mapping's invocations, each making the default max_concurrency (40) calls at
    # once: a slow agent moves the ceiling to Lambda concurrency.
    slow = capacity.ceilings(agent_latency_s=20)
    assert min(slow, key=lambda k: slow[k]) == "Lambda (items mapping)"
    mapping = capacity.ITEM_MAX_CONCURRENCY
    assert slow["Lambda (items mapping)"] == pytest.approx(mapping * 40 / 20)
    assert capacity.calls_at_once_needed() == pytest.approx(2000 / mapping)


def test_the_model_meets_issue_27s_targets() -> None:
    """One run as deployed: >= 2,000 items/s; <= 6 write units and <= $0.0045 per 1,000."""
    assert min(capacity.ceilings().values()) >= 2000
    item = capacity.per_item()
    assert item.writes <= 6
    assert sum(capacity.cost_per_1000(item).values()) <= 0.0045
    report = capacity.report()
    assert "**one run's ceiling**" in report and "next ceiling" in report


def test_cost_adds_up_from_its_parts() -> None:
    item = capacity.per_item()
    costs = capacity.cost_per_1000(item)
    assert costs["DynamoDB writes"] == pytest.approx(item.writes * 1000 * 0.625 / 1e6)
    assert item.writes == pytest.approx(sum(capacity.writes_per_item().values()))
    assert item.sqs_requests == pytest.approx(0.011 + 0.02)
    # A batch of 90 runs 40 at a time at the default concurrency: three rounds of agent
    # calls per invocation (0.5 GB functions), plus its own DynamoDB round trips.
    own = sum(n for (svc, _), n in capacity.ENGINE_CALLS_PER_ITEM.items() if svc == "dynamodb")
    assert item.gb_seconds == pytest.approx((3 * 1.0 + own * 90 * 0.01) * 0.5 / 90)
    assert max(costs, key=lambda k: costs[k]) == "DynamoDB writes"


def test_a_million_item_settle_fits_well_inside_the_lambda_limit() -> None:
    wall, longest = capacity.settle_seconds(1_000_000)
    assert wall < capacity.LAMBDA_LIMIT_S / 3  # the whole settle, slices in waves
    assert longest < capacity.LAMBDA_LIMIT_S / 10  # what any one invocation works
    one_pass, _ = capacity.settle_seconds(1_000_000, fanout_items=10**9)
    assert one_pass > 2 * wall  # slicing is what brings it down
    assert one_pass == pytest.approx(1_000_000 * capacity.settle_item_seconds())
    # Under the fan-out size a run settles in one pass, as before.
    assert capacity.settle_seconds(100_000) == (100_000 * capacity.settle_item_seconds(),) * 2
