"""Every blueprint of the app, in one list (app.py registers them)."""

from __future__ import annotations

from chalice import Blueprint

from chalicelib.api import (
    agents,
    ai_providers,
    dataset_import,
    datasets,
    deciders,
    evals,
    generations,
    health,
    runs,
    tenancy,
    tools,
    webhooks,
)
from chalicelib.workers import queues, schedules, webhook_delivery

BLUEPRINTS: list[Blueprint] = [
    health.bp,
    tenancy.bp,
    ai_providers.bp,
    agents.bp,
    datasets.bp,
    dataset_import.bp,
    evals.bp,
    runs.bp,
    generations.bp,
    tools.bp,
    deciders.bp,
    webhooks.bp,
    queues.bp,
    schedules.bp,
    webhook_delivery.bp,
]
