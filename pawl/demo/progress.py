"""A progress bar that follows a run through the API until it ends (bounded wait).

The bar's total is the run's ``item_count`` once fan-out has set it; it advances by the
items recorded so far (completed + errored), read on every poll.
"""

from __future__ import annotations

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)

from pawl.transport import PawlClient, Run

DEFAULT_RUN_TIMEOUT_S = 600.0


def follow_run(
    client: PawlClient,
    run: Run,
    *,
    console: Console,
    label: str,
    timeout_s: float = DEFAULT_RUN_TIMEOUT_S,
) -> Run:
    """Poll ``run`` until it is terminal, drawing a bar; :class:`RunWaitTimeout` past the wait."""
    progress = Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[status]}"),
        TimeElapsedColumn(),
        console=console,
    )
    with progress:
        task = progress.add_task(label, total=run.item_count or None, status=run.status)

        def show(current: Run) -> None:
            progress.update(
                task,
                total=current.item_count or None,
                completed=current.recorded_count,
                status=current.status
                + (f" ({current.errored_count} errored)" if current.errored_count else ""),
            )

        return client.wait_for_run(run.eval_id, run.id, timeout_s=timeout_s, on_poll=show)
