"""When the stand-in takes a snapshot: once the journal since the last one is big enough.

A snapshot writes the *whole* state; the journal only what changed. Snapshotting on a fixed
clock costs (state size x time): at 100,000 items a 376 MB state was rewritten every 10 s,
so a forked writer kept one core busy for most of a run. The rule here is the usual one
for log compaction (Redis's ``auto-aof-rewrite-percentage`` / ``-min-size``): compact only
when the journal written since the last cut is at least ``max(min_journal_bytes,
journal_ratio x last snapshot's size)``. Each snapshot is then paid for by at least that
many bytes of writes, so the total cost follows the writes, not the clock; and a restart
after ``kill -9`` replays at most that much journal over the snapshot.

The figures behind the defaults are in ``docs/decisions.md`` ("Snapshots follow the
journal").
"""

from __future__ import annotations

from dataclasses import dataclass

MB = 1024 * 1024

#: Below this much journal, never compact on a tick: replaying it takes a few seconds.
DEFAULT_MIN_JOURNAL_BYTES = 4 * MB
#: Compact once the journal reaches this fraction of the last snapshot's size.
DEFAULT_JOURNAL_RATIO = 0.25


@dataclass(frozen=True)
class CompactionPolicy:
    min_journal_bytes: int = DEFAULT_MIN_JOURNAL_BYTES
    journal_ratio: float = DEFAULT_JOURNAL_RATIO

    def __post_init__(self) -> None:
        if self.min_journal_bytes < 0 or self.journal_ratio < 0:
            raise ValueError("the snapshot policy's floor and ratio cannot be negative")

    @classmethod
    def from_megabytes(cls, min_journal_mb: float, journal_ratio: float) -> CompactionPolicy:
        """The policy as ``pawl serve``'s flags give it (the floor in MB)."""
        return cls(min_journal_bytes=int(min_journal_mb * MB), journal_ratio=journal_ratio)

    def threshold(self, snapshot_bytes: int) -> int:
        """How many journal bytes since the cut make a snapshot due."""
        return max(self.min_journal_bytes, int(self.journal_ratio * snapshot_bytes))

    def due(self, journal_bytes: int, snapshot_bytes: int) -> bool:
        """Whether to snapshot now, given the journal since the last cut and the last
        snapshot's size (0 when there is none). An empty journal is never due."""
        return journal_bytes > 0 and journal_bytes >= self.threshold(snapshot_bytes)
