"""``pawl run``: start a queued run on a running pawl, follow it, exit with its verdict,
name the items that did not pass, and write the reports CI asked for (``--junit``,
``--markdown``, the GitHub job summary and step outputs: :mod:`pawl.demo.ci_report`).

Exit codes, for CI: 0 when the run completed and passed (or no gate applies: ``passed``
is null), 1 when it completed and failed its gates, 2 when there is no verdict to act on
(the request was refused, the server could not be reached, the run failed or was
cancelled, or the wait ran out).

Before the start request the command loads only the standard library's client
(``pawl.cli.sender``) and the run's status names; httpx, pydantic, rich and the report load
while the run executes (docs/cli.md).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from chalicelib.domain import console_links
from chalicelib.domain.run_status import COMPLETED
from pawl.cli.names import NameNotResolved, resolve
from pawl.demo.ci_outputs import ReportTargets, step_summary_asked
from pawl.transport import (
    NO_KEY_MESSAGE,
    ApiError,
    Json,
    PawlClient,
    RunWaitTimeout,
    ServerUnreachable,
    refusal_hint,
    start_run_body,
)

if TYPE_CHECKING:
    # What follows the start request (the consoles, the progress bar, the report) loads
    # after it: the run is executing by then, so those imports cost the command nothing.
    from rich.console import Console

    from pawl.demo.ci_items import CiReport
    from pawl.runs import Run

EXIT_PASSED = 0
EXIT_FAILED = 1
EXIT_NO_VERDICT = 2
LATEST = "latest"
#: The newest completed run when there is one, else no baseline (the threshold alone).
LATEST_OR_NONE = "latest-or-none"
DEFAULT_TIMEOUT_S = 3600.0


class NoBaseline(Exception):
    """``--baseline latest`` found no completed run of the eval."""


@dataclass(frozen=True)
class RunRequest:
    server: str
    api_key: str | None
    eval_id: str
    #: A run id, ``"latest"`` (the newest completed run of the eval; none is an error),
    #: ``"latest-or-none"`` (the same, or no baseline when there is none) or None.
    baseline: str | None = None
    agent_version: int | None = None
    #: Items in flight at once; None: the eval's.
    max_concurrency: int | None = None
    #: Stop once a sequential test decides against the baseline (ignored without one).
    early_stop: bool = False
    metadata: dict[str, str] = field(default_factory=dict)
    timeout_s: float = DEFAULT_TIMEOUT_S
    reports: ReportTargets = field(default_factory=ReportTargets)


def parse_metadata_pair(pair: str) -> tuple[str, str]:
    """``key=value`` (the value may contain ``=``); ValueError without a key."""
    key, sep, value = pair.partition("=")
    if not sep or not key.strip():
        raise ValueError(f"metadata must be key=value, got {pair!r}")
    return key.strip(), value


def exit_code_for(run: Run) -> int:
    """0 passed or no gate, 1 failed its gates, 2 the run did not complete."""
    if run.status != COMPLETED:
        return EXIT_NO_VERDICT
    return EXIT_FAILED if run.passed is False else EXIT_PASSED


def _baseline_id(client: PawlClient, request: RunRequest) -> tuple[str | None, str | None]:
    """The baseline run's id, and what to say when ``latest-or-none`` found none."""
    if request.baseline not in (LATEST, LATEST_OR_NONE):
        return request.baseline, None
    latest = client.latest_completed_run(request.eval_id)
    if latest is not None:
        return latest.id, None
    if request.baseline == LATEST:
        raise NoBaseline(
            f"--baseline latest: eval {request.eval_id} has no completed run to compare with"
        )
    return None, (
        f"--baseline latest-or-none: eval {request.eval_id} has no completed run to compare "
        "with yet, so this run is gated on its threshold alone (no regression gate)"
    )


def _start(request: RunRequest) -> tuple[RunRequest, Json, str | None, str | None]:
    """Resolve the eval, find the baseline and start the run: the request naming the eval
    by id, the queued run as the API answered it, the baseline's id and the note on it.

    Sent with the standard library's client (``pawl.cli.sender``), as an API command is:
    httpx and the ``Run`` model load after the start, while the run executes. Only
    ``--baseline latest``/``latest-or-none`` loads them first (it reads the eval's runs).
    """
    from pawl.cli.sender import StdlibClient

    with StdlibClient(request.server, request.api_key) as first:
        request = replace(request, eval_id=resolve(first, "eval_id", request.eval_id))
        if request.baseline in (LATEST, LATEST_OR_NONE):
            with PawlClient(request.server, request.api_key) as listing:
                baseline_id, note = _baseline_id(listing, request)
        else:
            baseline_id, note = request.baseline, None
        body = start_run_body(
            agent_version=request.agent_version,
            baseline_run_id=baseline_id,
            metadata=dict(request.metadata) or None,
            max_concurrency=request.max_concurrency,
            # Early stop compares with a baseline: "latest-or-none" that found none runs whole.
            early_stop=request.early_stop and baseline_id is not None,
        )
        queued = first.send("POST", f"/api/v1/evals/{request.eval_id}/runs", body=body)
    return request, queued, baseline_id, note


def _follow(
    client: PawlClient,
    request: RunRequest,
    queued: Run,
    baseline: tuple[str | None, str | None],
    consoles: Consoles,
) -> Run:
    """Say what was started, then follow it to its end (a progress bar)."""
    # The report's modules load now, while the run executes, not after it ends.
    from pawl.demo import ci_report, comparison  # noqa: F401
    from pawl.demo.progress import follow_run

    baseline_id, note = baseline
    console = consoles.out
    against = f", baseline {baseline_id}" if baseline_id else ""
    console.print(
        f"run {queued.id} {queued.status}: eval {queued.eval_id}, "
        f"agent v{queued.agent_version}{against}",
        highlight=False,
        soft_wrap=True,
    )
    if note:
        console.print(note, highlight=False, soft_wrap=True)
    console.print(f"console {run_console_url(request, queued)}", highlight=False, soft_wrap=True)
    label = f"run {queued.id}"
    return follow_run(client, queued, console=console, label=label, timeout_s=request.timeout_s)


def run_console_url(request: RunRequest, run: Run) -> str:
    """The run's page in the console of the server ``pawl run`` used."""
    return console_links.run_url(request.server, run.eval_id, run.id)


def still_running(exc: RunWaitTimeout) -> str:
    """``--timeout`` ran out: the run is not stopped by that, so say how to follow or cancel it."""
    ids = f"--eval-id {exc.run.eval_id} --eval-run-id {exc.run.id}"
    return (
        f"{exc}. The run keeps going on the server: follow it with `pawl get-eval-run {ids}`, "
        f"or stop it with `pawl cancel-eval-run {ids}`."
    )


class ReportNotWritten(Exception):
    """The run's report could not be read or written (the verdict itself stands)."""


def _gather(client: PawlClient, request: RunRequest, run: Run, note: str | None) -> CiReport:
    from pawl.demo.ci_report import gather_report, items_needed

    with_items = items_needed(run, request.reports, step_summary_asked())
    try:
        return gather_report(client, request.server, run, note, with_items=with_items)
    except ApiError as exc:  # e.g. a key whose policy runs the eval but cannot list results
        raise ReportNotWritten(
            f"the run's results could not be read for its report: {exc.status} {exc.code}: "
            f"{exc.message}"
        ) from exc


def _report(
    client: PawlClient, request: RunRequest, run: Run, note: str | None, console: Console
) -> None:
    """The comparison, the items that did not pass by name, the report files and the
    step outputs of a finished run."""
    from pawl.demo.ci_report import print_items, write_reports
    from pawl.demo.comparison import print_comparison

    try:
        report = _gather(client, request, run, note)
    except ReportNotWritten:
        from pawl.demo.summary import build_comparison

        print_comparison(console, build_comparison(run))
        raise
    print_comparison(console, report.comparison)
    print_items(console, report)
    console.print()
    try:
        write_reports(console, report, run, request.reports)
    except OSError as exc:
        raise ReportNotWritten(f"cannot write a report: {exc}") from exc


def _finish(request: RunRequest, run: Run, problem: str | None, errors: Console) -> int:
    """The exit code: the verdict's, unless a report CI asked for is missing (2: CI would
    act on a verdict without the files it expects)."""
    code = exit_code_for(run)
    if problem:
        errors.print(f"pawl run: {problem}", highlight=False, soft_wrap=True)
        if request.reports.asked:
            code = EXIT_NO_VERDICT
    if run.status != COMPLETED:
        reason = run.failure_reason or "no reason given"
        errors.print(f"pawl run: run {run.id} ended {run.status}: {reason}", highlight=False)
    return code


@dataclass
class Consoles:
    """The command's stdout and stderr consoles, each made on its first use (rich loads
    then: after the start request)."""

    make: Callable[[bool], Console]
    _made: dict[bool, Console] = field(default_factory=dict)

    def _get(self, stderr: bool) -> Console:
        if stderr not in self._made:
            self._made[stderr] = self.make(stderr)
        return self._made[stderr]

    @property
    def out(self) -> Console:
        return self._get(False)

    @property
    def err(self) -> Console:
        return self._get(True)


def run_for_ci(request: RunRequest, consoles: Consoles) -> int:
    """Start, follow and report one run; returns the process exit code."""
    if not request.api_key:
        consoles.err.print(f"pawl run: {NO_KEY_MESSAGE}", highlight=False)
        return EXIT_NO_VERDICT
    problem = None
    try:
        request, started, baseline_id, note = _start(request)
        from pawl.runs import Run  # pydantic loads now, while the run executes

        with PawlClient(request.server, request.api_key) as client:
            queued = Run.model_validate(started)
            finished = _follow(client, request, queued, (baseline_id, note), consoles)
            try:
                _report(client, request, finished, note, consoles.out)
            except ReportNotWritten as exc:
                problem = str(exc)
    except ApiError as exc:
        refused = f"refused ({exc.status} {exc.code}): {exc.message}{refusal_hint(exc.status)}"
        consoles.err.print(f"pawl run: {refused}", highlight=False, soft_wrap=True)
        return EXIT_NO_VERDICT
    except RunWaitTimeout as exc:
        consoles.err.print(f"pawl run: {still_running(exc)}", highlight=False, soft_wrap=True)
        return EXIT_NO_VERDICT
    except (ServerUnreachable, NoBaseline, NameNotResolved) as exc:
        consoles.err.print(f"pawl run: {exc}", highlight=False, soft_wrap=True)
        return EXIT_NO_VERDICT
    console = consoles.out
    console.print(f"console {run_console_url(request, finished)}", highlight=False, soft_wrap=True)
    return _finish(request, finished, problem, consoles.err)
