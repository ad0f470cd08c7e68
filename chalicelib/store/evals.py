"""Evals, and the reference bookkeeping that keeps agents and evals consistent.

An agent row carries ``eval_refs`` (how many evals bind it) and ``refs_rev`` (bumped by
every eval write that binds it). Every eval write updates them in the same transaction
as the eval, conditioned on the agent version the scorers were validated against, so:

- an agent cannot be deleted while an eval references it (``eval_refs == 0`` condition);
- an agent update that re-checked its evals' ``output_schema`` scorers cannot race an
  eval write (``refs_rev`` condition), and an eval write validated against an agent
  version cannot race an agent update (``version`` condition).

Eval writes are labelled transactions (:mod:`chalicelib.store.transactions`) that claim
the eval's name through :func:`chalicelib.store.names.claiming_name`; the labels say
*which* condition failed when one is cancelled.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pynamodb.exceptions import DoesNotExist

from chalicelib import clock, ids
from chalicelib.domain.catalog import DEFAULT_MAX_CONCURRENCY, Eval, EvalSpec
from chalicelib.errors import (
    Conflict,
    NotFound,
    ValidationFailed,
    concurrent_update,
    not_found,
)
from chalicelib.store import names, project_scoped
from chalicelib.store.models import AgentModel, DatasetModel, EvalModel
from chalicelib.store.pagination import Listing, Window
from chalicelib.store.transactions import LabelledTxn, TxnRefused, labelled_transaction

KIND = "eval"


# --- rows -----------------------------------------------------------------------------------


def _eval(model: EvalModel) -> Eval:
    return Eval(
        id=model.id,
        project_id=model.project_id,
        name=model.name,
        agent_id=model.agent_id,
        dataset_id=model.dataset_id,
        scorers=list(model.scorers),
        pass_threshold=model.pass_threshold,
        group_by=model.group_by,
        trials=int(model.trials),
        trial_reducer=model.trial_reducer,
        max_regression=model.max_regression,
        on_inconclusive=model.on_inconclusive or "pass",
        max_concurrency=int(model.max_concurrency or DEFAULT_MAX_CONCURRENCY),
        max_cost_usd=float(model.max_cost_usd) if model.max_cost_usd is not None else None,
        created_at=model.created_at,
        updated_at=model.updated_at,
    )


def _row(eval_id: str, project_id: str, spec: EvalSpec) -> EvalModel:
    created_at, created_key = project_scoped.creation_stamp(eval_id)
    return EvalModel(
        id=eval_id,
        project_id=project_id,
        created_at=created_at,
        updated_at=created_at,
        created_key=created_key,
        run_count=0,
        runs_counted=True,
        **spec.model_dump(),
    )


def _run_count(model: EvalModel) -> int | None:
    """The eval's run rows, as its counter keeps them; None: created before the counter
    (its count is partial), so a list counts the runs instead."""
    if not model.runs_counted:
        return None
    return int(model.run_count or 0)


def _spec_actions(spec: EvalSpec, now: str) -> list[Any]:
    """Set every writable field (a null one is removed) and ``updated_at``."""
    actions: list[Any] = [EvalModel.updated_at.set(now)]
    for name, value in spec.model_dump().items():
        attribute = getattr(EvalModel, name)
        actions.append(attribute.remove() if value is None else attribute.set(value))
    return actions


def get_eval(eval_id: str) -> Eval:
    """The eval, or NotFound."""
    return _eval(project_scoped.get_or_404(EvalModel, KIND, eval_id))


def get_eval_and_run_count(eval_id: str) -> tuple[Eval, int | None]:
    """The eval and how many runs it has (None: not counted, see :func:`_run_count`), from
    one read of its row; NotFound when there is none."""
    model = project_scoped.get_or_404(EvalModel, KIND, eval_id)
    return _eval(model), _run_count(model)


def list_evals(project_id: str, window: Window, name: str | None = None) -> Listing[Eval]:
    """The project's evals, oldest first; with ``name``, only the one of that name."""
    if name is not None:
        return project_scoped.list_named(EvalModel, KIND, project_id, name, window, _eval)
    return project_scoped.list_by_project(EvalModel, project_id, window, _eval)


def _evals_by_ids(eval_ids: list[str]) -> list[Eval]:
    if not eval_ids:
        return []
    rows = EvalModel.batch_get(eval_ids, consistent_read=True)
    return sorted((_eval(row) for row in rows), key=lambda e: (e.created_at, e.id))


def list_evals_for_agent(agent_id: str) -> list[Eval]:
    """Every eval bound to the agent (GSI ``by_agent``, then full rows, oldest first)."""
    return _evals_by_ids([row.id for row in EvalModel.by_agent.query(agent_id)])


def list_evals_for_dataset(dataset_id: str) -> list[Eval]:
    """Every eval bound to the dataset (GSI ``by_dataset``, then full rows, oldest first)."""
    return _evals_by_ids([row.id for row in EvalModel.by_dataset.query(dataset_id)])


# --- agent reference bookkeeping --------------------------------------------------------------


def _bind_agent(txn: LabelledTxn, agent_id: str, validated_version: int, delta: int) -> None:
    """Bump the agent's refs (``delta`` evals gained), only if it is still the validated version."""
    txn.update(
        "agent",
        AgentModel(id=agent_id),
        actions=[AgentModel.eval_refs.add(delta), AgentModel.refs_rev.add(1)],
        condition=AgentModel.version == validated_version,
    )


def _unbind_agent(txn: LabelledTxn, agent_id: str) -> None:
    txn.update(
        "old_agent",
        AgentModel(id=agent_id),
        actions=[AgentModel.eval_refs.add(-1), AgentModel.refs_rev.add(1)],
        condition=AgentModel.id.exists(),
    )


def _refused(exc: TxnRefused, spec: EvalSpec, eval_id: str) -> Exception:
    if "dataset" in exc.labels:
        return ValidationFailed(f"dataset {spec.dataset_id} not found", field="dataset_id")
    if "agent" in exc.labels:
        # The agent was deleted or updated after the scorers were validated against it.
        try:
            AgentModel.get(spec.agent_id, attributes_to_get=["id"])
        except DoesNotExist:
            return ValidationFailed(f"agent {spec.agent_id} not found", field="agent_id")
        return concurrent_update("agent", spec.agent_id)
    return project_scoped.lost_race(EvalModel, KIND, eval_id)


# --- writes ---------------------------------------------------------------------------------


def create_eval(project_id: str, spec: EvalSpec, agent_version: int) -> Eval:
    """Write a validated eval; ``agent_version`` is the agent version it was validated against."""
    eval_id = ids.new_id("eval")
    row = _row(eval_id, project_id, spec)
    try:
        with project_scoped.creating(KIND, row) as txn:
            _bind_agent(txn, spec.agent_id, agent_version, 1)
            txn.check("dataset", DatasetModel, spec.dataset_id, DatasetModel.id.exists())
    except TxnRefused as exc:
        raise _refused(exc, spec, eval_id) from exc
    return _eval(row)


def update_eval(current: Eval, spec: EvalSpec, agent_version: int) -> Eval:
    """Replace the writable fields; refused if the eval changed since ``current`` was read."""
    now = clock.now_iso()
    try:
        with names.claiming_name(
            KIND, current.project_id, current.id, spec.name, previous=current.name
        ) as txn:
            txn.update(
                "eval",
                EvalModel(id=current.id),
                actions=_spec_actions(spec, now),
                condition=EvalModel.updated_at == current.updated_at,
            )
            if spec.agent_id != current.agent_id:
                _unbind_agent(txn, current.agent_id)
                _bind_agent(txn, spec.agent_id, agent_version, 1)
            else:
                _bind_agent(txn, spec.agent_id, agent_version, 0)
            if spec.dataset_id != current.dataset_id:
                txn.check("dataset", DatasetModel, spec.dataset_id, DatasetModel.id.exists())
    except TxnRefused as exc:
        raise _refused(exc, spec, current.id) from exc
    return current.model_copy(update={**spec.model_dump(), "updated_at": now})


def delete_eval(current: Eval) -> None:
    """Delete the eval, release its name and its reference on the agent."""
    try:
        _delete(current, unbind=True)
    except TxnRefused as exc:
        if "eval" in exc.labels:
            raise not_found(KIND, current.id) from exc
        # The agent row is gone (it cannot be deleted while referenced, so this is a
        # leftover of an interrupted write): delete the eval without touching it.
        _delete(current, unbind=False)


def _delete(current: Eval, unbind: bool) -> None:
    with labelled_transaction() as txn:
        txn.delete("eval", EvalModel(id=current.id), condition=EvalModel.id.exists())
        txn.release_name(current.project_id, KIND, current.name)
        if unbind:
            _unbind_agent(txn, current.agent_id)


def delete_evals_of_dataset(dataset_id: str) -> list[str]:
    """Delete every eval bound to the dataset (one transaction each). Returns their ids."""
    deleted = []
    for ev in list_evals_for_dataset(dataset_id):
        try:
            delete_eval(ev)
        except NotFound:
            continue  # deleted concurrently
        deleted.append(ev.id)
    return deleted


def run_with_retry(attempt: Callable[[], Any], retries: int = 3) -> Any:
    """Retry ``attempt`` when it lost a race (409 CONCURRENT_UPDATE); other errors pass through."""
    for remaining in range(retries, 0, -1):
        try:
            return attempt()
        except Conflict as exc:
            if exc.code != "CONCURRENT_UPDATE" or remaining == 1:
                raise
    raise AssertionError("unreachable")
