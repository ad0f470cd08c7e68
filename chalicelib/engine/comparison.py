"""Two runs of one eval compared item by item, on request (the API's comparison route).

One pass over both runs in ``dataset_item_id`` order, as settle compares a run with its
baseline: each run's items come from its outcome digest when it has a complete one, else
from its result rows (``engine.settled_outcomes.baseline_items``), are merge-joined
(``stats.merge_join``), labelled and reduced with each run's own trial reducer.

Labels: an item of the current run is labelled as that run's settle labelled it, from the
run's outcome digest (format 2 on, written under the eval's ``group_by``), so the groups
are the ones its stored aggregate counted and a later edit of an item's metadata does not
move it. Only an item of the baseline alone (removed), or every item when the current run
has no such digest (settled before labels were kept, or under another ``group_by``), is
labelled from its *current* metadata, a page (BatchGetItem) at a time, as settle labels
it. So a comparison of two digested runs reads metadata only for its removed items
(decisions.md, "Comparison labels are settle-time").

:class:`~chalicelib.stats.BaselineComparator` works out the figures; beside it this
module keeps, per kind of item, only the page being asked for (``limit + 1`` entries after
the cursor), so memory stays bounded whatever the runs' size.

Kinds: ``regressed`` (passed in the baseline, not now), ``improved``, ``unchanged`` (the
items compared), ``added`` and ``removed`` (scorable in one run only, as the comparator
counts them). With a ``scorer`` the verdict compared is that scorer's, over the items both
runs scored with it. The listed order is regressions, then improvements, then unchanged,
each in item order.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

from chalicelib.domain.runs import RunState, result_key
from chalicelib.engine.settled_outcomes import (
    BaselineItem,
    baseline_items,
    baseline_outcome,
    labelled_items,
)
from chalicelib.engine.settled_outcomes import item_id as id_of
from chalicelib.stats import BaselineComparator, ItemOutcome, group_label, merge_join
from chalicelib.store import outcome_rows, results, runs
from chalicelib.store.outcome_digest import DigestEntry
from chalicelib.store.results import from_model

#: The kinds of compared items, in the order they are listed.
COMPARED_KINDS = ("regressed", "improved", "unchanged")
#: ``?changed=``: which compared kinds the list holds.
CHANGED = {"true": COMPARED_KINDS[:2], "false": COMPARED_KINDS[2:], "all": COMPARED_KINDS}
#: Items of one run only that an answer lists (their counts are whole).
EDGE_LIMIT = 100
#: Items labelled at a time.
_LABEL_PAGE = outcome_rows.METADATA_WAVE
_BATCH_GET = 100


@dataclass(frozen=True)
class Selection:
    """Which items the answer lists: kinds, group, scorer, and the page after ``after``."""

    changed: str = "true"
    group: str | None = None
    scorer: str | None = None
    limit: int = 20
    #: ``(rank of the kind, dataset_item_id)`` of the last item of the previous page.
    after: tuple[int, str] | None = None


@dataclass
class Entry:
    """One item of the answer: both sides' outcomes and, once read, their trials in order
    (every trial for a listed item, the first for an item of one run only)."""

    dataset_item_id: str
    kind: str
    group: str | None
    current: ItemOutcome | None
    baseline: ItemOutcome | None
    trials: dict[str, list[Any]] = field(default_factory=dict)


@dataclass
class Comparison:
    figures: dict[str, Any]
    page: list[Entry]
    more: bool
    counts: dict[str, int]
    added: list[Entry]
    removed: list[Entry]
    groups: list[str]
    scorers: list[str]


def _kind(here: ItemOutcome, there: ItemOutcome, scorer: str | None) -> str | None:
    """How a compared item moved (None: the scorer did not score it on both sides)."""
    if scorer is None:
        now, before = here.passed, there.passed
    else:
        mine, theirs = here.scores.get(scorer), there.scores.get(scorer)
        if mine is None or theirs is None:
            return None
        now, before = mine.passed, theirs.passed
    if now == before:
        return "unchanged"
    return "improved" if now else "regressed"


def _classify(
    here: ItemOutcome | None, there: ItemOutcome | None, scorer: str | None
) -> str | None:
    """The item's kind, as :class:`BaselineComparator` splits pairs (None: in no list)."""
    here_scorable = here is not None and not here.errored
    there_scorable = there is not None and not there.errored
    if here is not None and there is not None and here_scorable and there_scorable:
        return _kind(here, there, scorer)
    if here_scorable:
        return "added" if scorer is None or (here and scorer in here.scores) else None
    if there_scorable:
        return "removed" if scorer is None or (there and scorer in there.scores) else None
    return None


Pair = tuple[BaselineItem | None, BaselineItem | None]


def _labelled(
    current: Iterator[BaselineItem],
    baseline: Iterator[BaselineItem],
    group_by: str | None,
    kept: bool,
) -> Iterator[tuple[BaselineItem | None, BaselineItem | None, str | None]]:
    """Both runs' items merge-joined in item order, labelled a page of items at a time;
    ``kept``: the current side's digest entries carry their settle-time labels."""
    pairs = merge_join(current, baseline, key=id_of)
    while page := list(islice(pairs, _LABEL_PAGE)):
        labels = _page_labels(page, group_by, kept)
        for (here, there), label in zip(page, labels, strict=True):
            yield here, there, label


def _page_labels(page: list[Pair], group_by: str | None, kept: bool) -> list[str | None]:
    """Each pair's label: the current side's kept one, else (an item of the baseline only,
    or none kept) from the items' current metadata, in one BatchGetItem."""
    labels: list[str | None] = [None] * len(page)
    if group_by is None:
        return labels
    unknown: dict[int, str] = {}
    for index, (here, there) in enumerate(page):
        if kept and isinstance(here, DigestEntry):
            labels[index] = here.group
        else:
            side = here if here is not None else there
            assert side is not None  # merge_join yields no empty pair
            unknown[index] = id_of(side)
    if unknown:
        metadata = outcome_rows.batch_get_metadata(unknown.values())
        for index, key in unknown.items():
            labels[index] = group_label(metadata.get(key), group_by)
    return labels


class _Lists:
    """The page of each listed kind after the cursor, and the first items of one run only."""

    def __init__(self, selection: Selection) -> None:
        self.selection = selection
        self.listed = CHANGED[selection.changed]
        self.kept: dict[str, list[Entry]] = {kind: [] for kind in self.listed}
        self.counts = dict.fromkeys((*COMPARED_KINDS, "added", "removed"), 0)
        self.edges: dict[str, list[Entry]] = {"added": [], "removed": []}

    def add(self, entry: Entry) -> None:
        self.counts[entry.kind] += 1
        if entry.kind in self.edges:
            if len(self.edges[entry.kind]) < EDGE_LIMIT:
                self.edges[entry.kind].append(entry)
            return
        kept = self.kept.get(entry.kind)
        after = self.selection.after
        if kept is None or len(kept) > self.selection.limit:
            return
        if after is None or (COMPARED_KINDS.index(entry.kind), entry.dataset_item_id) > after:
            kept.append(entry)

    def page(self) -> tuple[list[Entry], bool]:
        ordered = [entry for kind in self.listed for entry in self.kept[kind]]
        limit = self.selection.limit
        return ordered[:limit], len(ordered) > limit


def compare(current: RunState, baseline: RunState, selection: Selection) -> Comparison:
    """``current`` against ``baseline``: the figures, and the items ``selection`` lists."""
    group_by = current.snapshot.group_by
    trials = max(current.snapshot.trials, baseline.snapshot.trials)
    comparator = BaselineComparator(baseline.id, group_by, trials)
    lists = _Lists(selection)
    groups: set[str] = set()
    scorers: set[str] = set()
    here_reducer = current.snapshot.trial_reducer
    there_reducer = baseline.snapshot.trial_reducer
    here_items, here_kept = labelled_items(current.id, here_reducer, group_by)
    there_items = baseline_items(baseline.id, there_reducer)
    labelled = _labelled(here_items, there_items, group_by, here_kept)
    for here_item, there_item, label in labelled:
        here = baseline_outcome(here_item, here_reducer, label) if here_item else None
        there = baseline_outcome(there_item, there_reducer, label) if there_item else None
        comparator.add(here, there)
        if label is not None:
            groups.add(label)
        for side in (here, there):
            if side is not None:
                scorers.update(side.scores)
        if selection.group is not None and label != selection.group:
            continue
        kind = _classify(here, there, selection.scorer)
        if kind is not None:
            side = here if here is not None else there
            assert side is not None
            lists.add(Entry(side.dataset_item_id, kind, label, here, there))
    page, more = lists.page()
    edges = [*lists.edges["added"], *lists.edges["removed"]]
    sides = (current.id, current.snapshot.trials), (baseline.id, baseline.snapshot.trials)
    _attach_trials(sides, page)
    _attach_trials(((current.id, 1), (baseline.id, 1)), edges)
    return Comparison(
        figures=comparator.result(),
        page=page,
        more=more,
        counts=lists.counts,
        added=lists.edges["added"],
        removed=lists.edges["removed"],
        groups=sorted(groups),
        scorers=sorted(scorers),
    )


def _attach_trials(sides: tuple[tuple[str, int], tuple[str, int]], entries: list[Entry]) -> None:
    """Each entry's trials on each side (outputs whole, in trial order), in BatchGetItems:
    ``sides`` is ``((current run id, trials), (baseline run id, trials))``, the trials a
    run's snapshot asked for (1-10; a trial with no row is simply absent)."""
    named = (("current", *sides[0]), ("baseline", *sides[1]))
    wanted = list(
        dict.fromkeys(
            (run_id, result_key(entry.dataset_item_id, trial))
            for entry in entries
            for name, run_id, trials in named
            if getattr(entry, name) is not None
            for trial in range(1, max(1, trials) + 1)
        )
    )
    found: dict[tuple[str, str], list[Any]] = {}
    shard_counts = {run_id: runs.read_shards(run_id) for _, run_id, _ in named}
    for model in results.get_many(wanted, shard_counts):
        result = from_model(model)
        found.setdefault((result.run_id, model.dataset_item_id), []).append(result)
    for entry in entries:
        for name, run_id, _ in named:
            trials = sorted(found.get((run_id, entry.dataset_item_id), []), key=lambda t: t.trial)
            if trials:
                entry.trials[name] = trials
