"""``GET /api/v1/evals/{eval_id}/power`` (a pawl addition): the planner, through real runs.

The scripted agent answers ``echo:<text>`` with ``<text>`` (the probe scorer passes it when
that is the expected output) and ``flip:<text>`` with ``<text>`` on an item's first call
only: a regression in the second run."""

from __future__ import annotations

import argparse
from typing import Any

import pytest

from chalicelib.stats import power
from chalicelib.store import tenancy
from chalicelib.wiring import openapi_document
from pawl.cli import ops as cli_ops
from tests.api.test_authorization import allow, key_with
from tests.support.drain import drain_queues
from tests.support.runs import Plugins, Suite, make_suite


def _ok(response: Any) -> Any:
    assert response.status == 200, response
    return response.json


def power_path(suite: Suite, query: str = "") -> str:
    return f"/api/v1/evals/{suite.eval['id']}/power" + (f"?{query}" if query else "")


def _suite(api: Any, project: Any, flips: int, steady: int, **fields: Any) -> Suite:
    cases: list[Any] = [(f"flip:f{i}", f"f{i}") for i in range(flips)]
    cases += [(f"echo:s{i}", f"s{i}") for i in range(steady)]
    return make_suite(api, project, cases, name="planned", **fields)


def _run(api: Any, app: Any, suite: Suite, **body: Any) -> dict[str, Any]:
    started = api.post(suite.runs_path, body)
    assert started.status == 201, started
    drain_queues(app)
    run: dict[str, Any] = _ok(api.get(suite.run_path(started.json["id"])))
    assert run["status"] == "completed", run
    return run


def test_with_no_completed_run_it_plans_from_the_conservative_assumption(
    api: Any, project: Any, plugins: Plugins
) -> None:
    suite = _suite(api, project, 0, 30)
    plan = _ok(api.get(power_path(suite)))
    assert plan["inputs"]["source"] == "assumption" and plan["inputs"]["runs_considered"] == 0
    assert plan["inputs"]["noise_discordance"] == 0.5 and plan["inputs"]["pass_rate"] == 0.5
    assert (plan["margin"], plan["margin_from"]) == (0.05, "default")
    assert (plan["alpha"], plan["power"], plan["sides"]) == (0.05, 0.8, "two-sided")
    assert plan["method"] == "mcnemar_connor_1987"
    assert plan["items_needed"] == power.items_needed(0.05, 0.5, 0.05, 0.8)
    assert plan["dataset_item_count"] == 30
    assert plan["min_detectable_regression"] == power.min_detectable_regression(30, 0.5, 0.05, 0.8)
    assert "source: assumption" in plan["explanation"]


def test_it_plans_from_the_newest_comparison_and_names_its_runs(
    api: Any, app: Any, project: Any, plugins: Plugins
) -> None:
    suite = _suite(api, project, 4, 36, max_regression=0.1)
    baseline = _run(api, app, suite)
    # A run without a baseline only: the planner reads its pass rate.
    only = _ok(api.get(power_path(suite)))
    assert only["inputs"]["source"] == "run" and only["inputs"]["run_id"] == baseline["id"]
    assert only["inputs"]["noise_from"] == "independent_outcomes"
    assert only["inputs"]["noise_discordance"] == 0.0  # everything passed: 2p(1-p) = 0
    current = _run(api, app, suite, baseline_run_id=baseline["id"])
    _run(api, app, suite)  # a newer run without a comparison does not hide the comparison
    plan = _ok(api.get(power_path(suite)))
    inputs = plan["inputs"]
    assert inputs["source"] == "comparison" and inputs["noise_from"] == "discordance"
    assert (inputs["run_id"], inputs["baseline_run_id"]) == (current["id"], baseline["id"])
    assert inputs["runs_considered"] == 3 and inputs["compared_item_count"] == 40
    assert inputs["discordance"] == 0.1 and inputs["noise_discordance"] == 0.1
    assert inputs["alternative_discordance"] == pytest.approx(0.2)
    assert (plan["margin"], plan["margin_from"]) == (0.1, "eval.max_regression")
    assert plan["items_needed"] == power.items_needed(0.1, 0.1, 0.05, 0.8)
    assert plan["min_detectable_regression"] == power.min_detectable_regression(40, 0.1, 0.05, 0.8)
    stricter = _ok(api.get(power_path(suite, "margin=0.05&alpha=0.01&power=0.9")))
    assert (stricter["margin"], stricter["margin_from"]) == (0.05, "query")
    assert stricter["items_needed"] == power.items_needed(0.05, 0.1, 0.01, 0.9)
    assert stricter["items_needed"] > plan["items_needed"]


@pytest.mark.parametrize(
    "query",
    [
        "margin=0",
        "margin=1",
        "margin=-0.1",
        "margin=abc",
        "margin=nan",
        "alpha=0",
        "alpha=0.5",
        "power=0.4",
        "power=1",
        "power=inf",
        "sides=one",
    ],
)
def test_a_bad_or_unknown_query_is_400(
    api: Any, project: Any, plugins: Plugins, query: str
) -> None:
    suite = _suite(api, project, 0, 2)
    refused = api.get(power_path(suite, query))
    assert refused.status == 400 and refused.code == "VALIDATION_FAILED", (query, refused)
    assert query.split("=")[0] in refused.raw.decode()


def test_a_foreign_key_gets_the_missing_evals_404_and_the_own_key_works(
    api: Any, project: Any, project_key: str, plugins: Plugins
) -> None:
    suite = _suite(api, project, 0, 2)
    assert _ok(api.as_key(project_key).get(power_path(suite)))["eval_id"] == suite.eval["id"]
    stranger = api.post("/api/v1/projects", {"name": "initech"}).json
    foreign = api.as_key(tenancy.create_api_key(stranger["id"], "foreign", []).key)
    refused = foreign.get(power_path(suite))
    missing = foreign.get("/api/v1/evals/eval_missing0000000000/power")
    assert refused.status == missing.status == 404 and refused.code == "RESOURCE_NOT_FOUND"
    assert refused.json["error"]["message"].replace(suite.eval["id"], "<id>") == missing.json[
        "error"
    ]["message"].replace("eval_missing0000000000", "<id>")
    # Authorized as reading the eval: GetEval on it is enough, anything else is the 404.
    srn = f"srn:{project['id']}:eval:{suite.eval['id']}"
    assert (
        key_with(api, project["id"], allow(["evaluations:GetEval"], srn))
        .get(power_path(suite))
        .status
        == 200
    )
    listing_only = key_with(api, project["id"], allow(["evaluations:ListEvals"], srn))
    assert listing_only.get(power_path(suite)).status == 404


def test_the_cli_command_takes_the_eval_by_name_and_the_three_figures() -> None:
    parser = argparse.ArgumentParser(prog="pawl")
    commands = parser.add_subparsers(dest="command")
    cli_ops.add_operations(commands, openapi_document())
    args = parser.parse_args(
        ["get-eval-power", "--eval", "support-faq", "--margin", "0.1", "--alpha", "0.01"]
    )
    assert (args.param__eval_id, args.param__margin, args.param__alpha) == (
        "support-faq",
        "0.1",
        "0.01",
    )
