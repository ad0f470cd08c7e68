"""The verdict: the pass-threshold gate, the regression gate, and their reasons."""

from __future__ import annotations

from typing import Any

import pytest

from chalicelib.stats import mcnemar_exact_p, verdict


def run(pass_rate: float | None, scored: int = 60) -> dict[str, Any]:
    return {"pass_rate": pass_rate, "scored_item_count": scored if pass_rate is not None else 0}


def moved(improved: int, regressed: int, compared: int) -> dict[str, Any]:
    return {
        "run_id": "evrun_base",
        "compared_item_count": compared,
        "pass_rate_delta": (improved - regressed) / compared if compared else None,
        "flipped": {"improved": improved, "regressed": regressed},
        "p_value": mcnemar_exact_p(improved, regressed) if compared else None,
    }


def test_no_gate_no_verdict() -> None:
    assert verdict(run(0.9), None, None, None) == (None, [])
    # A regression gate with no baseline to read does not apply either.
    assert verdict(run(0.9), None, 0.05, None) == (None, [])


def test_threshold_gate() -> None:
    passed, reasons = verdict(run(0.75), 0.75, None, None)
    assert passed is True
    assert reasons == [
        {
            "gate": "pass_threshold",
            "passed": True,
            "pass_rate": 0.75,
            "pass_threshold": 0.75,
            "scored_item_count": 60,
        }
    ]
    assert verdict(run(0.7), 0.75, None, None)[0] is False


def test_a_run_that_scored_nothing_does_not_pass() -> None:
    passed, reasons = verdict(run(None), 0.0, None, None)
    assert passed is False
    assert reasons[0]["pass_rate"] is None
    assert reasons[0]["scored_item_count"] == 0


def test_significant_regression_fails_even_above_threshold() -> None:
    # 0 improved, 20 regressed over 100: delta -0.2, p ~ 1.9e-6.
    passed, reasons = verdict(run(0.8), 0.5, 0.05, moved(0, 20, 100))
    assert passed is False
    threshold, regression = reasons
    assert threshold["passed"] is True
    assert regression["gate"] == "max_regression"
    assert regression["passed"] is False
    assert regression["pass_rate_delta"] == -0.2
    assert regression["max_regression"] == 0.05
    assert regression["p_value"] < 0.05
    assert regression["alpha"] == 0.05


def test_significant_but_small_regression_within_max_regression_passes() -> None:
    # 0 improved, 30 regressed over 1000 items: p is tiny, but the drop is 0.03.
    baseline = moved(0, 30, 1000)
    assert baseline["p_value"] < 1e-6
    passed, reasons = verdict(run(0.9), 0.5, 0.05, baseline)
    assert passed is True
    assert reasons[1]["passed"] is True


def test_big_but_not_significant_drop_passes() -> None:
    # 0 improved, 3 regressed over 10 items: delta -0.3, p = 0.25.
    baseline = moved(0, 3, 10)
    assert baseline["p_value"] == 0.25
    passed, reasons = verdict(run(0.7), 0.5, 0.1, baseline)
    assert passed is True
    assert reasons[1]["pass_rate_delta"] == pytest.approx(-0.3)


def test_regression_gate_alone_decides_without_a_threshold() -> None:
    assert verdict(run(0.2), None, 0.05, moved(0, 20, 100))[0] is False
    passed, reasons = verdict(run(0.2), None, 0.05, moved(5, 0, 100))
    assert passed is True
    assert [reason["gate"] for reason in reasons] == ["max_regression"]


def test_nothing_compared_is_no_evidence_of_regression() -> None:
    passed, reasons = verdict(run(0.9), None, 0.0, moved(0, 0, 0))
    assert passed is True
    assert reasons[0]["pass_rate_delta"] is None
    assert reasons[0]["p_value"] is None


def test_below_threshold_fails_even_when_it_improved() -> None:
    assert verdict(run(0.4), 0.5, 0.05, moved(20, 0, 100))[0] is False


def test_the_verdict_never_reads_groups() -> None:
    aggregate = run(0.8) | {"grouping": {"groups": {"refusal": {"pass_rate": 0.0}}}}
    baseline = moved(2, 1, 60) | {
        "grouping": {"groups": {"refusal": {"pass_rate_delta": -1.0, "p_value": 0.001}}}
    }
    assert verdict(aggregate, 0.75, 0.05, baseline)[0] is True


@pytest.mark.parametrize(("threshold", "max_regression"), [(1.5, None), (-0.1, None), (None, 2.0)])
def test_gate_settings_outside_zero_one_are_refused(
    threshold: float | None, max_regression: float | None
) -> None:
    with pytest.raises(ValueError):
        verdict(run(0.5), threshold, max_regression, moved(1, 1, 10))
