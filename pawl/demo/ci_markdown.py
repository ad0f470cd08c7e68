"""A :class:`~pawl.demo.ci_items.CiReport` as GitHub-flavoured Markdown, for a pull-request
comment or a job summary: the verdict, the figures, the gates, the flipped items and the
failing ones.

Pure. Every piece of tenant text (the eval's name, questions, reasoning, errors) goes
through :func:`md_text`, so a label holding ``|``, backticks, ``<script>`` or ``[x](y)``
is shown as written: it cannot end a table cell, open a code span, inject HTML or a link,
or mention anyone.
"""

from __future__ import annotations

from urllib.parse import quote

from pawl.demo.ci_items import ERRORED, FAILED, IMPROVED, REGRESSED, CiReport, ItemReport
from pawl.demo.summary import (
    Comparison,
    fmt_delta,
    fmt_p,
    fmt_rate,
    fmt_rate_with_interval,
    fmt_signed_rank,
    verdict_word,
)

#: Rows a list shows before it says how many more there are (a comment has a size limit).
MAX_ROWS = 50
#: The longest piece of tenant text a cell shows.
CELL_CHARS = 160
_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}
#: What can start inline syntax mid-line (emphasis, code, links and images, tables,
#: strikethrough, GitHub's math and mentions), escaped with a backslash (CommonMark allows
#: one before any ASCII punctuation). Text never starts a line here, so ``#``, ``-``, ``+``
#: and ``1.`` need nothing.
_ESCAPED = set("\\`*_[]|~!$@{}")
#: After ``@`` so that ``@someone`` in a label does not notify someone, and inside ``://``
#: and ``www.`` so that a URL in one is not made a link (U+2060 WORD JOINER: invisible).
_NO_MENTION = "\u2060"
_ICON = {True: "✅", False: "❌", None: "⚠️"}
_FLIP_WORDS = {REGRESSED: "regressed (pass → fail)", IMPROVED: "improved (fail → pass)"}


def _no_autolink(text: str) -> str:
    """GitHub turns bare ``http://…`` and ``www.…`` into links: a word joiner inside each
    keeps a tenant's URL plain text (it still reads the same)."""
    return text.replace("://", ":/" + _NO_MENTION + "/").replace("www.", "www" + _NO_MENTION + ".")


def md_text(text: str, limit: int = CELL_CHARS) -> str:
    """``text`` as inline Markdown that renders as exactly that text (give or take a word
    joiner that stops a mention or an autolink), on one line (safe in a table cell), cut to
    ``limit`` characters."""
    flat = " ".join(text.split())
    if len(flat) > limit:
        flat = flat[: limit - 1].rstrip() + "…"
    out = []
    for char in flat:
        if char in _ENTITIES:
            out.append(_ENTITIES[char])
        elif char in _ESCAPED:
            out.append("\\" + char + (_NO_MENTION if char == "@" else ""))
        elif char.isprintable():  # no control or format characters (terminal escapes)
            out.append(char)
    return _no_autolink("".join(out))


def md_link(text: str, url: str) -> str:
    """A link whose URL cannot close the Markdown around it (spaces, brackets, quotes)."""
    return f"[{md_text(text)}]({quote(url, safe=':/?#=&%~.-_')})"


def _code(value: str) -> str:
    """An id the server made (letters, digits, ``_``) as code; anything else as text."""
    return f"`{value}`" if value.replace("_", "").isalnum() else md_text(value)


def _heading(report: CiReport) -> list[str]:
    run = report.comparison.candidate
    word = verdict_word(run.passed).lower()
    lines = [f"## {_ICON[run.passed]} pawl: {md_text(report.eval_name)} {word}", ""]
    against = ""
    if report.comparison.baseline_run_id:
        against = f" against baseline {_code(report.comparison.baseline_run_id)}"
        if report.compare_url:
            against += f" ({md_link('compare', report.compare_url)})"
    lines.append(
        f"Run {md_link(run.run_id, report.console_url)} of agent v{run.agent_version}"
        f"{against}: {run.status}."
    )
    if report.baseline_note:
        lines += ["", f"> {md_text(report.baseline_note, limit=400)}"]
    return lines


def _figures(comparison: Comparison) -> list[str]:
    runs = [("candidate", comparison.candidate)]
    if comparison.baseline is not None:
        runs.insert(0, ("baseline", comparison.baseline))
    heads = " | ".join(f"{role} v{run.agent_version}" for role, run in runs)
    rows = [f"| | {heads} |", "|---|" + "---:|" * len(runs)]
    level = comparison.candidate.overall.level or 0.95
    cells = {
        f"pass rate [{level:.0%} interval]": [fmt_rate_with_interval(r.overall) for _, r in runs],
        "items scored": [str(r.overall.scored) for _, r in runs],
        "items errored": [str(r.errored) for _, r in runs],
        "verdict": [verdict_word(r.passed) for _, r in runs],
    }
    rows += [f"| {name} | " + " | ".join(values) + " |" for name, values in cells.items()]
    if comparison.candidate.trials:
        rows += ["", md_text(comparison.candidate.trials, limit=400)]
    change = comparison.change
    if change is not None:
        rows += [
            "",
            f"**Δ pass rate {fmt_delta(change.delta)}** over the {change.compared} items scored "
            f"in both runs; {change.improved} improved, {change.regressed} regressed; "
            f"exact McNemar p = {fmt_p(change.p_value)}.",
        ]
    rows += _scorer_tests(comparison)
    if comparison.pass_threshold is not None:
        rows += ["", f"Threshold: pass rate ≥ {fmt_rate(comparison.pass_threshold)}."]
    return rows


def _scorer_tests(comparison: Comparison) -> list[str]:
    """One line per continuous scorer compared with the baseline: its Δ mean and test."""
    lines = []
    for row in comparison.scorers:
        if row.test is None:
            continue
        lines.append(
            f"- {_code(row.key)}: Δ mean {fmt_delta(row.mean_delta)}, "
            f"{fmt_signed_rank(row.test)} over {row.test.n} changed items "
            f"({row.test.method.replace('_', ' ')})."
        )
    return (
        ["", "Continuous scorers (Δ mean [95% interval], signed-rank test):", *lines]
        if lines
        else []
    )


def _gates(report: CiReport) -> list[str]:
    run = report.comparison.candidate
    lines = ["### Gates", ""]
    if run.failure_reason:
        lines.append(f"- run {run.status}: {md_text(run.failure_reason, limit=400)}")
    for reason in run.reasons:
        icon = "✅" if reason.startswith(("passed", "no ")) else "❌"
        lines.append(f"- {icon} {md_text(reason, limit=400)}")
    if not run.reasons and run.passed is None and not run.failure_reason:
        lines.append("- no gate applies (the eval sets no pass_threshold)")
    return lines


def _item_table(title: str, items: list[ItemReport], with_flip: bool) -> list[str]:
    if not items:
        return []
    head = "| item | question | " + ("change | " if with_flip else "") + "outcome | why |"
    lines = [f"### {title} ({len(items)})", "", head, "|---" * head.count(" | ") + "|---|"]
    for item in items[:MAX_ROWS]:
        flip = f"{_FLIP_WORDS[item.flip]} | " if with_flip and item.flip else ""
        lines.append(
            f"| {_code(item.dataset_item_id)} | {md_text(item.question or '')} | {flip}"
            f"{item.outcome} | {md_text(item.reason) or '—'} |"
        )
    if len(items) > MAX_ROWS:
        lines += ["", f"…and {len(items) - MAX_ROWS} more: see the run's page."]
    return lines


def render_markdown(report: CiReport) -> str:
    """The report whole, ending in a newline (ready to append to a job summary)."""
    not_flipped = [item for item in report.items if item.flip is None]
    failing = [item for item in not_flipped if item.outcome in (FAILED, ERRORED)]
    sections = [
        _heading(report),
        _figures(report.comparison),
        _gates(report),
        _item_table("Flipped items", report.flipped, with_flip=True),
        _item_table("Other failing items" if report.flipped else "Failing items", failing, False),
    ]
    return "\n\n".join("\n".join(lines) for lines in sections if lines) + "\n"
