"""AI providers, and the ``llm_judge`` references that keep them from being pulled out.

Uniqueness of a provider's name in its project is a claim row written in the same
transaction as the provider (``store/names.py``, through ``store/project_scoped.py``). An
update is conditioned on the provider being as it was read (``updated_at``): of two racing
updates the loser gets 409 ``CONCURRENT_UPDATE``, as for every other project resource.
Deleting a provider is conditioned, in the same transaction, on it not being its
project's default; that it is not pinned by an eval's judge is checked by reading the
project's evals just before (see :func:`judge_references`; an eval written in between is
refused at run start, where the pinned provider is looked up again).
"""

from __future__ import annotations

from typing import Any, cast

from chalicelib import clock, ids
from chalicelib.domain.ai_providers import AiProvider, AiProviderSpec, JudgeReference
from chalicelib.errors import Conflict, not_found
from chalicelib.store import project_scoped
from chalicelib.store.models import AiProviderModel, EvalModel, ProjectModel
from chalicelib.store.names import claiming_name
from chalicelib.store.pagination import Listing, Window
from chalicelib.store.transactions import TxnRefused, labelled_transaction

KIND = "ai_provider"
JUDGE_TYPE = "llm_judge"


def _provider(model: AiProviderModel) -> AiProvider:
    return AiProvider(
        id=model.id,
        project_id=model.project_id,
        name=model.name,
        base_url=model.base_url,
        api_key_env=model.api_key_env,
        secret_id=model.secret_id,
        default_model=model.default_model,
        created_at=model.created_at,
        updated_at=model.updated_at,
    )


def create_provider(project_id: str, spec: AiProviderSpec) -> AiProvider:
    """Write a provider into an existing project; 409 ``NAME_CONFLICT`` when the name is taken."""
    provider_id = ids.new_id("ai_provider")
    created_at, created_key = project_scoped.creation_stamp(provider_id)
    row = AiProviderModel(
        id=provider_id,
        project_id=project_id,
        created_at=created_at,
        updated_at=created_at,
        created_key=created_key,
        **spec.model_dump(),
    )
    project_scoped.create(KIND, row)
    return _provider(row)


def get_provider(provider_id: str) -> AiProvider:
    """The provider, or NotFound."""
    return _provider(project_scoped.get_or_404(AiProviderModel, KIND, provider_id))


def find_provider(project_id: str, provider_id: str) -> AiProvider | None:
    """The provider when it exists *in this project*; another project's reads as missing."""
    row = project_scoped.find_in_project(AiProviderModel, project_id, provider_id)
    return None if row is None else _provider(row)


def list_providers(project_id: str, window: Window) -> Listing[AiProvider]:
    """A project's providers, oldest first."""
    return project_scoped.list_by_project(AiProviderModel, project_id, window, _provider)


def update_provider(current: AiProvider, spec: AiProviderSpec) -> AiProvider:
    """Replace the writable fields (renaming moves the name claim in the same transaction).

    Refused with 409 ``CONCURRENT_UPDATE`` when the provider changed since ``current`` was
    read, 404 when it was deleted meanwhile; ``created_key`` is left as stored.
    """
    now = clock.now_iso()
    actions = [AiProviderModel.updated_at.set(now)]
    for name, value in spec.model_dump().items():
        attribute = getattr(AiProviderModel, name)
        actions.append(attribute.remove() if value is None else attribute.set(value))
    try:
        with claiming_name(
            KIND, current.project_id, current.id, spec.name, previous=current.name
        ) as txn:
            txn.update(
                KIND,
                AiProviderModel(id=current.id),
                actions=actions,
                condition=AiProviderModel.updated_at == current.updated_at,
            )
    except TxnRefused as exc:
        raise project_scoped.lost_race(AiProviderModel, KIND, current.id) from exc
    return current.model_copy(update={**spec.model_dump(), "updated_at": now})


def delete_provider(provider: AiProvider) -> None:
    """Delete the provider and release its name, unless it is its project's default (409)."""
    not_default = ProjectModel.default_ai_provider_id.does_not_exist() | (
        ProjectModel.default_ai_provider_id != provider.id
    )
    try:
        with labelled_transaction() as txn:
            txn.check("not_default", ProjectModel, provider.project_id, not_default)
            txn.delete(KIND, AiProviderModel(id=provider.id), condition=AiProviderModel.id.exists())
            txn.release_name(provider.project_id, KIND, provider.name)
    except TxnRefused as exc:
        if "not_default" in exc.labels:
            raise in_use(provider, [], is_default=True) from exc
        raise not_found(KIND, provider.id) from exc


def in_use(provider: AiProvider, pinned_by: list[JudgeReference], is_default: bool) -> Conflict:
    """409 naming what still uses the provider."""
    users = [f"eval {ref.eval_name!r} ({ref.eval_id})" for ref in pinned_by]
    if is_default:
        users.insert(0, f"project {provider.project_id} (its default_ai_provider_id)")
    return Conflict(
        f"ai_provider {provider.id} is in use by {', '.join(users)}",
        code="AI_PROVIDER_IN_USE",
        project_default=is_default,
        eval_ids=[ref.eval_id for ref in pinned_by],
    )


def _judges_of(scorers: Any) -> list[dict[str, Any]]:
    if not isinstance(scorers, list):
        return []
    return [s for s in scorers if isinstance(s, dict) and s.get("type") == JUDGE_TYPE]


def judge_references(project_id: str) -> list[JudgeReference]:
    """Every ``llm_judge`` scorer of the project's evals, with the provider each pins.

    Reads the ``by_project`` GSI of ``evals`` (all attributes projected), oldest first.
    """
    references = []
    for row in EvalModel.by_project.query(project_id):
        model = cast(EvalModel, row)
        for judge in _judges_of(model.scorers):
            pinned = judge.get("ai_provider_id")
            references.append(
                JudgeReference(
                    eval_id=model.id,
                    eval_name=model.name,
                    ai_provider_id=pinned if isinstance(pinned, str) and pinned else None,
                )
            )
    return references
