"""A small typed client for pawl's ``/api/v1`` over HTTP (httpx).

Used by ``pawl demo`` and ``pawl run``: everything they do goes through the public API,
so they work the same against ``pawl serve``, an embedded runtime or a deployment. Not
used by the service itself.

Catalog resources come back as plain JSON objects; runs, which callers inspect field by
field, come back as :class:`Run`. A refusal raises :class:`ApiError` with the envelope's
code and message; a server that cannot be reached raises :class:`ServerUnreachable`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    # Both load on first use: importing httpx (about 0.2 s of CPU with its client) or
    # pydantic would cost a CLI command more than its whole start-up budget (docs/cli.md).
    import httpx

    from pawl.runs import Run

# The errors are pawl.errors' (the public client raises the same classes); re-exported
# here because the CLI and the demo import them from this module.
from pawl import _config
from pawl.errors import ApiError as ApiError
from pawl.errors import ServerUnreachable as ServerUnreachable
from pawl.errors import error_of as _error_of

Json = dict[str, Any]

#: Where ``pawl run``, ``pawl datasets import`` and ``pawl <operation>`` find a server.
DEFAULT_SERVER = _config.DEFAULT_SERVER
#: What a command without a key says (the API's own answer names no variable).
NO_KEY_MESSAGE = (
    "no API key: set PAWL_API_KEY (or pass --api-key). `pawl serve` prints the admin key "
    "at start; `pawl create-api-key --project-id ... --name ...` makes a project key."
)
DEFAULT_TIMEOUT_S = 30.0
DEFAULT_POLL_INTERVAL_S = 0.25
#: How often a wait reads a run once its last items are due or recorded: the settle that
#: follows takes a few hundred ms, and a wait that read every 0.25 s then added up to
#: 0.25 s to every ``pawl run`` (a few more GETs per run, only at its very end).
FINISHING_POLL_S = 0.05
RUNS_PAGE_SIZE = 50


def start_run_body(
    *,
    agent_version: int | None = None,
    baseline_run_id: str | None = None,
    metadata: Json | None = None,
    wait: bool = False,
    max_concurrency: int | None = None,
    early_stop: bool = False,
) -> Json:
    """A run start's body; unset options are left to the server."""
    body: Json = {"wait": wait}
    if early_stop:
        body["early_stop"] = True
    if agent_version is not None:
        body["agent_version"] = agent_version
    if baseline_run_id is not None:
        body["baseline_run_id"] = baseline_run_id
    if metadata:
        body["metadata"] = metadata
    if max_concurrency is not None:
        body["max_concurrency"] = max_concurrency
    return body


def next_poll_s(run: Run, previous: tuple[Run, float] | None, interval_s: float) -> float:
    """How long a wait sleeps before reading ``run`` again (pure: the caller keeps time).

    ``previous`` is the run as the read before this one saw it and the seconds between the
    two reads. Every ``interval_s`` while items remain; once the items recorded between the
    reads say the last one is due sooner, until then; every :data:`FINISHING_POLL_S` once
    every item is recorded (the settle is running), so the wait ends close to the run.
    """
    if run.item_count and run.recorded_count >= run.item_count:
        return min(interval_s, FINISHING_POLL_S)
    if previous is None or not run.item_count:
        return interval_s
    earlier, between_s = previous
    recorded = run.recorded_count - earlier.recorded_count
    if recorded <= 0 or between_s <= 0:
        return interval_s
    due_in_s = (run.item_count - run.recorded_count) * between_s / recorded
    return max(min(interval_s, FINISHING_POLL_S), min(interval_s, due_in_s))


def refusal_hint(status: int) -> str:
    """What to check after a refusal of the key itself (empty for any other refusal)."""
    if status == 401:
        return " (check the key in PAWL_API_KEY or --api-key: `pawl serve` prints the admin key)"
    return ""


class RunWaitTimeout(Exception):
    """A run was still active when the caller's wait ran out."""

    def __init__(self, run: Run, waited_s: float) -> None:
        super().__init__(
            f"run {run.id} still {run.status} after {waited_s:.0f} s "
            f"({run.recorded_count}/{run.item_count} items recorded)"
        )
        self.run = run


def __getattr__(name: str) -> Any:
    """``Run`` (a pydantic model) is imported from :mod:`pawl.runs` when first named."""
    if name == "Run":
        from pawl.runs import Run

        return Run
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class PawlClient:
    """One base URL and one bearer key; use as a context manager or call :meth:`close`."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None,
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        import httpx

        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.base_url = base_url.rstrip("/")
        self._http = httpx.Client(
            base_url=self.base_url, headers=headers, timeout=timeout_s, transport=transport
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> PawlClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def import_items(self, dataset_id: str, jsonl: bytes) -> Json:
        """Add the items of a JSON Lines body to a dataset, all or none (``items:import``)."""
        result: Json = self.send(
            "POST",
            f"/api/v1/datasets/{dataset_id}/items:import",
            content=jsonl,
            content_type="application/x-ndjson",
        )
        return result

    def _send(
        self,
        method: str,
        path: str,
        *,
        body: Json | None,
        params: Mapping[str, str | int] | None,
        content: bytes | None = None,
        content_type: str | None = None,
    ) -> httpx.Response:
        import httpx

        headers = {"Content-Type": content_type} if content_type else None
        try:
            return self._http.request(
                method, path, json=body, params=params, content=content, headers=headers
            )
        except httpx.TransportError as exc:
            raise ServerUnreachable(self.base_url, str(exc) or type(exc).__name__) from exc

    def send(
        self,
        method: str,
        path: str,
        *,
        body: Json | None = None,
        params: Mapping[str, str | int] | None = None,
        content: bytes | None = None,
        content_type: str | None = None,
    ) -> Any:
        """Any operation by method and path: its JSON (text if not JSON), or None when empty.

        An answer of 400 or more raises :class:`ApiError`; no answer, :class:`ServerUnreachable`.
        """
        response = self._send(
            method, path, body=body, params=params, content=content, content_type=content_type
        )
        if response.status_code >= 400:
            raise _error_of(response)
        if not response.content:
            return None
        try:
            return response.json()
        except ValueError:
            return response.text

    # --- tenancy --------------------------------------------------------------------------

    def health(self) -> Json:
        result: Json = self.send("GET", "/health")
        return result

    def create_project(self, name: str) -> Json:
        result: Json = self.send("POST", "/api/v1/projects", body={"name": name})
        return result

    def find_project(self, name: str) -> Json | None:
        for project in self._paged("/api/v1/projects"):
            if project.get("name") == name:
                return project
        return None

    def ensure_project(self, name: str) -> Json:
        """The project called ``name``: created, or found when it already exists."""
        try:
            return self.create_project(name)
        except ApiError as exc:
            found = self.find_project(name) if exc.status == 409 else None
            if found is None:
                raise
            return found

    def create_api_key(self, project_id: str, name: str) -> Json:
        """A new key for the project; its secret (``key``) is only in this answer."""
        body = {"project_id": project_id, "name": name}
        result: Json = self.send("POST", "/api/v1/api-keys", body=body)
        return result

    # --- catalog --------------------------------------------------------------------------

    def create_agent(self, body: Json) -> Json:
        result: Json = self.send("POST", "/api/v1/agents", body=body)
        return result

    def update_agent(self, agent_id: str, changes: Json) -> Json:
        """A PUT that changes the agent's behaviour creates its next version."""
        result: Json = self.send("PUT", f"/api/v1/agents/{agent_id}", body=changes)
        return result

    def create_dataset(self, body: Json) -> Json:
        result: Json = self.send("POST", "/api/v1/datasets", body=body)
        return result

    def add_item(self, dataset_id: str, item: Json) -> Json:
        result: Json = self.send("POST", f"/api/v1/datasets/{dataset_id}/items", body=item)
        return result

    def create_eval(self, body: Json) -> Json:
        result: Json = self.send("POST", "/api/v1/evals", body=body)
        return result

    def get_eval(self, eval_id: str) -> Json:
        result: Json = self.send("GET", f"/api/v1/evals/{eval_id}")
        return result

    # --- formations -----------------------------------------------------------------------

    def find_formation(self, name: str, project_id: str | None = None) -> Json | None:
        params: dict[str, str | int] = {"name": name}
        if project_id:
            params["project_id"] = project_id
        found: list[Json] = self.send("GET", "/api/v1/formations", params=params)["data"]
        return found[0] if found else None

    def plan_formation(self, body: Json) -> Json:
        result: Json = self.send("POST", "/api/v1/formations/plan", body=body)
        return result

    def create_formation(self, body: Json) -> Json:
        result: Json = self.send("POST", "/api/v1/formations", body=body)
        return result

    def update_formation(self, formation_id: str, body: Json) -> Json:
        result: Json = self.send("PUT", f"/api/v1/formations/{formation_id}", body=body)
        return result

    # --- runs -----------------------------------------------------------------------------

    def start_run(
        self,
        eval_id: str,
        *,
        agent_version: int | None = None,
        baseline_run_id: str | None = None,
        metadata: Json | None = None,
        wait: bool = False,
        max_concurrency: int | None = None,
        early_stop: bool = False,
    ) -> Run:
        """Start a run (queued unless ``wait``); unset options are left to the server."""
        body = start_run_body(
            agent_version=agent_version,
            baseline_run_id=baseline_run_id,
            metadata=metadata,
            wait=wait,
            max_concurrency=max_concurrency,
            early_stop=early_stop,
        )
        from pawl.runs import Run

        return Run.model_validate(self.send("POST", f"/api/v1/evals/{eval_id}/runs", body=body))

    def get_run(self, eval_id: str, run_id: str) -> Run:
        from pawl.runs import Run

        return Run.model_validate(self.send("GET", f"/api/v1/evals/{eval_id}/runs/{run_id}"))

    def iter_runs(self, eval_id: str) -> Iterator[Run]:
        """The eval's runs, newest first, one page at a time."""
        from pawl.runs import Run

        for raw in self._paged(f"/api/v1/evals/{eval_id}/runs", RUNS_PAGE_SIZE):
            yield Run.model_validate(raw)

    def latest_completed_run(self, eval_id: str) -> Run | None:
        """The newest run of the eval whose status is ``completed`` (None: there is none)."""
        from chalicelib.domain.runs import COMPLETED

        return next((run for run in self.iter_runs(eval_id) if run.status == COMPLETED), None)

    def wait_for_run(
        self,
        eval_id: str,
        run_id: str,
        *,
        timeout_s: float,
        poll_interval_s: float = DEFAULT_POLL_INTERVAL_S,
        on_poll: Callable[[Run], None] | None = None,
    ) -> Run:
        """Poll the run until it is terminal; :class:`RunWaitTimeout` after ``timeout_s``.

        ``on_poll`` sees every state read (a progress display uses it).
        """
        started = time.monotonic()
        previous: tuple[Run, float] | None = None
        while True:
            run = self.get_run(eval_id, run_id)
            read_at = time.monotonic()
            if on_poll is not None:
                on_poll(run)
            if run.finished:
                return run
            waited = read_at - started
            if waited >= timeout_s:
                raise RunWaitTimeout(run, waited)
            pause = next_poll_s(
                run, previous and (previous[0], read_at - previous[1]), poll_interval_s
            )
            previous = (run, read_at)
            time.sleep(min(pause, max(0.0, timeout_s - waited)))

    def iter_results(self, eval_id: str, run_id: str) -> Iterator[Json]:
        """Every result of the run (``list-eval-results``), one page at a time."""
        yield from self._paged(f"/api/v1/evals/{eval_id}/runs/{run_id}/results")

    # --- paging ---------------------------------------------------------------------------

    def _paged(self, path: str, limit: int = 100) -> Iterator[Json]:
        cursor: str | None = None
        while True:
            params: dict[str, str | int] = {"limit": limit}
            if cursor:
                params["cursor"] = cursor
            listing = self.send("GET", path, params=params)
            yield from listing["data"]
            cursor = listing.get("next_cursor")
            if not cursor:
                return
