"""The local runtime: stand-in, bootstrap, restore, HTTP front, pollers, scheduler, snapshots.

``LocalRuntime(config).start()`` brings everything up in this process, in the order that
keeps it correct (the environment points at the endpoint before any AWS client exists; the
state is restored before anything can write; runs are re-driven before pollers start);
``stop()`` takes it down in the reverse order with a final, quiet snapshot. ``pawl serve``,
``pawl demo`` and the tests all embed it the same way.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from chalice import Chalice

from chalicelib import aws, bootstrap, queues
from chalicelib.settings import LOCAL_DEFAULT_ADMIN_KEY, get_settings, reset_settings
from chalicelib.webhooks import resume
from pawl.local import prepare, restore, snapshot
from pawl.local.compaction import CompactionPolicy
from pawl.local.gateway import GatewayServer
from pawl.local.local_routes import LocalRoutesHandler
from pawl.local.pollers import QueuePoller, sqs_sources
from pawl.local.quiesce import Quiesce
from pawl.local.scheduler import Scheduler
from pawl.local.standin import (
    AwsStandIn,
    EnvPatch,
    StandinExited,
    reset_aws_state,
    stand_in_environment,
)
from pawl.local.supervision import RestartBudget, StandInSupervisor

log = logging.getLogger("pawl.local")

#: Where, under the state dir, the stand-in journals every acknowledged write.
JOURNAL_DIR = "journal"


@dataclass
class RuntimeConfig:
    host: str = "127.0.0.1"
    port: int = 8000
    state_dir: Path = field(default_factory=lambda: Path(".pawl-state"))
    #: Use this endpoint instead of a stand-in (default: ``AWS_ENDPOINT_URL`` when set).
    aws_endpoint: str | None = None
    #: Use real AWS through the usual credential chain (no stand-in, no endpoint override).
    use_real_aws: bool = False
    #: How often the snapshot policy is checked (0: never; a clean stop still snapshots).
    snapshot_interval_s: float = 1.0
    #: When a check takes a snapshot: once the journal since the last one is big enough.
    compaction: CompactionPolicy = field(default_factory=CompactionPolicy)
    #: Worker threads per queue name; queues not named get ``item_workers`` (the item
    #: queue) or one.
    workers: dict[str, int] = field(default_factory=dict)
    item_workers: int = 4
    retry_delay_s: int = 2
    poll_wait_s: int = 1
    run_schedules: bool = True
    #: The Chalice app to serve (default: ``app.app``, imported once the env is set).
    app: Chalice | None = None
    #: Modules added to ``PAWL_PYTHON_AGENT_MODULES`` (the demo names its own agent module).
    python_agent_modules: tuple[str, ...] = ()
    #: A stand-in that dies is restarted this many times within ``standin_restart_window_s``;
    #: one more death (a crash loop), and the runtime gives up (``failure``).
    standin_restarts: int = 3
    standin_restart_window_s: float = 60.0


class LocalRuntime:
    def __init__(self, config: RuntimeConfig | None = None) -> None:
        self.config = config or RuntimeConfig()
        self.state_dir = self.config.state_dir.resolve()
        self.quiesce = Quiesce()
        self.env = EnvPatch()
        self.standin: AwsStandIn | None = None
        self.aws_endpoint: str | None = None
        self.gateway: GatewayServer | None = None
        self.pollers: list[QueuePoller] = []
        self.scheduler: Scheduler | None = None
        #: Watches the stand-in once the runtime is up (None without one).
        self.supervisor: StandInSupervisor | None = None
        #: Snapshots written, the last one's figures, the longest a fork held requests back.
        self.snapshots_written = 0
        self.last_snapshot: dict[str, Any] | None = None
        self.longest_hold_ms = 0.0
        #: The stand-in's last answer to a snapshot request (written or not, and why).
        self.last_check: dict[str, Any] | None = None
        self.restored: snapshot.RestoreSummary | None = None
        #: Projects, agents, datasets, dataset items, evals and runs after a restart.
        self.restored_counts: dict[str, int] | None = None
        #: What replaying the journal at start found (segments, records, torn tails).
        self.replayed: dict[str, Any] | None = None
        #: Replayed journal segments not yet folded into a snapshot.
        self._journal_behind = False
        self._snapshot_lock = threading.Lock()
        self.redrive_result: Any = None
        self.resumed_deliveries = 0
        self._threads: list[threading.Thread] = []
        self._stopping = threading.Event()
        self._state_lock: IO[bytes] | None = None
        self._started = False

    # --- lifecycle -------------------------------------------------------------------------

    def start(self) -> LocalRuntime:
        # Before anything is set up (stop() itself reads the settings, which refuse it).
        prepare.check_public_url()
        try:
            self._prepare_environment()
            bootstrap.ensure_resources()
            if self.standin is not None:
                self._restore_and_open_journal()
                self._count_restored()
            self.redrive_result = redrive_in_flight_runs()
            if self.redrive_result is not None:
                log.info("re-drove in-flight runs: %s", self.redrive_result)
            if self.standin is not None:
                # Queued messages did not survive the restart: the delivery rows did.
                self.resumed_deliveries = resume.resume_after_restart().resumed
            app = self.config.app or _default_app()
            # Bind first: the API port must be reserved before any worker calls out.
            self._bind_gateway(app)
            self._reserve_own_endpoints()
            self._start_workers(app)
            self._spawn("http", lambda: self._serve_http())
            if self.persists_state and self.config.snapshot_interval_s > 0:
                self._spawn("snapshots", self._snapshot_loop)
            self._supervise_standin()
        except BaseException:
            self.stop()
            raise
        self._started = True
        return self

    def stop(self) -> None:
        """Stop accepting HTTP, stop pollers and schedules, snapshot, stop the stand-in."""
        if self._stopping.is_set():
            return
        self._stopping.set()
        if self.gateway is not None:
            self.gateway.accepting = False
            self.gateway.shutdown()
        if self.scheduler is not None:
            self.scheduler.stop()
        # Every poller first, then the joins: each is in a long poll (poll_wait_s), and
        # stopping them one by one would wait out one poll after another.
        for poller in self.pollers:
            poller.request_stop()
        for poller in self.pollers:
            poller.stop()
        for thread in self._threads:
            thread.join(timeout=30)
        if self.persists_state and self._started:
            if self.standin is not None and self.standin.alive:
                self.snapshot_now()
            else:  # nothing to compact from; the journal holds every acknowledged write
                log.warning("no final snapshot: the AWS stand-in is not running")
        if self.gateway is not None:
            self.gateway.server_close()
        if self.standin is not None:
            self.standin.stop()
        self.env.restore()
        reset_aws_state()
        self._release_state_dir()

    def __enter__(self) -> LocalRuntime:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        if self.gateway is None:
            raise RuntimeError("the runtime is not started")
        return self.gateway.url

    @property
    def admin_key(self) -> str:
        return get_settings().admin_key or ""

    @property
    def unavailable(self) -> str | None:
        """Why the runtime cannot serve data right now (the stand-in died); None: it can."""
        return self.supervisor.unavailable if self.supervisor is not None else None

    @property
    def failure(self) -> str | None:
        """Set once the runtime gave up on its stand-in: one line saying why."""
        return self.supervisor.failure if self.supervisor is not None else None

    @property
    def persists_state(self) -> bool:
        """True when this runtime owns the stand-in and so snapshots it to ``state_dir``."""
        return self.standin is not None

    # --- steps -----------------------------------------------------------------------------

    def _prepare_environment(self) -> None:
        self.env.set_default("PAWL_ADMIN_KEY", LOCAL_DEFAULT_ADMIN_KEY)
        # No default for PAWL_ALLOW_PRIVATE_URLS: unset or empty means public addresses only.
        # Checked first: an invalid value stops the runtime before it touches the state dir.
        prepare.check_allow_list()
        prepare.prepare_secrets(self.env, self.state_dir, self.config.python_agent_modules)
        self.env.set_default("AWS_DEFAULT_REGION", "us-east-1")
        endpoint = self.config.aws_endpoint or os.environ.get("AWS_ENDPOINT_URL") or None
        if self.config.use_real_aws:
            self.env.set("AWS_ENDPOINT_URL", None)
        elif endpoint:
            self.env.set("AWS_ENDPOINT_URL", endpoint)
            self.env.update(prepare.local_endpoint_credentials(endpoint))
            self.aws_endpoint = endpoint
        else:
            self._state_lock = prepare.lock_state_dir(self.state_dir)
            self.standin = AwsStandIn(journal_dir=self.state_dir / JOURNAL_DIR)
            self.aws_endpoint = self.standin.start()
            self.env.update(stand_in_environment(self.aws_endpoint, self.standin.credentials))
        reset_aws_state()

    def _release_state_dir(self) -> None:
        if self._state_lock is not None:
            self._state_lock.close()
            self._state_lock = None

    def _count_restored(self) -> None:
        if self.restored is None:
            return
        assert self.standin is not None
        self.restored_counts = restore.count_restored(self.standin)

    def _restore_and_open_journal(self) -> None:
        assert self.standin is not None
        reopened = restore.restore_and_open_journal(self.standin, self.state_dir)
        self.replayed = reopened.replayed
        if reopened.restored is not None:
            self.restored = reopened.restored
        self._journal_behind = reopened.journal_behind

    def _workers_for(self, queue: str) -> int:
        if queue in self.config.workers:
            return self.config.workers[queue]
        return self.config.item_workers if queue == get_settings().item_queue else 1

    def _start_workers(self, app: Chalice) -> None:
        region = get_settings().region
        for source in sqs_sources(app):
            try:
                poller = QueuePoller(
                    app,
                    source,
                    quiesce=self.quiesce,
                    workers=self._workers_for(source.queue),
                    retry_delay_s=self.config.retry_delay_s,
                    wait_s=self.config.poll_wait_s,
                    region=region,
                )
            except Exception as exc:
                log.error("no poller for %s (queue %s): %s", source.handler_name, source.queue, exc)
                continue
            poller.start()
            self.pollers.append(poller)
        self.scheduler = Scheduler(app, quiesce=self.quiesce, region=region)
        if self.config.run_schedules:
            self.scheduler.start()

    def _bind_gateway(self, app: Chalice) -> None:
        routes = LocalRoutesHandler(self)
        self.gateway = GatewayServer(
            (self.config.host, self.config.port),
            app,
            quiesce=self.quiesce,
            local_routes=routes,
            unavailable=lambda: self.unavailable,
        )

    # --- the stand-in dying ----------------------------------------------------------------

    def _supervise_standin(self) -> None:
        if self.standin is None:
            return
        budget = RestartBudget(self.config.standin_restarts, self.config.standin_restart_window_s)
        self.supervisor = StandInSupervisor(self.standin, self._restart_standin, budget)
        supervisor = self.supervisor
        self._spawn("standin-watch", lambda: supervisor.watch(self._stopping))

    def _restart_standin(self) -> None:
        """What a start does for the stand-in, under running workers: the same port and
        key pair, the resources, the snapshot and the journal; then the queued work that
        died with it (SQS is not persisted) is re-created from the rows."""
        assert self.standin is not None
        with self._snapshot_lock:
            self.standin.restart()
            bootstrap.ensure_resources()
            self._restore_and_open_journal()
        redriven = redrive_in_flight_runs(after_restart=False)
        # Workers of this process may hold claims: only overdue deliveries, claims kept.
        swept = resume.sweep(grace_s=0)
        log.info("after the stand-in's restart: re-drove %s runs, %s", redriven, swept)

    def _reserve_own_endpoints(self) -> None:
        """Put the API port on the outbound policy's never-call list once it is known.

        ``--port 0`` picks it at bind time. ``AWS_ENDPOINT_URL`` (the stand-in or the
        configured endpoint) needs no entry: the policy always reserves it.
        """
        assert self.gateway is not None
        host, port = self.config.host, self.gateway.server_port
        own = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        existing = os.environ.get("PAWL_RESERVED_ENDPOINTS", "")
        self.env.set("PAWL_RESERVED_ENDPOINTS", ",".join(filter(None, [existing, own])))
        prepare.publish_own_url(self.env, self.gateway.url)
        reset_settings()

    def _serve_http(self) -> None:
        assert self.gateway is not None
        self.gateway.serve_forever(poll_interval=0.2)

    def _spawn(self, name: str, target: Any) -> None:
        thread = threading.Thread(target=target, name=f"pawl-{name}", daemon=True)
        thread.start()
        self._threads.append(thread)

    # --- snapshots -------------------------------------------------------------------------

    def _snapshot_loop(self) -> None:
        while not self._stopping.wait(self.config.snapshot_interval_s):
            self.compact_if_due()

    def compact_if_due(self) -> bool:
        """One check of the snapshot policy (``local/compaction.py``): snapshot only when
        the journal since the last cut is big enough, so a snapshot's cost follows the
        writes rather than the clock. Returns whether a file was written."""
        if self.unavailable is not None:
            return False  # the stand-in is down (or being restarted): nothing to ask
        return self.snapshot_now(policy=self.config.compaction)

    def snapshot_now(self, policy: CompactionPolicy | None = None) -> bool:
        """Compact: the stand-in writes its state at an exact journal cut from a forked
        child, then drops the journal before the cut (``local/standin_state.py``).

        Without ``policy``, whenever anything was journaled since the last cut; with one,
        when it is due. Segments replayed at start are folded in at the first call either
        way. Requests and workers wait only for the fork (``last_snapshot["hold_ms"]``),
        not for the write. Returns whether a file was written.
        """
        if not self.persists_state or self.standin is None:
            return False
        with self._snapshot_lock:
            try:
                reply = self.standin.control(
                    "snapshot",
                    state_dir=str(self.state_dir),
                    region=get_settings().region,
                    bucket=get_settings().bucket,
                    force=self._journal_behind,
                    policy=None if policy is None else dataclasses.asdict(policy),
                )
            except StandinExited as exc:  # a death the supervisor reports: one line here
                log.warning("no snapshot to %s: %s", self.state_dir, exc)
                return False
            except Exception:
                log.exception("snapshot to %s failed", self.state_dir)
                return False
            self._journal_behind = False
            self.last_check = reply
            if reply["written"]:
                self.snapshots_written += 1
                self.last_snapshot = reply
                self.longest_hold_ms = max(self.longest_hold_ms, float(reply["hold_ms"]))
            return bool(reply["written"])

    # --- waiting ---------------------------------------------------------------------------

    def drain(self, timeout_s: float = 30.0) -> bool:
        """Wait (bounded) until every polled queue is empty and nothing is running."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.quiesce.active == 0 and all(self._queue_empty(p) for p in self.pollers):
                return True
            time.sleep(0.05)
        return False

    @staticmethod
    def _queue_empty(poller: QueuePoller) -> bool:
        attributes = aws.client("sqs").get_queue_attributes(
            QueueUrl=queues.queue_url(poller.source.queue),
            AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
        )["Attributes"]
        return all(int(value) == 0 for value in attributes.values())


def _default_app() -> Chalice:
    from app import app

    return app


def redrive_in_flight_runs(after_restart: bool = True) -> Any:
    """Re-drive the runs that were in flight when the runtime (or its stand-in) stopped.

    SQS messages do not survive a restart; re-driving is safe because fan-out is
    idempotent and items that already have results are skipped. ``after_restart``: no
    worker survived, so a claimed settle is taken over at once (not after a stand-in's
    restart: this process's workers are alive and may hold that claim).
    """
    from chalicelib import wiring
    from chalicelib.engine import recovery  # after the environment points at the stand-in

    # Re-driving settles runs and hands their events to the sinks (the webhook sink among
    # them), which only the composition root installs; a fresh `pawl serve` has not built
    # the app yet at this point, and without this every such event waited for the reaper.
    wiring.services()
    return recovery.redrive_active_runs(after_restart=after_restart)
