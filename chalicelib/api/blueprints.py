"""Every blueprint of the app, in one list (app.py registers them)."""

from __future__ import annotations

from chalice import Blueprint

from chalicelib.api import (
    agents,
    datasets,
    evals,
    generations,
    health,
    runs,
    tenancy,
    webhooks,
)
from chalicelib.workers import queues, schedules, webhook_delivery

BLUEPRINTS: list[Blueprint] = [
    health.bp,
    tenancy.bp,
    agents.bp,
    datasets.bp,
    evals.bp,
    runs.bp,
    generations.bp,
    webhooks.bp,
    queues.bp,
    schedules.bp,
    webhook_delivery.bp,
]
