"""`pawl run`'s reports for a continuous scorer compared with a baseline: the terminal's
scorer table, the Markdown and the JUnit properties show its Δ mean's interval and its
Wilcoxon signed-rank p; a 0/1 scorer shows neither."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console

from pawl.demo.ci_junit import render_junit
from pawl.demo.ci_markdown import render_markdown
from pawl.demo.comparison import print_comparison
from pawl.demo.report import render_report
from pawl.demo.summary import build_comparison
from tests.unit.test_ci_reports import _junit, _report, _run

JUDGE = {
    "mean_delta": -0.1,
    "pass_rate_delta": -0.1,
    "continuous": True,
    "mean_delta_interval": {"low": -0.1412, "high": -0.0588, "level": 0.95, "method": "paired_t"},
    "wilcoxon": {
        "statistic": 12.0,
        "p_value": 1.234e-05,
        "method": "normal_approximation",
        "n": 29,
        "zero_count": 1,
        "z": -4.2,
        "rank_biserial": -0.94,
    },
}


def _continuous_run() -> Any:
    base = _run()
    aggregate = dict(base.aggregate_scores or {})
    aggregate["scorers"] = {
        "contains": {"mean": 0.4, "pass_rate": 0.4},
        "judge": {"mean": 0.61, "pass_rate": 0.5},
    }
    aggregate["baseline"] = {
        **aggregate["baseline"],
        "scorers": {"contains": {"mean_delta": -0.2, "pass_rate_delta": -0.2}, "judge": JUDGE},
    }
    return _run(aggregate_scores=aggregate)


def test_terminal_scorer_table_shows_the_interval_and_test_of_the_judge_only() -> None:
    console = Console(record=True, width=160, color_system=None)
    print_comparison(console, build_comparison(_continuous_run()))
    lines = console.export_text().splitlines()
    (judge,) = [line for line in lines if "judge" in line]
    assert "[-0.14, -0.06] Wilcoxon p = 1.23e-05" in judge
    (contains,) = [line for line in lines if line.strip().startswith("│ contains")]
    assert "Wilcoxon" not in contains


def test_terminal_scorer_table_has_no_test_column_without_a_continuous_scorer() -> None:
    console = Console(record=True, width=160, color_system=None)
    print_comparison(console, build_comparison(_run()))
    assert "Wilcoxon" not in console.export_text()


def test_markdown_names_the_test_per_continuous_scorer() -> None:
    markdown = render_markdown(_report(_continuous_run()))
    assert (
        "- `judge`: Δ mean -0.10, [-0.14, -0.06] Wilcoxon p = 1.23e-05 over 29 changed items "
        "(normal approximation)."
    ) in markdown
    assert "`contains`: Δ mean" not in markdown
    assert "Wilcoxon" not in render_markdown(_report())


def test_junit_carries_the_test_as_suite_properties(tmp_path: Path) -> None:
    (suite,) = list(_junit(tmp_path, _report(_continuous_run())))
    properties = {p.name: p.value for p in suite.properties()}
    assert properties["pawl.scorer.judge.mean_delta"] == "-0.10"
    assert properties["pawl.scorer.judge.signed_rank"] == "[-0.14, -0.06] Wilcoxon p = 1.23e-05"
    assert "pawl.scorer.contains.signed_rank" not in properties
    assert "signed_rank" not in render_junit(_report())


def test_html_report_shows_the_test_beside_the_judges_delta() -> None:
    html = render_report(build_comparison(_continuous_run()), generated_at="2026-12-07T00:00:00Z")
    assert "-0.10 [-0.14, -0.06] Wilcoxon p = 1.23e-05" in html
    assert html.count("Wilcoxon") == 1
