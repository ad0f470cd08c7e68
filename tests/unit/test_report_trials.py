"""``pawl run``'s report of a run with trials: one line with pass@k, pass^k and the noise
floor in the terminal and the markdown, and the regression sentence names the unit."""

from __future__ import annotations

import io
from typing import Any

from rich.console import Console

from pawl.demo.ci_markdown import _figures, md_text
from pawl.demo.comparison import print_comparison
from pawl.demo.summary import build_comparison, reason_sentence, trials_line
from pawl.transport import Run

TRIALS = {
    "count": 5,
    "item_count": 12,
    "pass_rate": 0.6,
    "pass_at_k": {"1": 0.6, "2": 0.7, "3": 0.8, "4": 0.9, "5": 1.0},
    "pass_hat_k": {"1": 0.6, "2": 0.45, "3": 0.4, "4": 0.35, "5": 1 / 3},
    "noise_floor": {"flip_rate": 0.4, "items": 12, "method": "pairwise_disagreement"},
}


def _run(aggregate: dict[str, Any]) -> Run:
    return Run.model_validate(
        {
            "id": "evrun_cand000000000001",
            "eval_id": "eval_fixed0000000001",
            "agent_version": 2,
            "status": "completed",
            "passed": None,
            "errored_count": 0,
            "aggregate_scores": aggregate,
        }
    )


def test_one_line_with_pass_at_k_and_the_noise_floor() -> None:
    line = trials_line({"trials": TRIALS})
    assert line == (
        "5 trials an item: pass@1 0.60, pass@5 1.00, pass^5 0.33; noise floor: 0.40 of trial "
        "pairs disagree (over 12 items)"
    )
    assert trials_line({"pass_rate": 0.5}) is None
    assert trials_line({"trials": {"count": "5"}}) is None


def test_the_terminal_and_markdown_reports_show_it() -> None:
    aggregate = {"pass_rate": 0.33, "scored_item_count": 12, "trials": TRIALS}
    comparison = build_comparison(_run(aggregate))
    out = io.StringIO()
    print_comparison(Console(file=out, width=200, color_system=None), comparison)
    assert "5 trials an item: pass@1 0.60, pass@5 1.00, pass^5 0.33" in out.getvalue()
    markdown = "\n".join(_figures(comparison))
    # As markdown text: "@" escaped (and kept from reading as a mention) like all such text.
    assert md_text(str(trials_line(aggregate)), limit=400) in markdown
    assert "noise floor: 0.40" in markdown
    single = build_comparison(_run({"pass_rate": 0.33, "scored_item_count": 12}))
    assert single.candidate.trials is None


def test_the_regression_sentence_names_trial_proportions() -> None:
    reason = {
        "gate": "max_regression",
        "passed": False,
        "pass_rate_delta": -0.267,
        "max_regression": 0.1,
        "p_value": 0.0078,
        "compared_item_count": 12,
        "unit": "trial_proportion",
    }
    assert "over 12 items (per-item trial pass proportions)" in reason_sentence(reason)
