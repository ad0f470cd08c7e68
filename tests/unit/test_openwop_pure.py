"""The pure parts of ``/v2``: expected.match, rubric weighting, the paired verdict, events."""

from __future__ import annotations

from collections import Counter

import pytest

from chalicelib.openwop import matching, rubric, suites, summary
from chalicelib.openwop.summary import RunFacts, TaskOutcome
from chalicelib.stats.paired import TaskScore, paired_verdict
from chalicelib.stats.paired_interval import items_needed, paired_delta_interval
from chalicelib.stats.student_t import paired_t_interval
from chalicelib.stats.wilcoxon import signed_rank_test


def test_exact_contains_and_json_match() -> None:
    assert matching.matches({"strategy": "exact", "value": "4"}, "4")
    assert not matching.matches({"strategy": "exact", "value": "4"}, " 4")
    assert matching.matches({"strategy": "exact", "value": 4}, "4")
    assert matching.matches({"strategy": "contains", "value": "refund"}, "a refund in 30 days")
    assert not matching.matches({"strategy": "contains", "value": "Refund"}, "a refund")
    json_match = {"strategy": "json-match", "value": {"a": [1, {"b": True}]}}
    assert matching.matches(json_match, '{ "a" : [1, {"b": true}] }')
    assert not matching.matches(json_match, '{"a": [1, {"b": 1}]}')  # true is not 1
    assert not matching.matches(json_match, '{"a": [1.0, {"b": true}], "c": 1}')
    assert not matching.matches(json_match, "not json")
    assert matching.matches({"strategy": "json-match", "value": 1}, "1.0")
    assert matching.matches(json_match, "ignored", {"a": [1, {"b": True}]})


def test_rubric_weights_the_met_criteria() -> None:
    criteria = [
        {"criterion": "a", "weight": 0.5},
        {"criterion": "b", "weight": 0.25},
        {"criterion": "c", "weight": 0.25},
    ]
    assert rubric.weighted_score(criteria, {"met": [True, False, True]}) == 0.75
    for bad in (None, {"met": [True]}, {"met": [1, 0, 1]}, {"score": 1}):
        with pytest.raises(ValueError):
            rubric.weighted_score(criteria, bad)
    assert "1. b" in rubric.prompt([], "out", criteria)


def test_task_inputs_become_messages() -> None:
    assert suites.input_messages("hi") == [{"role": "user", "content": "hi"}]
    conversation = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "q"}]
    assert suites.input_messages(conversation) == conversation
    assert suites.input_messages({"a": 1}) == [{"role": "user", "content": '{"a": 1}'}]
    assert suites.input_messages([1, 2]) == [{"role": "user", "content": "[1, 2]"}]


def _pairs(*rows: tuple[float, bool, float, bool]) -> list[tuple[TaskScore, TaskScore]]:
    return [(TaskScore(a, b), TaskScore(c, d)) for a, b, c, d in rows]


def test_the_paired_verdict() -> None:
    assert paired_verdict([]).verdict == "inconclusive"
    same = paired_verdict(_pairs((1, True, 1, True), (0, False, 0, False)))
    assert (same.verdict, same.p_value) == ("unchanged", 1.0)
    down = paired_verdict(_pairs(*[(0, False, 1, True)] * 6))
    assert (down.verdict, down.regressed, down.p_value) == ("regressed", 6, 0.03125)
    up = paired_verdict(_pairs(*[(1, True, 0, False)] * 6))
    assert up.verdict == "improved"
    few = paired_verdict(_pairs(*[(0, False, 1, True)] * 5))
    assert few.verdict == "inconclusive"  # p = 0.0625
    # No pass flag flipped: the sign test on the scores decides.
    scores = paired_verdict(_pairs(*[(0.9, True, 0.8, True)] * 6))
    assert (scores.verdict, scores.improved) == ("improved", 6)


def _facts(status: str) -> RunFacts:
    return RunFacts("a.evals.b", "1.0.0", 3, ["golden"], {}, status, "t0", "t9")


def _outcome(index: int) -> TaskOutcome:
    return TaskOutcome(f"t{index}", index, 1.0, True, False, f"t{index + 1}")


def test_events_of_a_running_run_are_a_prefix_of_the_final_ones() -> None:
    running = summary.events(_facts("running"), [_outcome(0), _outcome(2)], None)
    assert [e["sequence"] for e in running] == [1, 2]  # task 1 not yet scored
    final = summary.events(
        _facts("completed"), [_outcome(2), _outcome(0), _outcome(1)], {"aggregateScore": 1.0}
    )
    assert final[: len(running)] == running
    assert [e["sequence"] for e in final] == [1, 2, 3, 4, 5]
    assert final[-1]["type"] == "eval.completed"


def test_thresholds_decide_passed() -> None:
    slow = [TaskOutcome("a", 0, 1.0, True, False, "t", latency_ms=900, cost_usd=0.2)]
    assert summary.run_passed(slow, {"passScore": 1.0})
    assert not summary.run_passed(slow, {"maxP95LatencyMs": 500})
    assert not summary.run_passed(slow, {"maxCostUsd": 0.1})
    assert summary.p95([1, 2, 3, 4, 100]) == 100


def test_the_paired_verdict_carries_the_flip_interval_and_the_tasks_needed() -> None:
    # 6 pass twice, 1 improved, 3 regressed: McNemar p = 0.625, inconclusive.
    rows = [(1, True, 1, True)] * 6 + [(1, True, 0, False)] + [(0, False, 1, True)] * 3
    verdict = paired_verdict(_pairs(*rows))
    assert verdict.verdict == "inconclusive"
    assert verdict.delta_interval == paired_delta_interval(6, 1, 3, 10)
    needed = items_needed(6, 1, 3, 10, margin=0.0)
    assert verdict.tasks_needed == needed and needed is not None and needed > 10
    # Decided verdicts name no tasks; no flipped pass flag, no interval (scores decided).
    assert paired_verdict(_pairs(*[(0, False, 1, True)] * 6)).tasks_needed is None
    scores = paired_verdict(_pairs(*[(0.9, True, 0.8, True)] * 6))
    assert scores.delta_interval is None and scores.tasks_needed is None


def test_the_regression_block_adds_the_interval_only_when_flags_flipped() -> None:
    def outcome(task: str, score: float, passed: bool) -> TaskOutcome:
        return TaskOutcome(task, 0, score, passed, False, "t")

    now = [outcome("a", 0.0, False), outcome("b", 1.0, True)]
    before = [outcome("a", 1.0, True), outcome("b", 1.0, True)]
    block = summary.regression("run_b", now, before)
    assert block["passRateDeltaInterval"] == paired_delta_interval(1, 0, 1, 2)
    assert block["verdict"] == "inconclusive" and block["pairedTasksNeeded"] is not None
    steady = summary.regression("run_b", before, before)
    assert "passRateDeltaInterval" not in steady and "pairedTasksNeeded" not in steady


def test_continuous_pairs_carry_the_score_delta_interval_and_signed_rank_test() -> None:
    def outcome(task: str, score: float) -> TaskOutcome:
        return TaskOutcome(task, 0, score, score >= 0.5, False, "t")

    before = [outcome(f"t{i}", 0.6 + i / 100) for i in range(12)]
    now = [outcome(f"t{i}", 0.6 + i / 100 - (0.05 if i % 4 else -0.02)) for i in range(12)]
    block = summary.regression("run_b", now, before)
    differences = [round(n.score - b.score, 12) for n, b in zip(now, before, strict=True)]
    assert block["pairedScoreDelta"] == pytest.approx(sum(differences) / 12)
    assert block["pairedScoreDeltaInterval"] == paired_t_interval(Counter(differences))
    expected = signed_rank_test(differences)
    assert block["signedRank"] == {
        "statistic": expected.statistic,
        "pValue": expected.p_value,
        "method": "exact_permutation",  # 12 tasks, tied differences
        "n": 12,
    }
    # 0/1 scores: neither.
    flags = summary.regression("run_b", [outcome("a", 0.0)], [outcome("a", 1.0)])
    assert "signedRank" not in flags and "pairedScoreDeltaInterval" not in flags
