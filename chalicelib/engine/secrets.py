"""Project secrets: the rules a secret's delete follows beyond its body.

A secret still referenced is not deleted (409 ``SECRET_IN_USE``, naming the users). SOAT's
``?force=true`` cascades to the dependent AI providers; pawl deletes those only when each
could be deleted on its own (no eval's ``llm_judge`` pins it, it is not the project's
default), and never cascades to agents or tools: a forced delete of a secret an agent or
a tool still references is refused too (their configs are versioned and hand-written;
deleting them would drop run history a user did not ask to lose).
"""

from __future__ import annotations

from chalicelib.domain.secrets import Secret
from chalicelib.errors import Conflict
from chalicelib.store import ai_providers, tenancy
from chalicelib.store import secrets as store

IN_USE_CODE = "SECRET_IN_USE"


def _in_use(secret: Secret, users: dict[str, list[dict[str, str]]], why: str) -> Conflict:
    return Conflict(
        f"secret {secret.id} is in use{why}", code=IN_USE_CODE, secret_id=secret.id, **users
    )


def delete_secret(secret: Secret, force: bool) -> None:
    """Delete the secret (and, when ``force``, the AI providers that use it)."""
    users = store.references(secret.project_id, secret.id)
    if users["agents"] or users["tools"]:
        raise _in_use(secret, users, " by agents or tools (force deletes only AI providers)")
    provider_ids = [p["id"] for p in users["ai_providers"]]
    if provider_ids and not force:
        raise _in_use(secret, users, " by AI providers (?force=true deletes them too)")
    if provider_ids:
        pinned = {r.ai_provider_id for r in ai_providers.judge_references(secret.project_id)}
        default = tenancy.get_project(secret.project_id).default_ai_provider_id
        blocked = [p for p in provider_ids if p in pinned or p == default]
        if blocked:
            raise _in_use(
                secret,
                users,
                f": AI providers {', '.join(blocked)} are pinned by evals or "
                "are the project's default and cannot be deleted with it",
            )
    store.delete_secret(secret, provider_ids)
