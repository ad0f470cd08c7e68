"""The comparison's items carry every trial of each side, beside the reduced outcome the
comparison compares (the run's ``trial_reducer`` over its trials)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.runs import Plugins, Suite, make_item, make_suite


def _ok(response: Any) -> Any:
    assert response.status == 200, response
    return response.json


@pytest.fixture
def trials_pair(
    api: Any, project: Any, plugins: Plugins
) -> tuple[Suite, dict[str, Any], dict[str, Any]]:
    """Three trials an item, reduced by ``any``: ``flip:yes`` answers ``yes`` on its first
    call only, so the baseline passes it (one trial of three) and the run fails it (none)."""
    suite = make_suite(
        api,
        project,
        [("flip:yes", "yes"), ("echo:steady", "steady")],
        name="trials",
        trials=3,
        trial_reducer="any",
    )
    baseline = api.post(suite.runs_path, {"wait": True}).json
    suite.items.append(make_item(api, suite.dataset["id"], "echo:added", "added"))
    current = api.post(suite.runs_path, {"wait": True, "baseline_run_id": baseline["id"]}).json
    assert current["status"] == "completed", current
    return suite, baseline, current


def test_each_side_lists_every_trial_beside_the_reduced_outcome(api: Any, trials_pair: Any) -> None:
    suite, _, current = trials_pair
    flip, steady, added = suite.items
    answer = _ok(api.get(f"{suite.run_path(current['id'])}/comparison?changed=all"))
    by_id = {item["dataset_item_id"]: item for item in answer["items"]["data"]}
    regressed = by_id[flip["id"]]
    assert regressed["kind"] == "regressed"
    before, now = regressed["baseline"], regressed["current"]
    assert before["outcome"] == "passed" and before["trial_reducer"] == "any"
    assert before["trial_count"] == 3 and before["flaky"] is True
    assert [t["trial"] for t in before["trials"]] == [1, 2, 3]
    assert sorted(t["output"] for t in before["trials"]) == ["flipped", "flipped", "yes"]
    assert sorted(t["outcome"] for t in before["trials"]) == ["failed", "failed", "passed"]
    assert before["output"] == before["trials"][0]["output"]  # ``output`` stays trial 1's
    assert now["outcome"] == "failed" and now["flaky"] is False
    assert [t["output"] for t in now["trials"]] == ["flipped"] * 3
    assert now["trials"][0]["scores"]["probe"] == {"score": 0.0, "passed": False}
    assert [t["output"] for t in by_id[steady["id"]]["current"]["trials"]] == ["steady"] * 3
    edge = answer["added"]["data"][0]
    assert edge["dataset_item_id"] == added["id"]
    assert [t["trial"] for t in edge["current"]["trials"]] == [1]  # one run only: trial 1
