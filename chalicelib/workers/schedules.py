"""Scheduled handlers, every minute: the run engine's reaper, the webhook sweeper and the
trigger scheduler."""

from __future__ import annotations

import logging
from typing import Any

from chalice import Blueprint, Rate

from chalicelib.engine import reaper
from chalicelib.engine.triggers import schedule
from chalicelib.webhooks import resume

log = logging.getLogger("pawl.workers.schedules")

bp = Blueprint(__name__)


@bp.schedule(Rate(1, unit=Rate.MINUTES))
def reap_quiet_runs(event: Any) -> dict[str, int]:
    """Settle or fail runs that went quiet for longer than ``PAWL_RUN_GRACE_S``."""
    report = reaper.reap()
    if report.settled or report.failed or report.events_delivered:
        log.info("reaper: %s", report)
    return {
        "settled": report.settled,
        "failed": report.failed,
        "events_delivered": report.events_delivered,
    }


@bp.schedule(Rate(1, unit=Rate.MINUTES))
def resume_stalled_deliveries(event: Any) -> dict[str, int]:
    """Re-enqueue webhook deliveries overdue by ``PAWL_WEBHOOK_SWEEP_GRACE_S`` (lost messages)."""
    report = resume.sweep()
    return {"resumed": report.resumed}


@bp.schedule(Rate(1, unit=Rate.MINUTES))
def fire_due_triggers(event: Any) -> dict[str, Any]:
    """Fire every schedule trigger whose cron slot came (once per slot, however many run);
    resume firings a crash left unfinished."""
    report = schedule.tick()
    if report.fired or report.resumed:
        log.info("trigger scheduler: fired %s, resumed %s", report.fired, report.resumed)
    return {"due": report.due, "fired": report.fired, "resumed": report.resumed}
