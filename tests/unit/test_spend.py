"""The run's spend, split by source."""

from __future__ import annotations

from chalicelib.domain.runs import EvalResult, UsageEntry
from chalicelib.engine.spend import SpendTally


def _result(*usage: UsageEntry) -> EvalResult:
    return EvalResult(
        id="evres_x",
        run_id="evrun_x",
        dataset_item_id="dsit_x",
        input=[],
        usage=list(usage),
        created_at="",
    )


def test_spend_is_summed_per_source_with_a_total() -> None:
    tally = SpendTally()
    tally.add(
        _result(
            UsageEntry(source="eval", input_tokens=10, output_tokens=3, cost_usd=0.01),
            UsageEntry(source="eval_judge", input_tokens=50, output_tokens=5),
        )
    )
    tally.add(
        _result(
            UsageEntry(source="eval", input_tokens=7, output_tokens=2, cost_usd=0.02),
            UsageEntry(source="embedding", input_tokens=12),
        )
    )
    tally.add(_result())
    assert tally.result() == {
        "by_source": {
            "embedding": {"calls": 1, "input_tokens": 12, "output_tokens": 0, "cost_usd": 0.0},
            "eval": {"calls": 2, "input_tokens": 17, "output_tokens": 5, "cost_usd": 0.03},
            "eval_judge": {"calls": 1, "input_tokens": 50, "output_tokens": 5, "cost_usd": 0.0},
        },
        "total": {"calls": 4, "input_tokens": 79, "output_tokens": 10, "cost_usd": 0.03},
    }
