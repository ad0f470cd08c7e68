"""The scheduler: fire every schedule trigger whose slot came, once per slot.

Run every minute (a Chalice scheduled handler on AWS; ``pawl serve``'s scheduler runs
the same handler locally). For each due trigger, one transaction moves ``next_fire_at``
past the slot — conditioned on it still being that slot — and records the slot's
firing, so of any number of schedulers that read the same slot exactly one fires it.
``next_fire_at`` is recomputed from *now*, not from the slot: slots missed while pawl
was down coalesce into one catch-up firing, then the cadence resumes. The same tick
resumes firings (of any type) whose executor died (:func:`.firing.resume_stalled`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime

from chalicelib import clock, ids
from chalicelib.domain.triggers import TriggerFiring
from chalicelib.engine.triggers import cron, firing
from chalicelib.store import triggers as store

log = logging.getLogger("pawl.triggers.schedule")


@dataclass
class ScheduleReport:
    due: int = 0
    fired: list[str] = field(default_factory=list)
    resumed: list[str] = field(default_factory=list)


def slot_firing_id(trigger_id: str, slot: str) -> str:
    return ids.derived_id("trigger_firing", trigger_id, "schedule", slot)


def claim_and_fire(trigger_id: str, slot: str, now: datetime) -> TriggerFiring | None:
    """Fire ``slot`` of the trigger if this caller is the one that claims it, else None."""
    trigger = store.find_trigger(trigger_id)
    if trigger is None or trigger.type != "schedule" or not trigger.active or not trigger.cron:
        return None
    following = cron.next_after(trigger.cron, now)
    if following is None:  # a slot came, so another will; a guard against a clock oddity
        return None
    firing_id = slot_firing_id(trigger_id, slot)
    row = store.firing_row(firing_id, trigger, "schedule", dict(trigger.input or {}), [])
    if not store.claim_slot(trigger_id, slot, following, row):
        return None
    return firing.execute(trigger, firing_id)


def fire_due(now: datetime | None = None) -> ScheduleReport:
    """Fire every slot due at ``now`` (default: the clock's now)."""
    moment = now or clock.now()
    report = ScheduleReport()
    for trigger_id, slot in store.due_schedules(clock.iso(moment)):
        report.due += 1
        try:
            fired = claim_and_fire(trigger_id, slot, moment)
        except Exception:
            log.exception("schedule %s slot %s could not be fired", trigger_id, slot)
            continue
        if fired is not None:
            report.fired.append(fired.id)
    return report


def tick(now: datetime | None = None) -> ScheduleReport:
    """The scheduled handler's work: fire the due slots, resume firings a crash left behind."""
    report = fire_due(now)
    report.resumed = firing.resume_stalled()
    return report
