"""``/_local/...``: what only the local runtime offers (admin key; never part of the API).

- ``GET  /_local/status``                 the endpoint, state dir, pollers and schedules
- ``GET  /_local/schedules``              every schedule with its cadence and next run
- ``POST /_local/schedules/{name}/run``   run a schedule now (tests, impatient humans)
- ``POST /_local/snapshot``               write a snapshot now
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from chalicelib.errors import error_body

if TYPE_CHECKING:
    from pawl.local.runtime import LocalRuntime


def _json_safe(value: Any) -> Any:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return repr(value)
    return value


class LocalRoutesHandler:
    def __init__(self, runtime: LocalRuntime) -> None:
        self.runtime = runtime

    def __call__(self, method: str, path: str, body: bytes) -> tuple[int, Any]:
        parts = [p for p in path.split("/") if p]
        if method == "GET" and parts == ["status"]:
            return 200, self._status()
        if method == "GET" and parts == ["schedules"]:
            return 200, {"data": self._schedules()}
        if method == "POST" and len(parts) == 3 and parts[0] == "schedules" and parts[2] == "run":
            return self._run_schedule(parts[1])
        if method == "POST" and parts == ["snapshot"]:
            return self._snapshot()
        return 404, error_body("RESOURCE_NOT_FOUND", f"no local route {method} /_local/{path}")

    def _status(self) -> dict[str, Any]:
        runtime = self.runtime
        return {
            "aws_endpoint": runtime.aws_endpoint,
            "stand_in": runtime.persists_state,
            "stand_in_pid": runtime.standin.pid if runtime.standin is not None else None,
            "stand_in_restarts": runtime.supervisor.restarts if runtime.supervisor else 0,
            "unavailable": runtime.unavailable,
            "state_dir": str(runtime.state_dir) if runtime.persists_state else None,
            "pollers": [
                {
                    "handler": p.source.handler_name,
                    "queue": p.source.queue,
                    "workers": p.workers,
                    "batches": p.stats.batches,
                    "deleted": p.stats.deleted,
                    "retried": p.stats.retried,
                    "handler_errors": p.stats.handler_errors,
                }
                for p in runtime.pollers
            ],
            "schedules": self._schedules(),
        }

    def _schedules(self) -> list[dict[str, Any]]:
        scheduler = self.runtime.scheduler
        if scheduler is None:
            return []
        return [
            {
                "name": s.name,
                "expression": s.cadence.expression,
                "next_run": s.next_run.isoformat(),
                "runs": s.runs,
                "failures": s.failures,
            }
            for s in scheduler.schedules.values()
        ]

    def _run_schedule(self, name: str) -> tuple[int, Any]:
        scheduler = self.runtime.scheduler
        if scheduler is None or name not in scheduler.schedules:
            return 404, error_body(
                "RESOURCE_NOT_FOUND", f"no schedule named {name}", {"name": name}
            )
        try:
            result = scheduler.trigger(name)
        except Exception as exc:
            message = f"schedule {name} raised {type(exc).__name__}: {exc}"
            return 500, error_body("SCHEDULE_FAILED", message, {"name": name})
        return 200, {"name": name, "result": _json_safe(result)}

    def _snapshot(self) -> tuple[int, Any]:
        if not self.runtime.persists_state:
            message = "this runtime uses an external endpoint: it keeps no snapshot"
            return 409, error_body("NO_STAND_IN", message)
        written = self.runtime.snapshot_now()
        return 200, {"written": written, "state_dir": str(self.runtime.state_dir)}
