"""The report's flipped items: which items, in what order, capped at 50 with "N more", and
every output (tenant text) escaped."""

from __future__ import annotations

from typing import Any

from markupsafe import escape

from pawl.demo.flips import (
    IMPROVED,
    MAX_SHOWN,
    REGRESSED,
    capped,
    flipped_items,
    item_verdicts,
)
from pawl.demo.report import render_report
from pawl.demo.summary import build_comparison
from pawl.transport import Run
from tests.support.console import HOSTILE
from tests.unit.test_report import BASELINE_BODY, CANDIDATE_BODY, _tags


def _result(item: str, passed: bool | None, output: str | None, trial: int = 1) -> dict[str, Any]:
    errored = passed is None
    return {
        "id": f"evres_{item}_{trial}",
        "eval_run_id": "evrun_x",
        "dataset_item_id": item,
        "trial": trial,
        "input": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": f"question of {item}"},
        ],
        "output": output,
        "scores": []
        if errored
        else [{"scorer": "contains", "score": 1.0 if passed else 0.0, "passed": passed}],
        "passed": passed,
        "error": {"message": "boom"} if errored else None,
    }


def _runs(regressed: int, improved: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Baseline and candidate results: ``regressed`` pass -> fail items, ``improved`` fail ->
    pass items, and items that did not flip, errored on one side, or were deleted."""
    before, after = [], []
    for n in range(regressed):
        item = f"dsi_r{n:03d}"
        before.append(_result(item, True, f"old {item} {HOSTILE[n % len(HOSTILE)]}"))
        after.append(_result(item, False, f"new {item} {HOSTILE[(n + 1) % len(HOSTILE)]}"))
    for n in range(improved):
        item = f"dsi_i{n:03d}"
        before.append(_result(item, False, f"old {item}"))
        after.append(_result(item, True, f"new {item}"))
    before += [_result("dsi_same", True, "same"), _result("dsi_err", True, "was fine")]
    after += [_result("dsi_same", True, "same"), _result("dsi_err", None, None)]
    deleted = _result("gone", True, "x") | {"dataset_item_id": None}
    return [*before, deleted], [*after, deleted]


def test_flips_are_regressions_first_then_improvements_and_skip_errored_items() -> None:
    before, after = _runs(regressed=3, improved=2)
    flipped = flipped_items(item_verdicts(before), item_verdicts(after))

    assert [(f.dataset_item_id, f.direction) for f in flipped] == [
        ("dsi_r000", REGRESSED),
        ("dsi_r001", REGRESSED),
        ("dsi_r002", REGRESSED),
        ("dsi_i000", IMPROVED),
        ("dsi_i001", IMPROVED),
    ]
    first = flipped[0]
    assert first.question == "question of dsi_r000"
    assert first.baseline_output == f"old dsi_r000 {HOSTILE[0]}"
    assert first.candidate_output == f"new dsi_r000 {HOSTILE[1]}"


def test_trials_reduce_with_the_evals_reducer() -> None:
    before = [_result("dsi_a", True, "a1", 1), _result("dsi_a", True, "a2", 2)]
    after = [_result("dsi_a", False, "b1", 1), _result("dsi_a", True, "b2", 2)]
    # all: one failed trial fails the item; any: one passing trial passes it.
    assert [f.direction for f in flipped_items(item_verdicts(before), item_verdicts(after))] == [
        REGRESSED
    ]
    assert flipped_items(item_verdicts(before, "any"), item_verdicts(after, "any")) == []


def test_the_report_shows_fifty_flips_regressions_first_and_says_how_many_more() -> None:
    before, after = _runs(regressed=40, improved=22)
    flips = capped(flipped_items(item_verdicts(before), item_verdicts(after)))
    assert (len(flips.shown), flips.more, flips.total) == (MAX_SHOWN, 12, 62)

    comparison = build_comparison(
        Run.model_validate(CANDIDATE_BODY), Run.model_validate(BASELINE_BODY)
    )
    page = render_report(comparison, generated_at="2026-01-31T12:00:00Z", flips=flips)

    boxes = [attrs for tag, attrs in _tags(page) if tag == "div" and attrs.get("class") == "flip"]
    assert len(boxes) == MAX_SHOWN
    assert "62 items changed verdict, regressions first; the first 50 are shown" in page
    assert "12 more flipped items" in page
    # All 40 regressions, then the first 10 improvements; the other 12 are left out.
    order = [page.index(f"<code>dsi_r{n:03d}</code>") for n in range(40)]
    order += [page.index(f"<code>dsi_i{n:03d}</code>") for n in range(10)]
    assert order == sorted(order)
    assert "dsi_i010" not in page and "dsi_i021" not in page
    section = page.split('id="flipped"')[1]
    assert section.count("pass → fail") == 40 and section.count("fail → pass") == 10


def test_hostile_outputs_are_text_in_the_report() -> None:
    before, after = _runs(regressed=len(HOSTILE), improved=0)
    flips = capped(flipped_items(item_verdicts(before), item_verdicts(after)))
    comparison = build_comparison(
        Run.model_validate(CANDIDATE_BODY), Run.model_validate(BASELINE_BODY)
    )
    page = render_report(comparison, generated_at="2026-01-31T12:00:00Z", flips=flips)

    for hostile in HOSTILE:
        assert str(escape(hostile)) in page
    tags = {tag for tag, _ in _tags(page)}
    assert not tags & {"script", "img", "iframe", "a"}
    assert not any("onerror" in attrs or "onload" in attrs for _, attrs in _tags(page))
    section = page.split('id="flipped"')[1]
    assert "{{ 7*7 }}" in section and "49" not in section  # Jinja syntax stays text


def test_no_flips_says_so_and_no_section_without_results() -> None:
    comparison = build_comparison(
        Run.model_validate(CANDIDATE_BODY), Run.model_validate(BASELINE_BODY)
    )
    none_flipped = render_report(comparison, flips=capped([]))
    assert "No item changed verdict between the runs." in none_flipped
    assert 'id="flipped"' not in render_report(comparison)
