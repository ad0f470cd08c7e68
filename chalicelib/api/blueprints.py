"""Every blueprint of the app, in one list (app.py registers them)."""

from __future__ import annotations

from chalice import Blueprint

from chalicelib.api import (
    agents,
    ai_providers,
    datasets,
    deciders,
    evals,
    generations,
    health,
    runs,
    tenancy,
    tools,
    triggers,
    webhooks,
)
from chalicelib.workers import queues, schedules, webhook_delivery

BLUEPRINTS: list[Blueprint] = [
    health.bp,
    tenancy.bp,
    ai_providers.bp,
    agents.bp,
    datasets.bp,
    evals.bp,
    runs.bp,
    generations.bp,
    tools.bp,
    deciders.bp,
    webhooks.bp,
    triggers.bp,
    queues.bp,
    schedules.bp,
    webhook_delivery.bp,
]
