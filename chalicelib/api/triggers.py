"""Triggers and their firings (``/api/v1/triggers``, ``/api/v1/trigger-firings``), and the
inbound webhook that fires a webhook trigger (``POST /hooks/triggers/{trigger_id}``).

Parses and authorizes; the rules live in :mod:`chalicelib.engine.triggers.service` (shared
with formations). A trigger's secret is shown by create, rotate-secret and ``GET …/secret``
only. See ``docs/triggers.md``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from chalice import Blueprint
from pydantic import BaseModel, ConfigDict, Field, StrictBool

from chalicelib.api import plugin_schemas
from chalicelib.api.access import (
    PUBLIC,
    authorize_references,
    on,
    on_collection,
    on_project,
    require,
)
from chalicelib.api.auth import Caller, caller_of_key
from chalicelib.api.common import refuse_nulls, target_project
from chalicelib.api.evals import authorize_bindings
from chalicelib.api.routing import Call, ProjectListQuery, Reply, endpoint, page
from chalicelib.api.runs import start_references
from chalicelib.domain.base import Page, RequestBody
from chalicelib.domain.catalog import Eval
from chalicelib.domain.triggers import (
    TargetType,
    Trigger,
    TriggerFiring,
    TriggerSecret,
    TriggerSpec,
    TriggerType,
    TriggerWithSecret,
)
from chalicelib.engine.triggers import cron, firing, inbound, patterns, service, targets
from chalicelib.errors import Conflict, Forbidden, PawlError, ValidationFailed
from chalicelib.iam.references import Reference
from chalicelib.ids import EvalId, EvalRunId, ProjectId, TriggerId
from chalicelib.store import triggers as store

bp = Blueprint(__name__)

#: Why a firing failed when the key that bound its trigger can no longer start the run.
BINDING_KEY_DELETED = "TRIGGER_BINDING_KEY_DELETED"
BINDING_DENIED = "TRIGGER_BINDING_DENIED"

TAG = "triggers"
#: A trigger starts its eval's runs: binding one to an eval needs the right to run it (403),
#: and what that run start itself needs (``api/run_references``).
RUNS_TARGET = Reference("eval", ("evaluations:RunEval",), answer="forbidden")
Name = Field(min_length=1, max_length=200)
Description = Field(None, max_length=2000)
TargetId = Field(min_length=1, max_length=100)
BoundTarget = Annotated[str, RUNS_TARGET, TargetId]
Short = Field(None, min_length=1, max_length=200)
RequireTimestamp = Field(
    False,
    description="pawl's addition, webhook triggers only: accept only timestamped signatures "
    "(t=<unix>,v1=<hex>), refusing the body-only form (docs/triggers.md)",
)


class CreateTrigger(RequestBody):
    project_id: ProjectId | None = Field(None, description="Required with the admin key")
    name: str = Name
    description: str | None = Description
    type: TriggerType
    target_type: TargetType
    target_id: BoundTarget
    action: str | None = Short
    input: dict[str, Any] | None = None
    cron: str | None = Short
    event_pattern: str | None = Short
    active: StrictBool = True
    policy_id: str | None = Short
    require_timestamp: StrictBool = RequireTimestamp


class UpdateTrigger(RequestBody):
    name: str | None = Field(None, min_length=1, max_length=200)
    description: str | None = Description
    type: TriggerType | None = Field(None, description="Immutable: only its current value")
    target_type: TargetType | None = None
    target_id: Annotated[str, RUNS_TARGET, Field(min_length=1, max_length=100)] | None = None
    action: str | None = Short
    input: dict[str, Any] | None = None
    cron: str | None = Short
    event_pattern: str | None = Short
    active: StrictBool | None = None
    policy_id: str | None = Short
    require_timestamp: StrictBool | None = None


class FireTrigger(RequestBody):
    input: dict[str, Any] | None = None


class FiringListQuery(ProjectListQuery):
    trigger_id: TriggerId | None = None


_NOT_NULL = ("name", "type", "target_type", "target_id", "active", "require_timestamp")


# --- what the OpenAPI document publishes: exactly what the service accepts ------------------
# The request models above take every value the spec names, so a refusal can say why (an
# unsupported target, a bad cron); the document states the narrower truth.

CronText = Annotated[str, Field(pattern=cron.PATTERN, max_length=200)]
EventPattern = Literal[patterns.PATTERNS]  # type: ignore[valid-type]
PositiveVersion = Annotated[int, Field(strict=True, ge=1)]


class EvalTriggerInput(BaseModel):
    """What an eval target reads of the input (other keys are kept and ignored)."""

    model_config = ConfigDict(extra="allow")
    agent_version: PositiveVersion | Literal["latest", "canary"] | None = None
    baseline_run_id: EvalRunId | Literal["latest"] | None = None


class _PublishedTrigger(RequestBody):
    project_id: ProjectId | None = Field(None, description="Required with the admin key")
    name: str = Name
    description: str | None = Description
    target_type: Literal["eval"]
    target_id: Annotated[EvalId, RUNS_TARGET]
    action: None = None
    input: EvalTriggerInput | None = None
    active: StrictBool = True
    policy_id: None = None


class ManualTrigger(_PublishedTrigger):
    type: Literal["manual"]
    cron: None = None
    event_pattern: None = None
    require_timestamp: Literal[False] = False


class WebhookTrigger(ManualTrigger):
    type: Literal["webhook"]  # type: ignore[assignment]
    require_timestamp: StrictBool = RequireTimestamp  # type: ignore[assignment]


class ScheduleTrigger(_PublishedTrigger):
    type: Literal["schedule"]
    cron: CronText
    event_pattern: None = None
    require_timestamp: Literal[False] = False


class EventTrigger(_PublishedTrigger):
    type: Literal["event"]
    cron: None = None
    event_pattern: EventPattern
    require_timestamp: Literal[False] = False


def published_create() -> Any:
    return plugin_schemas.one_of(
        [ManualTrigger, WebhookTrigger, ScheduleTrigger, EventTrigger], "type"
    )


class PublishedUpdate(RequestBody):
    name: str | None = Field(None, min_length=1, max_length=200)
    description: str | None = Description
    type: TriggerType | None = Field(None, description="Immutable: only its current value")
    target_type: Literal["eval"] | None = None
    target_id: Annotated[EvalId, RUNS_TARGET] | None = None
    action: None = None
    input: EvalTriggerInput | None = None
    cron: CronText | None = None
    event_pattern: EventPattern | None = None
    active: StrictBool | None = None
    policy_id: None = None
    require_timestamp: StrictBool | None = None


class PublishedFire(RequestBody):
    input: EvalTriggerInput | None = None


def authorize_target(caller: Caller, project_id: str, spec: TriggerSpec) -> None:
    """A trigger starts runs of its eval without a caller: binding one needs, besides
    ``RunEval`` on the eval, what a run start of it needs now (its agent, dataset and
    scorer resources), answered as that run start would answer. A target that names no
    eval of the project is left to the service's own refusal."""
    if spec.target_type != "eval" or caller.policies is None:
        return
    try:
        evaluation = targets.find_eval_target(project_id, spec.target_id)
    except ValidationFailed:
        return
    authorize_bindings(caller, evaluation)


def bound_by(caller: Caller) -> str | None:
    """Who a binding the caller makes is recorded as: its key (None: the admin key)."""
    return None if caller.is_admin else caller.key_id


def authorize_firing(trigger: Trigger, evaluation: Eval, start: Mapping[str, Any]) -> None:
    """A firing starts a run for whoever bound the trigger: that key's policies, as they
    stand now, must allow what a run start of the eval needs (``RunEval`` on it, its
    agent, dataset and scorer resources, the start's version and baseline). Its key
    deleted or a binding now denied, the firing fails naming why and starts nothing. The
    admin key and a key without policies are unrestricted, as on a request."""
    key_id = trigger.bound_by_key_id
    if key_id is None:
        return
    caller = caller_of_key(key_id)
    if caller is None or caller.project_id != trigger.project_id:
        raise Forbidden(
            f"the API key {key_id} that bound trigger {trigger.id} was deleted: bind the "
            "trigger again (update its target_id) with a key that may run the eval",
            code=BINDING_KEY_DELETED,
            key_id=key_id,
        )
    try:
        run_eval = on("evaluations:RunEval", "eval_id")
        require(run_eval, caller, {"eval_id": evaluation.id})
        authorize_bindings(caller, evaluation)
        context = {"path:eval_id": evaluation.id, "eval:agent_id": evaluation.agent_id}
        authorize_references(start_references, caller, dict(start), context)
    except PawlError as exc:
        raise Forbidden(
            f"the API key {key_id} that bound trigger {trigger.id} may no longer start this "
            f"run: {exc.message}",
            code=BINDING_DENIED,
            key_id=key_id,
            refusal=exc.code,
            **exc.meta,
        ) from None


def visible_trigger(call: Call[Any, Any]) -> Trigger:
    found = store.get_trigger(call.path["trigger_id"])
    call.caller.check_visible(found.project_id, "trigger", found.id)
    return found


@endpoint(
    bp,
    "/api/v1/triggers",
    "POST",
    access=on_collection("triggers:CreateTrigger", "trigger"),
    body=CreateTrigger,
    published_body=published_create,
    response=TriggerWithSecret,
    status=201,
    tag=TAG,
)
def create_trigger(call: Call[CreateTrigger, Any]) -> TriggerWithSecret:
    """Bind a starter to an eval; a webhook trigger's ``secret`` is shown here."""
    project_id = target_project(call.caller, call.body.project_id)
    spec = TriggerSpec.model_validate(
        {**call.body.model_dump(exclude={"project_id"}), "bound_by_key_id": bound_by(call.caller)}
    )
    authorize_target(call.caller, project_id, spec)
    return service.create_trigger(project_id, spec)


@endpoint(
    bp,
    "/api/v1/triggers",
    "GET",
    access=on_collection("triggers:ListTriggers", "trigger"),
    query=ProjectListQuery,
    response=Page[Trigger],
    tag=TAG,
)
def list_triggers(call: Call[Any, ProjectListQuery]) -> dict[str, Any]:
    """List a project's triggers, oldest first (never their secrets)."""
    project_id = call.caller.listing_project(call.query.project_id)
    return page(store.list_triggers(project_id, call.query.window()))


@endpoint(
    bp,
    "/api/v1/triggers/{trigger_id}",
    "GET",
    access=on("triggers:GetTrigger", "trigger_id"),
    response=Trigger,
    tag=TAG,
)
def get_trigger(call: Call[Any, Any]) -> Trigger:
    """Get a trigger (never its secret)."""
    return visible_trigger(call)


@endpoint(
    bp,
    "/api/v1/triggers/{trigger_id}",
    "PATCH",
    access=on("triggers:UpdateTrigger", "trigger_id"),
    body=UpdateTrigger,
    response=Trigger,
    tag=TAG,
)
def update_trigger(call: Call[UpdateTrigger, Any]) -> Trigger:
    """Partially update a trigger (its ``type`` is immutable)."""
    refuse_nulls(call.body, *_NOT_NULL)
    current = visible_trigger(call)
    changes = {name: getattr(call.body, name) for name in call.body.model_fields_set}
    spec = TriggerSpec.model_validate(current.spec().model_copy(update=changes).model_dump())
    if "target_id" in changes:  # a re-binding: the trigger fires as its new binder from now
        authorize_target(call.caller, current.project_id, spec)
        spec.bound_by_key_id = bound_by(call.caller)
    return service.update_trigger(current, spec)


@endpoint(
    bp,
    "/api/v1/triggers/{trigger_id}",
    "DELETE",
    access=on("triggers:DeleteTrigger", "trigger_id"),
    status=204,
    tag=TAG,
)
def delete_trigger(call: Call[Any, Any]) -> None:
    """Delete a trigger; its firings and the runs it started keep its id."""
    service.delete_trigger(visible_trigger(call))


@endpoint(
    bp,
    "/api/v1/triggers/{trigger_id}/secret",
    "GET",
    access=on("triggers:GetTriggerSecret", "trigger_id"),
    response=TriggerSecret,
    tag=TAG,
)
def get_trigger_secret(call: Call[Any, Any]) -> TriggerSecret:
    """A webhook trigger's signing secret."""
    return service.read_secret(visible_trigger(call))


@endpoint(
    bp,
    "/api/v1/triggers/{trigger_id}/rotate-secret",
    "POST",
    access=on("triggers:RotateTriggerSecret", "trigger_id"),
    response=TriggerWithSecret,
    tag=TAG,
)
def rotate_trigger_secret(call: Call[Any, Any]) -> TriggerWithSecret:
    """Replace a webhook trigger's secret; the old one stops verifying at once."""
    return service.rotate_secret(visible_trigger(call))


@endpoint(
    bp,
    "/api/v1/triggers/{trigger_id}/fire",
    "POST",
    access=on("triggers:FireTrigger", "trigger_id"),
    body=FireTrigger,
    published_body=lambda: PublishedFire,
    response=TriggerFiring,
    tag=TAG,
)
def fire_trigger(call: Call[FireTrigger, Any]) -> TriggerFiring:
    """Fire a trigger now; the answer is the terminal firing (any type; source ``manual``)."""
    trigger = visible_trigger(call)
    if not trigger.active:
        raise Conflict(f"trigger {trigger.id} is not active", code="TRIGGER_NOT_ACTIVE")
    targets.eval_input({**(trigger.input or {}), **(call.body.input or {})})
    return firing.fire(trigger, "manual", call.body.input)


@endpoint(
    bp,
    "/api/v1/trigger-firings",
    "GET",
    access=on_collection("triggers:ListTriggerFirings", "trigger"),
    query=FiringListQuery,
    response=Page[TriggerFiring],
    tag=TAG,
)
def list_trigger_firings(call: Call[Any, FiringListQuery]) -> dict[str, Any]:
    """List a project's firings (or one trigger's, deleted or not), newest first."""
    query = call.query
    project_id = call.caller.listing_project(query.project_id)
    return page(store.list_firings(project_id, query.trigger_id, query.window()))


@endpoint(
    bp,
    "/api/v1/trigger-firings/{firing_id}",
    "GET",
    access=on_project("triggers:GetTriggerFiring", param="firing_id"),
    response=TriggerFiring,
    tag=TAG,
)
def get_trigger_firing(call: Call[Any, Any]) -> TriggerFiring:
    """Get a firing: its status, the run it started (``result.result_id``) or its error."""
    found = store.get_firing(call.path["firing_id"])
    call.caller.check_visible(found.project_id, "trigger_firing", found.id)
    return found


@endpoint(
    bp,
    "/hooks/triggers/{trigger_id}",
    "POST",
    access=PUBLIC,
    response=None,
    status=202,
    tag=TAG,
    documented=False,
)
def receive_trigger_webhook(call: Call[Any, Any]) -> Reply:
    """Fire a webhook trigger from a signed external call (no bearer key)."""
    accepted = inbound.receive(call.path["trigger_id"], call.headers, call.raw_body)
    return Reply(accepted.model_dump(mode="json"), status=202)
