"""A settled run's per-item outcomes, kept in S3 so a later run compares against them cheaply.

A run that names a baseline compares item by item with it, and until now re-read all of
the baseline's result rows to do so (at 100,000 items, 100,000 rows through DynamoDB
Query pages: most of what a settle cost the stand-in). A settled run's rows never change,
so its settle writes each item's reduced outcome (what the comparison reads: passed,
errored, each scorer's mean score and verdict, under the run's own trial reducer) here,
and a later settle reads these few objects instead of the rows.

Layout, under ``runs/<run_id>/outcomes/``: ``part-00000.jsonl.gz`` ... (gzip JSON lines,
:data:`PART_ITEMS` items each, in item order), then ``manifest.json``, written last: a
digest without its manifest, or with a part missing, is not there and the reader says so
(``None``), so settle falls back to the rows. Keys derive from the run id, so a settle
that is retried writes the same objects again.

Since format 2 each line also holds the item's group label as its run's settle read it
(from the item's metadata then, under the run's ``group_by``, which the manifest names), so
a comparison of two digested runs reads no dataset metadata (``engine.comparison``). A
format-1 digest is still read (settle ignores labels); its entries' labels are unknown
(:attr:`Digest.labelled_by` is :data:`UNLABELLED`), and a reader that needs them reads the
items' current metadata as before.

Since format 3 the manifest lists its parts (``part_list``: each part's key, first and
last item id and item count) instead of only counting them, so a reader can open only the
parts that overlap an item range (a slice of a sliced settle reads just its share of the
baseline), and the parts of a digest written slice by slice (``part-s0003-00000...``, one
writer per slice) combine into one manifest in item order. Formats 1 and 2 are still read
(their parts named by number, every part opened and the range filtered as it streams).
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from typing import Any, NamedTuple

from chalicelib import aws
from chalicelib.settings import get_settings
from chalicelib.store import blobs

#: Items per part: a part is read (and written) whole, so this bounds what one holds.
PART_ITEMS = 10_000
#: Bumped when a line's shape changes; a digest of a format not in :data:`READ_FORMATS`
#: is not read. 2: a seventh field, the item's group label at settle. 3: an eighth and
#: ninth, the item's passed and scored trials (the trial-aware comparison pairs them), and
#: the manifest lists its parts with their item ranges (a sliced settle's range reads).
FORMAT = 3
READ_FORMATS = (1, 2, 3)
#: :attr:`Digest.labelled_by` of a digest whose lines hold no labels (format 1).
UNLABELLED = "\x00unlabelled"


class ScorerEntry(NamedTuple):
    key: str
    score: float
    passed: bool


class DigestEntry(NamedTuple):
    """One item's reduced outcome in a settled run (``passed`` is None when errored)."""

    dataset_item_id: str
    errored: bool
    passed: bool | None
    scores: tuple[ScorerEntry, ...]
    flaky: bool
    trial_count: int
    #: The group label at the run's settle (None: ungrouped, or a format-1 line).
    group: str | None = None
    #: Trials that passed and trials scored (None in a line written before format 3).
    passed_trials: int | None = None
    scored_trials: int | None = None


class DigestPart(NamedTuple):
    """One written part: its key, the first and last item id in it, how many items."""

    key: str
    first: str
    last: str
    items: int


class Digest(NamedTuple):
    """A complete digest: its entries a part at a time, and the ``group_by`` its labels
    were worked out under (:data:`UNLABELLED` for a format-1 digest)."""

    parts: Iterator[list[DigestEntry]]
    labelled_by: str | None


def prefix(run_id: str) -> str:
    return f"runs/{run_id}/outcomes/"


def part_key(run_id: str, number: int, tag: str = "") -> str:
    """A part's key; ``tag`` names the writer of a sliced settle's slice (``s0003-``)."""
    return f"{prefix(run_id)}part-{tag}{number:05d}.jsonl.gz"


def manifest_key(run_id: str) -> str:
    return f"{prefix(run_id)}manifest.json"


def _line(entry: DigestEntry) -> str:
    scores = [[s.key, s.score, s.passed] for s in entry.scores]
    return json.dumps(
        [
            entry.dataset_item_id,
            entry.errored,
            entry.passed,
            scores,
            entry.flaky,
            entry.trial_count,
            entry.group,
            entry.passed_trials,
            entry.scored_trials,
        ],
        separators=(",", ":"),
    )


def _entry(line: str) -> DigestEntry:
    item_id, errored, passed, scores, flaky, trial_count, *rest = json.loads(line)
    trials = rest[1:3] if len(rest) >= 3 else [None, None]
    return DigestEntry(
        dataset_item_id=item_id,
        errored=errored,
        passed=passed,
        scores=tuple(ScorerEntry(key, float(score), ok) for key, score, ok in scores),
        flaky=flaky,
        trial_count=trial_count,
        group=rest[0] if rest else None,
        passed_trials=trials[0],
        scored_trials=trials[1],
    )


class DigestWriter:
    """Feed a run's entries (or one slice's) in item order with :meth:`add`, then
    :meth:`close` (the parts written) and, for a whole run, :func:`write_manifest`; or
    :meth:`seal` for both. Holds one part's lines at a time."""

    def __init__(
        self, run_id: str, reducer: str, group_by: str | None = None, tag: str = ""
    ) -> None:
        self.run_id = run_id
        self.reducer = reducer
        self.group_by = group_by
        self.tag = tag
        self.parts: list[DigestPart] = []
        self._lines: list[str] = []
        self._first = ""
        self._last = ""

    def add(self, entry: DigestEntry) -> None:
        if not self._lines:
            self._first = entry.dataset_item_id
        self._last = entry.dataset_item_id
        self._lines.append(_line(entry))
        if len(self._lines) >= PART_ITEMS:
            self._flush()

    def _flush(self) -> None:
        body = gzip.compress(("\n".join(self._lines) + "\n").encode("utf-8"), compresslevel=5)
        key = part_key(self.run_id, len(self.parts), self.tag)
        blobs.put_bytes(key, body, "application/gzip")
        self.parts.append(DigestPart(key, self._first, self._last, len(self._lines)))
        self._lines = []

    def close(self) -> list[DigestPart]:
        """Write what is left; the parts written, in item order."""
        if self._lines:
            self._flush()
        return list(self.parts)

    def seal(self) -> None:
        write_manifest(self.run_id, self.reducer, self.group_by, self.close())


def write_manifest(
    run_id: str, reducer: str, group_by: str | None, parts: list[DigestPart]
) -> None:
    """The manifest over ``parts`` (in item order): written last, it makes the digest
    complete. Rewriting it with the same parts (a retried combine) changes nothing."""
    manifest = {
        "format": FORMAT,
        "reducer": reducer,
        "group_by": group_by,
        "parts": len(parts),
        "item_count": sum(part.items for part in parts),
        "part_list": [part._asdict() for part in parts],
    }
    blobs.put_bytes(manifest_key(run_id), json.dumps(manifest).encode(), "application/json")


def read_parts(run_id: str, reducer: str) -> Iterator[list[DigestEntry]] | None:
    """The run's entries in item order, a part at a time, or None when there is no
    complete digest of it reduced by ``reducer`` (settled before digests, or an object
    missing)."""
    digest = open_digest(run_id, reducer)
    return None if digest is None else digest.parts


def open_digest(
    run_id: str, reducer: str, lo: str | None = None, hi: str | None = None
) -> Digest | None:
    """The run's complete digest reduced by ``reducer``, or None (as :func:`read_parts`).

    With ``lo``/``hi``, only the entries whose item id is in ``[lo, hi)`` (None: unbounded),
    and of a format-3 digest only the parts that overlap that range are read."""
    raw = blobs.get_bytes(manifest_key(run_id))
    if raw is None:
        return None
    manifest: dict[str, Any] = json.loads(raw)
    if manifest.get("format") not in READ_FORMATS or manifest.get("reducer") != reducer:
        return None
    if manifest["format"] >= 3:
        listed = [DigestPart(**part) for part in manifest["part_list"]]
    else:
        listed = [
            DigestPart(part_key(run_id, number), "", "\U0010ffff", 0)
            for number in range(int(manifest["parts"]))
        ]
    if not {part.key for part in listed} <= _listed(prefix(run_id)):
        return None
    wanted = [part.key for part in listed if _overlaps(part, lo, hi)]
    labelled_by = manifest.get("group_by") if manifest["format"] >= 2 else UNLABELLED
    parts = _parts(wanted)
    if lo is not None or hi is not None:
        parts = _within(parts, lo, hi)
    return Digest(parts, labelled_by)


def _overlaps(part: DigestPart, lo: str | None, hi: str | None) -> bool:
    return (lo is None or part.last >= lo) and (hi is None or part.first < hi)


def _within(
    parts: Iterator[list[DigestEntry]], lo: str | None, hi: str | None
) -> Iterator[list[DigestEntry]]:
    """The entries of ``parts`` in ``[lo, hi)``; stops reading at the first one past it."""
    for part in parts:
        kept = [
            entry
            for entry in part
            if (lo is None or entry.dataset_item_id >= lo)
            and (hi is None or entry.dataset_item_id < hi)
        ]
        if kept:
            yield kept
        if part and hi is not None and part[-1].dataset_item_id >= hi:
            return


def _parts(keys: list[str]) -> Iterator[list[DigestEntry]]:
    for key in keys:
        body = blobs.get_bytes(key)
        if body is None:  # listed a moment ago; nothing deletes parts of a settled run
            raise RuntimeError(f"outcome digest part {key} disappeared while being read")
        yield [_entry(line) for line in gzip.decompress(body).decode("utf-8").splitlines()]


def _listed(key_prefix: str) -> set[str]:
    paginator = aws.client("s3").get_paginator("list_objects_v2")
    return {
        item["Key"]
        for page in paginator.paginate(Bucket=get_settings().bucket, Prefix=key_prefix)
        for item in page.get("Contents", [])
    }
