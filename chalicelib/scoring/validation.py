"""Validating an eval's ``scorers`` list.

Every entry is validated by *its own* scorer plugin (``config_model`` for the shape,
``check`` for cross-resource rules); this module adds the rules that span the list:
the discriminator must name a registered type, a non-named type appears at most once,
and ``tool``/``decider`` scorers carry distinct ``name``s that shadow no scorer type.

Everything this module needs from the rest of pawl arrives through its environment, a
:class:`ValidationCatalog` (the registered scorer types and how to find each resource kind
a scorer may name) that the composition root (:mod:`chalicelib.wiring`) installs; this
module imports neither the plugin manager nor the API. :func:`register_lookup` swaps one
kind's lookup (tests); an unregistered kind finds nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from pydantic import ValidationError

from chalicelib.domain.catalog import Eval
from chalicelib.errors import ValidationFailed
from chalicelib.scoring.contract import (
    CatalogKind,
    CatalogResource,
    ProjectSetting,
    Scorer,
    ValidationEnv,
)

#: ``fn(project_id, resource_id)`` -> the resource, or None when it is not in that project.
LookupFn = Callable[[str, str], CatalogResource | None]


class ScorerTypes(Protocol):
    """The registered scorer types (the plugin host is one)."""

    def scorer_types(self) -> list[str]: ...

    def scorer(self, scorer_type: str) -> Scorer: ...


@dataclass
class ValidationCatalog:
    """What validation needs from the rest of pawl: the scorer types and the lookups.

    ``scorers`` is called on every use, so a replaced plugin host is seen at once.
    """

    scorers: Callable[[], ScorerTypes]
    lookups: dict[CatalogKind, LookupFn] = field(default_factory=dict)


_installed: ValidationCatalog | None = None


def install(catalog: ValidationCatalog | None) -> None:
    """Make ``catalog`` the environment of validation (the composition root's call)."""
    global _installed
    _installed = catalog


def installed() -> ValidationCatalog:
    """The installed catalog; validation before :func:`chalicelib.wiring.build` is a bug."""
    if _installed is None:
        raise RuntimeError("scorer validation is not wired: call chalicelib.wiring.build()")
    return _installed


def register_lookup(kind: CatalogKind, fn: LookupFn | None) -> LookupFn | None:
    """Make ``env.lookup(kind, id)`` find resources of ``kind`` through ``fn``.

    Replaces an earlier registration and returns it (``None`` removes the lookup), so a
    caller can put the previous one back.
    """
    lookups = installed().lookups
    previous = lookups.pop(kind, None)
    if fn is not None:
        lookups[kind] = fn
    return previous


def _project_of(resource: CatalogResource | None) -> object:
    if isinstance(resource, Mapping):
        return resource.get("project_id")
    return getattr(resource, "project_id", None)


@dataclass
class CatalogValidationEnv:
    """The :class:`ValidationEnv` of the catalog API and of run start."""

    project_id: str
    phase: str
    agent_output_schema: dict[str, Any] | None
    project_defaults: Mapping[ProjectSetting, str | None] = field(default_factory=dict)
    catalog: ValidationCatalog = field(default_factory=installed)

    def lookup(self, kind: CatalogKind, resource_id: str) -> CatalogResource | None:
        finder = self.catalog.lookups.get(kind)
        found = finder(self.project_id, resource_id) if finder else None
        owner = _project_of(found)
        # A resource of another project is as missing as no resource (tenancy).
        if found is not None and owner is not None and owner != self.project_id:
            return None
        return found

    def project_default(self, setting: ProjectSetting) -> str | None:
        return self.project_defaults.get(setting)


def env_for_project(
    project_id: str, phase: str, agent_output_schema: dict[str, Any] | None
) -> CatalogValidationEnv:
    """An env with the project's current defaults read from the store."""
    from chalicelib.store import tenancy  # scoring stays importable without the store bound

    project = tenancy.get_project(project_id)
    return CatalogValidationEnv(
        project_id=project_id,
        phase=phase,
        agent_output_schema=agent_output_schema,
        project_defaults={"default_ai_provider_id": project.default_ai_provider_id},
    )


# --- the list rules ---------------------------------------------------------------------------


def _pydantic_failure(exc: ValidationError, prefix: str) -> ValidationFailed:
    problems = []
    for err in exc.errors(include_url=False, include_context=False, include_input=False):
        loc = ".".join(str(part) for part in err["loc"])
        message = "unknown field" if err["type"] == "extra_forbidden" else err["msg"]
        problems.append({"field": f"{prefix}.{loc}" if loc else prefix, "message": message})
    summary = "; ".join(f"{p['field']}: {p['message']}" for p in problems[:5])
    return ValidationFailed(summary, field=problems[0]["field"], errors=problems)


def _relocated(exc: ValidationFailed, prefix: str) -> ValidationFailed:
    """The same refusal with its field placed under ``prefix`` (``scorers.<i>``)."""
    inner = exc.meta.get("field")
    where = f"{prefix}.{inner}" if inner else prefix
    meta = {k: v for k, v in exc.meta.items() if k != "field"}
    return ValidationFailed(f"{where}: {exc.message}", field=where, code=exc.code, **meta)


def _scorer_types(env: ValidationEnv) -> ScorerTypes:
    catalog = env.catalog if isinstance(env, CatalogValidationEnv) else installed()
    return catalog.scorers()


def _scorer_for(entry: Any, where: str, types: ScorerTypes) -> Any:
    if not isinstance(entry, dict):
        raise ValidationFailed(f"{where}: a scorer must be an object", field=where)
    scorer_type = entry.get("type")
    known = ", ".join(sorted(types.scorer_types()))
    if not isinstance(scorer_type, str):
        raise ValidationFailed(
            f"{where}.type: required, one of: {known}", field=f"{where}.type", known=known
        )
    try:
        return types.scorer(scorer_type)
    except ValidationFailed as exc:
        raise _relocated(exc, where) from None


@dataclass
class _Seen:
    types: set[str] = field(default_factory=set)
    names: set[str] = field(default_factory=set)


def _check_unique(scorer: Any, config: Any, where: str, seen: _Seen, types: ScorerTypes) -> None:
    if not scorer.named:
        if scorer.type in seen.types:
            raise ValidationFailed(
                f"{where}.type: {scorer.type} may appear at most once per eval",
                field=f"{where}.type",
            )
        seen.types.add(scorer.type)
        return
    name = getattr(config, "name", None)
    if not isinstance(name, str) or not name:
        raise ValidationFailed(
            f"{where}.name: required for a {scorer.type} scorer", field=f"{where}.name"
        )
    if name in types.scorer_types():
        raise ValidationFailed(
            f"{where}.name: {name!r} would shadow the {name} scorer type", field=f"{where}.name"
        )
    if name in seen.names:
        raise ValidationFailed(
            f"{where}.name: another scorer is already named {name!r}", field=f"{where}.name"
        )
    seen.names.add(name)


def validate_scorers(
    raw: Any, env: ValidationEnv, field_prefix: str = "scorers"
) -> list[dict[str, Any]]:
    """Validate an eval's scorer list; return the normalized configs in order.

    Raises :class:`ValidationFailed` naming the first offending field
    (``scorers.<i>.<key>``).
    """
    if not isinstance(raw, list) or not raw:
        raise ValidationFailed(f"{field_prefix}: must be a non-empty list", field=field_prefix)
    seen = _Seen()
    types = _scorer_types(env)
    normalized = []
    for index, entry in enumerate(raw):
        where = f"{field_prefix}.{index}"
        scorer = _scorer_for(entry, where, types)
        try:
            config = scorer.config_model.model_validate(entry)
        except ValidationError as exc:
            raise _pydantic_failure(exc, where) from None
        _check_unique(scorer, config, where, seen, types)
        try:
            scorer.check(config, env)
        except ValidationFailed as exc:
            raise _relocated(exc, where) from None
        normalized.append(config.model_dump(mode="json", by_alias=True, exclude_none=True))
    return normalized


def scorer_key(config: Mapping[str, Any]) -> str:
    """The key of a scorer's results and aggregates: its ``name`` if named, else its type."""
    scorer_type = str(config.get("type"))
    try:
        named = bool(installed().scorers().scorer(scorer_type).named)
    except ValidationFailed:
        named = "name" in config
    return str(config["name"]) if named else scorer_type


def check_eval_runnable(eval: Eval, agent_output_schema: dict[str, Any] | None) -> None:
    """Run-start validation (authoritative): the eval's scorers against today's resources."""
    env = env_for_project(eval.project_id, "run_start", agent_output_schema)
    validate_scorers(eval.scorers, env)


def needs_agent_output_schema(scorers: Iterable[Mapping[str, Any]]) -> bool:
    return any(s.get("type") == "output_schema" for s in scorers)


def evals_needing_output_schema(evals: Iterable[Eval]) -> list[Eval]:
    """The evals whose scorers require their agent to carry an ``output_schema``."""
    return [e for e in evals if needs_agent_output_schema(e.scorers)]
