"""``pawl run``: start a queued run on a running pawl, follow it, exit with its verdict.

Exit codes, for CI: 0 when the run completed and passed (or no gate applies: ``passed``
is null), 1 when it completed and failed its gates, 2 when there is no verdict to act on
(the request was refused, the server could not be reached, the run failed or was
cancelled, or the wait ran out).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from rich.console import Console

from chalicelib.domain import console_links
from chalicelib.domain.runs import COMPLETED
from pawl.cli.names import NameNotResolved, resolve
from pawl.demo.comparison import print_comparison
from pawl.demo.progress import follow_run
from pawl.demo.summary import build_comparison
from pawl.transport import (
    NO_KEY_MESSAGE,
    ApiError,
    PawlClient,
    Run,
    RunWaitTimeout,
    ServerUnreachable,
    refusal_hint,
)

EXIT_PASSED = 0
EXIT_FAILED = 1
EXIT_NO_VERDICT = 2
LATEST = "latest"
DEFAULT_TIMEOUT_S = 3600.0


class NoBaseline(Exception):
    """``--baseline latest`` found no completed run of the eval."""


@dataclass(frozen=True)
class RunRequest:
    server: str
    api_key: str | None
    eval_id: str
    #: A run id, ``"latest"`` (the newest completed run of the eval) or None.
    baseline: str | None = None
    agent_version: int | None = None
    #: Items in flight at once; None: the eval's.
    max_concurrency: int | None = None
    metadata: dict[str, str] = field(default_factory=dict)
    timeout_s: float = DEFAULT_TIMEOUT_S


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


def _baseline_id(client: PawlClient, request: RunRequest) -> str | None:
    if request.baseline != LATEST:
        return request.baseline
    latest = client.latest_completed_run(request.eval_id)
    if latest is None:
        raise NoBaseline(
            f"--baseline latest: eval {request.eval_id} has no completed run to compare with"
        )
    return latest.id


def _start_and_follow(client: PawlClient, request: RunRequest, console: Console) -> Run:
    baseline_id = _baseline_id(client, request)
    queued = client.start_run(
        request.eval_id,
        agent_version=request.agent_version,
        baseline_run_id=baseline_id,
        metadata=dict(request.metadata) or None,
        max_concurrency=request.max_concurrency,
    )
    against = f", baseline {baseline_id}" if baseline_id else ""
    console.print(
        f"run {queued.id} {queued.status}: eval {queued.eval_id}, "
        f"agent v{queued.agent_version}{against}",
        highlight=False,
        soft_wrap=True,
    )
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


def run_for_ci(request: RunRequest, console: Console, errors: Console) -> int:
    """Start, follow and report one run; returns the process exit code."""
    if not request.api_key:
        errors.print(f"pawl run: {NO_KEY_MESSAGE}", highlight=False)
        return EXIT_NO_VERDICT
    try:
        with PawlClient(request.server, request.api_key) as client:
            request = replace(request, eval_id=resolve(client, "eval_id", request.eval_id))
            finished = _start_and_follow(client, request, console)
    except ApiError as exc:
        refused = f"refused ({exc.status} {exc.code}): {exc.message}{refusal_hint(exc.status)}"
        errors.print(f"pawl run: {refused}", highlight=False, soft_wrap=True)
        return EXIT_NO_VERDICT
    except RunWaitTimeout as exc:
        errors.print(f"pawl run: {still_running(exc)}", highlight=False, soft_wrap=True)
        return EXIT_NO_VERDICT
    except (ServerUnreachable, NoBaseline, NameNotResolved) as exc:
        errors.print(f"pawl run: {exc}", highlight=False, soft_wrap=True)
        return EXIT_NO_VERDICT
    print_comparison(console, build_comparison(finished))
    console.print(f"console {run_console_url(request, finished)}", highlight=False, soft_wrap=True)
    code = exit_code_for(finished)
    if finished.status != COMPLETED:
        reason = finished.failure_reason or "no reason given"
        errors.print(f"pawl run: run {finished.id} ended {finished.status}: {reason}")
    return code
