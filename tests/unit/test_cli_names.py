"""What ``pawl.cli.names`` knows about the API stays true of pawl's own route table.

The lookups themselves run against a real runtime in ``tests/e2e/test_cli_names.py``.
"""

from __future__ import annotations

import argparse
from typing import Any

import pytest

from chalicelib.idformat import PREFIXES
from chalicelib.wiring import openapi_document
from pawl.cli import names
from pawl.cli import ops as cli_ops


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    return openapi_document()


def _item_schema(document: dict[str, Any], path: str) -> dict[str, Any]:
    listing = document["paths"][path]["get"]["responses"]["200"]["content"]["application/json"]
    ref = listing["schema"]["properties"]["data"]["items"]["$ref"]
    schema: dict[str, Any] = document["components"]["schemas"][ref.rsplit("/", 1)[-1]]
    return schema


def test_every_named_kind_is_listed_by_a_route_whose_rows_have_a_name(
    document: dict[str, Any],
) -> None:
    for named in names.NAMED.values():
        assert named.kind in PREFIXES
        schema = _item_schema(document, named.collection)
        assert "name" in schema["properties"] and "id" in schema["properties"], named.kind
        query = {p["name"] for p in document["paths"][named.collection]["get"]["parameters"]}
        assert ("project_id" in query) == named.in_project, named.kind
        assert ("name" in query) == named.name_filter, named.kind
    assert set(names.PARAMETER_KINDS.values()) <= set(names.NAMED)


def test_every_parameter_that_holds_a_named_id_is_resolved(document: dict[str, Any]) -> None:
    """A new ``*_id`` flag of a named kind is not left taking ids only by oversight."""
    ids = {p.name for op in cli_ops.operations(document) for p in op.params}
    ids = {name for name in ids if name.endswith("_id")}
    kinds_with_names = {named.kind for named in names.NAMED.values()}
    for name in ids:
        kind = name.removesuffix("_id")
        if kind in kinds_with_names:
            assert names.PARAMETER_KINDS.get(name) == kind, name


def test_the_resource_flags_have_short_aliases(document: dict[str, Any]) -> None:
    parser = argparse.ArgumentParser(prog="pawl")
    commands = parser.add_subparsers(dest="command")
    cli_ops.add_operations(commands, document)
    args = parser.parse_args(["get-eval-run", "--eval", "support-faq", "--eval-run-id", "latest"])
    assert (args.param__eval_id, args.param__eval_run_id) == ("support-faq", "latest")
    args = parser.parse_args(["create-eval", "--name", "e", "--agent", "a", "--dataset", "d"])
    assert (args.param__agent_id, args.param__dataset_id) == ("a", "d")


def test_the_help_of_a_flag_that_takes_a_name_says_so() -> None:
    assert names.flag_help("eval_id", "(path)") == "(path) — an id or the eval's name"
    assert names.flag_help("provider_id", "") == "an id or the AI provider's name"
    assert names.flag_help("eval_run_id", "(path)").endswith("or latest: the eval's newest run")
    assert names.flag_help("limit", "(query)") == "(query)"


def test_a_json_fields_null_or_list_is_not_a_name() -> None:
    assert names._is_name("support", "TEXT") and names._is_name("support", "JSON")
    assert names._is_name('"support"', "JSON")
    assert not names._is_name("null", "JSON") and not names._is_name('["pol_1"]', "JSON")
    assert not names._is_name("", "TEXT") and not names._is_name(None, "ID")
