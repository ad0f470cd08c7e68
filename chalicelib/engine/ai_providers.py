"""AI providers: the rules a provider's writes and a project's default provider follow.

A ``base_url`` the outbound client would refuse (scheme, private or metadata address) is
refused when written, not first when a judge calls it. A provider is not deleted while an
eval's ``llm_judge`` pins it (409), and a project's default provider must be one of its
own and cannot be cleared while a judge inherits it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from chalicelib import openai_http, outbound
from chalicelib.domain.ai_providers import AiProvider, AiProviderSpec
from chalicelib.errors import ValidationFailed
from chalicelib.settings import CREDENTIAL_ENV_ALLOW
from chalicelib.store import ai_providers as store
from chalicelib.store import tenancy


def check_base_url(url: str) -> str:
    """Refuse a URL the outbound client would refuse (scheme, private or metadata address)."""
    try:
        outbound.check_url(url)
    except outbound.OutboundError as exc:
        raise ValidationFailed(f"base_url is not allowed: {exc}", field="base_url") from None
    return url


def check_key_source(spec: AiProviderSpec) -> None:
    """One key source at most, and an ``api_key_env`` only when the operator lists it (the
    same answer whether or not the variable exists)."""
    if spec.secret_id is not None and spec.api_key_env is not None:
        raise ValidationFailed("give secret_id or api_key_env, not both", field="secret_id")
    if spec.api_key_env is not None and not openai_http.is_listed_env(spec.api_key_env):
        raise ValidationFailed(
            openai_http.UNLISTED_ENV_MESSAGE, field="api_key_env", setting=CREDENTIAL_ENV_ALLOW
        )


def create_provider(project_id: str, fields: Mapping[str, Any]) -> AiProvider:
    """Create the provider ``fields`` (the AiProviderSpec fields) describe, in the project."""
    check_base_url(fields["base_url"])
    spec = AiProviderSpec.model_validate(dict(fields))
    check_key_source(spec)
    tenancy.get_project(project_id)
    return store.create_provider(project_id, spec)


def update_provider(current: AiProvider, changes: Mapping[str, Any]) -> AiProvider:
    """Apply ``changes`` (only the fields given); ``api_key_env: None`` clears it."""
    if changes.get("base_url") is not None:
        check_base_url(changes["base_url"])
    kept = current.model_dump(include=set(AiProviderSpec.model_fields))
    spec = AiProviderSpec.model_validate({**kept, **changes})
    if changes.get("api_key_env") is not None or changes.get("secret_id") is not None:
        check_key_source(spec)
    return store.update_provider(current, spec)


def delete_provider(provider: AiProvider) -> None:
    """Delete a provider; refused (409) while an eval's judge pins it."""
    pinned_by = [
        ref
        for ref in store.judge_references(provider.project_id)
        if ref.ai_provider_id == provider.id
    ]
    if pinned_by:
        project = tenancy.get_project(provider.project_id)
        raise store.in_use(provider, pinned_by, project.default_ai_provider_id == provider.id)
    store.delete_provider(provider)


def check_default_change(project_id: str, provider_id: str | None) -> None:
    """Refuse a ``default_ai_provider_id`` the project cannot take (``PUT /projects/{id}``).

    A provider must exist in the project; clearing the default is refused while an eval's
    ``llm_judge`` inherits it (pins no provider of its own).
    """
    if provider_id is not None:
        if store.find_provider(project_id, provider_id) is None:
            raise ValidationFailed(
                f"ai_provider {provider_id} not found in project {project_id}",
                field="default_ai_provider_id",
            )
        return
    inheriting = [ref for ref in store.judge_references(project_id) if ref.ai_provider_id is None]
    if inheriting:
        named = ", ".join(f"{ref.eval_name!r} ({ref.eval_id})" for ref in inheriting)
        raise ValidationFailed(
            f"default_ai_provider_id cannot be cleared: the llm_judge scorer of eval(s) {named} "
            "pins no ai_provider_id and inherits the project default",
            field="default_ai_provider_id",
            eval_ids=sorted({ref.eval_id for ref in inheriting}),
        )
