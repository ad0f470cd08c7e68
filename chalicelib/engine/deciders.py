"""Deciders: the rules a decider's writes follow beyond the body.

A decider's backend must be one its project can use (an AI provider or an http tool of
that project, :func:`~chalicelib.deciders.backends.bind_backend`), checked at create and
whenever an update replaces it. An update that names an ``expected_version`` other than
the current one is refused (409 ``VERSION_CONFLICT``); every update writes the next version.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from chalicelib.deciders.backends import bind_backend
from chalicelib.domain.deciders import Backend, Decider, Question
from chalicelib.store import deciders as store


def create_decider(
    project_id: str,
    name: str,
    description: str | None,
    questions: list[Question],
    backend: Backend,
) -> Decider:
    """Create a decider at version 1 (name unique in the project)."""
    bind_backend(project_id, backend)
    return store.create_decider(project_id, name, description, questions, backend)


def update_decider(decider: Decider, given: Mapping[str, Any]) -> Decider:
    """Apply ``given`` (only the fields the caller gave; only ``description`` may be None)
    as the decider's next version."""
    expected = given.get("expected_version")
    if expected is not None and expected != decider.version:
        raise store.version_conflict(decider.id, expected)
    changes: dict[str, Any] = {
        name: given[name]
        for name in ("name", "questions", "backend")
        if given.get(name) is not None
    }
    if "description" in given:
        changes["description"] = given["description"]
    if given.get("backend") is not None:
        bind_backend(decider.project_id, given["backend"])
    return store.update_decider(decider, changes)
