"""Evals as code: :func:`evaluate` names a dataset, an agent and scorers, runs them on a pawl
server and answers a :class:`Verdict`.

What it names is created or updated idempotently (:mod:`pawl.evaluation_apply`: a formation
for the agent, dataset and eval, the items synced by content), so calling it twice with the
same arguments creates nothing new and the second run pairs item for item with the first.
The verdict is the server's (the eval's gates: ``threshold``, ``max_regression`` against the
baseline), worded as ``pawl run`` words it (:mod:`pawl.demo.summary`), with the items whose
verdict flipped against the baseline (:mod:`pawl.demo.flips`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pawl.demo.flips import REGRESSED, FlippedItem
from pawl.evaluation_apply import Applied, DesiredItem, EvaluationError
from pawl.transport import DEFAULT_SERVER, NO_KEY_MESSAGE, PawlClient, Run, RunWaitTimeout

__all__ = ["Applied", "EvaluationError", "Figures", "FlippedItem", "Verdict", "evaluate"]

LATEST = "latest"
#: A formation's name (chalicelib.api.formations), which the eval's name is too.
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,199}$")
DEFAULT_TIMEOUT_S = 3600.0
#: Characters of an output quoted per flipped item in :meth:`Verdict.explain`.
QUOTE_CHARS = 160

#: A dataset: items (``{"input", "expected_output"?, "metadata"?}``), a .jsonl/.csv path,
#: or the id of a dataset that already exists.
DatasetArg = Sequence[Mapping[str, Any]] | str | os.PathLike[str]


@dataclass(frozen=True)
class Figures:
    """The run's figures: its pass rate and interval, and its change against the baseline."""

    pass_rate: float | None
    interval: tuple[float, float] | None
    interval_level: float | None
    scored: int
    errored: int
    items: int
    #: Against the baseline (None without one): pass-rate change and McNemar's exact p.
    delta: float | None = None
    p_value: float | None = None
    compared: int = 0
    improved: int = 0
    regressed: int = 0


@dataclass(frozen=True, repr=False)
class Verdict:
    """Whether the run passed the eval's gates, why, and which items flipped."""

    passed: bool
    #: One sentence per gate checked (and why there is no baseline or no verdict, if so).
    reasons: tuple[str, ...]
    figures: Figures
    #: Items whose verdict differs from the baseline's, regressions first (at most 50).
    flipped: tuple[FlippedItem, ...]
    run_id: str
    eval_id: str
    #: The eval's name (what :func:`evaluate` was called with).
    name: str
    status: str
    console_url: str
    baseline_run_id: str | None = None
    #: Flipped items beyond those in :attr:`flipped`.
    more_flipped: int = 0
    #: What this call created or changed on the server before the run.
    applied: Applied = field(default_factory=lambda: Applied("unchanged", (), 0, 0))

    def explain(self) -> str:
        """The verdict for a person: the reasons, the figures and the flipped items."""
        return explain(self)

    def __repr__(self) -> str:
        # Short: pytest prints it under a failed `assert verdict.passed, verdict.explain()`.
        word = "passed" if self.passed else "failed"
        return f"<Verdict {word}: run {self.run_id} of eval {self.name}>"

    def assert_passed(self) -> None:
        """Raise AssertionError with :meth:`explain` as its message unless it passed."""
        if not self.passed:
            raise AssertionError(self.explain())


def _fmt(value: float | None, pattern: str = "{:.2f}") -> str:
    return "—" if value is None else pattern.format(value)


def _quote(text: str | None) -> str:
    if text is None:
        return "(no output)"
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= QUOTE_CHARS else flat[: QUOTE_CHARS - 1] + "…")


def _figure_lines(verdict: Verdict) -> list[str]:
    from pawl.demo.summary import fmt_p

    f = verdict.figures
    interval = f" [{f.interval[0]:.2f}, {f.interval[1]:.2f}]" if f.interval else ""
    lines = [
        f"  pass rate {_fmt(f.pass_rate)}{interval} over {f.scored} of {f.items} items scored"
        f" ({f.errored} errored)"
    ]
    if verdict.baseline_run_id is not None:
        lines.append(
            f"  vs baseline {verdict.baseline_run_id}: Δ {_fmt(f.delta, '{:+.2f}')} over "
            f"{f.compared} items, {f.improved} improved, {f.regressed} regressed, "
            f"p = {fmt_p(f.p_value)}"
        )
    return lines


def _flipped_lines(verdict: Verdict) -> list[str]:
    if not verdict.flipped:
        return []
    total = len(verdict.flipped) + verdict.more_flipped
    lines = [f"flipped items ({total}, regressions first):"]
    for item in verdict.flipped:
        arrow = "pass → fail" if item.direction == REGRESSED else "fail → pass"
        question = f" {_quote(item.question)}" if item.question else ""
        lines.append(f"  {item.direction} ({arrow}) {item.dataset_item_id}:{question}")
        lines.append(f"      baseline: {_quote(item.baseline_output)}")
        lines.append(f"      now:      {_quote(item.candidate_output)}")
    if verdict.more_flipped:
        lines.append(f"  … and {verdict.more_flipped} more (see the console)")
    return lines


def explain(verdict: Verdict) -> str:
    """:meth:`Verdict.explain`, a pure function of the verdict."""
    word = "PASSED" if verdict.passed else "FAILED"
    run = f"run {verdict.run_id}, {verdict.status}"
    lines = [f"pawl eval {verdict.name} ({verdict.eval_id}): {word} ({run})"]
    lines += _figure_lines(verdict)
    lines.append("reasons:")
    lines += [f"  • {reason}" for reason in verdict.reasons]
    lines += _flipped_lines(verdict)
    lines.append(f"console: {verdict.console_url}")
    return "\n".join(lines)


# --- building a verdict from a run (pure) --------------------------------------------------


def figures_of(run: Run) -> Figures:
    from pawl.demo.summary import ChangeFigure, RateFigure

    aggregate = run.aggregate_scores or {}
    rate = RateFigure.of(aggregate)
    interval = (rate.low, rate.high) if rate.low is not None and rate.high is not None else None
    change = ChangeFigure.of(aggregate.get("baseline"))
    moved: dict[str, Any] = {}
    if change is not None:
        moved = {
            "delta": change.delta,
            "p_value": change.p_value,
            "compared": change.compared,
            "improved": change.improved,
            "regressed": change.regressed,
        }
    return Figures(
        pass_rate=rate.rate,
        interval=interval,
        interval_level=rate.level,
        scored=rate.scored,
        errored=run.errored_count,
        items=run.item_count,
        **moved,
    )


def reasons_of(run: Run, notes: Sequence[str] = ()) -> tuple[str, ...]:
    """The gates in words (``pawl run``'s sentences), then what else decided the verdict."""
    from pawl.demo.summary import reason_sentence

    reasons = [reason_sentence(reason) for reason in run.verdict_reasons or []]
    if run.status != "completed":
        reasons.append(f"the run ended {run.status}: {run.failure_reason or 'no reason given'}")
    return (*reasons, *notes)


# --- evaluate -----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Settings:
    server: str
    api_key: str
    project_id: str | None


def _settings(server: str | None, api_key: str | None, project_id: str | None) -> _Settings:
    key = api_key or os.environ.get("PAWL_API_KEY")
    if not key:
        raise EvaluationError(NO_KEY_MESSAGE.replace("--api-key", "api_key="))
    return _Settings(
        server=server or os.environ.get("PAWL_SERVER") or DEFAULT_SERVER,
        api_key=key,
        project_id=project_id or os.environ.get("PAWL_PROJECT_ID"),
    )


def _eval_properties(
    scorers: Sequence[Mapping[str, Any]],
    threshold: float | None,
    max_regression: float | None,
    group_by: str | None,
    trials: int,
) -> dict[str, Any]:
    if threshold is None and max_regression is None:
        raise EvaluationError(
            "evaluate needs a gate: threshold= (a pass rate to reach) and/or max_regression= "
            "(the largest significant drop against the baseline)"
        )
    if not scorers or not all(isinstance(s, Mapping) for s in scorers):
        raise EvaluationError("scorers: give a non-empty list of scorer objects ({'type': ...})")
    return {
        "scorers": [dict(s) for s in scorers],
        "pass_threshold": threshold,
        "max_regression": max_regression,
        "group_by": group_by,
        "trials": trials,
    }


def _baseline(client: PawlClient, eval_id: str, baseline: str | None) -> tuple[str | None, str]:
    """The baseline run's id and, when there is none, a note saying why."""
    if baseline is None:
        return None, "no baseline asked for: only the threshold gates this run"
    if baseline != LATEST:
        return baseline, ""
    latest = client.latest_completed_run(eval_id)
    if latest is None:
        return None, "no baseline yet (no completed run of this eval): only the threshold gates it"
    return latest.id, ""


def _run(
    client: PawlClient,
    eval_id: str,
    baseline: str | None,
    metadata: Mapping[str, str] | None,
    timeout_s: float,
) -> tuple[Run, list[str]]:
    baseline_id, note = _baseline(client, eval_id, baseline)
    queued = client.start_run(eval_id, baseline_run_id=baseline_id, metadata=dict(metadata or {}))
    notes = [note] if note else []
    try:
        return client.wait_for_run(eval_id, queued.id, timeout_s=timeout_s), notes
    except RunWaitTimeout as exc:
        notes.append(f"{exc}: the run keeps going on the server, with no verdict yet")
        return exc.run, notes


def _verdict(
    client: PawlClient, name: str, settings: _Settings, run: Run, notes: list[str], applied: Applied
) -> Verdict:
    from chalicelib.domain import console_links
    from pawl.demo.flips import Flips, fetch_flips

    flips = Flips([], 0)
    if run.status == "completed" and run.baseline_run_id:
        flips = fetch_flips(client, run, client.get_run(run.eval_id, run.baseline_run_id))
    if run.status == "completed" and run.passed is None:
        notes.append("no gate applied to this run (nothing to compare with, no threshold)")
    return Verdict(
        passed=run.status == "completed" and run.passed is not False,
        reasons=reasons_of(run, notes),
        figures=figures_of(run),
        flipped=tuple(flips.shown),
        more_flipped=flips.more,
        run_id=run.id,
        eval_id=run.eval_id,
        name=name,
        status=run.status,
        console_url=console_links.run_url(settings.server, run.eval_id, run.id),
        baseline_run_id=run.baseline_run_id,
        applied=applied,
    )


def evaluate(
    name: str,
    *,
    dataset: DatasetArg,
    agent: str,
    scorers: Sequence[Mapping[str, Any]],
    threshold: float | None = None,
    baseline: str | None = LATEST,
    max_regression: float | None = None,
    group_by: str | None = None,
    trials: int = 1,
    agent_headers: Mapping[str, str] | None = None,
    metadata: Mapping[str, str] | None = None,
    server: str | None = None,
    api_key: str | None = None,
    project_id: str | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> Verdict:
    """Make the eval ``name`` match these arguments on the server, run it, wait, judge it.

    ``dataset``: a list of items, a ``.jsonl``/``.csv`` path (as ``pawl datasets import``
    reads it) or an existing dataset id. ``agent``: an http agent's URL, or an existing agent
    id. ``scorers``: the eval's ``scorers`` list. ``baseline``: ``"latest"`` (the newest
    completed run of the eval, when there is one), a run id, or None. ``threshold`` and
    ``max_regression`` are the eval's gates (at least one is needed). ``server``/``api_key``/
    ``project_id`` default to ``$PAWL_SERVER``/``$PAWL_API_KEY``/``$PAWL_PROJECT_ID``.

    Raises :class:`EvaluationError` for an argument it cannot use (before anything is
    written), ``pawl.transport.ApiError`` when the server refuses a request and
    ``ServerUnreachable`` when there is no server.
    """
    from pawl.evaluation_apply import agent_source, dataset_source, ensure, template_for

    if not isinstance(name, str) or not NAME.match(name):
        raise EvaluationError(
            f"name: {name!r} must start with a letter or digit and hold only letters, digits, "
            "'_', '.' and '-' (at most 200): it names the eval, its dataset, agent and formation"
        )
    settings = _settings(server, api_key, project_id)
    properties = _eval_properties(scorers, threshold, max_regression, group_by, trials)
    source = dataset_source(dataset)
    items: list[DesiredItem] | None = None if isinstance(source, str) else source
    dataset_id = source if isinstance(source, str) else None
    template = template_for(name, agent_source(agent), dataset_id, properties, agent_headers)
    with PawlClient(settings.server, settings.api_key) as client:
        target = ensure(client, name, template, items, settings.project_id)
        run, notes = _run(client, target.eval_id, baseline, metadata, timeout_s)
        return _verdict(client, name, settings, run, notes, target.applied)
