"""The generated commands, from an OpenAPI document: what a new route becomes on its own."""

from __future__ import annotations

import argparse
from typing import Any

import pytest

from chalicelib.wiring import openapi_document
from pawl.cli import ops as cli_ops

#: A route as another module would declare it (path and query parameters, a union body).
DOCUMENT: dict[str, Any] = {
    "paths": {
        "/v2/evals/{eval_id}/runs/{eval_run_id}/triggers/{trigger_id}/fire": {
            "post": {
                "operationId": "fireTrigger",
                "summary": "Fire a trigger.",
                "tags": ["triggers"],
                "security": [{"bearer": []}],
                "parameters": [
                    {"name": "eval_id", "in": "path", "required": True},
                    {"name": "eval_run_id", "in": "path", "required": True},
                    {"name": "trigger_id", "in": "path", "required": True},
                    {"name": "dry_run", "in": "query", "schema": {"type": "boolean"}},
                ],
                "requestBody": {
                    "content": {
                        "application/json": {
                            "schema": {
                                "oneOf": [
                                    {"$ref": "#/components/schemas/ByCron.input"},
                                    {"$ref": "#/components/schemas/ByHook.input"},
                                ]
                            }
                        }
                    }
                },
            }
        },
        "/health": {"get": {"operationId": "getHealth", "summary": "ok", "tags": ["meta"]}},
    },
    "components": {
        "schemas": {
            "ByCron.input": {
                "properties": {"kind": {"type": "string"}, "cron": {"type": "string"}},
                "required": ["kind", "cron"],
            },
            "ByHook.input": {
                "properties": {
                    "kind": {"type": "string"},
                    "payload": {"type": "object"},
                    "output": {"type": "string"},  # named like a common flag: via --body
                },
            },
        }
    },
}


def _parser() -> tuple[argparse.ArgumentParser, list[cli_ops.Operation]]:
    parser = argparse.ArgumentParser(prog="pawl")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("serve")  # a local command keeps its name
    return parser, cli_ops.add_operations(commands, DOCUMENT)


def test_a_new_route_is_a_command_with_its_flags() -> None:
    parser, added = _parser()
    assert [op.command for op in added] == ["fire-trigger", "get-health"]
    fire = added[0]
    assert [(p.name, p.location) for p in fire.params] == [
        ("eval_id", "path"),
        ("eval_run_id", "path"),
        ("trigger_id", "path"),
        ("dry_run", "query"),
        ("kind", "body"),
        ("cron", "body"),
        ("payload", "body"),
    ]
    assert fire.public is False and added[1].public is True
    path = ["--eval-id", "eval_1", "--eval-run-id", "evrun_2", "--trigger-id", "t3"]
    rest = ["--dry-run", "true", "--kind", "hook", "--payload", '{"a": 1}']
    args = parser.parse_args(["fire-trigger", *path, *rest])
    request = cli_ops.prepare(fire, args)
    assert request.path == "/v2/evals/eval_1/runs/evrun_2/triggers/t3/fire"
    assert request.query == {"dry_run": "true"}
    assert request.body == {"kind": "hook", "payload": {"a": 1}}


def test_path_parameters_are_required_and_help_groups_by_tag(
    capsys: pytest.CaptureFixture[str],
) -> None:
    parser, added = _parser()
    with pytest.raises(SystemExit):
        parser.parse_args(["fire-trigger", "--eval-id", "e"])
    assert "--eval-run-id" in capsys.readouterr().err
    text = cli_ops.grouped_help(added)
    assert text.index("triggers:") < text.index("fire-trigger") < text.index("meta:")


def test_an_operation_named_like_a_local_command_is_left_out() -> None:
    document = {"paths": {"/x": {"post": {"operationId": "serve", "summary": "", "tags": []}}}}
    parser = argparse.ArgumentParser(prog="pawl")
    commands = parser.add_subparsers(dest="command")
    commands.add_parser("serve")
    assert cli_ops.add_operations(commands, document) == []


def test_a_string_only_field_takes_its_text_as_given() -> None:
    parser, added = _parser()
    path = ["--eval-id", "e", "--eval-run-id", "r", "--trigger-id", "t"]
    args = parser.parse_args(["fire-trigger", *path, "--cron", "2024", "--payload", "2024"])
    body = cli_ops.prepare(added[0], args).body
    assert body == {"cron": "2024", "payload": 2024}  # cron: a string; payload: any JSON


def test_pawls_own_document_takes_soats_run_flag_and_the_old_one() -> None:
    parser = argparse.ArgumentParser(prog="pawl")
    commands = parser.add_subparsers(dest="command")
    added = {op.operation_id: op for op in cli_ops.add_operations(commands, openapi_document())}
    for flag in ("--eval-run-id", "--run-id"):  # SOAT's name; pawl's before issue 14
        args = parser.parse_args(["get-eval-run", "--eval-id", "eval_1", flag, "evrun_2"])
        request = cli_ops.prepare(added["getEvalRun"], args)
        assert request.path == "/api/v1/evals/eval_1/runs/evrun_2"
    listing = parser.parse_args(
        ["list-eval-runs", "--eval-id", "e", "--limit", "5", "--offset", "10"]
    )
    assert cli_ops.prepare(added["listEvalRuns"], listing).query == {"limit": "5", "offset": "10"}
