"""Formations and their operations: create (claiming the name), versioned saves, reads."""

from __future__ import annotations

from typing import Any

from pynamodb.exceptions import DoesNotExist, PutError

from chalicelib.domain.formations import Formation, FormationOperation
from chalicelib.store import project_scoped
from chalicelib.store.formation_models import FormationModel, FormationOperationModel
from chalicelib.store.models import NameClaimModel
from chalicelib.store.pagination import Listing, Partition, Window, page_of
from chalicelib.store.transactions import (
    CONDITION_FAILED,
    TxnRefused,
    claim_key,
    labelled_transaction,
)

KIND = "formation"
_OPERATION_KEYS = frozenset({"formation_id", "created_key"})


def _formation(row: FormationModel) -> Formation:
    return Formation(
        id=row.id,
        project_id=row.project_id,
        name=row.name,
        template=row.template,
        outputs=row.outputs or {},
        status=row.status,  # type: ignore[arg-type]
        metadata=row.metadata or {},
        resolved_metadata=row.resolved_metadata,
        resolved_parameters=row.resolved_parameters,
        error=row.error,
        resources=row.resources,
        created_at=row.created_at,
        updated_at=row.updated_at,
    )


def _resources_json(formation: Formation) -> list[dict[str, Any]]:
    # write_only is excluded from answers but kept in the row.
    return [{**r.model_dump(mode="json"), "write_only": r.write_only} for r in formation.resources]


def _row(formation: Formation, version: int, created_key: str) -> FormationModel:
    return FormationModel(
        id=formation.id,
        project_id=formation.project_id,
        created_at=formation.created_at,
        created_key=created_key,
        name=formation.name,
        template=formation.template,
        outputs=formation.outputs,
        status=formation.status,
        metadata=formation.metadata,
        resolved_metadata=formation.resolved_metadata,
        resolved_parameters=formation.resolved_parameters,
        error=formation.error.model_dump(mode="json") if formation.error else None,
        resources=_resources_json(formation),
        version=version,
        updated_at=formation.updated_at,
    )


def create_formation(formation: Formation) -> int:
    """Save a new formation and claim its name (409 ``NAME_CONFLICT``); its version, 1."""
    _, created_key = project_scoped.creation_stamp(formation.id)
    project_scoped.create(KIND, _row(formation, 1, created_key))
    return 1


def get_formation(formation_id: str) -> tuple[Formation, int]:
    """The formation and the version a save must name; 404 when missing."""
    row = project_scoped.get_or_404(FormationModel, KIND, formation_id)
    return _formation(row), int(row.version)


def find_by_name(project_id: str, name: str) -> tuple[Formation, int] | None:
    try:
        claim = NameClaimModel.get(claim_key(project_id, KIND, name), consistent_read=True)
    except DoesNotExist:
        return None
    found = project_scoped.find_in_project(FormationModel, project_id, claim.resource_id)
    return (_formation(found), int(found.version)) if found is not None else None


def list_formations(project_id: str, window: Window) -> Listing[Formation]:
    return project_scoped.list_by_project(FormationModel, project_id, window, _formation)


def save_formation(formation: Formation, version: int) -> int:
    """Write ``formation`` over the row read at ``version``; the new version.

    404 when it was deleted meanwhile, 409 ``CONCURRENT_UPDATE`` when another deploy
    wrote it since.
    """
    row = project_scoped.get_or_404(FormationModel, KIND, formation.id)
    if int(row.version) != version:
        raise project_scoped.lost_race(FormationModel, KIND, formation.id)
    fresh = _row(formation, version + 1, row.created_key)
    try:
        fresh.save(condition=FormationModel.version == version)
    except PutError as exc:  # a failed condition: who won decides 404 or 409
        if CONDITION_FAILED not in str(exc.cause_response_code):
            raise
        raise project_scoped.lost_race(FormationModel, KIND, formation.id) from exc
    return version + 1


def delete_formation(formation: Formation, version: int) -> None:
    """Remove the formation and release its name; 409 when another deploy wrote it since."""
    try:
        with labelled_transaction() as txn:
            txn.delete(
                "formation", FormationModel(id=formation.id), FormationModel.version == version
            )
            txn.release_name(formation.project_id, KIND, formation.name)
    except TxnRefused as exc:
        raise project_scoped.lost_race(FormationModel, KIND, formation.id) from exc


def save_operation(operation: FormationOperation, created_key: str) -> None:
    FormationOperationModel(
        formation_id=operation.formation_id,
        created_key=created_key,
        id=operation.id,
        body=operation.model_dump(mode="json"),
    ).save()


def list_operations(formation_id: str, window: Window) -> Listing[FormationOperation]:
    """The formation's operations, oldest first."""
    operations = Partition(FormationOperationModel, formation_id, _OPERATION_KEYS)
    return page_of(operations, window, lambda row: FormationOperation.model_validate(row.body))
