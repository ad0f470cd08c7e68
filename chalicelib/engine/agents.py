"""Agents under test: the rules an agent's create, update and delete follow beyond its body.

The API parses and authorizes; these functions decide. An agent's ``config`` is checked
by the adapter of its ``type`` (a refusal names ``config.<key>``); ``output_schema`` must
be a JSON Schema and cannot be removed while an eval's ``output_schema`` scorer needs it;
a secret header sent back masked (as every read shows it) keeps its stored value; an
update that loses a race to a concurrent one is retried from a fresh read; an agent that
evals still reference is not deleted (409 ``AGENT_IN_USE``), nor one with generations or
eval runs (409 ``AGENT_HAS_DEPENDENTS``) unless forced, which deletes its generations too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jsonschema.exceptions import SchemaError
from jsonschema.validators import validator_for
from pydantic import ValidationError

from chalicelib.domain.catalog import Agent, Eval
from chalicelib.domain.secret_headers import restore_masked
from chalicelib.engine import bus
from chalicelib.errors import Conflict, ValidationFailed, validation_error_from_pydantic
from chalicelib.plugins.manager import plugins
from chalicelib.scoring.validation import evals_needing_output_schema
from chalicelib.store import agents, generations
from chalicelib.store.evals import list_evals_for_agent, run_with_retry


def validated_config(agent_type: str, config: dict[str, Any]) -> dict[str, Any]:
    """Check ``config`` with the adapter of ``agent_type``; errors name ``config.<key>``."""
    adapter = plugins().adapter(agent_type)
    try:
        parsed = adapter.config_model.model_validate(config)
    except ValidationError as exc:
        raise validation_error_from_pydantic(exc, prefix="config") from exc
    adapter.check(parsed)
    return config


def check_output_schema(schema: dict[str, Any] | None) -> None:
    if schema is None:
        return
    try:
        validator_for(schema).check_schema(schema)
    except SchemaError as exc:
        path = ".".join(str(p) for p in exc.path)
        field = f"output_schema.{path}" if path else "output_schema"
        raise ValidationFailed(
            f"output_schema is not a valid JSON Schema: {exc.message}", field=field
        ) from None


def _refuse_dropping_schema(agent_id: str, evals: list[Eval]) -> None:
    needing = evals_needing_output_schema(evals)
    if needing:
        names = ", ".join(f"{e.name} ({e.id})" for e in needing)
        raise ValidationFailed(
            f"output_schema cannot be removed: the output_schema scorer of evals {names} "
            f"needs it (agent {agent_id})",
            field="output_schema",
            evals=[{"id": e.id, "name": e.name} for e in needing],
        )


def create_agent(
    project_id: str,
    name: str,
    agent_type: str,
    config: dict[str, Any],
    output_schema: dict[str, Any] | None,
    label: str | None = None,
) -> Agent:
    """Register an agent (version 1) once its config and output schema pass."""
    config = validated_config(agent_type, config)
    check_output_schema(output_schema)
    created = agents.create_agent(project_id, name, agent_type, config, output_schema, label)
    bus.agent_version_created(created)
    return created


def update_agent(agent_id: str, changes: Mapping[str, Any], label: str | None = None) -> Agent:
    """Write a new version of the agent with ``changes`` applied (tagged ``label``).

    ``changes`` holds only the fields the caller gave (``name``, ``type``, ``config``,
    ``output_schema``); ``output_schema: None`` removes the schema, the others are never
    None. A write that changes nothing writes no version (and publishes nothing). Retried
    from a fresh read when a concurrent update won the race. While a release is active
    the new version is a draft: the release keeps serving its two versions.
    """
    written: list[bool] = []

    def attempt() -> Agent:
        written.clear()
        basis = agents.load_for_update(agent_id)
        current = basis.agent
        agent_type = changes.get("type") or current.type
        given_config = changes.get("config")
        config = (
            current.config if given_config is None else restore_masked(given_config, current.config)
        )
        if "type" in changes or "config" in changes:
            config = validated_config(agent_type, config)
        schema = changes.get("output_schema", current.output_schema)  # None given removes it
        check_output_schema(schema)
        if schema is None:
            _refuse_dropping_schema(agent_id, basis.evals)
        name = changes.get("name") or current.name
        if (name, agent_type, config, schema) == (
            current.name,
            current.type,
            current.config,
            current.output_schema,
        ):
            return current
        written.append(True)
        return agents.update_agent(basis, name, agent_type, config, schema, label)

    updated: Agent = run_with_retry(attempt)
    if written:
        bus.agent_version_created(updated)
    return updated


def restore_version(agent_id: str, version: int, label: str | None = None) -> Agent:
    """Copy archived ``version`` onto the agent as a new version, re-validated; the archive
    replaces the current config whole (a schema it lacks is removed). A no-op when the
    agent already holds that config. ``label`` defaults to ``restored from v<version>``."""
    archived = agents.get_agent_version(agent_id, version)
    changes = {
        "name": archived.name,
        "type": archived.type,
        "config": archived.config,
        "output_schema": archived.output_schema,
    }
    return update_agent(agent_id, changes, label or f"restored from v{version}")


def dependents_refusal(agent_id: str, generation_count: int, run_count: int) -> Conflict:
    """SOAT's 409 ``AGENT_HAS_DEPENDENTS``: its counts, and the call that deletes anyway."""
    return Conflict(
        f"agent {agent_id} has {generation_count} generation(s) and {run_count} eval run(s); "
        f"DELETE /api/v1/agents/{agent_id}?force=true deletes it with its generations "
        "(its runs keep their results, which name it by id)",
        code="AGENT_HAS_DEPENDENTS",
        agent_id=agent_id,
        generationCount=generation_count,
        traceCount=0,  # pawl records no traces
        runCount=run_count,
    )


def delete_agent(agent: Agent, force: bool = False) -> None:
    """Delete the agent and its versions.

    409 ``AGENT_IN_USE`` while evals reference it (even forced: an eval would lose its
    agent); else 409 ``AGENT_HAS_DEPENDENTS`` when it has generations or eval runs, unless
    ``force``: then its generations are deleted first (so an interrupted delete can be
    repeated) and its runs stay, naming it by id.
    """
    evals = list_evals_for_agent(agent.id)
    if evals:
        raise agents.agent_in_use(agent.id, evals)
    if force:
        generations.delete_for_agent(agent.id)
    else:
        generation_count = generations.count_for_agent(agent.id)
        run_count = agents.run_count(agent.id)
        if generation_count or run_count:
            raise dependents_refusal(agent.id, generation_count, run_count)
    agents.delete_agent(agent)
