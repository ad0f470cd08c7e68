"""Bringing a stand-in's state back: the last snapshot restored into moto, the journal
replayed after it, and what came back reported (logged, and counted for ``pawl serve``).

The stand-in does the work (``local/standin_state.py``); this module asks it and reads the
answer, for a runtime's start and for the supervisor's restart alike.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chalicelib.settings import get_settings
from pawl.local import snapshot
from pawl.local.standin import AwsStandIn

log = logging.getLogger("pawl.local")


@dataclass(frozen=True)
class Reopened:
    """What opening the state dir found."""

    #: What replaying the journal found (segments, records, torn tails, the restore).
    replayed: dict[str, Any]
    #: The snapshot restored (None: there was none).
    restored: snapshot.RestoreSummary | None

    @property
    def journal_behind(self) -> bool:
        """Replayed journal segments not yet folded into a snapshot."""
        return bool(self.replayed["segments"])


def restore_and_open_journal(standin: AwsStandIn, state_dir: Path) -> Reopened:
    """The stand-in restores the last snapshot into moto itself, replays what was
    acknowledged after it, then journals from here on."""
    replayed = standin.control("open", state_dir=str(state_dir), region=get_settings().region)
    found = replayed.get("restored")
    restored = None
    if found is None:
        log.info("no snapshot in %s: starting empty", state_dir)
    else:
        restored = snapshot.RestoreSummary(
            items=found["items"], objects=found["objects"], skipped_tables=found["skipped_tables"]
        )
        log.info(
            "restored the snapshot in %s (taken %s) in %.2f s",
            state_dir,
            found["taken_at"],
            found["seconds"],
        )
        if found["skipped_tables"]:
            log.warning(
                "snapshot tables with no table to restore into: %s",
                ", ".join(found["skipped_tables"]),
            )
    if replayed["replayed"] or replayed["torn"]:
        log.info(
            "replayed %d journaled writes (segments %s, torn tails dropped in %s)",
            replayed["replayed"],
            replayed["segments"],
            replayed["torn"] or "none",
        )
    if replayed["refused"]:
        log.error("%d journaled writes were refused on replay", replayed["refused"])
    return Reopened(replayed, restored)


def count_restored(standin: AwsStandIn) -> dict[str, int]:
    """After the snapshot and the journal: what a user created, counted by kind."""
    rows = standin.control("count", region=get_settings().region)["rows"]
    counts = snapshot.count_resources(get_settings().table_name, rows)
    log.info("restored %s", snapshot.describe_counts(counts))
    return counts
