"""A webhook payload carries the run's console URL (``console_url``, a pawl addition) when
pawl knows the URL it is reached at (``PAWL_PUBLIC_URL``), and not otherwise; the
signature covers it. A real receiver on 127.0.0.1 verifies every delivery."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from chalicelib import wiring
from chalicelib.domain.events import LifecycleEvent
from chalicelib.plugins.manager import plugins
from chalicelib.store import tenancy
from chalicelib.webhooks import signing
from chalicelib.webhooks.sink import webhook_body
from tests.integration.test_webhook_delivery import Receiver, drain, subscribe
from tests.support.servers import Request, serve

EVAL_ID = "eval_0000000000000042"
RUN_ID = "evrun_0000000000000007"


@pytest.fixture
def project_id(aws_env: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setenv("PAWL_WEBHOOK_RETRY_BASE_S", "0")
    monkeypatch.delenv("PAWL_PUBLIC_URL", raising=False)
    wiring.reload_settings()
    yield tenancy.create_project("acme").id
    monkeypatch.undo()
    wiring.reload_settings()


@pytest.fixture
def public_url(monkeypatch: pytest.MonkeyPatch, project_id: str) -> Iterator[str]:
    # A deployment's URL ends in its API Gateway stage; a trailing slash is dropped.
    monkeypatch.setenv("PAWL_PUBLIC_URL", "https://pawl.example.test/api/")
    wiring.reload_settings()
    yield "https://pawl.example.test/api"
    monkeypatch.delenv("PAWL_PUBLIC_URL")
    wiring.reload_settings()


def _completed(project_id: str) -> LifecycleEvent:
    return LifecycleEvent(
        id="evt_0000000000000099",
        event="eval_run.completed",
        project_id=project_id,
        resource_type="eval_run",
        resource_id=RUN_ID,
        data={"id": RUN_ID, "eval_id": EVAL_ID, "status": "completed", "passed": True},
        timestamp="2026-01-31T12:00:00.000Z",
    )


def _deliver(project_id: str, event: LifecycleEvent) -> tuple[Receiver, list[Request]]:
    receiver = Receiver([200])
    with serve(receiver) as server:
        subscribe(project_id, f"{server.url}/hook", ["eval_run.*"], receiver)
        assert plugins().deliver_event(event) == []
        assert drain() == []
    return receiver, list(server.requests)


def test_the_payload_carries_the_runs_console_url_under_the_signature(
    project_id: str, public_url: str
) -> None:
    event = _completed(project_id)
    receiver, [request] = _deliver(project_id, event)

    assert receiver.verified == [True]  # signed over the body with console_url in it
    sent = request.json()
    assert sent["console_url"] == f"{public_url}/console/evals/{EVAL_ID}/runs/{RUN_ID}"
    assert {k: v for k, v in sent.items() if k != "console_url"} == event.envelope()
    # The signature covers the link: the body with another link no longer verifies.
    header = request.headers[signing.SIGNATURE_HEADER]
    forged = request.body.replace(b"/runs/" + RUN_ID.encode(), b"/runs/evrun_0000000000000008")
    assert forged != request.body
    assert not signing.verify(receiver.secret, header, forged)


def test_without_a_public_url_the_payload_is_the_envelope_alone(project_id: str) -> None:
    event = _completed(project_id)
    receiver, [request] = _deliver(project_id, event)

    assert receiver.verified == [True]
    assert request.json() == event.envelope() and "console_url" not in request.json()


def test_only_a_run_event_naming_its_eval_gets_a_link(project_id: str) -> None:
    event = _completed(project_id)
    without_eval = event.model_copy(update={"data": {"id": RUN_ID}})
    assert "console_url" not in webhook_body(without_eval, "https://pawl.example.test")
    assert "console_url" not in webhook_body(event, None)
    linked = webhook_body(event, "http://127.0.0.1:8000")
    assert linked["console_url"] == f"http://127.0.0.1:8000/console/evals/{EVAL_ID}/runs/{RUN_ID}"
