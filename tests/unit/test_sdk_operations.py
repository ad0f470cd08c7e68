"""pawl/_operations.py is what the generator makes of today's routes, named as the CLI is.

If a route changes and nobody ran ``make sdk``, the first test fails with the diff.
"""

from __future__ import annotations

import difflib
import inspect
from pathlib import Path
from typing import Any

import pytest

from chalicelib import wiring
from pawl import _generate, _operation_specs, _operations
from pawl.cli import ops as cli_ops

OPERATIONS = Path(_operations.__file__)


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    return wiring.openapi_document()


def test_the_committed_module_is_what_the_routes_generate(document: dict[str, Any]) -> None:
    fresh = _generate.render(document)
    committed = OPERATIONS.read_text(encoding="utf-8")
    diff = "".join(
        difflib.unified_diff(
            committed.splitlines(keepends=True),
            fresh.splitlines(keepends=True),
            "pawl/_operations.py (committed)",
            "generated now",
            n=1,
        )
    )
    assert not diff, f"run `make sdk` (python -m pawl._generate):\n{diff[:4000]}"


def _public_methods(cls: type) -> set[str]:
    return {name for name in vars(cls) if not name.startswith("_")}


def test_every_cli_operation_is_a_method_of_the_same_name(document: dict[str, Any]) -> None:
    commands = {op.command.replace("-", "_") for op in cli_ops.operations(document)}
    methods = _public_methods(_operations.SyncOperations)
    iterators = {name for name in methods if name.startswith("iter_")}
    assert methods - iterators == commands
    assert "list_evals" in commands and "start_eval_run" in commands
    assert iterators == {
        "iter_" + name.removeprefix("list_") for name in _operations.PAGED_OPERATIONS
    }


def test_the_async_methods_have_the_sync_signatures() -> None:
    sync, both = _operations.SyncOperations, _operations.AsyncOperations
    assert _public_methods(sync) == _public_methods(both)
    for name in _public_methods(sync):
        blocking, awaitable = (
            inspect.signature(getattr(sync, name)),
            inspect.signature(getattr(both, name)),
        )
        assert blocking.parameters == awaitable.parameters, name
        if not name.startswith("iter_"):
            assert inspect.iscoroutinefunction(getattr(both, name)), name


def test_path_parameters_are_positional_and_the_rest_keyword_only() -> None:
    parameters = inspect.signature(_operations.SyncOperations.get_eval_run).parameters
    assert [p.kind for p in parameters.values()][1:] == [
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
    ]
    start = inspect.signature(_operations.SyncOperations.start_eval_run).parameters
    assert list(start)[:2] == ["self", "eval_id"]
    assert all(
        p.kind is inspect.Parameter.KEYWORD_ONLY
        for name, p in start.items()
        if name != "self"
        if name != "eval_id"
    )
    assert {"wait", "baseline_run_id", "body"} <= set(start)


def test_a_query_parameter_named_as_a_keyword_gets_a_trailing_underscore() -> None:
    parameters = inspect.signature(_operations.SyncOperations.list_usage_events).parameters
    assert "from_" in parameters and "from" not in parameters
    source = inspect.getsource(_operations.SyncOperations.list_usage_events)
    assert '"from": from_' in source


def test_a_required_query_parameter_has_no_default() -> None:
    parameters = inspect.signature(_operations.SyncOperations.get_usage_aggregate).parameters
    assert parameters["group_by"].default is inspect.Parameter.empty
    assert parameters["project_id"].default is None


def test_docstrings_carry_the_summary_and_the_route() -> None:
    doc = inspect.getdoc(_operations.SyncOperations.list_evals) or ""
    assert "GET /api/v1/evals" in doc
    iterator_doc = inspect.getdoc(_operations.SyncOperations.iter_evals) or ""
    assert "next_cursor" in iterator_doc
    assert "cursor" not in inspect.signature(_operations.SyncOperations.iter_evals).parameters


@pytest.mark.parametrize(
    ("schema", "literals", "expected"),
    [
        ({"type": "string"}, True, "str"),
        ({"anyOf": [{"type": "integer"}, {"type": "null"}]}, True, "int | None"),
        ({"enum": ["a", "b"], "type": "string"}, True, 'Literal["a", "b"]'),
        ({"enum": ["a", "b"], "type": "string"}, False, "str"),
        ({"const": "http"}, True, "str"),
        ({"type": "array", "items": {"type": "number"}}, True, "list[float]"),
        ({"type": "object", "properties": {"x": {}}}, True, "dict[str, Any]"),
        ({"type": ["boolean", "null"]}, True, "bool | None"),
        ({"$ref": "#/components/schemas/Thing"}, True, "list[str]"),
        ({"anyOf": [{"type": "string"}, {}]}, True, "Any"),
        ({}, True, "Any"),
    ],
)
def test_annotations_of_json_schemas(schema: dict[str, Any], literals: bool, expected: str) -> None:
    components = {"Thing": {"type": "array", "items": {"type": "string"}}}
    assert _operation_specs.annotation(schema, components, literals=literals) == expected


def test_a_union_keeps_omit_then_none_last_and_each_member_once() -> None:
    assert _operation_specs.union(["str | None", "Omit", "int", "str"]) == "str | int | Omit | None"
    assert _operation_specs.members("list[int | None] | None") == ["list[int | None]", "None"]


def test_a_body_field_of_several_variants_takes_every_type() -> None:
    schema = {
        "oneOf": [
            {
                "properties": {"type": {"const": "a"}, "n": {"type": "integer"}},
                "required": ["type"],
            },
            {"properties": {"type": {"const": "b"}, "n": {"type": "string"}}, "required": ["type"]},
        ]
    }
    fields = {arg.name: arg for arg in _operation_specs._merged_fields(schema, {}, taken=set())}
    assert fields["type"].annotation == "str" and fields["type"].required
    assert fields["n"].annotation == "int | str" and not fields["n"].required


def _page_route(operation_id: str) -> dict[str, Any]:
    page = {"type": "object", "properties": {"data": {}, "next_cursor": {}}}
    return {
        "operationId": operation_id,
        "parameters": [{"name": "cursor", "in": "query", "schema": {"type": "string"}}],
        "responses": {"200": {"content": {"application/json": {"schema": page}}}},
    }


def test_names_that_would_hide_one_another_are_refused() -> None:
    clash = {
        "paths": {
            "/a": {"get": _page_route("listThings")},
            "/b": {"get": _page_route("iterThings")},
        }
    }
    with pytest.raises(ValueError, match="operation names collide: iter_things"):
        _operation_specs.methods(clash)
    own = {"paths": {"/c": {"post": {"operationId": "close", "responses": {"204": {}}}}}}
    with pytest.raises(ValueError, match="collide: close"):
        _operation_specs.methods(own)
