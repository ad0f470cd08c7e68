"""The paired verdict of a run against its baseline, task by task (RFC 0244 §F as RFC 0251
describes it for ``/v2``).

Pairs are the tasks scored in both runs. When any pair's pass flag flipped, the flips
decide through the exact McNemar test; when no pass flag flipped, the score differences
decide through the exact sign test (ties dropped), which is the same two-sided binomial
tail over the non-zero differences. ``improved`` / ``regressed`` when p < ``ALPHA`` in that
direction, ``unchanged`` when every paired score is equal, ``inconclusive`` otherwise (and
with no pairs at all). When pass flags flipped the verdict also carries the pass-rate
delta's paired interval (:mod:`chalicelib.stats.paired_interval`) and, inconclusive, the
paired tasks that would make it exclude 0. When any paired score is not 0 or 1 (a
continuous scorer) it also carries the mean paired score delta with its t interval and the
Wilcoxon signed-rank test, the figures ``/api/v1`` gives a continuous scorer. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from chalicelib.stats.mcnemar import mcnemar_exact_p
from chalicelib.stats.paired_interval import items_needed, paired_delta_interval
from chalicelib.stats.student_t import paired_t_interval
from chalicelib.stats.tally import PairedScorerTally
from chalicelib.stats.wilcoxon import SignedRankResult, signed_rank_test

ALPHA = 0.05


@dataclass(frozen=True)
class TaskScore:
    score: float
    passed: bool


@dataclass(frozen=True)
class PairedVerdict:
    paired: int
    improved: int
    regressed: int
    p_value: float | None
    verdict: str
    #: When pass flags flipped: the pass-rate delta's paired interval (pawl's addition) and,
    #: for an inconclusive verdict, the paired tasks at which it would exclude 0.
    delta_interval: dict[str, float | str] | None = None
    tasks_needed: int | None = None
    #: When the paired scores are continuous: their mean delta, its t interval, the test.
    score_test: ScoreTest | None = None


@dataclass(frozen=True)
class ScoreTest:
    mean_delta: float
    interval: dict[str, Any] | None
    signed_rank: SignedRankResult


def score_test(pairs: list[tuple[TaskScore, TaskScore]]) -> ScoreTest | None:
    """The continuous figures of the pairs, as a baseline comparison's scorer gets them
    (the same tally, so the same rounding of differences); None for 0/1 scores."""
    tally = PairedScorerTally()
    for here, there in pairs:
        tally.add(here.score, here.passed, there.score, there.passed)
    if not tally.continuous:
        return None
    return ScoreTest(
        mean_delta=tally.score_difference.value / tally.count,
        interval=paired_t_interval(tally.differences),
        signed_rank=signed_rank_test(tally.differences),
    )


def _counts(pairs: list[tuple[TaskScore, TaskScore]]) -> tuple[int, int]:
    """(improved, regressed): pass flips if any flipped, else score moves."""
    up = sum(1 for here, there in pairs if here.passed and not there.passed)
    down = sum(1 for here, there in pairs if there.passed and not here.passed)
    if up or down:
        return up, down
    up = sum(1 for here, there in pairs if here.score > there.score)
    down = sum(1 for here, there in pairs if here.score < there.score)
    return up, down


def paired_verdict(pairs: Iterable[tuple[TaskScore, TaskScore]]) -> PairedVerdict:
    """The verdict of ``(this run, baseline)`` task pairs."""
    paired = list(pairs)
    if not paired:
        return PairedVerdict(0, 0, 0, None, "inconclusive")
    improved, regressed = _counts(paired)
    p_value = mcnemar_exact_p(improved, regressed)
    if all(here.score == there.score for here, there in paired) and not (improved or regressed):
        verdict = "unchanged"
    elif p_value < ALPHA and improved != regressed:
        verdict = "improved" if improved > regressed else "regressed"
    else:
        verdict = "inconclusive"
    decided = PairedVerdict(
        len(paired), improved, regressed, p_value, verdict, score_test=score_test(paired)
    )
    flipped = any(here.passed != there.passed for here, there in paired)
    return _with_interval(decided, paired) if flipped else decided


def _with_interval(
    verdict: PairedVerdict, pairs: list[tuple[TaskScore, TaskScore]]
) -> PairedVerdict:
    """The flip table's interval and, when inconclusive, the tasks at which (proportions
    held) it would exclude 0; None when it already does (McNemar and the interval can
    disagree at the edge) or never will."""
    both = sum(1 for here, there in pairs if here.passed and there.passed)
    table = (both, verdict.improved, verdict.regressed, verdict.paired)
    needed = items_needed(*table, margin=0.0) if verdict.verdict == "inconclusive" else None
    return replace(
        verdict,
        delta_interval=paired_delta_interval(*table),
        tasks_needed=needed if needed is not None and needed > verdict.paired else None,
    )
