"""Which figures the planner starts from (``engine.power_plan.inputs_from_run``), on run
rows as the store returns them: the trials' noise floor when a run reports one."""

from __future__ import annotations

from typing import Any

import pytest

from chalicelib.domain.runs import EvalRun
from chalicelib.engine.power_plan import inputs_from_run


def _run(aggregate: dict[str, Any], baseline_run_id: str | None = None) -> EvalRun:
    return EvalRun(
        id="evrun_0000000000000001",
        eval_id="eval_0000000000000001",
        agent_version=1,
        status="completed",
        baseline_run_id=baseline_run_id,
        aggregate_scores=aggregate,
        created_at="2026-12-07T00:00:00.000Z",
    )


COMPARISON = {
    "pass_rate": 0.8,
    "baseline": {"compared_item_count": 200, "flipped": {"improved": 6, "regressed": 14}},
}


def test_a_comparison_gives_its_flips_either_way() -> None:
    inputs = inputs_from_run(_run(COMPARISON, "evrun_0000000000000000"), 1, 3)
    assert (inputs.source, inputs.noise_from) == ("comparison", "discordance")
    assert inputs.noise_discordance == inputs.discordance == 0.1
    assert inputs.compared_item_count == 200 and inputs.runs_considered == 3
    assert inputs.baseline_run_id == "evrun_0000000000000000"


def test_with_trials_the_noise_floor_over_the_trials_is_the_noise() -> None:
    aggregate = {**COMPARISON, "trials": {"noise_floor": {"flip_rate": 0.24}}}
    inputs = inputs_from_run(_run(aggregate, "evrun_0000000000000000"), 3, 1)
    assert (inputs.source, inputs.noise_from) == ("comparison", "noise_floor")
    assert inputs.noise_discordance == pytest.approx(0.08) and inputs.flip_rate == 0.24
    assert inputs.discordance == 0.1  # still reported beside it
    # A run without a comparison reads its noise floor too.
    alone = inputs_from_run(_run({"pass_rate": 0.8, "trials": aggregate["trials"]}), 4, 1)
    assert (alone.source, alone.noise_from) == ("run", "noise_floor")
    assert alone.noise_discordance == pytest.approx(0.06)


@pytest.mark.parametrize("flip_rate", ["0.2", True, 1.5, -0.1, None])
def test_a_malformed_noise_floor_is_not_read(flip_rate: Any) -> None:
    aggregate = {"pass_rate": 0.9, "trials": {"noise_floor": {"flip_rate": flip_rate}}}
    inputs = inputs_from_run(_run(aggregate), 3, 1)
    assert inputs.flip_rate is None and inputs.noise_from == "independent_outcomes"
    assert inputs.noise_discordance == pytest.approx(2 * 0.9 * 0.1)


def test_a_run_with_no_pass_rate_falls_back_to_the_assumption() -> None:
    inputs = inputs_from_run(_run({}), 1, 1)
    assert inputs.noise_from == "independent_outcomes" and inputs.noise_discordance == 0.5
