"""Retrying a run's calls gives a tenant no new reach: refusals are never retried, a drop
never quotes the URL's query, and a dead target costs a bounded number of retries."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from chalicelib import outbound, wiring
from tests.support.raw_servers import dropping
from tests.support.servers import Reply, serve


@pytest.fixture(autouse=True)
def quick_backoff(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("PAWL_HTTP_BACKOFF_BASE_S", "0.001")
    wiring.reload_settings()
    yield
    monkeypatch.undo()
    wiring.reload_settings()


def test_a_refusal_of_pawls_own_endpoint_is_never_retried(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    counter = outbound.AttemptCounter()
    with serve(lambda r: Reply(200, {"output": "ok"})) as own:
        monkeypatch.setenv("PAWL_RESERVED_ENDPOINTS", f"127.0.0.1:{own.port}")
        wiring.reload_settings()
        with (
            outbound.persisting(),
            outbound.listening(counter),
            pytest.raises(outbound.OutboundRefused, match=outbound.OWN_ENDPOINT_MESSAGE),
        ):
            outbound.post_json(own.url, {}, timeout_s=2, repeatable=True)
    assert own.requests == [] and counter.attempts == 0


def test_a_dropped_call_s_error_never_quotes_the_query_string() -> None:
    with (
        dropping(None, "close") as server,
        outbound.persisting(),
        pytest.raises(outbound.OutboundDropped) as caught,
    ):
        outbound.post_json(f"{server.url}?token=s3cret", {}, timeout_s=0.3, repeatable=True)
    assert "s3cret" not in str(caught.value) and "token" not in str(caught.value)
