"""Deciders, their immutable versions, and decisions.

A create writes the decider row (version 1), the version-1 snapshot and the name claim in
one transaction. An update writes the row conditioned on the version it read and the
next snapshot conditioned on not existing, so two racing updates cannot both become
version n+1: the loser gets 409 ``VERSION_CONFLICT``. Deleting a decider keeps its
version rows: decisions already answered (and runs pinned to a version) still read them.

A decision is written once, when it settled; an input too large for its row goes to S3.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import TypeAdapter
from pynamodb.exceptions import DoesNotExist
from pynamodb.expressions.update import Action

from chalicelib import clock, ids
from chalicelib.domain.deciders import Backend, Decider, DeciderVersion, Decision, Question
from chalicelib.errors import Conflict, not_found
from chalicelib.store import blobs, names, project_scoped, usage
from chalicelib.store.base import transaction
from chalicelib.store.models import DeciderModel, DeciderVersionModel, DecisionModel
from chalicelib.store.pagination import Listing, Partition, Window, page_of
from chalicelib.store.transactions import TxnRefused, labelled_transaction

KIND = "decider"
_VERSION_KEYS = frozenset({"decider_id", "version"})
_QUESTIONS: TypeAdapter[list[Question]] = TypeAdapter(list[Question])
_BACKEND: TypeAdapter[Backend] = TypeAdapter(Backend)


def _questions_json(questions: list[Question]) -> list[dict[str, Any]]:
    return list(_QUESTIONS.dump_python(questions, mode="json"))


def _decider(model: DeciderModel) -> Decider:
    return Decider(
        id=model.id,
        project_id=model.project_id,
        name=model.name,
        description=model.description,
        version=int(model.version),
        questions=_QUESTIONS.validate_python(model.questions),
        backend=_BACKEND.validate_python(model.backend),
        created_at=model.created_at,
        updated_at=model.updated_at,
    )


def _version(model: DeciderVersionModel) -> DeciderVersion:
    return DeciderVersion(
        decider_id=model.decider_id,
        version=int(model.version),
        name=model.name,
        questions=_QUESTIONS.validate_python(model.questions),
        backend=_BACKEND.validate_python(model.backend),
        created_at=model.created_at,
    )


def _snapshot(decider: Decider) -> DeciderVersionModel:
    return DeciderVersionModel(
        decider_id=decider.id,
        version=decider.version,
        name=decider.name,
        questions=_questions_json(decider.questions),
        backend=decider.backend.model_dump(mode="json"),
        created_at=decider.updated_at,
    )


def _current_actions(decider: Decider) -> list[Action]:
    """Set the row's current fields to ``decider`` (its ``created_key`` stays as stored)."""
    return [
        DeciderModel.name.set(decider.name),
        DeciderModel.description.set(decider.description)
        if decider.description is not None
        else DeciderModel.description.remove(),
        DeciderModel.version.set(decider.version),
        DeciderModel.questions.set(_questions_json(decider.questions)),
        DeciderModel.backend.set(decider.backend.model_dump(mode="json")),
        DeciderModel.updated_at.set(decider.updated_at),
    ]


def create_decider(
    project_id: str,
    name: str,
    description: str | None,
    questions: list[Question],
    backend: Backend,
) -> Decider:
    """Create a decider at version 1 (409 ``NAME_CONFLICT`` when the name is taken)."""
    decider_id = ids.new_id("decider")
    now, created_key = project_scoped.creation_stamp(decider_id)
    decider = Decider(
        id=decider_id,
        project_id=project_id,
        name=name,
        description=description,
        version=1,
        questions=questions,
        backend=backend,
        created_at=now,
        updated_at=now,
    )
    row = DeciderModel(
        id=decider.id,
        project_id=project_id,
        name=name,
        description=description,
        version=decider.version,
        questions=_questions_json(questions),
        backend=backend.model_dump(mode="json"),
        created_at=now,
        updated_at=now,
        created_key=created_key,
    )
    with project_scoped.creating(KIND, row) as txn:
        txn.save("version", _snapshot(decider))
    return decider


def update_decider(current: Decider, changes: dict[str, Any]) -> Decider:
    """Apply ``changes`` and write them as version ``current.version + 1``."""
    updated = current.model_copy(
        update={**changes, "version": current.version + 1, "updated_at": clock.now_iso()}
    )
    try:
        with names.claiming_name(
            KIND, current.project_id, current.id, updated.name, previous=current.name
        ) as txn:
            txn.update(
                KIND,
                DeciderModel(id=current.id),
                actions=_current_actions(updated),
                condition=DeciderModel.version == current.version,
            )
            txn.save(
                "version",
                _snapshot(updated),
                condition=DeciderVersionModel.version.does_not_exist(),
            )
    except TxnRefused as exc:
        raise version_conflict(current.id, current.version) from exc
    return updated


def version_conflict(decider_id: str, expected: int) -> Conflict:
    return Conflict(
        f"decider {decider_id} is no longer at version {expected}: read it again and retry",
        code="VERSION_CONFLICT",
        id=decider_id,
        expected_version=expected,
    )


def find_decider(decider_id: str) -> Decider | None:
    row = project_scoped.find(DeciderModel, decider_id)
    return None if row is None else _decider(row)


def get_decider(decider_id: str) -> Decider:
    return _decider(project_scoped.get_or_404(DeciderModel, KIND, decider_id))


def find_project_decider(project_id: str, decider_id: str) -> Decider | None:
    """The decider when it exists *in this project*: another project's reads as missing."""
    row = project_scoped.find_in_project(DeciderModel, project_id, decider_id)
    return None if row is None else _decider(row)


def list_deciders(project_id: str, window: Window) -> Listing[Decider]:
    return project_scoped.list_by_project(DeciderModel, project_id, window, _decider)


def delete_decider(decider: Decider) -> None:
    """Delete the decider and release its name; its versions and decisions stay readable."""
    with labelled_transaction() as txn:
        txn.delete(KIND, DeciderModel(id=decider.id))
        txn.release_name(decider.project_id, KIND, decider.name)


def find_version(decider_id: str, version: int) -> DeciderVersion | None:
    try:
        return _version(DeciderVersionModel.get(decider_id, version, consistent_read=True))
    except DoesNotExist:
        return None


def get_version(decider_id: str, version: int) -> DeciderVersion:
    found = find_version(decider_id, version)
    if found is None:
        raise not_found("decider_version", f"{decider_id}/{version}")
    return found


def list_versions(decider_id: str, window: Window) -> Listing[DeciderVersion]:
    """Versions, oldest first."""
    versions = Partition(DeciderVersionModel, decider_id, _VERSION_KEYS, consistent=True)
    return page_of(versions, window, _version)


# --- decisions --------------------------------------------------------------------------


def input_key(decision_id: str) -> str:
    return f"decisions/{decision_id}/input.json"


def record_decision(decision: Decision, metered: bool = True) -> None:
    """Write a settled decision once (a repeated id is refused, never overwritten).

    ``metered``: write its usage event in the same call. A decision a run's scorer asked
    is not: its spend is the item's, metered with the batch's results.
    """
    encoded = json.dumps(decision.input)
    offload = blobs.should_offload(encoded)
    if offload:
        blobs.put_text(input_key(decision.id), encoded, "application/json")
    row = DecisionModel(
        id=decision.id,
        project_id=decision.project_id,
        decider_id=decision.decider_id,
        decider_version=decision.decider_version,
        status=decision.status,
        input=None if offload else decision.input,
        input_s3_key=input_key(decision.id) if offload else None,
        answers=decision.answers,
        error=decision.error.model_dump() if decision.error else None,
        metadata=decision.metadata,
        usage=decision.usage.model_dump(),
        latency_ms=decision.latency_ms,
        created_at=decision.created_at,
    )
    if not metered:
        row.save(condition=DecisionModel.id.does_not_exist())
        return
    with transaction() as txn:
        txn.save(row, condition=DecisionModel.id.does_not_exist())
        txn.save(usage.decision_row(decision))


def _decision_input(model: DecisionModel) -> Any:
    if model.input_s3_key:
        text = blobs.get_text(model.input_s3_key)
        return None if text is None else json.loads(text)
    return model.input


def get_decision(decision_id: str) -> Decision:
    try:
        model = DecisionModel.get(decision_id, consistent_read=True)
    except DoesNotExist:
        raise not_found("decision", decision_id) from None
    answers = list(model.answers) if model.answers is not None else None
    return Decision(
        id=model.id,
        project_id=model.project_id,
        decider_id=model.decider_id,
        decider_version=int(model.decider_version),
        status=model.status,  # type: ignore[arg-type]  # only this module writes it
        input=_decision_input(model),
        answers=answers,
        answers_by_name={a["name"]: a for a in answers} if answers is not None else None,
        error=model.error,
        metadata=dict(model.metadata),
        usage=model.usage,
        latency_ms=int(model.latency_ms),
        created_at=model.created_at,
    )
