"""``pawl <operation>`` against a running runtime over HTTP, as a separate process.

From an admin key to a verdict with the generated commands only (``--output json``), then
what the generated CLI promises around that: exit 2 with the API's message, ``--body``,
``--eval-run-id``, the table output, and ``pawl --help`` grouping by resource.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pawl.cli import ops as cli_ops
from pawl.cli import render as cli_render
from pawl.demo.cases import dataset_items, eval_scorers
from pawl.local.runtime import LocalRuntime, RuntimeConfig

pytestmark = pytest.mark.slow
AGENT_MODULE = "pawl.demo.agent"


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalRuntime]:
    config = RuntimeConfig(
        port=0,
        state_dir=tmp_path_factory.mktemp("cli-ops-state"),
        snapshot_interval_s=0,
        run_schedules=False,
        python_agent_modules=(AGENT_MODULE,),
    )
    with LocalRuntime(config) as started:
        yield started


def pawl(
    runtime: LocalRuntime, key: str | None, *args: str, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PAWL_")}
    env["PAWL_SERVER"] = runtime.url
    if key is not None:
        env["PAWL_API_KEY"] = key
    return subprocess.run(
        [sys.executable, "-m", "pawl.cli.main", *args],
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )


def ok(runtime: LocalRuntime, key: str | None, *args: str) -> Any:
    done = pawl(runtime, key, *args, "--output", "json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_from_a_project_to_a_verdict_with_the_generated_commands(runtime: LocalRuntime) -> None:
    admin = runtime.admin_key
    project = ok(runtime, admin, "create-project", "--name", "cli-e2e")
    key = ok(runtime, admin, "create-api-key", "--project-id", project["id"], "--name", "ci")
    secret = key["key"]
    agent = ok(
        runtime,
        secret,
        "create-agent",
        "--name",
        "support",
        "--type",
        "python",
        "--config",
        json.dumps({"callable": f"{AGENT_MODULE}:answer_v2"}),
    )
    dataset = ok(runtime, secret, "create-dataset", "--name", "two-cases")
    for case in dataset_items()[:2]:
        item = ok(
            runtime,
            secret,
            "create-dataset-item",
            "--dataset-id",
            dataset["id"],
            "--input",
            json.dumps(case["input"]),
            "--expected-output",
            case["expected_output"],
            "--metadata",
            json.dumps(case["metadata"]),
        )
        assert item["expected_output"] == case["expected_output"]
    evaluation = ok(
        runtime,
        secret,
        "create-eval",
        "--name",
        "cli",
        "--agent-id",
        agent["id"],
        "--dataset-id",
        dataset["id"],
        "--scorers",
        json.dumps(eval_scorers()),
        "--pass-threshold",
        "0.5",
    )
    assert evaluation["pass_threshold"] == 0.5  # "0.5" parsed as JSON: a number
    run = ok(runtime, secret, "start-eval-run", "--eval-id", evaluation["id"], "--wait", "true")
    assert run["status"] == "completed"
    fetched = ok(
        runtime, secret, "get-eval-run", "--eval-id", evaluation["id"], "--eval-run-id", run["id"]
    )
    assert fetched["id"] == run["id"] and fetched["passed"] in (True, False)
    results = ok(
        runtime, secret, "list-eval-results", "--eval-id", evaluation["id"], "--run-id", run["id"]
    )
    assert len(results["data"]) == 2
    assert {r["expected_output"] for r in results["data"]} == {
        c["expected_output"] for c in dataset_items()[:2]
    }


def test_a_refusal_exits_2_with_the_apis_message(runtime: LocalRuntime) -> None:
    done = pawl(runtime, runtime.admin_key, "create-project", "--name", "x", "--colour", "red")
    assert done.returncode == 2 and "unrecognized arguments: --colour" in done.stderr

    done = pawl(runtime, runtime.admin_key, "get-dataset", "--dataset-id", "dset_nothere1234")
    assert done.returncode == 2
    assert "404 RESOURCE_NOT_FOUND" in done.stderr and done.stdout == ""

    done = pawl(runtime, "pawl.key_wrong.secret", "list-datasets")
    assert done.returncode == 2 and "401 UNAUTHORIZED" in done.stderr
    assert "check the key in PAWL_API_KEY or --api-key" in done.stderr


def test_body_from_stdin_flags_override_it(runtime: LocalRuntime, tmp_path: Path) -> None:
    body = json.dumps({"name": "from-stdin", "description": "kept"})
    project = ok(runtime, runtime.admin_key, "create-project", "--name", "cli-body")
    done = pawl(
        runtime,
        runtime.admin_key,
        "create-dataset",
        "--body",
        "-",
        "--project-id",
        project["id"],
        "--name",
        "from-flag",
        "--output",
        "json",
        stdin=body,
    )
    assert done.returncode == 0, done.stderr
    created = json.loads(done.stdout)
    assert (created["name"], created["description"]) == ("from-flag", "kept")

    (tmp_path / "bad.json").write_text("[1, 2]")
    done = pawl(runtime, runtime.admin_key, "create-dataset", "--body", str(tmp_path / "bad.json"))
    assert done.returncode == 2 and "--body must hold a JSON object" in done.stderr


def test_a_text_body_is_sent_as_it_is(runtime: LocalRuntime, tmp_path: Path) -> None:
    """``items:import`` takes JSON Lines: ``--body`` goes out unparsed with its media type."""
    project = ok(runtime, runtime.admin_key, "create-project", "--name", "cli-import")
    dataset = ok(
        runtime,
        runtime.admin_key,
        "create-dataset",
        "--project-id",
        project["id"],
        "--name",
        "imported",
    )
    lines = dataset_items()[:3]
    (tmp_path / "items.jsonl").write_text("\n".join(json.dumps(line) for line in lines))
    args = ("import-dataset-items", "--dataset-id", dataset["id"])
    imported = ok(runtime, runtime.admin_key, *args, "--body", str(tmp_path / "items.jsonl"))
    listed = ok(runtime, runtime.admin_key, "list-dataset-items", "--dataset-id", dataset["id"])
    assert len(listed["data"]) == 3 and imported
    done = pawl(runtime, runtime.admin_key, *args)
    assert done.returncode == 2 and "takes its whole body from --body" in done.stderr


def test_help_groups_every_operation_by_resource(runtime: LocalRuntime) -> None:
    done = pawl(runtime, None, "--help")
    assert done.returncode == 0
    text = done.stdout
    assert "API commands, by resource" in text
    evals_at, runs_at = text.index("\n  evals:"), text.index("\n  runs:")
    assert evals_at < text.index("create-eval ") < runs_at < text.index("start-eval-run ")
    assert "serve" in text and "demo" in text  # the local commands stay listed


def test_table_output_lists_a_page_and_shows_an_object() -> None:
    from io import StringIO

    out = StringIO()
    page = {"data": [{"name": "a", "id": "ds_1", "tags": ["x"]}], "next_cursor": "c2"}
    page |= {"total": 7, "limit": 1, "offset": 3}
    cli_render.render(page, "table", "listDatasets", out=out)
    lines = out.getvalue().splitlines()
    header = next(line for line in lines if "id" in line and "name" in line)
    assert header.index("id") < header.index("name") < header.index("tags")
    assert any("ds_1" in line and '["x"]' in line for line in lines)
    assert "more: --cursor c2" in out.getvalue() and "4-4 of 7" in out.getvalue()


def test_flag_values_are_json_when_they_parse_else_strings() -> None:
    assert cli_ops.parse_value("3") == 3
    assert cli_ops.parse_value("true") is True
    assert cli_ops.parse_value('{"a": [1]}') == {"a": [1]}
    assert cli_ops.parse_value("plain words") == "plain words"
    assert cli_ops.kebab_case("createDatasetItemFromGeneration") == (
        "create-dataset-item-from-generation"
    )
