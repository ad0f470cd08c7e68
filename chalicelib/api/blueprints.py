"""Every blueprint of the HTTP API, in one list (the composition root adds the workers')."""

from __future__ import annotations

from chalice import Blueprint

from chalicelib.api import (
    agents,
    ai_providers,
    dataset_import,
    datasets,
    deciders,
    evals,
    formations,
    generations,
    health,
    policies,
    releases,
    runs,
    secrets,
    tenancy,
    tools,
    triggers,
    usage,
    webhook_deliveries,
    webhooks,
)

# isort: split
# Imported after the run routes it extends: routes are documented (and `pawl --help` groups
# them) in the order they register, and the comparison belongs after the runs' own.
from chalicelib.api import comparison, power

BLUEPRINTS: list[Blueprint] = [
    health.bp,
    tenancy.bp,
    policies.bp,
    secrets.bp,
    ai_providers.bp,
    agents.bp,
    releases.bp,
    datasets.bp,
    dataset_import.bp,
    evals.bp,
    runs.bp,
    comparison.bp,
    power.bp,
    generations.bp,
    tools.bp,
    deciders.bp,
    webhooks.bp,
    webhook_deliveries.bp,
    triggers.bp,
    formations.bp,
    usage.bp,
]
