"""The console's comparison page: a continuous scorer's row shows its mean delta's interval
and its Wilcoxon p; a 0/1 scorer's shows a dash."""

from __future__ import annotations

from chalicelib.console.compare import figure_rows


def test_scorer_rows_show_the_test_of_a_continuous_scorer_only() -> None:
    comparison = {
        "pass_rate_delta": -0.1,
        "scorers": {
            "contains": {"mean_delta": -0.1, "pass_rate_delta": -0.1},
            "judge": {
                "mean_delta": -0.1,
                "pass_rate_delta": 0.0,
                "continuous": True,
                "mean_delta_interval": {"low": -0.14, "high": -0.06, "level": 0.95},
                "wilcoxon": {"p_value": 0.000123, "method": "exact", "n": 30},
            },
        },
    }
    rows = {row["name"]: row for row in figure_rows(comparison)["scorers"]}
    assert rows["judge"]["test"] == "[-0.140, -0.060] p = 0.000123"
    assert rows["contains"]["test"] == "—"
