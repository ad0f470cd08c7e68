"""The paired verdict of a run against its baseline, task by task (RFC 0244 §F as RFC 0251
describes it for ``/v2``).

Pairs are the tasks scored in both runs. When any pair's pass flag flipped, the flips
decide through the exact McNemar test; when no pass flag flipped, the score differences
decide through the exact sign test (ties dropped), which is the same two-sided binomial
tail over the non-zero differences. ``improved`` / ``regressed`` when p < ``ALPHA`` in that
direction, ``unchanged`` when every paired score is equal, ``inconclusive`` otherwise (and
with no pairs at all). Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from chalicelib.stats.mcnemar import mcnemar_exact_p

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
    return PairedVerdict(len(paired), improved, regressed, p_value, verdict)
