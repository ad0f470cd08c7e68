"""``--output table``: what each operation's table shows, as pure functions of the answer."""

from __future__ import annotations

import json
from io import StringIO
from typing import Any

from pawl.cli import render

RUN: dict[str, Any] = {
    "id": "evrun_abc",
    "eval_id": "eval_x",
    "status": "completed",
    "passed": False,
    "completed_count": 3,
    "item_count": 3,
    "created_at": "2026-12-02T18:00:00Z",
    "aggregate_scores": {
        "pass_rate": 2 / 3,
        "pass_rate_interval": {"low": 0.2077, "high": 0.9386},
        "scorers": {"json_logic": {"mean": 0.6667, "pass_rate": 0.6667}},
        "baseline": {
            "pass_rate_delta": -0.3333,
            "p_value": 0.0412,
            "regressed": ["dsit_" + "x" * 80],
        },
    },
    "verdict_reasons": [{"gate": "regression", "passed": False, "message": "m" * 150}],
}
RUN["baseline_run_id"] = None  # an empty field: left out of the object's table
RUNNING = RUN | {"id": "evrun_def", "status": "running", "passed": None, "aggregate_scores": None}


def _lines(text: str) -> list[str]:
    return text.splitlines()


def _row(text: str, starts: str) -> list[str]:
    """A table line split on its two-space gaps (cells hold single spaces at most)."""
    line = next(line for line in _lines(text) if line.startswith(starts))
    return [cell.strip() for cell in line.split("  ") if cell.strip()]


def test_columns_line_up_under_a_header_and_a_rule() -> None:
    text = render.format_table(["a", "bb"], [["xxx", "y"], ["", "zz"]])
    assert _lines(text) == ["a    bb", "───  ──", "xxx  y", "     zz"]
    assert render.format_table(None, [["k", "v"]]) == "k  v"


def test_wide_characters_take_two_columns() -> None:
    assert render.display_width("支持") == 4 and render.display_width("e\u0301") == 1
    text = render.format_table(["name", "id"], [["支持", "1"], ["abcde", "2"]])
    columns = [
        render.display_width(line[: line.index(i)])
        for line, i in zip(_lines(text)[2:], "12", strict=True)
    ]
    assert columns == [7, 7]  # both ids start where the terminal shows the second column


def test_a_runs_table_shows_verdict_pass_rate_interval_delta_and_p() -> None:
    text = render.table_text({"data": [RUN, RUNNING], "total": 2, "offset": 0}, "listEvalRuns")
    header = _row(text, "id")
    assert header == [
        "id",
        "status",
        "passed",
        "items",
        "pass rate",
        "Δ vs baseline",
        "p",
        "created",
    ]
    assert _row(text, "evrun_abc") == [
        "evrun_abc",
        "completed",
        "false",
        "3/3",
        "66.7% (20.8% to 93.9%)",
        "-33.3 pt",
        "0.0412",
        "2026-12-02T18:00:00Z",
    ]
    assert _row(text, "evrun_def")[1:5] == ["running", "3/3", "—", "—"]  # no verdict yet
    assert _lines(text)[-1] == "1-2 of 2"


def test_a_run_shows_every_aggregate_figure_in_full() -> None:
    text = render.table_text(RUN, "getEvalRun")
    rows = {line.split("  ")[0]: line.split("  ", 1)[1].strip() for line in _lines(text)}
    assert list(rows)[:6] == [
        "id",
        "eval_id",
        "status",
        "passed",
        "pass rate",
        "verdict_reasons[0]",
    ]
    assert rows["pass rate"] == "66.7% (20.8% to 93.9%)"
    assert rows["aggregate_scores.pass_rate"] == str(2 / 3)
    assert rows["aggregate_scores.baseline.p_value"] == "0.0412"
    assert rows["aggregate_scores.scorers.json_logic.mean"] == "0.6667"
    assert rows["aggregate_scores.baseline.regressed"] == json.dumps(["dsit_" + "x" * 80])
    reason = json.loads(rows["verdict_reasons[0]"])
    assert reason["message"] == "m" * 150  # not cut
    assert "…" not in text and "baseline_run_id" not in rows


def test_a_results_table_shows_item_passed_each_score_and_why() -> None:
    results = [
        {
            "dataset_item_id": "dsit_1",
            "trial": 1,
            "passed": True,
            "scores": [
                {"scorer": "json_logic", "score": 1.0, "passed": True},
                {"scorer": "judge", "score": 0.8, "passed": True, "reasoning": "Good.\nMore."},
            ],
        },
        {
            "dataset_item_id": None,
            "trial": 2,
            "passed": False,
            "scores": [
                {"scorer": "json_logic", "score": 0.0, "passed": False, "reasoning": "no match"},
                {"scorer": "judge", "score": 0.9, "passed": True, "reasoning": "fine"},
            ],
        },
        {
            "dataset_item_id": "dsit_3",
            "passed": None,
            "error": {"code": "AGENT_TIMEOUT", "message": "30 s"},
        },
    ]
    text = render.table_text({"data": results}, "listEvalResults")
    assert _row(text, "item") == ["item", "passed", "json_logic", "judge", "reasoning / error"]
    assert _row(text, "dsit_1") == ["dsit_1", "true", "1", "0.8", "Good."]
    # The failing scorer's reasoning is the one shown; a deleted item and a second trial say so.
    assert _row(text, "(deleted)") == ["(deleted) #2", "false", "0 ✗", "0.9", "no match"]
    assert _row(text, "dsit_3") == ["dsit_3", "error", "AGENT_TIMEOUT: 30 s"]


def test_other_lists_show_identifying_columns_then_created() -> None:
    rows = [
        {
            "id": f"eval_{n}",
            "project_id": "proj_1",
            "name": f"e{n}",
            "agent_id": f"agt_{n}",
            "dataset_id": f"dset_{n}",
            "pass_threshold": n / 10,
            "max_regression": n,
            "updated_at": str(n),
            "created_at": f"2026-0{n}",
        }
        for n in (1, 2)
    ]
    text = render.table_text({"data": rows, "next_cursor": "c2"}, "listEvals")
    header = _row(text, "id")
    assert header[:2] == ["id", "name"] and header[-1] == "created"
    assert len(header) == render.MAX_COLUMNS and "project_id" not in header  # one value in all
    assert _lines(text)[-1] == "more: --cursor c2"


def test_cells_are_one_line_and_cut_in_lists() -> None:
    assert render.cell("a\nb") == "a b"
    assert render.cell("x" * 100) == "x" * 59 + "…"
    assert render.cell({"a": [1]}) == '{"a":[1]}'
    assert render.cell(None) == ""


def test_render_prints_json_exactly_or_the_table() -> None:
    out = StringIO()
    render.render({"data": []}, "json", "listEvals", out=out)
    assert json.loads(out.getvalue()) == {"data": []}
    out = StringIO()
    render.render({"data": []}, "table", "listEvals", out=out)
    assert out.getvalue() == "(none)\n"
    out = StringIO()
    render.render(None, "table", out=out)
    assert out.getvalue() == "(done: no content)\n"
