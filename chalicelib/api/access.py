"""Who may call a route: its IAM action and the SRN it acts on, declared once beside it.

Every route passes an :class:`Access` to :func:`chalicelib.api.routing.endpoint`; routing
runs :func:`authorize` after authentication and *before* the body is parsed, so a caller
without the action learns nothing from a malformed body. A denial keeps the shape of the
route (``docs/iam.md``, "What a denial looks like"):

- a list of a project's resources answers ``200`` with an empty page: the check asks
  whether the caller may list in the project at all (the SRN ``srn:<project>:<type>:*``,
  which a statement naming single resources does not match);
- a read of one resource (or of its items, runs, versions) is the same ``404`` a missing
  id gets;
- a write, a create or an action is ``403 FORBIDDEN``, except on a resource of a project
  none of the caller's policies name: ``404``, what a read would get.

Items and runs have no SRN of their own: they are reached through the parent in the path
(``dataset_id``, ``eval_id``), which is the resource their routes declare. The SRN is
built from the path and the caller's project, never from a read: the check costs no AWS
call, and a resource of another project then fails the handler's own visibility check
(``Caller.check_visible``: 404) exactly as before. Every resource the body names (an eval's
dataset and agent, a scorer's tool, the generation curated) is a reference field declared
on the request model (:mod:`chalicelib.iam.references`), checked by
:func:`authorize_references` once the body is valid.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel

from chalicelib import ids
from chalicelib.api.auth import Caller
from chalicelib.errors import Forbidden, NotFound
from chalicelib.iam.references import ReferenceField, named_references, refusal
from chalicelib.iam.srn import srn

#: How a route refuses a caller without its action.
Shape = Literal["list", "read", "write"]

#: SRN resource types of the path parameters that are not the id kind's own name.
_SRN_TYPES = {
    "api_key": "api-key",
    "ai_provider": "ai-provider",
    "trigger_firing": "trigger-firing",
}


def srn_type(path_parameter: str) -> str:
    """The SRN resource type a path parameter names (``provider_id`` -> ``ai-provider``)."""
    kind = ids.PATH_PARAMETER_KINDS[path_parameter]
    return _SRN_TYPES.get(kind, kind)


@dataclass(frozen=True)
class Access:
    """A route's action and how its SRN is found.

    ``target``: ``path`` (the resource the path parameter ``param`` names), ``collection``
    (the project's resources of ``resource_type``: lists and creates), ``project`` (the
    caller's project itself: what has no SRN type of its own), ``public`` (no key: no
    check) or ``admin`` (the admin key only). ``missing``: what a read's denial says is not
    found, when that is not the resource the path names (``/v2``'s ``run not found``).
    """

    action: str | None
    target: Literal["path", "collection", "project", "public", "admin"]
    resource_type: str = ""
    param: str | None = None
    missing: str = ""
    #: A GET on the project that lists (its usage events): denied, an empty page.
    listing: bool = False
    #: ``(query field, SRN type)``: a list its query narrows to one parent resource
    #: (``list-generations?agent_id=``) is also granted by the action on that resource.
    narrowed_by: tuple[str, str] | None = None


def on(action: str, param: str, *, resource_type: str = "") -> Access:
    """The resource (or the parent of the items) the path parameter ``param`` names."""
    return Access(action, "path", resource_type or srn_type(param), param)


def on_collection(
    action: str, resource_type: str, *, narrowed_by: tuple[str, str] | None = None
) -> Access:
    """A project's ``resource_type`` resources: a list, or a create into the project.

    ``narrowed_by``: the list's query field that narrows it to one resource of another
    type, and that type; the action on that resource grants the narrowed list too.
    """
    return Access(action, "collection", resource_type, None, narrowed_by=narrowed_by)


def on_project(
    action: str, *, param: str | None = None, missing: str = "", listing: bool = False
) -> Access:
    """The project itself: ``/v2/discovery``, a project's usage, and what has no SRN type of
    its own (decisions, trigger firings, ``/v2`` suites and runs) authorizes as its project.

    ``param``: the path parameter naming the resource, for the 404 a denied read gets.
    ``listing``: the route lists (denied: an empty page). The project is the one the query
    names (``?project_id=``, checked against the key's scope) or the key's own.
    """
    return Access(action, "project", "project", param, missing=missing, listing=listing)


#: A route that takes no key (health, the OpenAPI documents, the signed inbound webhook).
PUBLIC = Access(None, "public")


def admin_only(action: str, resource_type: str) -> Access:
    """A route only the admin key may call (policies, a key's policies): any other key is
    ``403 FORBIDDEN`` before the body is parsed, whatever its policies allow. The action is
    named for the documentation; it is never evaluated (the admin key bypasses policies).
    """
    return Access(action, "admin", resource_type)


def shape_of(method: str, access: Access) -> Shape:
    if method != "GET":
        return "write"
    return "list" if access.target == "collection" or access.listing else "read"


class EmptyList(Exception):
    """A list the caller may not read: routing answers it with an empty page (200).

    ``query``: the list's parsed query (where the empty page says it is).
    """

    def __init__(self, query: Any) -> None:
        super().__init__("the caller may not list these resources")
        self.query = query


def _body_project(raw: bytes) -> Any:
    """The ``project_id`` a create's body names, read before (and whatever) its validation."""
    try:
        decoded = json.loads(raw) if raw.strip() else None
    except ValueError:
        return None
    return decoded.get("project_id") if isinstance(decoded, dict) else None


def _target(access: Access, caller: Caller, path: dict[str, str]) -> tuple[str, str, str]:
    """``(project, resource type, resource id)`` of the SRN the route acts on."""
    project = caller.project_id or ""
    if access.target == "path":
        assert access.param is not None
        resource_id = path[access.param]
        if access.resource_type == "project":
            project = resource_id  # a project's SRN names itself
        return project, access.resource_type, resource_id
    if access.target == "project":
        return project, "project", project
    return project, access.resource_type, "*"


def authorize(
    access: Access,
    shape: Shape,
    caller: Caller,
    path: dict[str, str],
    raw_body: bytes,
    query: Any = None,
) -> None:
    """Raise the route's denial unless ``caller`` may perform its action (one evaluation).

    ``query``: a GET's parsed query (a ``project_id`` it names is checked against the key's
    scope and is the project of a list or of a project-wide read).
    """
    if access.action is None or caller.is_admin:
        return
    if access.target == "admin":
        raise Forbidden("this operation needs the admin key", action=access.action)
    if shape == "write" and access.target == "collection":
        requested = _body_project(raw_body)
        if isinstance(requested, str):
            caller.check_target_project(requested)
    project, resource_type, resource_id = _target(access, caller, path)
    if query is not None and access.target in ("collection", "project"):
        project = caller.listing_project(getattr(query, "project_id", None))
        resource_id = project if access.target == "project" else resource_id
    resource = srn(project, resource_type, resource_id)
    if caller.allows(access.action, resource) or _narrowed_allows(access, caller, project, query):
        return
    if shape == "list":
        raise EmptyList(query)
    hidden = _hidden(access, path, resource_type, resource_id)
    if shape == "read":
        raise hidden
    if access.target == "path" and not caller.policies_name_project(project):
        raise hidden
    raise _forbidden(access.action, resource)


def _narrowed_allows(access: Access, caller: Caller, project: str, query: Any) -> bool:
    """Whether the caller holds the list's action on the one resource its query narrows
    it to (``srn:<project>:agent:<agent_id>`` for ``?agent_id=``)."""
    if access.narrowed_by is None or access.action is None or query is None:
        return False
    field, resource_type = access.narrowed_by
    value = getattr(query, field, None)
    if not isinstance(value, str):
        return False
    return caller.allows(access.action, srn(project, resource_type, value))


def require(access: Access, caller: Caller, path: dict[str, str]) -> None:
    """:func:`authorize` for a call made on the caller's behalf (a formation deploying its
    resources): every denial is a 403 naming the action and the SRN, whatever the route's
    shape, so a denied read is never taken for a resource that is gone."""
    if access.action is None or caller.is_admin:
        return
    if access.target == "admin":
        raise Forbidden("this operation needs the admin key", action=access.action)
    resource = srn(*_target(access, caller, path))
    if not caller.allows(access.action, resource):
        raise _forbidden(access.action, resource)


def _forbidden(action: str, resource: str) -> Forbidden:
    return Forbidden(
        f"this API key may not {action} on {resource}", action=action, resource=resource
    )


def _hidden(access: Access, path: dict[str, str], resource_type: str, resource_id: str) -> NotFound:
    """The 404 a missing resource gets, for a caller that may not know whether it exists."""
    if access.missing:
        return NotFound(f"{access.missing} not found")
    if access.param is not None:
        resource_type, resource_id = ids.PATH_PARAMETER_KINDS[access.param], path[access.param]
    return NotFound(
        f"{resource_type} {resource_id} not found", resource_type=resource_type, id=resource_id
    )


#: The reference table of a route's body, built only when a caller needs it checked.
Table = Callable[[], list[ReferenceField]]


def path_context(path: Mapping[str, str]) -> dict[str, str]:
    """The ids a reference scoped ``path:<param>`` finds: the route's path parameters."""
    return {f"path:{name}": value for name, value in path.items()}


def body_values(body: Any) -> Any:
    """A parsed body as plain JSON values (the shape the reference paths walk)."""
    return body.model_dump(mode="json", by_alias=True) if isinstance(body, BaseModel) else body


def authorize_references(
    table: Table, caller: Caller, values: Any, context: Mapping[str, str]
) -> None:
    """Refuse unless ``caller`` holds every action each reference field needs on the
    resource ``values`` names there (a valid body's, or a stored resource's).

    A reference scoped to a value ``context`` does not hold (``eval:<field>`` outside a run
    start) is left to the check that knows it. The admin key and a key without policies
    skip the table: either may use whatever its project holds, and the handler's own
    checks keep a key inside its project.
    """
    if caller.is_admin or caller.policies is None or values is None:
        return
    project = caller.project_id or ""
    for named in named_references(table(), values):
        resource_id = named.resource_id(context, project)
        if resource_id is None:
            continue
        reference = named.of.reference
        resource = srn(project, reference.resource_type, resource_id)
        for action in reference.actions:
            if not caller.allows(action, resource):
                raise refusal(named, resource_id, action, resource, project)
