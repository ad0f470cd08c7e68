"""Names wherever an id goes: ``--eval support-faq`` is the eval of that name.

A value shaped like an id of the flag's kind (``eval_…`` for ``--eval-id``, see
:mod:`chalicelib.idformat`) is sent as it is, with no extra request. Anything else is a
name, looked up with the resource's list route as the caller: a project key lists its own
project only, so a same-named eval of another project is never found; an admin key names the
project with ``--project-id`` (itself an id or a project's name). Two resources of one name
are refused with both ids, never guessed between. ``--eval-run-id latest`` is the eval's
newest run.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeGuard

from chalicelib.idformat import is_id
from pawl.transport import ApiError

if TYPE_CHECKING:
    from pawl.cli.ops import Operation

#: ``--eval-run-id latest``: the eval's newest run (of any status).
LATEST = "latest"
PAGE_SIZE = 100


class NameNotResolved(Exception):
    """A name that names nothing, or more than one thing, the caller can see."""


class Sender(Protocol):
    """What resolution needs of a client (``pawl.transport.PawlClient`` is one)."""

    def send(
        self, method: str, path: str, *, params: Mapping[str, str | int] | None = None
    ) -> Any: ...


@dataclass(frozen=True)
class Named:
    """A kind of resource that has a ``name``, and where its list is."""

    kind: str
    noun: str
    collection: str
    #: Listed per project (``?project_id=``); policies and projects are the deployment's.
    in_project: bool = True
    #: The list route takes ``?name=`` (the exact name), so one page answers.
    name_filter: bool = False


NAMED = {
    named.kind: named
    for named in (
        Named("project", "project", "/api/v1/projects", in_project=False),
        Named("api_key", "API key", "/api/v1/api-keys"),
        Named("agent", "agent", "/api/v1/agents", name_filter=True),
        Named("dataset", "dataset", "/api/v1/datasets", name_filter=True),
        Named("eval", "eval", "/api/v1/evals", name_filter=True),
        Named("ai_provider", "AI provider", "/api/v1/ai-providers"),
        Named("tool", "tool", "/api/v1/tools"),
        Named("decider", "decider", "/api/v1/deciders"),
        Named("formation", "formation", "/api/v1/formations", name_filter=True),
        Named("policy", "policy", "/api/v1/policies", in_project=False),
        Named("secret", "secret", "/api/v1/secrets"),
        Named("trigger", "trigger", "/api/v1/triggers"),
        Named("webhook", "webhook", "/api/v1/webhooks"),
    )
}

#: A parameter (path, query or body field) -> the kind of resource its value names.
PARAMETER_KINDS = {
    "project_id": "project",
    "key_id": "api_key",
    "agent_id": "agent",
    "dataset_id": "dataset",
    "eval_id": "eval",
    "provider_id": "ai_provider",
    "default_ai_provider_id": "ai_provider",
    "tool_id": "tool",
    "decider_id": "decider",
    "formation_id": "formation",
    "policy_id": "policy",
    "secret_id": "secret",
    "trigger_id": "trigger",
    "webhook_id": "webhook",
}


def flag_help(parameter: str, text: str) -> str:
    """A flag's help, saying when it takes a name (or ``latest``) as well as an id."""
    kind = PARAMETER_KINDS.get(parameter)
    if parameter == "eval_run_id":
        added = "an id, or latest: the eval's newest run"
    elif kind is not None:
        added = f"an id or the {NAMED[kind].noun}'s name"
    else:
        return text
    return f"{text} — {added}" if text else added


def _listing(client: Sender, named: Named, name: str, project_id: str | None) -> Iterator[Any]:
    """Every row of the kind's list the caller sees, page after page."""
    params: dict[str, str | int] = {"limit": PAGE_SIZE}
    if named.in_project and project_id is not None:
        params["project_id"] = project_id
    if named.name_filter:
        params["name"] = name
    while True:
        listing = client.send("GET", named.collection, params=params)
        yield from listing.get("data", [])
        cursor = listing.get("next_cursor")
        if not cursor:
            return
        params["cursor"] = cursor


def _where(named: Named, project_id: str | None) -> str:
    if not named.in_project:
        return "this deployment"
    return f"project {project_id}" if project_id else "this project"


def find_named(client: Sender, kind: str, name: str, project_id: str | None = None) -> str:
    """The id of the one ``kind`` called ``name`` the caller can see (in ``project_id``)."""
    named = NAMED[kind]
    try:
        found = [row for row in _listing(client, named, name, project_id) if _named(row, name)]
    except ApiError as exc:
        raise NameNotResolved(
            f"cannot look up the {named.noun} named {name!r} ({exc.status} {exc.code}: "
            f"{exc.message}); give its id instead"
        ) from exc
    if not found:
        raise NameNotResolved(f"no {named.noun} named {name!r} in {_where(named, project_id)}")
    if len(found) > 1:
        listed = ", ".join(_candidate(row) for row in found)
        raise NameNotResolved(
            f"{len(found)} {named.noun}s are named {name!r}: {listed}; give one's id instead"
        )
    return str(found[0]["id"])


def _named(row: Any, name: str) -> bool:
    return isinstance(row, dict) and row.get("name") == name and isinstance(row.get("id"), str)


def _candidate(row: Mapping[str, Any]) -> str:
    project = row.get("project_id")
    return f"{row['id']} (project {project})" if project else str(row["id"])


def latest_run(client: Sender, eval_id: str) -> str:
    """The id of the eval's newest run (the list is newest first)."""
    params: dict[str, str | int] = {"limit": 1, "view": "summary"}
    try:
        listing = client.send("GET", f"/api/v1/evals/{eval_id}/runs", params=params)
    except ApiError as exc:
        raise NameNotResolved(
            f"cannot find the latest run of eval {eval_id} ({exc.status} {exc.code}: {exc.message})"
        ) from exc
    runs = listing.get("data") or []
    if not runs:
        raise NameNotResolved(f"eval {eval_id} has no run yet")
    return str(runs[0]["id"])


def resolve(client: Sender, parameter: str, value: str, project_id: str | None = None) -> str:
    """``value`` for ``parameter`` (``eval_id``...): an id as given, a name as its id."""
    kind = PARAMETER_KINDS.get(parameter)
    if kind is None or is_id(kind, value):
        return value
    return find_named(client, kind, value, project_id)


def _is_name(value: Any, metavar: str) -> TypeGuard[str]:
    """A flag value that could be a name: a JSON field's ``null`` or list is not one."""
    if not isinstance(value, str) or not value:
        return False
    if metavar != "JSON":
        return True
    try:
        return isinstance(json.loads(value), str)
    except ValueError:
        return True


def resolve_args(op: Operation, args: argparse.Namespace, client: Sender) -> None:
    """Every id flag of ``op`` given a name is set to the id it names (``args`` in place).

    ``--project-id`` goes first: the other names are looked up in that project. An
    ``eval_run_id`` of ``latest`` is the newest run of the (resolved) ``eval_id``.
    """
    params = sorted(op.params, key=lambda param: param.name != "project_id")
    project_id: str | None = None
    for param in params:
        dest = f"param__{param.name}"
        value = getattr(args, dest, None)
        if param.name in PARAMETER_KINDS and _is_name(value, param.metavar):
            value = resolve(client, param.name, value, project_id)
            setattr(args, dest, value)
        if param.name == "project_id" and isinstance(value, str):
            project_id = value
    run_id = getattr(args, "param__eval_run_id", None)
    eval_id = getattr(args, "param__eval_id", None)
    if run_id == LATEST and isinstance(eval_id, str):
        args.param__eval_run_id = latest_run(client, eval_id)
