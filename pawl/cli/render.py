"""How ``pawl <operation>`` prints an answer: the API's JSON, or a table for a person.

Tables are plain text from a small column formatter (no ``rich``: importing it costs more
start-up time than the request). What a table shows depends on the operation: a list of
runs shows each run's verdict and figures, a list of results each item's scores and why,
a run every aggregate figure in full; other answers show their identifying columns.
Everything here is a pure function of the answer but :func:`render`, which prints.
"""

from __future__ import annotations

import json
import sys
import unicodedata
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from chalicelib.console.figures import interval_text, p_value, percent, signed_percent

#: Columns shown for a list, first those a reader looks for; the rest in the API's order.
PREFERRED_COLUMNS = ("id", "name", "status", "passed", "output", "input", "type", "version")
#: Shown last, as ``created``, whatever else fits.
CREATED = "created_at"
MAX_COLUMNS = 6
MAX_CELL = 60
#: An object's values are wider (one per line), and the run's figures are never cut.
MAX_FIELD = 100
UNCUT_FIELDS = frozenset({"aggregate_scores", "verdict_reasons"})
GAP = "  "


@dataclass(frozen=True)
class Column:
    header: str
    value: Callable[[dict[str, Any]], str]


# --- cells --------------------------------------------------------------------------------


def cell(value: Any, limit: int | None = MAX_CELL) -> str:
    """One value on one line: text as it is, anything else as compact JSON, cut at ``limit``."""
    if value is None:
        return ""
    text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
    text = " ".join(text.splitlines())
    return text if limit is None or len(text) <= limit else text[: limit - 1] + "…"


def first_line(text: Any, limit: int = MAX_CELL) -> str:
    lines = str(text or "").strip().splitlines()
    return cell(lines[0] if lines else "", limit)


def display_width(text: str) -> int:
    """Terminal columns ``text`` takes: wide (CJK) characters take two, combining marks none."""
    width = 0
    for char in text:
        if unicodedata.combining(char):
            continue
        width += 2 if unicodedata.east_asian_width(char) in "WF" else 1
    return width


def _pad(text: str, width: int) -> str:
    return text + " " * (width - display_width(text))


def format_table(headers: Sequence[str] | None, rows: Sequence[Sequence[str]]) -> str:
    """Left-aligned columns two spaces apart, under a header and a rule when ``headers`` are
    given; no trailing spaces."""
    lines = [[*headers], *rows] if headers is not None else list(rows)
    if not lines:
        return ""
    widths = [max(display_width(line[i]) for line in lines) for i in range(len(lines[0]))]
    if headers is not None:
        lines.insert(1, ["─" * width for width in widths])
    return "\n".join(
        GAP.join(_pad(text, width) for text, width in zip(line, widths, strict=True)).rstrip()
        for line in lines
    )


# --- runs ---------------------------------------------------------------------------------


def _aggregate(run: dict[str, Any]) -> dict[str, Any]:
    aggregate = run.get("aggregate_scores")
    return aggregate if isinstance(aggregate, dict) else {}


def _baseline(run: dict[str, Any]) -> dict[str, Any]:
    baseline = _aggregate(run).get("baseline")
    return baseline if isinstance(baseline, dict) else {}


def pass_rate_text(run: dict[str, Any]) -> str:
    """``66.7% (20.8% to 93.9%)``: the pass rate and its interval; ``—`` before there is one."""
    aggregate = _aggregate(run)
    rate = percent(aggregate.get("pass_rate"))
    interval = aggregate.get("pass_rate_interval")
    return rate if not isinstance(interval, dict) else f"{rate} ({interval_text(interval)})"


def _passed(value: Any) -> str:
    return "" if value is None else json.dumps(value)


def result_outcome(result: dict[str, Any]) -> str:
    """``true``/``false``, or ``error`` for an item whose agent or scorer call failed."""
    return "error" if result.get("error") else _passed(result.get("passed"))


RUN_COLUMNS = (
    Column("id", lambda run: cell(run.get("id"))),
    Column("status", lambda run: cell(run.get("status"))),
    Column("passed", lambda run: _passed(run.get("passed"))),
    Column("items", lambda run: f"{run.get('completed_count', 0)}/{run.get('item_count', 0)}"),
    Column("pass rate", pass_rate_text),
    Column("Δ vs baseline", lambda run: signed_percent(_baseline(run).get("pass_rate_delta"))),
    Column("p", lambda run: p_value(_baseline(run).get("p_value"))),
    Column("created", lambda run: cell(run.get(CREATED))),
)


# --- results ------------------------------------------------------------------------------


def _scores(result: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for s in result.get("scores") or [] if isinstance(s, dict)]


def item_label(result: dict[str, Any]) -> str:
    """The dataset item (``(deleted)`` once it is gone), and the trial when there are several."""
    item = result.get("dataset_item_id") or "(deleted)"
    trial = result.get("trial", 1)
    return f"{item} #{trial}" if isinstance(trial, int) and trial > 1 else str(item)


def why(result: dict[str, Any]) -> str:
    """The first line of the error, else of a failing scorer's reasoning, else any reasoning."""
    error = result.get("error")
    if isinstance(error, dict):
        return first_line(f"{error.get('code', 'ERROR')}: {error.get('message', '')}")
    scores = _scores(result)
    failing = [s for s in scores if s.get("passed") is False and s.get("reasoning")]
    reasoned = failing or [s for s in scores if s.get("reasoning")]
    return first_line(reasoned[0]["reasoning"]) if reasoned else ""


def _score_of(scorer: str) -> Callable[[dict[str, Any]], str]:
    def value(result: dict[str, Any]) -> str:
        for score in _scores(result):
            if score.get("scorer") == scorer:
                return p_value(score.get("score")) + ("" if score.get("passed") else " ✗")
        return ""

    return value


def result_columns(results: Sequence[dict[str, Any]]) -> list[Column]:
    """item, passed, one column per scorer (in the order they first appear), and why."""
    scorers: list[str] = []
    for result in results:
        scorers += [str(s.get("scorer")) for s in _scores(result) if s.get("scorer") not in scorers]
    return [
        Column("item", item_label),
        Column("passed", result_outcome),
        *(Column(scorer, _score_of(scorer)) for scorer in scorers),
        Column("reasoning / error", why),
    ]


# --- any other list -----------------------------------------------------------------------


def default_columns(rows: Sequence[dict[str, Any]]) -> list[Column]:
    """Preferred columns first, then the rest in the API's order, ``created`` last.

    A column with one value in every row (the run all results belong to) says nothing per
    row and is left out (``--output json`` has everything).
    """
    seen: list[str] = []
    for row in rows:
        seen.extend(key for key in row if key not in seen)
    if len(rows) > 1:
        seen = [c for c in seen if len({cell(row.get(c)) for row in rows}) > 1]
    ordered = [c for c in PREFERRED_COLUMNS if c in seen]
    ordered += [c for c in seen if c not in ordered and c != CREATED]
    chosen = ordered[: MAX_COLUMNS - 1] if CREATED in seen else ordered[:MAX_COLUMNS]
    columns = [Column(name, _field(name)) for name in chosen]
    if CREATED in seen:
        columns.append(Column("created", _field(CREATED)))
    return columns


def _field(name: str) -> Callable[[dict[str, Any]], str]:
    return lambda row: cell(row.get(name))


#: operationId -> the columns of its list.
LIST_COLUMNS: dict[str, Callable[[Sequence[dict[str, Any]]], Sequence[Column]]] = {
    "listEvalRuns": lambda rows: RUN_COLUMNS,
    "listEvalResults": result_columns,
}


def list_table(rows: Sequence[Any], operation_id: str | None = None) -> str:
    objects = [row if isinstance(row, dict) else {"value": row} for row in rows]
    columns = LIST_COLUMNS.get(operation_id or "", default_columns)(objects)
    body = [[column.value(row) for column in columns] for row in objects]
    return format_table([column.header for column in columns], body)


# --- one object ---------------------------------------------------------------------------


def flattened(key: str, value: Any) -> Iterator[tuple[str, Any]]:
    """``aggregate_scores.scorers.exact.mean``-style rows for every leaf of a nested object."""
    if isinstance(value, dict) and value:
        for inner, item in value.items():
            yield from flattened(f"{key}.{inner}", item)
    else:
        yield key, value


#: An object's fields a reader looks for first; a run's aggregate figures come last.
FIRST_FIELDS = ("id", "name", "eval_id", "status", "passed", "verdict_reasons")
LAST_FIELDS = ("aggregate_scores",)


def _field_order(answer: dict[str, Any]) -> list[str]:
    first = [key for key in FIRST_FIELDS if key in answer]
    last = [key for key in LAST_FIELDS if key in answer]
    return first + [key for key in answer if key not in first + last] + last


def object_rows(answer: dict[str, Any]) -> list[list[str]]:
    """(field, value) rows, empty fields left out; a run's pass rate with its interval read
    out after ``passed``, and its reasons and aggregate figures in full, one leaf a row."""
    rows: list[list[str]] = []
    for key in _field_order(answer):
        value = answer[key]
        if key == "aggregate_scores":
            rows += [[k, cell(v, None)] for k, v in flattened(key, value) if v is not None]
        elif key == "verdict_reasons" and isinstance(value, list) and value:
            rows += [[f"{key}[{i}]", cell(reason, None)] for i, reason in enumerate(value)]
        elif value is not None:
            rows.append([key, cell(value, None if key in UNCUT_FIELDS else MAX_FIELD)])
        if key == "passed" and "pass_rate" in _aggregate(answer):
            rows.append(["pass rate", pass_rate_text(answer)])
    return rows


def page_footer(answer: dict[str, Any]) -> list[str]:
    """``4-6 of 7`` when the list is counted, and the flag for the next page."""
    lines = []
    shown, first = len(answer["data"]), answer.get("offset", 0) + 1
    if shown and isinstance(answer.get("total"), int):
        lines.append(f"{first}-{first + shown - 1} of {answer['total']}")
    if answer.get("next_cursor"):
        lines.append(f"more: --cursor {answer['next_cursor']}")
    return lines


def table_text(answer: Any, operation_id: str | None = None) -> str:
    """``answer`` as a person reads it."""
    if answer is None:
        return "(done: no content)"
    if isinstance(answer, dict) and isinstance(answer.get("data"), list):
        rows = answer["data"]
        listed = list_table(rows, operation_id) if rows else "(none)"
        return "\n".join([listed, *page_footer(answer)])
    if isinstance(answer, list):
        return list_table(answer, operation_id) if answer else "(none)"
    if isinstance(answer, dict):
        return format_table(None, object_rows(answer))
    return cell(answer, None)


def render(
    answer: Any, output: str, operation_id: str | None = None, out: TextIO | None = None
) -> None:
    """Print ``answer`` as ``json`` (indented, exactly the API's) or as a ``table``."""
    out = out or sys.stdout
    if output == "json":
        if answer is not None:
            print(json.dumps(answer, indent=2), file=out)
        return
    print(table_text(answer, operation_id), file=out)
