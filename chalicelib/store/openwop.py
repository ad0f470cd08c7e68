"""The ``/v2`` (OpenWOP) records: one table, rows keyed by kind (``docs/dynamodb.md``).

- suite version: ``suite#<project>#<suiteId>`` / ``<version>`` — the facts a run needs
  (hash, modes, thresholds, the dataset and its ``taskId -> item`` map); the document
  itself is in S3 (:func:`suite_document_key`), it can be larger than a row;
- the eval that runs a suite version on an agent: ``eval#<project>#<suiteId>@<version>`` /
  ``<agentId>``;
- the project's ``conformance-eval-agent``: ``agent#<project>`` / ``conformance-eval-agent``;
- a v2 run: ``run#<runId>`` / ``-``;
- an ``Idempotency-Key``: ``idem#<project>#<key>`` / ``-``.

Every create is a conditional put ("must not exist"), so a lost race is seen, never
overwritten.
"""

from __future__ import annotations

import json
from typing import Any

from pynamodb.exceptions import DoesNotExist, PutError

from chalicelib import clock
from chalicelib.store import blobs
from chalicelib.store.base import CONDITION_FAILED
from chalicelib.store.models import OpenwopModel

NO_SORT = "-"


def suite_key(project_id: str, suite_id: str) -> str:
    return f"suite#{project_id}#{suite_id}"


def eval_key(project_id: str, suite_id: str, version: str) -> str:
    return f"eval#{project_id}#{suite_id}@{version}"


def agent_key(project_id: str) -> str:
    return f"agent#{project_id}"


def run_key(run_id: str) -> str:
    return f"run#{run_id}"


def idempotency_key(project_id: str, key: str) -> str:
    return f"idem#{project_id}#{key}"


def suite_document_key(project_id: str, suite_id: str, version: str) -> str:
    return f"openwop/suites/{project_id}/{suite_id}/{version}.json"


def get(pk: str, sk: str = NO_SORT) -> dict[str, Any] | None:
    """The record, or None (strongly consistent)."""
    try:
        row = OpenwopModel.get(pk, sk, consistent_read=True)
    except DoesNotExist:
        return None
    record: dict[str, Any] = row.record
    return record


def project_of(pk: str, sk: str = NO_SORT) -> tuple[str, dict[str, Any]] | None:
    """``(project_id, record)``, or None."""
    try:
        row = OpenwopModel.get(pk, sk, consistent_read=True)
    except DoesNotExist:
        return None
    return row.project_id, dict(row.record)


def put_new(pk: str, sk: str, project_id: str, record: dict[str, Any]) -> bool:
    """Create the row; False (nothing written) when it exists already."""
    row = OpenwopModel(
        pk=pk, sk=sk, project_id=project_id, record=record, created_at=clock.now_iso()
    )
    try:
        row.save(condition=OpenwopModel.pk.does_not_exist())
    except PutError as exc:
        if exc.cause_response_code == CONDITION_FAILED:
            return False
        raise
    return True


def written_at(pk: str, sk: str = NO_SORT) -> str | None:
    """When the row was last written (its version for :func:`replace`), or None."""
    try:
        row = OpenwopModel.get(pk, sk, consistent_read=True, attributes_to_get=["created_at"])
    except DoesNotExist:
        return None
    return str(row.created_at)


def replace(pk: str, sk: str, project_id: str, record: dict[str, Any], previous: str) -> bool:
    """Overwrite the row if it was last written at ``previous``; False when it changed."""
    row = OpenwopModel(
        pk=pk, sk=sk, project_id=project_id, record=record, created_at=clock.now_iso()
    )
    try:
        row.save(condition=OpenwopModel.created_at == previous)
    except PutError as exc:
        if exc.cause_response_code == CONDITION_FAILED:
            return False
        raise
    return True


def delete(pk: str, sk: str = NO_SORT) -> None:
    OpenwopModel(pk=pk, sk=sk).delete()


def query(pk: str) -> list[dict[str, Any]]:
    """Every record under ``pk``, by sort key."""
    return [dict(row.record) for row in OpenwopModel.query(pk, consistent_read=True)]


def put_document(key: str, document: dict[str, Any]) -> None:
    blobs.put_text(key, json.dumps(document), content_type="application/json")


def get_document(key: str) -> dict[str, Any] | None:
    text = blobs.get_text(key)
    return None if text is None else dict(json.loads(text))
