"""Project secrets: one row per secret, its value sealed, its name unique in the project.

The value is sealed with :func:`chalicelib.secretbox.seal` (purpose
:data:`~chalicelib.secretbox.PROJECT_SECRET`, so a sealed webhook secret cannot be passed
off as one) and opened only by :func:`reveal`, which the outbound callers use right before
their request. Nothing here returns a value to the API: :class:`Secret` has ``has_value``.

Which resources use a secret (:func:`references`) is read from the ``by_project`` index of
agents, tools and AI providers when a secret is deleted: a reference written in between is
not seen, and its next call fails with "secret not found" (safe: nothing is sent).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any, cast

from chalicelib import clock, ids, secretbox
from chalicelib.domain.secrets import SECRET_TOKEN, Secret, token_references
from chalicelib.errors import ValidationFailed
from chalicelib.openai_http import EndpointFailed
from chalicelib.outbound.revealed import note as note_revealed
from chalicelib.store import names, project_scoped
from chalicelib.store.models import AgentModel, AiProviderModel, SecretModel, ToolModel
from chalicelib.store.pagination import Listing, Window
from chalicelib.store.transactions import TxnRefused, labelled_transaction

KIND = "secret"
_HEADER_TEXT = re.compile(r"^[\x20-\x7e\t]*$")
#: What every reference to a secret the project cannot use answers (missing, another
#: project's, or one the caller may not read: the same 400, see docs/secrets.md).
NOT_FOUND_CODE = "SECRET_NOT_FOUND"


class SecretUnavailable(EndpointFailed):
    """At call time: the referenced secret is gone, holds no value, or is not the
    project's. The message names only the id the resource itself holds. An
    :class:`~chalicelib.openai_http.EndpointFailed`, so a completion's caller reports it
    as the failed call it is."""


def secret_not_found(secret_ref: str, field: str) -> ValidationFailed:
    """400 ``SECRET_NOT_FOUND``, the same whatever the reason the reference is unusable."""
    shown = secret_ref if ids.is_id(KIND, secret_ref) else "(not a secret id)"
    return ValidationFailed(
        f"secret {shown} not found in this project", field=field, code=NOT_FOUND_CODE
    )


def _secret(model: SecretModel) -> Secret:
    return Secret(
        id=model.id,
        project_id=model.project_id,
        name=model.name,
        has_value=model.sealed_value is not None,
        created_at=model.created_at,
        updated_at=model.updated_at,
    )


def create_secret(project_id: str, name: str, value: str | None) -> Secret:
    """Create a secret, its value sealed (409 ``NAME_CONFLICT`` when the name is taken)."""
    secret_id = ids.new_id(KIND)
    now, created_key = project_scoped.creation_stamp(secret_id)
    row = SecretModel(
        id=secret_id,
        project_id=project_id,
        name=name,
        sealed_value=None if value is None else secretbox.seal(value, secretbox.PROJECT_SECRET),
        created_at=now,
        updated_at=now,
        created_key=created_key,
    )
    project_scoped.create(KIND, row)
    return _secret(row)


def get_secret(secret_id: str) -> Secret:
    """The secret, or NotFound."""
    return _secret(project_scoped.get_or_404(SecretModel, KIND, secret_id))


def find_secret(project_id: str, secret_id: str) -> Secret | None:
    """The secret when it exists *in this project*; another project's reads as missing."""
    row = project_scoped.find_in_project(SecretModel, project_id, secret_id)
    return None if row is None else _secret(row)


def list_secrets(project_id: str, window: Window) -> Listing[Secret]:
    """A project's secrets, oldest first."""
    return project_scoped.list_by_project(SecretModel, project_id, window, _secret)


def update_secret(current: Secret, name: str | None, value: str | None) -> Secret:
    """Rename and/or replace the value (``None``: keep it), conditioned on ``updated_at``.

    409 ``CONCURRENT_UPDATE`` when the secret changed since it was read, 404 when deleted.
    """
    now = clock.now_iso()
    new_name = current.name if name is None else name
    actions = [SecretModel.updated_at.set(now), SecretModel.name.set(new_name)]
    if value is not None:
        sealed = secretbox.seal(value, secretbox.PROJECT_SECRET)
        actions.append(SecretModel.sealed_value.set(sealed))
    try:
        with names.claiming_name(
            KIND, current.project_id, current.id, new_name, previous=current.name
        ) as txn:
            txn.update(
                KIND,
                SecretModel(id=current.id),
                actions=actions,
                condition=SecretModel.updated_at == current.updated_at,
            )
    except TxnRefused as exc:
        raise project_scoped.lost_race(SecretModel, KIND, current.id) from exc
    has_value = current.has_value or value is not None
    return current.model_copy(update={"name": new_name, "updated_at": now, "has_value": has_value})


def delete_secret(secret: Secret, provider_ids: list[str]) -> None:
    """Delete the secret, release its name and delete ``provider_ids`` (a forced delete's
    dependent AI providers, releasing their names) in one transaction."""
    providers = [
        project_scoped.find_in_project(AiProviderModel, secret.project_id, p) for p in provider_ids
    ]
    try:
        with labelled_transaction() as txn:
            txn.delete(KIND, SecretModel(id=secret.id), condition=SecretModel.id.exists())
            txn.release_name(secret.project_id, KIND, secret.name)
            for provider in providers:
                if provider is None:
                    continue
                txn.delete(
                    "ai_provider",
                    AiProviderModel(id=provider.id),
                    condition=AiProviderModel.secret_id == secret.id,
                )
                txn.release_name(secret.project_id, "ai_provider", provider.name)
    except TxnRefused as exc:
        raise project_scoped.lost_race(SecretModel, KIND, secret.id) from exc


def reveal(project_id: str | None, secret_id: str) -> str:
    """The value of a secret of ``project_id``, opened for the call about to use it.

    :class:`SecretUnavailable` when it is missing, another project's, or holds no value.
    """
    row = (
        None
        if project_id is None
        else project_scoped.find_in_project(SecretModel, project_id, secret_id)
    )
    if row is None or row.sealed_value is None:
        raise SecretUnavailable(f"secret {secret_id} not found or has no value")
    value = secretbox.open_sealed(row.sealed_value, secretbox.PROJECT_SECRET)
    note_revealed(value)  # the call about to carry it scrubs it from its answer
    return value


def opener(project_id: str | None, secret_id: str | None) -> Callable[[], str] | None:
    """What opens the secret when a call is made (None when no secret is linked)."""
    return None if secret_id is None else partial(reveal, project_id, secret_id)


def fill_header(
    project_id: str | None,
    name: str,
    value: str,
    literal: Callable[[str], str] = lambda text: text,
) -> str:
    """A header value with its ``{{secret:...}}`` tokens filled, and ``literal`` applied to
    the text between them (an http tool's ``{{context:KEY}}``): one pass, so a secret's
    value is never read for tokens, nor a context value for secrets. A secret that would
    make the value more than one line of printable text (a header injection) is refused,
    its value not shown."""
    parts, end, revealed = [], 0, False
    for match in SECRET_TOKEN.finditer(value):
        parts.append(literal(value[end : match.start()]))
        parts.append(reveal(project_id, match.group(1)))
        end, revealed = match.end(), True
    parts.append(literal(value[end:]))
    filled = "".join(parts)
    if revealed and not _HEADER_TEXT.match(filled):
        raise SecretUnavailable(
            f"header {name} would not be printable ASCII once its secret is filled in"
        )
    return filled


# --- who references a secret -----------------------------------------------------------------


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def config_references(config: Any) -> set[str]:
    """Every secret a config names: a ``secret_id`` key at its top, and each token in any of
    its strings (header values are where tokens are resolved)."""
    found = {ref for text in _strings(config) for ref in token_references(text)}
    if isinstance(config, dict) and isinstance(config.get("secret_id"), str):
        found.add(config["secret_id"])
    return found


def references(project_id: str, secret_id: str) -> dict[str, list[dict[str, str]]]:
    """The project's AI providers, agents and tools that reference ``secret_id``, by kind."""
    found: dict[str, list[dict[str, str]]] = {"ai_providers": [], "agents": [], "tools": []}
    for row in AiProviderModel.by_project.query(project_id):
        provider = cast(AiProviderModel, row)
        if provider.secret_id == secret_id:
            found["ai_providers"].append({"id": provider.id, "name": provider.name})
    configured: tuple[tuple[str, Any], ...] = (("agents", AgentModel), ("tools", ToolModel))
    for kind, model_cls in configured:
        for row in model_cls.by_project.query(project_id):
            if secret_id in config_references(row.config):
                found[kind].append({"id": row.id, "name": row.name})
    return found
