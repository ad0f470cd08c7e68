"""A :class:`~pawl.demo.summary.Comparison` as rich tables for a terminal.

Every cell is a ``Text`` (never markup): group labels and scorer keys come from users.
"""

from __future__ import annotations

from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from pawl.demo.summary import (
    Comparison,
    GroupRow,
    RunFigures,
    fmt_delta,
    fmt_interval,
    fmt_p,
    fmt_rate,
    fmt_rate_with_interval,
    fmt_signed_rank,
    verdict_word,
)

VERDICT_STYLE = {True: "bold green", False: "bold red", None: "bold yellow"}
#: Wide enough for the group table when the output is not a terminal (CI logs, tests).
PLAIN_WIDTH = 120


def make_console(*, stderr: bool = False) -> Console:
    """A console on stdout (or stderr); a fixed width when that is not a terminal (CI logs,
    tests), so tables do not wrap to 80 columns."""
    console = Console(stderr=stderr)
    return console if console.is_terminal else Console(stderr=stderr, width=PLAIN_WIDTH)


def _cell(value: object) -> Text:
    return Text(str(value))


def run_heading(role: str, run: RunFigures) -> str:
    return f"{role} v{run.agent_version} ({run.run_id})"


def _runs_table(comparison: Comparison) -> Table:
    runs = [("candidate", comparison.candidate)]
    if comparison.baseline is not None:
        runs.insert(0, ("baseline", comparison.baseline))
    table = Table(title="Runs", title_justify="left")
    table.add_column("")
    for role, run in runs:
        table.add_column(_cell(run_heading(role, run)), justify="right")
    level = comparison.candidate.overall.level or 0.95
    rows = [
        ("status", [run.status for _, run in runs]),
        ("pass rate", [fmt_rate(run.overall.rate) for _, run in runs]),
        (f"{level:.0%} interval", [fmt_interval(run.overall) for _, run in runs]),
        ("items scored", [str(run.overall.scored) for _, run in runs]),
        ("items errored", [str(run.errored) for _, run in runs]),
    ]
    for label, values in rows:
        table.add_row(_cell(label), *(_cell(v) for v in values))
    verdicts = [Text(verdict_word(run.passed), style=VERDICT_STYLE[run.passed]) for _, run in runs]
    table.add_row(_cell("verdict"), *verdicts)
    return table


def change_lines(comparison: Comparison) -> list[str]:
    """The overall movement against the baseline, in words (empty without a baseline)."""
    change = comparison.change
    if change is None:
        return []
    lines = [
        f"Against baseline {comparison.baseline_run_id}: pass rate {fmt_delta(change.delta)} "
        f"over the {change.compared} items scored in both runs",
        f"  flips: {change.improved} improved (fail → pass), {change.regressed} regressed "
        f"(pass → fail); exact McNemar p = {fmt_p(change.p_value)}",
    ]
    if change.added or change.removed:
        lines.append(
            f"  {change.added} items only scored in this run, {change.removed} only in the baseline"
        )
    return lines


def _group_cells(row: GroupRow, with_baseline: bool) -> list[Text]:
    change = row.change
    cells = [_cell(row.label)]
    if with_baseline:
        cells.append(_cell(fmt_rate_with_interval(row.baseline)))
    cells.append(_cell(fmt_rate_with_interval(row.candidate)))
    if change is None:
        return cells + [_cell("—")] * 5
    figures = [
        fmt_delta(change.delta),
        change.improved,
        change.regressed,
        fmt_p(change.p_value),
        fmt_p(change.p_value_adjusted),
    ]
    return cells + [_cell(figure) for figure in figures]


def _groups_table(comparison: Comparison) -> Table:
    with_baseline = comparison.baseline is not None
    table = Table(
        title=f"By {comparison.group_by} (pass rate [95% interval])", title_justify="left"
    )
    table.add_column(_cell(comparison.group_by or "group"))
    if with_baseline and comparison.baseline is not None:
        table.add_column(f"baseline v{comparison.baseline.agent_version}", justify="right")
    table.add_column(f"candidate v{comparison.candidate.agent_version}", justify="right")
    for heading in ("Δ", "improved", "regressed", "p", "p (Holm)"):
        table.add_column(heading, justify="right")
    for row in comparison.groups:
        table.add_row(*_group_cells(row, with_baseline))
    return table


def _scorers_table(comparison: Comparison) -> Table:
    with_baseline = comparison.baseline is not None
    table = Table(title="Scorers (mean score)", title_justify="left")
    table.add_column("scorer")
    if with_baseline:
        table.add_column("baseline", justify="right")
    table.add_column("candidate", justify="right")
    table.add_column("Δ", justify="right")
    # Only when a continuous scorer was compared: the Δ's 95% interval and its test.
    tested = any(row.test is not None for row in comparison.scorers)
    if tested:
        table.add_column("Δ [95%] test", justify="right")
    for row in comparison.scorers:
        cells = [_cell(row.key)]
        if with_baseline:
            cells.append(_cell(fmt_rate(row.baseline_mean)))
        cells += [_cell(fmt_rate(row.candidate_mean)), _cell(fmt_delta(row.mean_delta))]
        if tested:
            cells.append(_cell(fmt_signed_rank(row.test) if row.test else ""))
        table.add_row(*cells)
    return table


def verdict_block(run: RunFigures) -> Group:
    """``Verdict: PASSED`` and one line per gate, in words."""
    head = Text("Verdict: ")
    head.append(verdict_word(run.passed), style=VERDICT_STYLE[run.passed])
    lines: list[RenderableType] = [head]
    if run.failure_reason:
        lines.append(Text(f"  run {run.status}: {run.failure_reason}"))
    lines += [Text(f"  • {reason}") for reason in run.reasons]
    if not run.reasons and run.passed is None:
        lines.append(Text("  • no gate applies (the eval sets no pass_threshold)"))
    return Group(*lines)


def comparison_renderables(comparison: Comparison) -> list[RenderableType]:
    parts: list[RenderableType] = [_runs_table(comparison)]
    if comparison.candidate.trials:
        parts.append(Text(comparison.candidate.trials))
    parts += [Text(line) for line in change_lines(comparison)]
    if comparison.groups:
        parts.append(_groups_table(comparison))
    if comparison.scorers:
        parts.append(_scorers_table(comparison))
    parts.append(verdict_block(comparison.candidate))
    return parts


def print_comparison(console: Console, comparison: Comparison) -> None:
    for part in comparison_renderables(comparison):
        if isinstance(part, Table | Group):
            console.print()  # a blank line before each table and the verdict
        console.print(part)
