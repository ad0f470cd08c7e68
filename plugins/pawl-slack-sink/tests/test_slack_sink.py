"""The Slack sink: message formatting, delivery to a real local receiver, event filtering,
discovery through its entry point, and isolation from other sinks when Slack fails."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from pawl_slack_sink import format_message, selected_events, slack
from pawl_slack_sink.sink import SlackDeliveryFailed

from chalicelib import outbound, wiring
from chalicelib.domain.events import LifecycleEvent
from chalicelib.plugins import hookimpl
from chalicelib.plugins.manager import PluginHost

# --- a real receiver on 127.0.0.1 (pawl's tests.support is not importable from plugins/) ---


@dataclass
class Receiver:
    url: str
    status: int
    port: int = 0
    bodies: list[Any] = field(default_factory=list)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    """A Slack stand-in answering ``receiver.status`` (200 by default) and recording bodies."""
    state = Receiver(url="", status=200)

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            return None

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            state.bodies.append(json.loads(self.rfile.read(length)))
            answer = b"ok" if state.status == 200 else b"invalid_payload"
            self.send_response(state.status)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    state.port = httpd.server_address[1]
    state.url = f"http://127.0.0.1:{state.port}/services/T0/B0/secret"
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


@pytest.fixture
def slack_env(monkeypatch: pytest.MonkeyPatch, receiver: Receiver) -> Iterator[Receiver]:
    """The webhook URL pointing at ``receiver``, whose port (only) the SSRF policy allows."""
    monkeypatch.setenv("PAWL_SLACK_WEBHOOK_URL", receiver.url)
    monkeypatch.delenv("PAWL_SLACK_EVENTS", raising=False)
    monkeypatch.setenv("PAWL_ALLOW_PRIVATE_URLS", f"loopback:{receiver.port}")
    wiring.reload_settings()
    outbound.reset_client()
    yield receiver
    monkeypatch.undo()
    wiring.reload_settings()
    outbound.reset_client()


# --- events ---------------------------------------------------------------------------------


def completed_event() -> LifecycleEvent:
    run = {
        "id": "evrun_cand",
        "eval_id": "eval_42",
        "status": "completed",
        "passed": False,
        "aggregate_scores": {
            "pass_rate": 0.8,
            "pass_rate_interval": {"low": 0.49, "high": 0.943, "level": 0.95},
            "scored_item_count": 10,
            "errored_item_count": 1,
            "baseline": {
                "run_id": "evrun_base",
                "compared_item_count": 10,
                "pass_rate_delta": -0.2,
                "flipped": {"improved": 1, "regressed": 3},
                "p_value": 0.625,
            },
        },
        "verdict_reasons": [
            {"gate": "pass_threshold", "passed": True, "pass_rate": 0.8, "pass_threshold": 0.7},
            {
                "gate": "max_regression",
                "passed": False,
                "pass_rate_delta": -0.2,
                "max_regression": 0.1,
                "p_value": 0.0004,
                "alpha": 0.05,
            },
        ],
    }
    return event_of("eval_run.completed", run)


def failed_event() -> LifecycleEvent:
    run = {
        "id": "evrun_broken",
        "eval_id": "eval_7",
        "status": "failed",
        "passed": None,
        "aggregate_scores": None,
        "verdict_reasons": None,
        "failure_reason": "agent <gone> & unreachable",
    }
    return event_of("eval_run.failed", run)


def event_of(name: str, run: dict[str, Any]) -> LifecycleEvent:
    return LifecycleEvent(
        id=f"evt_{run['id']}_{run['status']}",
        event=name,
        project_id="proj_1",
        resource_type="eval_run",
        resource_id=run["id"],
        data=run,
        timestamp="2025-01-01T00:00:00Z",
    )


def all_text(message: dict[str, Any]) -> str:
    return json.dumps(message, ensure_ascii=False)


# --- format_message -------------------------------------------------------------------------


def test_completed_run_with_baseline_shows_every_figure() -> None:
    message = format_message(completed_event())
    text = all_text(message)
    assert message["text"].startswith("pawl eval_run.completed: eval eval_42 run evrun_cand")
    assert "FAILED" in message["text"]
    for figure in (
        "80.0% (95% CI [49.0%, 94.3%]) over 10 scored items, 1 errored",
        "`evrun_base`: -20.0 pts over 10 compared items",
        "flips 1 improved / 3 regressed",
        "McNemar p = 0.625",
        ":white_check_mark: *pass_threshold*: pass rate 80.0% vs threshold 70.0%",
        ":x: *max_regression*: delta -20.0 pts (allowed drop 10.0%), p = &lt; 0.001",
    ):
        assert figure in text, figure
    assert message["blocks"][0] == {
        "type": "header",
        "text": {"type": "plain_text", "text": "eval_run.completed"},
    }
    fields = [f["text"] for f in message["blocks"][1]["fields"]]
    assert fields == [
        "*Eval*\n`eval_42`",
        "*Run*\n`evrun_cand`",
        "*Status*\ncompleted",
        "*Verdict*\nFAILED",
    ]


def test_failed_run_shows_its_reason_escaped_and_no_figures() -> None:
    message = format_message(failed_event())
    text = all_text(message)
    assert message["text"] == (
        "pawl eval_run.failed: eval eval_7 run evrun_broken — no verdict"
        " (agent &lt;gone&gt; &amp; unreachable)"
    )
    assert "*Failure* agent &lt;gone&gt; &amp; unreachable" in text
    assert "Pass rate" not in text and "Baseline" not in text and "Verdict:" not in text
    assert "*Status*\nfailed" in [f["text"] for f in message["blocks"][1]["fields"]]


def test_selected_events_defaults_to_both_terminal_events() -> None:
    both = {"eval_run.completed", "eval_run.failed"}
    assert selected_events(None) == both
    assert selected_events(" , ") == both
    assert selected_events("eval_run.failed, x.y") == {"eval_run.failed", "x.y"}


# --- delivery -------------------------------------------------------------------------------


def test_posts_the_formatted_message_to_the_webhook(slack_env: Receiver) -> None:
    event = completed_event()
    slack(event=event)
    assert slack_env.bodies == [format_message(event)]


def test_does_nothing_without_a_webhook_url(
    slack_env: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PAWL_SLACK_WEBHOOK_URL")
    slack(event=completed_event())
    assert slack_env.bodies == []


def test_posts_only_the_selected_events(
    slack_env: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PAWL_SLACK_EVENTS", "eval_run.failed")
    slack(event=completed_event())
    assert slack_env.bodies == []
    slack(event=failed_event())
    assert [body["text"] for body in slack_env.bodies] == [format_message(failed_event())["text"]]


def test_a_refused_post_raises(slack_env: Receiver) -> None:
    slack_env.status = 500
    with pytest.raises(SlackDeliveryFailed, match=r"500.*invalid_payload"):
        slack(event=completed_event())


# --- through pawl's plugin host -------------------------------------------------------------


class RecordingSink:
    """Another third-party sink, registered next to the Slack one."""

    def __init__(self) -> None:
        self.events: list[str] = []

    @hookimpl
    def pawl_deliver_event(self, event: LifecycleEvent) -> None:
        self.events.append(event.id)


def host_with_recorder() -> tuple[PluginHost, RecordingSink]:
    host = wiring.new_plugin_host()
    # The built-in webhook sink records deliveries in DynamoDB; it has its own tests
    # (tests/webhooks) and is left out here so these run without AWS.
    host.pm.unregister(name="chalicelib.webhooks.sink")
    recorder = RecordingSink()
    host.pm.register(recorder, name="recorder")
    return host, recorder


def test_discovered_through_its_entry_point() -> None:
    host = wiring.new_plugin_host()
    assert host.report.failed == []
    (entry,) = [p for p in host.report.loaded if p["name"] == "slack_sink"]
    assert entry == {
        "name": "slack_sink",
        "version": "0.1.0",
        "source": "pawl-slack-sink",
        "hooks": ["pawl_deliver_event"],
        "scorers": [],
        "agents": [],
        "sinks": ["slack"],
        "overrides": [],
    }


def test_host_delivers_to_slack_and_the_other_sinks(slack_env: Receiver) -> None:
    host, recorder = host_with_recorder()
    event = completed_event()
    assert host.deliver_event(event) == []
    assert slack_env.bodies == [format_message(event)]
    assert recorder.events == [event.id]


def test_a_failing_slack_post_does_not_stop_another_sink(slack_env: Receiver) -> None:
    slack_env.status = 500
    host, recorder = host_with_recorder()
    event = failed_event()
    assert host.deliver_event(event) == ["slack_sink"]
    assert len(slack_env.bodies) == 1  # 500 is not a retried status: one attempt
    assert recorder.events == [event.id]
