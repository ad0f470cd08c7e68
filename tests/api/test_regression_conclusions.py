"""The regression gate's three answers through real runs: a baseline run, then a run against
it on the same items, scored by the probe scorer, the scripted python agent answering.

An item ``flip:<text>`` passes on its first call (the baseline) and fails on later ones
(the candidate): a regression. An item whose expected output is corrected after the
baseline ran fails there and passes in the candidate: an improvement. Everything else
passes twice."""

from __future__ import annotations

import json
from typing import Any

from chalicelib.store import runs
from tests.support.drain import drain_queues
from tests.support.runs import Plugins, Suite, make_suite

#: What one import request holds (DynamoDB's 100 operations per transaction, one the check).
IMPORT_CHUNK = 99


def _suite(api: Any, project: Any, name: str, **eval_fields: Any) -> Suite:
    return make_suite(api, project, [], name=name, **eval_fields)


def _import(api: Any, suite: Suite, lines: list[dict[str, Any]]) -> list[str]:
    ids: list[str] = []
    path = f"/api/v1/datasets/{suite.dataset['id']}/items:import"
    for start in range(0, len(lines), IMPORT_CHUNK):
        body = "\n".join(json.dumps(line) for line in lines[start : start + IMPORT_CHUNK])
        response = api.post(path, raw=body.encode())
        assert response.status == 201, response
        ids += response.json["item_ids"]
    return ids


def _run(api: Any, app: Any, suite: Suite, **body: Any) -> dict[str, Any]:
    """A queued run, driven to its end by delivering the queues (``wait`` takes 25 items)."""
    started = api.post(suite.runs_path, body)
    assert started.status == 201, started
    drain_queues(app)
    run: dict[str, Any] = api.get(suite.run_path(started.json["id"])).json
    assert run["status"] == "completed", run
    return run


def _compare(
    api: Any, app: Any, suite: Suite, items: int, regressed: int, improved: int = 0
) -> dict[str, Any]:
    """Run the baseline, correct the items that improve, run against it; the candidate."""
    lines = [{"input": f"flip:r{i}", "expected_output": f"r{i}"} for i in range(regressed)] + [
        {"input": f"echo:u{i}", "expected_output": "wrong"} for i in range(improved)
    ]
    lines += [
        {"input": f"echo:s{i}", "expected_output": f"s{i}"}
        for i in range(items - regressed - improved)
    ]
    ids = _import(api, suite, lines)
    baseline = _run(api, app, suite)
    for i, item_id in enumerate(ids[regressed : regressed + improved]):
        fixed = api.put(
            f"/api/v1/datasets/{suite.dataset['id']}/items/{item_id}", {"expected_output": f"u{i}"}
        )
        assert fixed.status == 200, fixed
    current = _run(api, app, suite, baseline_run_id=baseline["id"])
    comparison = current["aggregate_scores"]["baseline"]
    assert comparison["flipped"] == {"improved": improved, "regressed": regressed}
    assert comparison["compared_item_count"] == items
    return current


def _gate(run: dict[str, Any]) -> dict[str, Any]:
    (reason,) = [r for r in run["verdict_reasons"] if r["gate"] == "max_regression"]
    return reason


def test_twenty_items_ten_point_drop_is_inconclusive_and_names_the_items_needed(
    api: Any, app: Any, project: Any, plugins: Plugins
) -> None:
    suite = _suite(api, project, "small", max_regression=0.05)
    run = _compare(api, app, suite, 20, regressed=2)
    reason = _gate(run)
    interval = run["aggregate_scores"]["baseline"]["pass_rate_delta_interval"]
    assert reason["pass_rate_delta_interval"] == interval
    assert interval["low"] < -0.05 < interval["high"] and interval["level"] == 0.95
    assert reason["conclusion"] == "inconclusive" and reason["p_value"] == 0.5
    assert reason["items_needed"] == 129 and reason["more_items_needed"] == 109
    assert reason["on_inconclusive"] == "pass" and reason["passed"] is True
    assert run["passed"] is True
    assert "about 109 more compared items would decide" in reason["explanation"]
    # The same answer in the comparison route.
    path = f"{suite.run_path(run['id'])}/comparison"
    assert api.get(path).json["comparison"]["pass_rate_delta_interval"] == interval


def test_on_inconclusive_fail_fails_the_small_run_and_says_so(
    api: Any, app: Any, project: Any, plugins: Plugins
) -> None:
    suite = _suite(api, project, "strict", max_regression=0.05, on_inconclusive="fail")
    assert api.get(f"/api/v1/evals/{suite.eval['id']}").json["on_inconclusive"] == "fail"
    run = _compare(api, app, suite, 20, regressed=2)
    reason = _gate(run)
    assert reason["conclusion"] == "inconclusive" and reason["passed"] is False
    assert run["passed"] is False
    assert reason["explanation"].endswith("on_inconclusive=fail")
    # The run froze the eval's setting in its snapshot.
    assert runs.get_run(run["id"]).snapshot.on_inconclusive == "fail"


def test_the_same_drop_on_four_hundred_items_is_regressed(
    api: Any, app: Any, project: Any, plugins: Plugins
) -> None:
    suite = _suite(api, project, "large", max_regression=0.05)
    run = _compare(api, app, suite, 400, regressed=40)
    reason = _gate(run)
    assert reason["pass_rate_delta"] == -0.1
    assert reason["pass_rate_delta_interval"]["high"] < -0.05
    assert reason["conclusion"] == "regressed" and reason["passed"] is False
    assert reason["items_needed"] is None and run["passed"] is False


def test_four_hundred_items_with_no_drop_is_not_worse(
    api: Any, app: Any, project: Any, plugins: Plugins
) -> None:
    suite = _suite(api, project, "steady", max_regression=0.05, on_inconclusive="fail")
    run = _compare(api, app, suite, 400, regressed=10, improved=10)
    reason = _gate(run)
    assert reason["pass_rate_delta"] == 0.0
    assert reason["pass_rate_delta_interval"]["low"] > -0.05
    assert reason["conclusion"] == "not_worse" and reason["passed"] is True
    assert run["passed"] is True


def test_an_unknown_on_inconclusive_is_refused_and_creates_nothing(
    api: Any, app: Any, project: Any, plugins: Plugins
) -> None:
    suite = _suite(api, project, "base")
    body = {k: suite.eval[k] for k in ("project_id", "agent_id", "dataset_id", "scorers")}
    refused = api.post("/api/v1/evals", {**body, "name": "maybe", "on_inconclusive": "maybe"})
    assert refused.status == 400 and refused.code == "VALIDATION_FAILED", refused
    assert "on_inconclusive" in json.dumps(refused.json["error"])
    listed = api.get(f"/api/v1/evals?project_id={project['id']}").json["data"]
    assert [e["name"] for e in listed] == ["base"]
