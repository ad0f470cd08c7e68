"""Scheduled handlers of the run engine: the reaper, every minute."""

from __future__ import annotations

import logging
from typing import Any

from chalice import Blueprint, Rate

from chalicelib.engine import reaper

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
