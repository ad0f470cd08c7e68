"""Every route declares its IAM action and SRN once, beside it; docs/iam.md lists them all.

The tables in docs/iam.md (between the ``action-table`` and the ``reference-table``
markers) are generated from the route table and the request models' reference fields:
``python -m tests.unit.test_route_actions`` rewrites them after a route or a body changes.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from chalice import Blueprint

from chalicelib import wiring
from chalicelib.api import evals, routing
from chalicelib.api.access import on
from chalicelib.api.routing import RouteSpec
from chalicelib.iam.references import ReferenceField
from tests.support.soat_spec import spec_path

DOC = Path(__file__).resolve().parents[2] / "docs" / "iam.md"
START, END = "<!-- action-table:start -->", "<!-- action-table:end -->"
REF_START, REF_END = "<!-- reference-table:start -->", "<!-- reference-table:end -->"

#: SOAT's evaluations module: operationId -> action (``soat/evaluations.json``).
SOAT_ACTIONS = {
    "listDatasets": "evaluations:ListDatasets",
    "createDataset": "evaluations:CreateDataset",
    "getDataset": "evaluations:GetDataset",
    "updateDataset": "evaluations:CreateDataset",
    "deleteDataset": "evaluations:DeleteDataset",
    "listDatasetItems": "evaluations:ListDatasets",
    "createDatasetItem": "evaluations:CreateDataset",
    "createDatasetItemFromGeneration": "evaluations:CreateDataset",
    "updateDatasetItem": "evaluations:CreateDataset",
    "deleteDatasetItem": "evaluations:CreateDataset",
    "listEvals": "evaluations:ListEvals",
    "createEval": "evaluations:CreateEval",
    "getEval": "evaluations:GetEval",
    "updateEval": "evaluations:CreateEval",
    "deleteEval": "evaluations:DeleteEval",
    "startEvalRun": "evaluations:RunEval",
    "listEvalRuns": "evaluations:ListEvals",
    "getEvalRun": "evaluations:GetEval",
    "listEvalResults": "evaluations:ListEvals",
    "cancelEvalRun": "evaluations:RunEval",
}
#: In ../shared/spec beside the repository; absent on a fresh clone (the table above stands in).
SPEC_FILE = spec_path("soat/evaluations.json")
#: The routes that take no key: health, the OpenAPI documents, the signed inbound webhook.
PUBLIC = {
    ("GET", "/health"),
    ("GET", "/api/v1/openapi.json"),
    ("GET", "/v2/openapi.json"),
    ("POST", "/hooks/triggers/{trigger_id}"),
}


def routes() -> list[RouteSpec]:
    wiring.blueprints()
    return list(routing.ROUTES)


def test_soat_table_is_soats_own() -> None:
    if SPEC_FILE.is_file():
        spec = json.loads(SPEC_FILE.read_text())
        assert {op["operationId"]: op["action"] for op in spec["operations"]} == SOAT_ACTIONS


def test_evaluation_routes_take_soats_action_for_their_operation() -> None:
    declared = {r.operation_id: r.access.action for r in routes()}
    assert {op: declared.get(op) for op in SOAT_ACTIONS} == SOAT_ACTIONS


def test_a_route_without_an_access_declaration_cannot_be_declared() -> None:
    bp = Blueprint("probe")
    with pytest.raises(TypeError):
        routing.endpoint(bp, "/probe", "GET")  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        routing.endpoint(bp, "/probe", "GET", access="evaluations:GetEval")  # type: ignore[arg-type]


def test_every_route_but_the_public_ones_names_an_action_in_module_operation_form() -> None:
    public = set()
    for spec in routes():
        if spec.access.action is None:
            public.add((spec.method, spec.path))
            continue
        assert re.fullmatch(r"[a-z][a-z0-9-]*:[A-Z][A-Za-z]+", spec.access.action), spec
    assert public == PUBLIC


def test_a_path_target_names_a_parameter_of_its_path() -> None:
    for spec in routes():
        param = spec.access.param
        if param is not None:
            assert "{" + param + "}" in spec.path, (spec.method, spec.path, param)
        if spec.access.target == "path":
            assert param is not None
    with pytest.raises(KeyError):
        on("agents:GetAgent", "no_such_param")


def _resource(spec: RouteSpec) -> str:
    access = spec.access
    if access.target == "admin":
        return "(the admin key only)"
    if access.target == "collection":
        every = f"`srn:<project>:{access.resource_type}:*`"
        if access.narrowed_by is None:
            return every
        field, narrowed_type = access.narrowed_by
        return f"{every}, or with `?{field}=` `srn:<project>:{narrowed_type}:{{{field}}}`"
    if access.target == "project":
        return "`srn:<project>:project:<project>`"
    project = "{project_id}" if access.resource_type == "project" else "<project>"
    return f"`srn:{project}:{access.resource_type}:{{{access.param}}}`"


def _denied(spec: RouteSpec) -> str:
    if spec.access.target == "admin":
        return "403, to every key but the admin key"
    if spec.shape == "list":
        return "200, empty page"
    if spec.shape == "read":
        return "404"
    if spec.access.target == "path":
        return "403 (404 if no policy names the project)"
    return "403"


def _refers(spec: RouteSpec) -> str:
    fields = ", ".join(f"`{ref.name}`" for ref in spec.references())
    return f" (and the body's {fields}: see below)" if fields else ""


def action_table() -> str:
    """The markdown table of every route's action, as docs/iam.md holds it."""
    rows = [
        "| Method | Path | Operation | Action | Resource | Denied |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for spec in sorted(routes(), key=lambda r: (r.path, r.method)):
        if spec.access.action is None:
            continue
        action = f"`{spec.access.action}`{_refers(spec)}"
        rows.append(
            f"| {spec.method} | `{spec.path}` | `{spec.operation_id}` | {action} "
            f"| {_resource(spec)} | {_denied(spec)} |"
        )
    return "\n".join(rows)


_ANSWERS = {"not_found": "404, as the missing {kind}", "forbidden": "403"}


def _answer(ref: ReferenceField) -> str:
    reference = ref.reference
    if reference.answer != "invalid":
        return _ANSWERS[reference.answer].format(kind=reference.kind)
    code = reference.code or "VALIDATION_FAILED"
    concrete = re.sub(r"\[\w+=\w+\]", "", ref.name).replace("[]", ".<i>")
    shown = reference.message.replace("{field}", concrete)
    return f"400 `{code}`: {shown}"


def _resource_of(ref: ReferenceField) -> str:
    scope = ref.reference.scope
    if not scope:
        return f"the `{ref.reference.resource_type}` it names"
    if scope == "project":
        return "the caller's project"
    if scope.startswith("path:"):
        return f"the `{ref.reference.resource_type}` of the path's `{scope[5:]}`"
    return f"the eval's `{scope.split(':', 1)[1]}` (at run start)"


def reference_table() -> str:
    """The markdown table of every route's reference fields, as docs/iam.md holds it."""
    rows = [
        "| Operation | Field | Resource | Needs | Denied |",
        "| --- | --- | --- | --- | --- |",
    ]
    for spec in sorted(routes(), key=lambda r: (r.path, r.method)):
        bindings = (spec.method, spec.path) in evals.BINDING_CHECKS
        for ref in [*spec.references(), *(evals.eval_references() if bindings else [])]:
            field = ref.name if ref in spec.references() else f"(the eval's) {ref.name}"
            needs = ", ".join(f"`{a}`" for a in ref.reference.actions)
            rows.append(
                f"| `{spec.operation_id}` | `{field}` | {_resource_of(ref)} | {needs} "
                f"| {_answer(ref)} |"
            )
    return "\n".join(rows)


def _documented(start: str = START, end: str = END) -> str:
    text = DOC.read_text()
    assert start in text and end in text, f"docs/iam.md lacks the {start} ... {end} markers"
    return text.split(start, 1)[1].split(end, 1)[0].strip()


def test_docs_iam_lists_every_routes_action() -> None:
    assert _documented() == action_table(), (
        "docs/iam.md's action table is stale: run python -m tests.unit.test_route_actions"
    )


def test_docs_iam_lists_every_reference_field() -> None:
    assert _documented(REF_START, REF_END) == reference_table(), (
        "docs/iam.md's reference table is stale: run python -m tests.unit.test_route_actions"
    )


def _replaced(text: str, start: str, end: str, table: str) -> str:
    head, rest = text.split(start, 1)
    tail = rest.split(end, 1)[1]
    return f"{head}{start}\n{table}\n{end}{tail}"


def rewrite() -> None:
    text = _replaced(DOC.read_text(), START, END, action_table())
    DOC.write_text(_replaced(text, REF_START, REF_END, reference_table()))


if __name__ == "__main__":
    wiring.build()  # the published bodies (scorer configs) come from the plugin host
    rewrite()
