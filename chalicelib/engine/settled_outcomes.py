"""Where settle gets a run's per-item outcomes: its result rows, or its outcome digest.

A run being settled is read from its rows (``store.outcome_rows``) and, as each item is
reduced, written to its digest (``store.outcome_digest``). A baseline, settled earlier, is
read from its digest when it has one: a few S3 objects instead of one result row per
trial through DynamoDB. A baseline settled before digests existed, or whose digest is
incomplete, is read from its rows as before; both give the comparison the same
:class:`ItemOutcome` per item.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import chain

from chalicelib.engine.spend import SpendTally
from chalicelib.readahead import read_ahead
from chalicelib.stats import ItemOutcome, ScorerScore, TrialOutcome, group_consecutive
from chalicelib.stats import reduce_trials as reduce_item
from chalicelib.store import outcome_digest, outcome_rows
from chalicelib.store.outcome_digest import DigestEntry, ScorerEntry
from chalicelib.store.outcome_rows import OutcomeRow

Trials = list[TrialOutcome]
#: One item of a baseline stream: its trials (from rows) or its reduced outcome (digest).
BaselineItem = Trials | DigestEntry


def trial_outcome(row: OutcomeRow) -> TrialOutcome:
    scores = tuple(
        ScorerScore(key=s["scorer"], score=float(s["score"]), passed=bool(s["passed"]))
        for s in row.scores
    )
    return TrialOutcome(
        dataset_item_id=row.dataset_item_id, trial=row.trial, errored=row.errored, scores=scores
    )


def item_trials(
    run_id: str,
    spend: SpendTally | None = None,
    lo: str | None = None,
    hi: str | None = None,
    shards: int | None = None,
) -> Iterator[Trials]:
    """A run's trials grouped per item, in item order; ``spend`` sums every row's usage.
    With ``lo``/``hi``, only the items whose id is in ``[lo, hi)``. ``shards``: the run's
    shard count when the caller has its row (None: read from it)."""
    # The next page is read while this one is reduced (chalicelib/readahead.py).
    pages = read_ahead(outcome_rows.iter_outcome_pages(run_id, lo, hi, shards=shards))
    rows: Iterable[OutcomeRow] = chain.from_iterable(pages)
    if spend is not None:
        rows = _tapped(rows, spend)
    return group_consecutive(trial_outcome(row) for row in rows)


def _tapped(rows: Iterable[OutcomeRow], spend: SpendTally) -> Iterator[OutcomeRow]:
    for row in rows:
        spend.add_usage(row.usage, row.error_code)
        yield row


def baseline_items(
    run_id: str, reducer: str, lo: str | None = None, hi: str | None = None
) -> Iterator[BaselineItem]:
    """The baseline's items in item order: its digest's entries when it has a complete
    one reduced by ``reducer`` (its own), else its trials from the rows. With ``lo``/``hi``,
    only the items whose id is in ``[lo, hi)`` (and only the digest parts holding them)."""
    return labelled_items(run_id, reducer, None, lo, hi)[0]


def labelled_items(
    run_id: str, reducer: str, group_by: str | None, lo: str | None = None, hi: str | None = None
) -> tuple[Iterator[BaselineItem], bool]:
    """The run's items as :func:`baseline_items`, and whether each one's ``group`` is its
    label under ``group_by`` as the run's settle read it (a digest of format 2 or later
    written under that ``group_by``); when not, labels are to be read from metadata."""
    digest = outcome_digest.open_digest(run_id, reducer, lo, hi)
    if digest is None:
        return item_trials(run_id, lo=lo, hi=hi), False
    return chain.from_iterable(read_ahead(digest.parts)), digest.labelled_by == group_by


def item_id(item: BaselineItem) -> str:
    return item.dataset_item_id if isinstance(item, DigestEntry) else item[0].dataset_item_id


def baseline_outcome(item: BaselineItem, reducer: str, group: str | None) -> ItemOutcome:
    """The baseline item's outcome, labelled ``group``."""
    if not isinstance(item, DigestEntry):
        return reduce_item(item, reducer, group=group)
    return ItemOutcome(
        dataset_item_id=item.dataset_item_id,
        errored=item.errored,
        passed=item.passed,
        scores={s.key: ScorerScore(key=s.key, score=s.score, passed=s.passed) for s in item.scores},
        flaky=item.flaky,
        trial_count=item.trial_count,
        group=group,
        passed_trials=item.passed_trials,
        scored_trials=item.scored_trials,
    )


def digest_entry(item: ItemOutcome) -> DigestEntry:
    """What the digest keeps of a reduced item: all of it, its settle-time label too."""
    return DigestEntry(
        dataset_item_id=item.dataset_item_id,
        errored=item.errored,
        passed=item.passed,
        scores=tuple(ScorerEntry(s.key, s.score, s.passed) for s in item.scores.values()),
        flaky=item.flaky,
        trial_count=item.trial_count,
        group=item.group,
        passed_trials=item.passed_trials,
        scored_trials=item.scored_trials,
    )
