"""Settle with trials > 1: the run's ``trials`` figures, the comparison's paired trial
proportions (read from the baseline's digest, format 3, or its rows), and the verdict
that reads them. Runs are written as the engine writes them, into in-process moto."""

from __future__ import annotations

import gzip
import json
from typing import Any

import pytest

from chalicelib import aws
from chalicelib.engine import settle
from chalicelib.settings import get_settings
from chalicelib.store import outcome_digest, runs
from tests.integration.test_outcome_digest import (
    Trial,
    _delete_digest,
    _seed_items,
    _seed_run,
    _settlement,
    _snapshot,
)

PASS: Trial = {"numeric": (1.0, True)}
FAIL: Trial = {"numeric": (0.0, False)}


def trials_of(pattern: str) -> list[Trial]:
    return [None if mark == "e" else PASS if mark == "1" else FAIL for mark in pattern]


def seeded(patterns: list[str], prefix: str) -> dict[str, list[Trial]]:
    return {f"dsit_{prefix}{n:03d}": trials_of(p) for n, p in enumerate(patterns)}


@pytest.fixture
def settled_pair(aws_env: None) -> tuple[Any, Any]:
    # 40 items, 5 trials: the baseline passes 4 of 5 of each; the candidate 2 of 5 of the
    # first 30 and 4 of 5 of the rest, one of its trials errored on the last item.
    before = seeded(["11110"] * 40, "t")
    after = seeded(["11000"] * 30 + ["11110"] * 9 + ["e1110"], "t")
    _seed_items(dict.fromkeys(before, "a"))
    snapshot = _snapshot("any", None, trials=5)
    baseline = _seed_run(snapshot, None, before)
    assert runs.claim_settle(baseline.id) and settle.settle_run(baseline.id)
    return baseline, _seed_run(snapshot, baseline.id, after)


def test_settle_writes_the_trial_figures_and_the_gate_reads_them(settled_pair: Any) -> None:
    _, candidate = settled_pair
    assert runs.claim_settle(candidate.id) and settle.settle_run(candidate.id)
    run = runs.get_run(candidate.id).run
    scores = run.aggregate_scores
    assert scores is not None
    trials = scores["trials"]
    assert trials["count"] == 5 and trials["item_count"] == 40 and trials["trial_count"] == 199
    assert trials["pass_rate"] == pytest.approx((30 * 0.4 + 9 * 0.8 + 0.75) / 40)
    assert set(trials["pass_at_k"]) == {"1", "2", "3", "4", "5"}
    assert trials["k_item_count"]["5"] == 39  # the item with an errored trial has 4
    assert trials["noise_floor"]["items"] == 40 and trials["noise_floor"]["flip_rate"] > 0
    paired = scores["baseline"]["trials"]
    assert paired["item_count"] == 40 and paired["uncounted_item_count"] == 0
    assert paired["pass_rate_delta"] == pytest.approx((30 * -0.4 - 0.05) / 40)
    assert paired["exact"] is True and paired["p_value"] < 1e-6
    # The "any" reducer passes every item in both runs: only the trials see the drop.
    assert scores["baseline"]["pass_rate_delta"] == 0.0
    assert run.verdict_reasons is not None
    (reason,) = [r for r in run.verdict_reasons if r["gate"] == "max_regression"]
    assert reason["unit"] == "trial_proportion" and reason["conclusion"] == "regressed"
    assert run.passed is False


def test_the_digest_keeps_each_items_trial_counts(settled_pair: Any) -> None:
    baseline, candidate = settled_pair
    key = outcome_digest.part_key(baseline.id, 0)
    body = aws.client("s3").get_object(Bucket=get_settings().bucket, Key=key)["Body"].read()
    first = json.loads(gzip.decompress(body).decode().splitlines()[0])
    assert first[-2:] == [4, 5]
    from_digest = _settlement(candidate.id)
    _delete_digest(baseline.id)
    from_rows = _settlement(candidate.id)
    assert from_digest.baseline == from_rows.baseline
    assert from_digest.aggregate == from_rows.aggregate


def test_a_format_two_line_reads_without_trial_counts() -> None:
    line = json.dumps(["dsit_a", False, True, [["numeric", 1.0, True]], False, 3, "g"])
    entry = outcome_digest._entry(line)
    assert entry.group == "g" and entry.passed_trials is None and entry.scored_trials is None
