"""Trial-aware inference through real runs: five trials an item, scripted per trial, a
baseline and a candidate run through the API; the run's ``trials`` figures, the paired
comparison the gate decides on, the comparison endpoint's same figures, and the verdict."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.runs import Plugins, Suite, make_suite

#: Per item: the baseline's five trials, then the candidate's (``1`` answers ``yes``).
DROPPED = "11110|11000"
STEADY = "11111|11111"


def _ok(response: Any) -> Any:
    assert response.status == 200, response
    return response.json


@pytest.fixture
def trial_runs(api: Any, project: Any, plugins: Plugins) -> tuple[Suite, Any, Any]:
    cases: list[Any] = [(f"trials:{DROPPED}", "yes")] * 8 + [(f"trials:{STEADY}", "yes")] * 4
    suite = make_suite(api, project, cases, name="trials", trials=5, max_regression=0.1)
    baseline = api.post(suite.runs_path, {"wait": True}).json
    assert baseline["status"] == "completed", baseline
    current = api.post(suite.runs_path, {"wait": True, "baseline_run_id": baseline["id"]}).json
    assert current["status"] == "completed", current
    return suite, baseline, current


def test_a_run_reports_pass_at_k_pass_hat_k_and_its_noise_floor(trial_runs: Any) -> None:
    _, baseline, _ = trial_runs
    trials = baseline["aggregate_scores"]["trials"]
    assert trials["count"] == 5 and trials["item_count"] == 12 and trials["trial_count"] == 60
    # Eight items pass 4 of 5 trials, four pass all five.
    assert trials["pass_rate"] == pytest.approx((8 * 0.8 + 4) / 12)
    assert trials["pass_at_k"]["1"] == pytest.approx((8 * 0.8 + 4) / 12)
    assert trials["pass_at_k"]["5"] == 1.0
    assert trials["pass_hat_k"]["2"] == pytest.approx((8 * 0.6 + 4) / 12)
    assert trials["pass_hat_k"]["5"] == pytest.approx(4 / 12)
    # Four of the ten pairs of trials disagree on each of the eight items.
    assert trials["noise_floor"] == {
        "flip_rate": pytest.approx(8 * 0.4 / 12),
        "items": 12,
        "method": "pairwise_disagreement",
    }
    interval = trials["pass_rate_interval"]
    assert interval["method"] == "wilson_effective_n"
    assert interval["low"] < trials["pass_rate"] < interval["high"] <= 1.0
    # One trial passing in each item under "all": every baseline item fails but four.
    assert baseline["aggregate_scores"]["pass_rate"] == pytest.approx(4 / 12)


def test_the_gate_decides_on_paired_trial_proportions(trial_runs: Any) -> None:
    _, baseline, current = trial_runs
    paired = current["aggregate_scores"]["baseline"]["trials"]
    assert paired["item_count"] == 12 and paired["unit"] == "trial_proportion"
    assert paired["pass_rate_delta"] == pytest.approx(-0.4 * 8 / 12)
    assert paired["regressed_item_count"] == 8 and paired["improved_item_count"] == 0
    # Eight equal drops: of the 2^8 sign patterns only all-minus and all-plus are as extreme.
    assert paired["p_value"] == 2 / 256 and paired["exact"] is True
    assert paired["p_value_method"] == "sign_flip_exact" and paired["mc_error"] == 0.0
    # Twelve items are too few for the interval to clear -0.1 on its own (it ends near
    # -0.08): the drop beyond the margin with p < 0.05 is the gate's other route.
    assert -0.1 < paired["pass_rate_delta_interval"]["high"] < 0
    # Under "all", the reduced items did not move: every dropped item failed both times.
    assert current["aggregate_scores"]["baseline"]["pass_rate_delta"] == 0.0
    (reason,) = current["verdict_reasons"]
    assert reason["unit"] == "trial_proportion" and reason["conclusion"] == "regressed"
    assert reason["pass_rate_delta"] == pytest.approx(-0.4 * 8 / 12)
    assert "per-item trial pass proportions" in reason["explanation"]
    assert "the sign-flip p = 0.0078 < 0.05" in reason["explanation"]
    assert current["passed"] is False and reason["baseline_run_id"] == baseline["id"]


def test_the_comparison_endpoint_carries_the_same_trial_figures(api: Any, trial_runs: Any) -> None:
    suite, _, current = trial_runs
    answer = _ok(api.get(f"{suite.run_path(current['id'])}/comparison"))
    settled = current["aggregate_scores"]["baseline"]["trials"]
    assert answer["comparison"]["trials"] == settled


def test_a_run_of_one_trial_has_no_trial_figures(api: Any, project: Any, plugins: Plugins) -> None:
    suite = make_suite(api, project, [("echo:yes", "yes")], name="single")
    run = api.post(suite.runs_path, {"wait": True}).json
    assert run["status"] == "completed" and "trials" not in run["aggregate_scores"]
