"""``pawl demo``: drive a running pawl through its HTTP API, the way a user would.

For now it creates (or finds) a demo project and mints an API key for it. Everything
goes over HTTP to ``runtime_url`` with the admin key, so the demo works the same against
``pawl serve``, an embedded :class:`~chalicelib.local.runtime.LocalRuntime` or a deployment.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx

DEMO_PROJECT = "pawl-demo"
HTTP_TIMEOUT_S = 30.0


class DemoFailed(RuntimeError):
    """The API refused a demo step; the message holds the status and the error body."""


@dataclass(frozen=True)
class DemoResult:
    project: dict[str, Any]
    api_key: dict[str, Any]


def _expect(response: httpx.Response, *statuses: int) -> Any:
    if response.status_code not in statuses:
        request = response.request
        raise DemoFailed(
            f"{request.method} {request.url.path} -> {response.status_code}: {response.text}"
        )
    return response.json() if response.content else None


def _find_project(client: httpx.Client, name: str) -> dict[str, Any] | None:
    cursor: str | None = None
    while True:
        params: dict[str, str | int] = {"limit": 100}
        if cursor:
            params["cursor"] = cursor
        listing = _expect(client.get("/api/v1/projects", params=params), 200)
        for project in listing["data"]:
            if project["name"] == name:
                return dict(project)
        cursor = listing.get("next_cursor")
        if not cursor:
            return None


def ensure_project(client: httpx.Client, name: str = DEMO_PROJECT) -> dict[str, Any]:
    """The project called ``name``: created, or found when a previous demo made it."""
    response = client.post("/api/v1/projects", json={"name": name})
    if response.status_code == 409:
        found = _find_project(client, name)
        if found is not None:
            return found
    return dict(_expect(response, 201))


def run_demo(runtime_url: str, admin_key: str, *, say: Callable[[str], None] = print) -> DemoResult:
    """Create the demo project and an API key for it through the HTTP API; report them."""
    headers = {"Authorization": f"Bearer {admin_key}"}
    with httpx.Client(base_url=runtime_url, headers=headers, timeout=HTTP_TIMEOUT_S) as client:
        _expect(client.get("/health"), 200)
        project = ensure_project(client)
        say(f"project  {project['id']}  ({project['name']})")
        key = _expect(
            client.post("/api/v1/api-keys", json={"project_id": project["id"], "name": "demo"}),
            201,
        )
        say(f"api key  {key['id']}  secret: {key['key']}  (shown once)")
        say(f"try:     curl -H 'Authorization: Bearer {key['key']}' {runtime_url}/api/v1/projects")
    return DemoResult(project=project, api_key=dict(key))
