"""The comparison figures, the HTML report and the terminal tables, from fixed run bodies."""

from __future__ import annotations

import copy
import re
from html.parser import HTMLParser
from typing import Any

import pytest
from rich.console import Console

from pawl.demo.comparison import print_comparison
from pawl.demo.plot import ZERO_BAR_HEIGHT, build_plot
from pawl.demo.report import render_report
from pawl.demo.summary import build_comparison, fmt_p, reason_sentence
from pawl.transport import Run

HOSTILE = '<script>alert("x")</script>'


def _group(rate: float, low: float, high: float, scored: int) -> dict[str, Any]:
    return {
        "pass_rate": rate,
        "pass_rate_interval": {"low": low, "high": high, "level": 0.95},
        "scored_item_count": scored,
        "scorers": {"contains": {"mean": rate, "pass_rate": rate}},
    }


def _change(delta: float, improved: int, regressed: int, p: float, p_adj: float) -> dict[str, Any]:
    return {
        "compared_item_count": 8,
        "added_item_count": 0,
        "removed_item_count": 0,
        "pass_rate_delta": delta,
        "flipped": {"improved": improved, "regressed": regressed},
        "p_value": p,
        "scorers": {},
        "p_value_adjusted": p_adj,
    }


BASELINE_BODY: dict[str, Any] = {
    "id": "evrun_base000000000001",
    "eval_id": "eval_fixed0000000001",
    "agent_version": 1,
    "status": "completed",
    "item_count": 16,
    "completed_count": 16,
    "errored_count": 0,
    "passed": False,
    "aggregate_scores": {
        "pass_rate": 0.25,
        "pass_rate_interval": {"low": 0.1018, "high": 0.4968, "level": 0.95},
        "scored_item_count": 16,
        "errored_item_count": 0,
        "scorers": {"contains": {"mean": 0.25, "pass_rate": 0.25}},
        "flaky_item_count": 0,
        "grouping": {
            "group_by": "kind",
            "groups": {
                "billing": _group(0.125, 0.0224, 0.4709, 8),
                HOSTILE: _group(0.375, 0.1368, 0.6943, 8),
            },
            "ungrouped_item_count": 0,
        },
    },
    "verdict_reasons": [
        {
            "gate": "pass_threshold",
            "passed": False,
            "pass_rate": 0.25,
            "pass_threshold": 0.8,
            "scored_item_count": 16,
        }
    ],
}

CANDIDATE_BODY: dict[str, Any] = {
    "id": "evrun_cand000000000002",
    "eval_id": "eval_fixed0000000001",
    "agent_version": 2,
    "status": "completed",
    "baseline_run_id": "evrun_base000000000001",
    "item_count": 16,
    "completed_count": 15,
    "errored_count": 1,
    "passed": True,
    "future_field_the_client_ignores": {"x": 1},
    "aggregate_scores": {
        "pass_rate": 0.8667,
        "pass_rate_interval": {"low": 0.6212, "high": 0.9626, "level": 0.95},
        "scored_item_count": 15,
        "errored_item_count": 1,
        "scorers": {"contains": {"mean": 0.8667, "pass_rate": 0.8667}},
        "flaky_item_count": 0,
        "grouping": {
            "group_by": "kind",
            "groups": {
                "billing": _group(1.0, 0.6756, 1.0, 8),
                HOSTILE: _group(0.7143, 0.3589, 0.9178, 7),
            },
            "ungrouped_item_count": 0,
        },
        "baseline": {
            "run_id": "evrun_base000000000001",
            "compared_item_count": 15,
            "added_item_count": 0,
            "removed_item_count": 1,
            "pass_rate_delta": 0.6,
            "flipped": {"improved": 10, "regressed": 1},
            "p_value": 0.01171875,
            "scorers": {"contains": {"mean_delta": 0.6, "pass_rate_delta": 0.6}},
            "grouping": {
                "group_by": "kind",
                "groups": {
                    "billing": _change(0.875, 7, 0, 0.015625, 0.03125),
                    HOSTILE: _change(0.2857, 3, 1, 0.625, 0.625),
                },
                "ungrouped_item_count": 0,
            },
        },
    },
    "verdict_reasons": [
        {
            "gate": "pass_threshold",
            "passed": True,
            "pass_rate": 0.8667,
            "pass_threshold": 0.8,
            "scored_item_count": 15,
        },
        {
            "gate": "max_regression",
            "passed": True,
            "pass_rate_delta": 0.6,
            "max_regression": 0.05,
            "p_value": 0.01171875,
            "alpha": 0.05,
            "compared_item_count": 15,
            "baseline_run_id": "evrun_base000000000001",
        },
    ],
}


@pytest.fixture
def comparison() -> Any:
    return build_comparison(Run.model_validate(CANDIDATE_BODY), Run.model_validate(BASELINE_BODY))


class _Tags(HTMLParser):
    """Collects start tags, so the test can say what elements the page really holds."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def _tags(html: str) -> list[tuple[str, dict[str, str | None]]]:
    parser = _Tags()
    parser.feed(html)
    return parser.tags


def test_report_holds_the_run_and_group_figures(comparison: Any) -> None:
    html = render_report(comparison, generated_at="2026-01-02T03:04:05Z")
    # overall pass rates with their intervals, both runs
    assert "0.25" in html and "[0.10, 0.50]" in html
    assert "0.87" in html and "[0.62, 0.96]" in html
    # per group: both sides with intervals, the delta, flips, raw and Holm-adjusted p
    assert "0.12 [0.02, 0.47]" in html and "1.00 [0.68, 1.00]" in html
    assert "+0.88" in html and "0.0156" in html and "0.0312" in html
    assert "0.38 [0.14, 0.69]" in html and "0.71 [0.36, 0.92]" in html
    assert "0.625" in html
    # overall flips and McNemar p; one removed item is reported
    assert "10 improved" in html and "1 regressed" in html and "0.0117" in html
    assert "1 only in the baseline" in html
    # the scorer table
    assert "contains" in html and "+0.60" in html


def test_report_states_the_verdict_and_its_reasons_in_words(comparison: Any) -> None:
    html = render_report(comparison)
    assert "Verdict for v2: PASSED" in html
    assert 'class="verdict passed"' in html
    assert "passed: pass rate 0.87 ≥ threshold 0.80 (15 items scored)" in html
    assert "no significant regression: pass rate +0.60 vs evrun_base000000000001" in html


def test_report_is_self_contained_with_an_svg_plot(comparison: Any) -> None:
    html = render_report(comparison)
    tags = _tags(html)
    names = [name for name, _ in tags]
    assert names.count("svg") == 1
    assert "script" not in names and "link" not in names and "img" not in names
    assert not any("src" in attrs or "href" in attrs for _, attrs in tags)
    assert "<style>" in html
    # one bar per side per group, each with an error bar (three lines: stem and two caps)
    bars = [attrs for name, attrs in tags if name == "rect" and attrs.get("height") != "12"]
    assert sorted(str(bar["class"]) for bar in bars) == ["baseline"] * 2 + ["candidate"] * 2
    assert sum(1 for name, attrs in tags if name == "line" and attrs["class"] == "whisker") == 12
    assert sum(1 for name, attrs in tags if name == "line" and attrs["class"] == "threshold") == 2


def test_report_escapes_labels_that_came_from_users(comparison: Any) -> None:
    html = render_report(comparison)
    assert HOSTILE not in html
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in html
    assert "script" not in [name for name, _ in _tags(html)]


def test_plot_scales_rates_and_intervals_to_the_axes(comparison: Any) -> None:
    plot = build_plot(comparison)
    billing_candidate = next(
        b for b in plot.bars if b.side == "candidate" and b.title.startswith("billing")
    )
    assert billing_candidate.y == plot.top  # a rate of 1.0 reaches the top of the axis
    assert billing_candidate.y + billing_candidate.height == plot.bottom
    assert billing_candidate.whisker_bottom == pytest.approx(
        plot.bottom - (plot.bottom - plot.top) * 0.6756, abs=0.1
    )
    assert plot.threshold_y == pytest.approx(plot.bottom - (plot.bottom - plot.top) * 0.8, abs=0.1)
    assert [slot.full_label for slot in plot.slots] == [HOSTILE, "billing"]
    assert plot.slots[0].label.endswith("…") and len(plot.slots[0].label) == 16


def test_a_run_without_baseline_or_groups_renders(comparison: Any) -> None:
    body = {**BASELINE_BODY, "aggregate_scores": {**BASELINE_BODY["aggregate_scores"]}}
    del body["aggregate_scores"]["grouping"]
    alone = build_comparison(Run.model_validate(body))
    html = render_report(alone)
    assert "Verdict for v1: FAILED" in html and 'class="verdict failed"' in html
    assert "failed: pass rate 0.25 &lt; threshold 0.80 (16 items scored)" in html
    assert [slot.full_label for slot in build_plot(alone).slots] == ["overall"]
    assert "Against baseline" not in html


def test_terminal_comparison_prints_the_same_figures(comparison: Any) -> None:
    console = Console(record=True, width=160)
    print_comparison(console, comparison)
    text = console.export_text()
    assert re.search(r"pass rate\s+│\s+0\.25\s+│\s+0\.87", text)
    assert "[0.10, 0.50]" in text and "[0.62, 0.96]" in text
    assert "10 improved (fail → pass), 1 regressed (pass → fail); exact McNemar p = 0.0117" in text
    billing = next(line for line in text.splitlines() if line.startswith("│ billing"))
    assert re.findall(r"[^│]+", billing)[1:] == [
        " 0.12 [0.02, 0.47] ",
        " 1.00 [0.68, 1.00] ",
        " +0.88 ",
        "        7 ",
        "         0 ",
        " 0.0156 ",
        "   0.0312 ",
    ]
    assert HOSTILE in text  # printed as text, not interpreted as console markup
    assert "Verdict: PASSED" in text


@pytest.mark.parametrize(
    ("reason", "expected"),
    [
        (
            {"gate": "pass_threshold", "passed": False, "pass_rate": None, "pass_threshold": 0.5},
            "failed: nothing was scored, so no pass rate can reach threshold 0.50",
        ),
        (
            {
                "gate": "max_regression",
                "passed": False,
                "pass_rate_delta": -0.2,
                "max_regression": 0.05,
                "p_value": 1.9e-06,
                "alpha": 0.05,
                "compared_item_count": 100,
                "baseline_run_id": "evrun_b",
            },
            "significant regression: pass rate -0.20 vs evrun_b over 100 items, a drop of "
            "more than 0.05 with p = 1.90e-06 < 0.05",
        ),
        (
            {
                "gate": "max_regression",
                "passed": True,
                "pass_rate_delta": -0.1,
                "max_regression": 0.05,
                "p_value": 0.3,
                "alpha": 0.05,
                "compared_item_count": 10,
                "baseline_run_id": "evrun_b",
            },
            "no significant regression: pass rate -0.10 vs evrun_b over 10 items is a drop of "
            "more than 0.05, but p = 0.300 ≥ 0.05: within noise",
        ),
        (
            {
                "gate": "max_regression",
                "passed": True,
                "pass_rate_delta": None,
                "max_regression": 0.05,
                "p_value": None,
                "compared_item_count": 0,
                "baseline_run_id": "evrun_b",
            },
            "no regression to measure: no item was scored in both this run and evrun_b",
        ),
    ],
)
def test_verdict_reasons_in_plain_words(reason: dict[str, Any], expected: str) -> None:
    assert reason_sentence(reason) == expected


def test_the_regression_reason_says_the_smallest_drop_its_items_could_detect() -> None:
    reason = {
        "gate": "max_regression",
        "passed": True,
        "pass_rate_delta": -0.1,
        "max_regression": 0.05,
        "p_value": 0.5,
        "alpha": 0.05,
        "compared_item_count": 20,
        "baseline_run_id": "evrun_b",
        "min_detectable_regression": 0.2681,
        "min_detectable_power": 0.8,
    }
    assert reason_sentence(reason).endswith("; smallest detectable drop 0.268 at 80% power")
    none = reason_sentence({**reason, "compared_item_count": 1, "min_detectable_regression": None})
    assert none.endswith("; 1 compared items detect no drop at 80% power")


def test_p_values_keep_three_significant_figures_down_to_the_smallest_double() -> None:
    assert [fmt_p(p) for p in (1.0, 0.5, 0.0117, 0.00012, 5e-324, None)] == [
        "1.00",
        "0.500",
        "0.0117",
        "1.20e-04",
        "4.94e-324",
        "—",
    ]


def test_a_zero_rate_is_a_visible_bar_with_its_label_and_the_y_axis_is_titled() -> None:
    baseline = copy.deepcopy(BASELINE_BODY)
    billing = baseline["aggregate_scores"]["grouping"]["groups"]["billing"]
    billing.update(pass_rate=0.0, pass_rate_interval={"low": 0.0, "high": 0.3244, "level": 0.95})
    zeroed = build_comparison(Run.model_validate(CANDIDATE_BODY), Run.model_validate(baseline))
    plot = build_plot(zeroed)
    zero = next(b for b in plot.bars if b.side == "baseline" and b.title.startswith("billing"))
    assert zero.height == ZERO_BAR_HEIGHT and zero.y + zero.height == plot.bottom
    assert zero.value_label == "0.00" and zero.value_label_y < zero.whisker_top
    assert sorted(b.value_label for b in plot.bars) == ["0.00", "0.38", "0.71", "1.00"]
    html = render_report(zeroed)
    assert ">0.00</text>" in html
    assert 'class="axis-title"' in html and ">pass rate (95% interval)</text>" in html
