"""Deploying a formation: execute its plan, walk back on failure, tear it down.

A deploy is a reconciler: a resource the platform refuses mid-deploy fails the deploy
(the formation ends ``failed`` with an ``error``) instead of the request, and every
resource created earlier in that deploy is deleted again, dependents first. An updated
resource keeps its new state; a retained one stays standing and stays recorded.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from chalicelib import clock, ids
from chalicelib.api import formation_types as types
from chalicelib.api.auth import Caller
from chalicelib.api.formation_plan import (
    Prepared,
    change_for,
    live_records,
    masked,
    plan_removals,
    stored_template,
    write_only_hash,
)
from chalicelib.domain.formations import (
    Change,
    Diff,
    ErrorBag,
    Formation,
    FormationResource,
    OperationEvent,
)
from chalicelib.errors import Conflict, PawlError
from chalicelib.formations.template import masked_parameters, resolve

log = logging.getLogger("pawl.formations")

#: A refusal a teardown can foresee, per resource type: the reason, or None.
Blocker = Callable[[FormationResource], str | None]


class StepFailed(Exception):
    def __init__(self, change: Change, error: ErrorBag) -> None:
        super().__init__(error.message)
        self.change = change
        self.error = error


def error_bag(exc: BaseException, **meta: Any) -> ErrorBag:
    if isinstance(exc, PawlError):
        return ErrorBag(code=exc.code, message=exc.message, meta={**exc.meta, **meta})
    log.exception("formation step failed unexpectedly", exc_info=exc)
    return ErrorBag(code="INTERNAL_ERROR", message="An internal error occurred.", meta=meta)


@dataclass
class Deploy:
    """One deploy of ``prepared`` over ``formation``'s resources."""

    formation: Formation
    prepared: Prepared
    #: Who the deploy acts as: the formation's project, under the requester's policies.
    acting: Caller
    events: list[OperationEvent] = field(default_factory=list)
    records: dict[str, FormationResource] = field(default_factory=dict)
    created: list[str] = field(default_factory=list)
    #: Records the resources after every change, so a process that dies mid-deploy leaves
    #: nothing it made unrecorded (a failed save fails the step: it is walked back).
    checkpoint: Callable[[list[FormationResource]], None] | None = None

    def physical(self) -> dict[str, str]:
        return {
            name: r.physical_resource_id
            for name, r in self.records.items()
            if r.physical_resource_id and r.status != "deleted"
        }

    def event(self, change: Change, action: str, ok: bool, error: ErrorBag | None = None) -> None:
        record = self.records.get(change.logical_id)
        self.events.append(
            OperationEvent(
                at=clock.now_iso(),
                logical_id=change.logical_id,
                resource_type=change.resource_type,
                action=action,
                status="succeeded" if ok else "failed",
                physical_resource_id=record.physical_resource_id if record else None,
                error=error,
            )
        )

    def _resolved(self, name: str) -> dict[str, Any]:
        properties = self.prepared.template.resources[name].properties
        where = f"template.resources.{name}.properties"
        resolved: dict[str, Any] = resolve(properties, self.prepared.scope(self.physical()), where)
        return resolved

    def _write_only(self, rtype: types.ResourceType, props: dict[str, Any]) -> dict[str, str]:
        return {k: write_only_hash(v) for k, v in props.items() if k in rtype.secret}

    def _create(self, change: Change, rtype: types.ResourceType, props: dict[str, Any]) -> None:
        answer = types.create(rtype, self.acting, props)
        decl = self.prepared.template.resources[change.logical_id]
        self.records[change.logical_id] = FormationResource(
            id=ids.new_id("formation_resource"),
            logical_id=change.logical_id,
            resource_type=rtype.name,
            physical_resource_id=str(answer["id"]),
            status="created",
            parent_id=props.get(rtype.parent) if rtype.parent else None,
            deletion_policy=decl.deletion_policy,
            write_only=self._write_only(rtype, props),
        )
        self.created.append(change.logical_id)

    def _update(self, change: Change, rtype: types.ResourceType, props: dict[str, Any]) -> None:
        record = self.records[change.logical_id]
        assert record.physical_resource_id is not None
        if rtype.updatable:
            types.update(rtype, self.acting, record.parent_id, record.physical_resource_id, props)
            physical = record.physical_resource_id
        else:  # replaced: the new one first, so a failure leaves the old one standing
            physical = str(types.create(rtype, self.acting, props)["id"])
            types.delete(rtype, self.acting, record.parent_id, record.physical_resource_id)
        decl = self.prepared.template.resources[change.logical_id]
        self.records[change.logical_id] = record.model_copy(
            update={
                "physical_resource_id": physical,
                "status": "updated",
                "deletion_policy": decl.deletion_policy,
                "write_only": self._write_only(rtype, props),
            }
        )

    def _remove(self, change: Change) -> None:
        record = self.records[change.logical_id]
        if record.deletion_policy != "retain" and record.physical_resource_id:
            rtype = types.resource_type(record.resource_type, change.logical_id)
            types.delete(rtype, self.acting, record.parent_id, record.physical_resource_id)
        self.records[change.logical_id] = record.model_copy(update={"status": "deleted"})

    def step(self, change: Change) -> None:
        try:
            if change.action == "delete":
                self._remove(change)
            elif change.action != "unchanged":
                rtype = self.prepared.rtype(change.logical_id)
                props = self._resolved(change.logical_id)
                (self._create if change.action == "create" else self._update)(change, rtype, props)
            elif change.logical_id in self.records:  # keeps its deletion policy current
                decl = self.prepared.template.resources[change.logical_id]
                record = self.records[change.logical_id]
                self.records[change.logical_id] = record.model_copy(
                    update={"deletion_policy": decl.deletion_policy}
                )
            if self.checkpoint is not None and change.action != "unchanged":
                self.checkpoint(self.ordered_records())
        except Exception as exc:  # every refusal fails the deploy, not the request
            bag = error_bag(exc, logical_id=change.logical_id, resource_type=change.resource_type)
            if change.logical_id in self.records and change.action != "create":
                record = self.records[change.logical_id]
                self.records[change.logical_id] = record.model_copy(update={"status": "failed"})
            self.event(change, change.action, False, bag)
            raise StepFailed(change, bag) from exc
        if change.action != "unchanged":
            self.event(change, change.action, True)

    def decide(self, name: str) -> Change:
        """The change for ``name``, against the ids this deploy has made so far."""
        standing = live_records(self.formation).get(name) and self.records.get(name)
        try:
            return change_for(self.prepared, name, standing, self.physical(), self.acting)
        except Exception as exc:  # a read that failed: the deploy fails, not the request
            rtype = self.prepared.template.resources[name].type
            bag = error_bag(exc, logical_id=name, resource_type=rtype)
            change = Change(
                logical_id=name, resource_type=rtype, action="update", diff=Diff(desired={})
            )
            self.event(change, "plan", False, bag)
            raise StepFailed(change, bag) from exc

    def rollback(self) -> None:
        """Delete what this deploy created, dependents first; a retained one stays."""
        for name in reversed(self.created):
            record = self.records[name]
            change = Change(
                logical_id=name,
                resource_type=record.resource_type,
                action="delete",
                physical_resource_id=record.physical_resource_id,
                diff=Diff(desired={}),
            )
            if record.deletion_policy == "retain":
                self.event(change, "rollback-skipped", True)
                continue
            try:
                rtype = types.resource_type(record.resource_type, name)
                assert record.physical_resource_id is not None
                types.delete(rtype, self.acting, record.parent_id, record.physical_resource_id)
            except Exception as exc:  # reported, never thrown: the original error stands
                self.event(change, "rollback", False, error_bag(exc, logical_id=name))
                continue
            self.records[name] = record.model_copy(update={"status": "deleted"})
            self.event(change, "rollback", True)

    def ordered_records(self) -> list[FormationResource]:
        """Records in the template's creation order (teardown walks it backwards), then the rest."""
        order = {name: index for index, name in enumerate(self.prepared.order)}
        return sorted(self.records.values(), key=lambda r: order.get(r.logical_id, len(order)))


def run_deploy(
    formation: Formation,
    prepared: Prepared,
    acting: Caller,
    checkpoint: Callable[[list[FormationResource]], None] | None = None,
) -> tuple[Formation, list[Change], Deploy]:
    """Execute the plan; the formation as it ended (``active`` or ``failed``), never raising
    for a refused resource."""
    records = {r.logical_id: r for r in formation.resources}
    deploy = Deploy(formation, prepared, acting, records=records, checkpoint=checkpoint)
    changes: list[Change] = []
    error: ErrorBag | None = None
    try:
        # Each change is decided when its turn comes, against the ids this deploy made.
        for name in prepared.order:
            change = deploy.decide(name)
            changes.append(change)
            deploy.step(change)
        for change in reversed(plan_removals(prepared, formation)):
            changes.append(change)
            deploy.step(change)
    except StepFailed as failed:
        error = failed.error
        deploy.rollback()
    updates: dict[str, Any] = {
        "template": stored_template(prepared),
        "resources": deploy.ordered_records(),
        "resolved_parameters": masked_parameters(prepared.template, prepared.parameters),
        "updated_at": clock.now_iso(),
        "status": "failed" if error else "active",
        "error": error,
    }
    if error is None:
        scope = prepared.scope(deploy.physical())
        secrets = prepared.secrets()
        updates["outputs"] = masked(resolve(prepared.template.outputs, scope, "outputs"), secrets)
        metadata = prepared.template.metadata
        updates["resolved_metadata"] = (
            None if metadata is None else masked(resolve(metadata, scope, "metadata"), secrets)
        )
    return formation.model_copy(update=updates), changes, deploy


def teardown_failure(message: str, failures: list[dict[str, Any]]) -> Conflict:
    return Conflict(message, code="FORMATION_DELETE_FAILED", failures=failures)


def preflight_teardown(formation: Formation, blockers: dict[str, Blocker]) -> None:
    """409 ``FORMATION_DELETE_FAILED`` naming every foreseeable blocker; nothing deleted."""
    failures = []
    for record in live_records(formation).values():
        blocker = blockers.get(record.resource_type)
        if record.deletion_policy == "retain" or blocker is None:
            continue
        reason = blocker(record)
        if reason:
            failures.append(
                {
                    "logical_id": record.logical_id,
                    "resource_type": record.resource_type,
                    "error": reason,
                }
            )
    if failures:
        names = ", ".join(f"{f['logical_id']} ({f['resource_type']})" for f in failures)
        raise teardown_failure(
            f"formation {formation.name} cannot be deleted, nothing was deleted: {names} "
            "would be refused. " + failures[0]["error"],
            failures,
        )


def teardown(
    formation: Formation, acting: Caller
) -> tuple[list[FormationResource], list[dict[str, Any]]]:
    """Delete every standing, non-retained resource, last created first; the failures."""
    records = list(formation.resources)
    failures: list[dict[str, Any]] = []
    for index in reversed(range(len(records))):
        record = records[index]
        if record.status == "deleted" or not record.physical_resource_id:
            continue
        if record.deletion_policy != "retain":
            try:
                rtype = types.resource_type(record.resource_type, record.logical_id)
                types.delete(rtype, acting, record.parent_id, record.physical_resource_id)
            except Exception as exc:
                bag = error_bag(exc)
                failures.append(
                    {
                        "logical_id": record.logical_id,
                        "resource_type": record.resource_type,
                        "error": f"{bag.code}: {bag.message}",
                    }
                )
                continue
        records[index] = record.model_copy(update={"status": "deleted"})
    return records, failures
