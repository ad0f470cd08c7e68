"""Evals: an agent bound to a dataset and a list of scorers (``/api/v1/evals``).

Beyond the spec, an eval carries ``trials`` (how many times each item runs, 1-10),
``trial_reducer`` (how an item's trials reduce to its verdict: ``all``, ``any`` or
``majority``) and ``max_regression`` (the largest pass-rate drop against a baseline
the run tolerates, 0-1, or null for no gate), ``on_inconclusive`` (``"pass"`` or
``"fail"``: that gate's outcome when the comparison can tell neither a regression nor
"not worse"), and ``max_concurrency`` (how many of a run's
items execute at once, default 40, at most the server's ``PAWL_MAX_CONCURRENCY_LIMIT``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal

from chalice import Blueprint
from pydantic import BeforeValidator, Field, create_model

from chalicelib.api import plugin_schemas
from chalicelib.api.access import authorize_references, on, on_collection
from chalicelib.api.auth import Caller
from chalicelib.api.common import refuse_nulls, target_project
from chalicelib.api.routing import Call, NamedListQuery, endpoint, page, route
from chalicelib.domain.base import Page, RequestBody
from chalicelib.domain.catalog import DEFAULT_MAX_CONCURRENCY, MAX_CONCURRENCY_CEILING, Eval
from chalicelib.engine import evals as catalog
from chalicelib.errors import PawlError, ValidationFailed
from chalicelib.iam.references import INVOKE_AGENT, READ_ACTIONS, ReferenceField, reads
from chalicelib.iam.srn import srn
from chalicelib.ids import AgentId, DatasetId, ProjectId
from chalicelib.plugins.manager import plugins
from chalicelib.scoring.contract import PROJECT_FALLBACKS
from chalicelib.scoring.llm_judge import missing_default
from chalicelib.store import evals, tenancy

bp = Blueprint(__name__)

TAG = "evals"
Fraction = Annotated[float, Field(strict=True, ge=0, le=1)]


def _integral(value: Any) -> Any:
    # JSON Schema's "integer" includes 9.0: strict int alone would refuse what the document allows.
    return int(value) if isinstance(value, float) and value.is_integer() else value


Trials = Annotated[int, Field(strict=True, ge=1, le=10), BeforeValidator(_integral)]
Concurrency = Annotated[
    int,
    Field(
        strict=True,
        ge=1,
        le=MAX_CONCURRENCY_CEILING,
        description="Items of a run in flight at once (PAWL_MAX_CONCURRENCY_LIMIT may lower it)",
    ),
    BeforeValidator(_integral),
]
CostLimit = Annotated[
    float,
    Field(
        strict=True,
        gt=0,
        le=1_000_000,
        description=(
            "Spend guard (USD): a run stops starting items once what it spent reaches this, "
            "and settles failed with failure_code BUDGET_EXCEEDED"
        ),
    ),
]
Reducer = Literal["all", "any", "majority"]
OnInconclusive = Annotated[
    Literal["pass", "fail"],
    Field(
        description=(
            "The max_regression gate's outcome when the comparison is inconclusive (its 95% "
            "interval straddles -max_regression and the drop is not significant beyond it)"
        )
    ),
]
GroupBy = Annotated[str, Field(min_length=1, max_length=255)]
ScorerList = Annotated[list[Any], Field(min_length=1, description="Scorer configs")]
#: An eval's run reads every item and calls the agent: binding them needs read on both and
#: invoke on the agent. Denied, each reads as missing (what engine.evals answers then).
BoundAgent = Annotated[
    AgentId, reads("agent", INVOKE_AGENT, message="agent {id} not found in this project")
]
BoundDataset = Annotated[
    DatasetId, reads("dataset", message="dataset {id} not found in this project")
]


class CreateEval(RequestBody):
    project_id: ProjectId | None = Field(None, description="Required with the admin key")
    name: str = Field(min_length=1, max_length=200)
    agent_id: BoundAgent
    dataset_id: BoundDataset
    scorers: ScorerList
    pass_threshold: Fraction | None = None
    group_by: GroupBy | None = None
    trials: Trials = 1
    trial_reducer: Reducer = "all"
    max_regression: Fraction | None = None
    on_inconclusive: OnInconclusive = "pass"
    max_concurrency: Concurrency = DEFAULT_MAX_CONCURRENCY
    max_cost_usd: CostLimit | None = None


class UpdateEval(RequestBody):
    name: str | None = Field(None, min_length=1, max_length=200)
    agent_id: BoundAgent | None = None
    dataset_id: BoundDataset | None = None
    scorers: ScorerList | None = None
    pass_threshold: Fraction | None = None
    group_by: GroupBy | None = Field(None, description="null clears it")
    trials: Trials | None = None
    trial_reducer: Reducer | None = None
    max_regression: Fraction | None = None
    on_inconclusive: OnInconclusive | None = None
    max_concurrency: Concurrency | None = None
    max_cost_usd: CostLimit | None = Field(None, description="null removes the budget")


def _published_scorers() -> Any:
    """A non-empty list of scorers, each one of the registered types' config models."""
    types = plugins().scorer_types()
    variants = []
    for scorer_type in types:
        scorer = plugins().scorer(scorer_type)
        model = scorer.config_model
        variants.append(plugin_schemas.named_scorer(model, types) if scorer.named else model)
    return Annotated[
        list[plugin_schemas.one_of(variants, "type")],  # type: ignore[misc]
        Field(min_length=1, description="Scorer configs"),
    ]


def published_create() -> Any:
    return create_model(
        "CreateEvalPublished", __base__=CreateEval, scorers=(_published_scorers(), ...)
    )


def published_update() -> Any:
    scorers = _published_scorers()
    return create_model("UpdateEvalPublished", __base__=UpdateEval, scorers=(scorers | None, None))


_NOT_NULL = (
    "name",
    "agent_id",
    "dataset_id",
    "scorers",
    "trials",
    "trial_reducer",
    "on_inconclusive",
    "max_concurrency",
)


#: The routes that start runs of a stored eval, or bind a trigger that will: each calls
#: :func:`authorize_bindings` (docs/iam.md's reference table and the policy matrix read this).
BINDING_CHECKS = (
    ("POST", "/api/v1/evals/{eval_id}/runs"),
    ("POST", "/api/v1/triggers"),
    ("PATCH", "/api/v1/triggers/{trigger_id}"),
)


def eval_references() -> list[ReferenceField]:
    """What an eval binds (agent, dataset, every scorer's resources): its body's references."""
    return route("POST", "/api/v1/evals").references()


#: Project settings a scorer may fall back on: the SRN type of what each names, and what a
#: scorer gets when that resource is not there (the caller's refusal when it may not read it).
FALLBACK_RESOURCES: dict[str, tuple[str, Callable[[str], ValidationFailed]]] = {
    "default_ai_provider_id": ("ai-provider", missing_default),
}


def _fallbacks(scorer_type: Any, config: dict[str, Any]) -> tuple[str, ...]:
    try:
        scorer = plugins().scorer(scorer_type) if isinstance(scorer_type, str) else None
    except PawlError:
        return ()  # an unknown type: the scorer validation refuses it
    declared = getattr(scorer, PROJECT_FALLBACKS, None)
    return tuple(declared(config)) if declared is not None else ()


def authorize_fallbacks(caller: Caller, project_id: str, scorers: Any) -> None:
    """Every project setting a scorer falls back on (an unpinned ``llm_judge``'s default AI
    provider) names a resource the caller must be able to read, as a pinned id would.
    Denied, the scorer answers what it would if the resource were missing. Reads only."""
    if caller.is_admin or caller.policies is None or not isinstance(scorers, list):
        return
    project = None
    for index, config in enumerate(scorers):
        if not isinstance(config, dict):
            continue
        for setting in _fallbacks(config.get("type"), config):
            project = project or tenancy.get_project(project_id)
            resource_id = getattr(project, setting, None)
            if not resource_id or setting not in FALLBACK_RESOURCES:
                continue  # no default: the scorer validation answers it
            resource_type, missing = FALLBACK_RESOURCES[setting]
            resource = srn(project_id, resource_type, resource_id)
            if not caller.allows(READ_ACTIONS[resource_type], resource):
                inner = missing(resource_id)
                where = f"scorers.{index}.{inner.meta['field']}"
                raise ValidationFailed(f"{where}: {inner.message}", field=where, code=inner.code)


def authorize_bindings(caller: Caller, evaluation: Eval) -> None:
    """What ``evaluation`` binds, authorized as ``caller`` now: a run start (or a trigger
    bound to start runs) uses them, and a policy may have changed since the eval was
    written. Denied, each answers what creating the eval over a missing one would (400)."""
    stored = evaluation.model_dump(mode="json")
    authorize_references(eval_references, caller, stored, {})
    authorize_fallbacks(caller, evaluation.project_id, stored["scorers"])


def visible_eval(caller: Caller, eval_id: str) -> Eval:
    found = evals.get_eval(eval_id)
    caller.check_visible(found.project_id, "eval", found.id)
    return found


@endpoint(
    bp,
    "/api/v1/evals",
    "POST",
    access=on_collection("evaluations:CreateEval", "eval"),
    body=CreateEval,
    published_body=published_create,
    response=Eval,
    status=201,
    tag=TAG,
    operation_id="createEval",
)
def create_eval(call: Call[CreateEval, Any]) -> Eval:
    """Bind an agent to a dataset and scorers (name unique in the project)."""
    body = call.body
    project_id = target_project(call.caller, body.project_id)
    authorize_fallbacks(call.caller, project_id, body.scorers)
    fields = body.model_dump(exclude={"project_id", "scorers"})
    return catalog.create_eval(project_id, fields, body.scorers)


@endpoint(
    bp,
    "/api/v1/evals",
    "GET",
    access=on_collection("evaluations:ListEvals", "eval"),
    query=NamedListQuery,
    response=Page[Eval],
    tag=TAG,
    operation_id="listEvals",
)
def list_evals(call: Call[Any, NamedListQuery]) -> dict[str, Any]:
    """List a project's evals, oldest first (``?name=``: the one of that name)."""
    project_id = call.caller.listing_project(call.query.project_id)
    return page(evals.list_evals(project_id, call.query.window(), call.query.name))


@endpoint(
    bp,
    "/api/v1/evals/{eval_id}",
    "GET",
    access=on("evaluations:GetEval", "eval_id"),
    response=Eval,
    tag=TAG,
    operation_id="getEval",
)
def get_eval(call: Call[Any, Any]) -> Eval:
    """Get an eval."""
    return visible_eval(call.caller, call.path["eval_id"])


@endpoint(
    bp,
    "/api/v1/evals/{eval_id}",
    "PUT",
    access=on("evaluations:CreateEval", "eval_id"),
    body=UpdateEval,
    published_body=published_update,
    response=Eval,
    tag=TAG,
    operation_id="updateEval",
)
def update_eval(call: Call[UpdateEval, Any]) -> Eval:
    """Partially update an eval; scorers are re-validated when they or the agent change."""
    refuse_nulls(call.body, *_NOT_NULL)
    current = visible_eval(call.caller, call.path["eval_id"])
    if "scorers" in call.body.model_fields_set:
        authorize_fallbacks(call.caller, current.project_id, call.body.scorers)
    eval_id = current.id
    changes = {name: getattr(call.body, name) for name in call.body.model_fields_set}
    return catalog.update_eval(eval_id, changes)


@endpoint(
    bp,
    "/api/v1/evals/{eval_id}",
    "DELETE",
    access=on("evaluations:DeleteEval", "eval_id"),
    status=204,
    tag=TAG,
    operation_id="deleteEval",
)
def delete_eval(call: Call[Any, Any]) -> None:
    """Delete an eval."""
    evals.delete_eval(visible_eval(call.caller, call.path["eval_id"]))
