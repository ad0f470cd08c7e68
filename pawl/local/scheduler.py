"""Run ``@app.schedule`` handlers locally, on their rate or cron, with CloudWatch-shaped events.

Expressions are EventBridge's: ``rate(5 minutes)`` (or a Chalice ``Rate``) fires every
period, the first time one period after start, as on AWS; ``cron(m h dom mon dow year)``
(or a Chalice ``Cron``) is translated to a five-field cron for ``croniter`` (``?`` becomes
``*``, EventBridge's day-of-week 1-7 = SUN-SAT becomes 0-6). :meth:`Scheduler.trigger`
runs a schedule now, which is what the tests and ``POST /_local/schedules/{name}/run`` use.
"""

from __future__ import annotations

import logging
import re
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from chalice import Chalice
from chalice.app import ScheduledEventConfig, ScheduleExpression
from chalice.local import LambdaContext
from croniter import croniter

from pawl.local.quiesce import Quiesce

log = logging.getLogger("pawl.local")

_RATE = re.compile(r"^rate\(\s*(\d+)\s+(minute|minutes|hour|hours|day|days)\s*\)$", re.I)
_CRON = re.compile(r"^cron\((.*)\)$", re.I)
_UNIT_SECONDS = {"minute": 60, "hour": 3600, "day": 86400}
_DOW_NUMBER = re.compile(r"(?<![#/\d])(\d+)")
SCHEDULE_TIMEOUT_MS = 900_000
TICK_S = 1.0


class UnsupportedSchedule(ValueError):
    """An expression this local scheduler cannot run."""


@dataclass(frozen=True)
class Cadence:
    """When a schedule fires: ``next_after(t)`` is the first firing strictly after ``t``."""

    expression: str
    period: timedelta | None = None
    cron: str | None = None

    def next_after(self, moment: datetime) -> datetime:
        if self.period is not None:
            return moment + self.period
        assert self.cron is not None
        next_time: datetime = croniter(self.cron, moment).get_next(datetime)
        return next_time


def _aws_dow_to_cron(field: str) -> str:
    # EventBridge numbers days 1-7 from Sunday; cron numbers them 0-6. Names pass through,
    # and numbers after '#' (nth weekday) or '/' (step) are not days.
    return _DOW_NUMBER.sub(lambda m: str(int(m.group(1)) - 1), field)


def aws_cron_to_five_fields(body: str) -> str:
    """``m h dom mon dow year`` (EventBridge) -> ``m h dom mon dow`` (croniter)."""
    fields = body.split()
    if len(fields) != 6:
        raise UnsupportedSchedule(f"cron({body}): EventBridge cron has six fields")
    minute, hour, dom, month, dow, year = fields
    if year not in {"*", "?"}:
        raise UnsupportedSchedule(f"cron({body}): a restricted year is not supported locally")
    five = " ".join([minute, hour, dom.replace("?", "*"), month, _aws_dow_to_cron(dow)])
    five = five.replace("?", "*")
    if not croniter.is_valid(five):
        raise UnsupportedSchedule(f"cron({body}): not a valid cron expression")
    return five


def parse_expression(expression: str | ScheduleExpression) -> Cadence:
    text = expression if isinstance(expression, str) else expression.to_string()
    text = text.strip()
    rate = _RATE.match(text)
    if rate:
        value, unit = int(rate.group(1)), rate.group(2).lower().rstrip("s")
        if value <= 0:
            raise UnsupportedSchedule(f"{text}: the rate must be positive")
        return Cadence(text, period=timedelta(seconds=value * _UNIT_SECONDS[unit]))
    cron = _CRON.match(text)
    if cron:
        return Cadence(text, cron=aws_cron_to_five_fields(cron.group(1)))
    raise UnsupportedSchedule(f"{text!r} is neither rate(...) nor cron(...)")


def scheduled_event(rule_name: str, region: str, when: datetime) -> dict[str, Any]:
    """The event EventBridge sends a scheduled Lambda."""
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": "123456789012",
        "time": when.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "region": region,
        "resources": [f"arn:aws:events:{region}:123456789012:rule/{rule_name}"],
        "detail": {},
    }


@dataclass
class ScheduledHandler:
    name: str
    cadence: Cadence
    next_run: datetime
    runs: int = 0
    failures: int = 0


class Scheduler:
    """One thread that fires every schedule of ``app`` when it is due."""

    def __init__(
        self,
        app: Chalice,
        *,
        quiesce: Quiesce,
        region: str = "us-east-1",
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.app = app
        self.region = region
        self._quiesce = quiesce
        self._now = now
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.schedules = self._collect(app, now())

    @staticmethod
    def _collect(app: Chalice, start: datetime) -> dict[str, ScheduledHandler]:
        found = {}
        for config in app.event_sources:
            if not isinstance(config, ScheduledEventConfig):
                continue
            try:
                cadence = parse_expression(config.schedule_expression)
            except UnsupportedSchedule as exc:
                log.error("schedule %s will not run locally: %s", config.name, exc)
                continue
            found[config.name] = ScheduledHandler(config.name, cadence, cadence.next_after(start))
        return found

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="scheduler", daemon=True)
        self._thread.start()

    def stop(self, timeout_s: float = 30.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=timeout_s)
            self._thread = None

    def _run(self) -> None:
        while not self._stop.is_set():
            now = self._now()
            for schedule in list(self.schedules.values()):
                if schedule.next_run <= now and not self._stop.is_set():
                    schedule.next_run = schedule.cadence.next_after(now)
                    self._fire(schedule, now)
            upcoming = min((s.next_run for s in self.schedules.values()), default=None)
            wait_s = TICK_S if upcoming is None else (upcoming - self._now()).total_seconds()
            # Re-read the clock at least every tick: it may jump (a laptop waking up).
            self._stop.wait(min(max(wait_s, 0.01), TICK_S))

    def trigger(self, name: str) -> Any:
        """Run schedule ``name`` now, in the caller's thread; returns the handler's result.

        Raises KeyError for an unknown name and re-raises what the handler raised.
        """
        schedule = self.schedules[name]
        return self._fire(schedule, self._now(), reraise=True)

    def _fire(self, schedule: ScheduledHandler, when: datetime, reraise: bool = False) -> Any:
        event = scheduled_event(schedule.name, self.region, when)
        context = LambdaContext(schedule.name, 1024, max_runtime_ms=SCHEDULE_TIMEOUT_MS)
        with self._quiesce.working():
            try:
                result = self.app.handler_map[schedule.name](event, context)
            except Exception:
                schedule.failures += 1
                log.exception("schedule %s raised", schedule.name)
                if reraise:
                    raise
                return None
            finally:
                schedule.runs += 1
        return result
