"""The shared client's requests: attempts, retries (``retry``, ``scope``), bounded answers.

The connections underneath (address vetting, a pool per thread) are :mod:`.transport`.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx

from chalicelib.outbound.allowlist import current_policy
from chalicelib.outbound.errors import (
    OutboundDropped,
    OutboundError,
    OutboundTimeout,
    OutboundTooLarge,
    OutboundUnreachable,
)
from chalicelib.outbound.policy import parse_target, safe_url
from chalicelib.outbound.retry import (
    RETRY_STATUSES,
    Failure,
    RetryBudget,
    backoff_delay,
    classify,
    connection_backoff_base,
    is_congestion,
    is_repeatable,
    may_retry,
    retry_after_s,
    retry_delay,
)
from chalicelib.outbound.revealed import scrub, scrub_text, take
from chalicelib.outbound.scope import AttemptOutcome, Persistence, current_persistence, report
from chalicelib.outbound.transport import bytes_received, start_attempt, thread_client
from chalicelib.settings import Settings, get_settings

log = logging.getLogger("pawl.outbound")
# httpx logs every request's full URL (query string included) at INFO and httpcore logs
# response headers at DEBUG: keep both quiet so secrets never reach the logs through them.
for _noisy in ("httpx", "httpcore"):
    logging.getLogger(_noisy).setLevel(logging.WARNING)

CONNECT_TIMEOUT_CAP_S = 10.0
MAX_RESPONSE_BYTES = 10 * 1024 * 1024


@dataclass(frozen=True)
class OutboundResponse:
    status: int
    headers: dict[str, str]
    body: bytes
    attempts: int = 1

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", errors="replace")

    def json(self) -> Any:
        return json.loads(self.body)


# --- requests -----------------------------------------------------------------------------


@dataclass
class _Call:
    method: str
    target: httpx.URL
    body: bytes | None
    headers: Mapping[str, str]
    timeout_s: float
    max_bytes: int
    repeatable: bool
    where: str = field(init=False)

    def __post_init__(self) -> None:
        self.where = f"{self.method} {safe_url(self.target)}"

    def timeout(self, deadline: float | None) -> httpx.Timeout:
        """This attempt's timeouts: the call's, cut to what is left of its budget."""
        total = self.timeout_s
        if deadline is not None:
            total = max(0.001, min(total, deadline - time.monotonic()))
        return httpx.Timeout(total, connect=min(total, CONNECT_TIMEOUT_CAP_S))


def _send_once(
    client: httpx.Client, call: _Call, timeout: httpx.Timeout, attempts: int
) -> OutboundResponse:
    try:
        request = client.build_request(
            call.method, call.target, content=call.body, headers=call.headers, timeout=timeout
        )
    except (UnicodeError, ValueError, TypeError):
        # The offending header value would be in the library's message: never show it.
        raise OutboundError(f"{call.where}: a header name or value is not valid") from None
    response = client.send(request, stream=True)
    try:
        chunks: list[bytes] = []
        size = 0
        for chunk in response.iter_bytes():
            size += len(chunk)
            if size > call.max_bytes:
                raise OutboundTooLarge(
                    f"{call.where} answered more than {call.max_bytes} bytes", attempts=attempts
                )
            chunks.append(chunk)
    finally:
        response.close()
    headers = {name.lower(): value for name, value in response.headers.items()}
    return OutboundResponse(response.status_code, headers, b"".join(chunks), attempts)


def _transport_error(call: _Call, exc: httpx.HTTPError, attempt: int) -> OutboundError:
    failure = classify(exc, bytes_received())
    name = type(exc).__name__
    if failure is Failure.NOT_SENT:
        return OutboundUnreachable(
            f"{call.where}: could not connect ({name})", attempts=attempt, failure=failure
        )
    if failure is Failure.TIMED_OUT:
        return OutboundTimeout(
            f"{call.where}: no answer within {call.timeout_s}s ({name})",
            attempts=attempt,
            failure=failure,
        )
    if failure is Failure.UNANSWERED:
        return OutboundDropped(
            f"{call.where}: the connection closed before any answer ({name})",
            attempts=attempt,
            failure=failure,
        )
    return OutboundError(f"{call.where}: {name}", attempts=attempt, failure=failure)


def _attempt(
    client: httpx.Client, call: _Call, attempt: int, deadline: float | None
) -> OutboundResponse:
    """One attempt; transport failures become :class:`OutboundError` subclasses."""
    start_attempt()
    try:
        return _send_once(client, call, call.timeout(deadline), attempt)
    except httpx.LocalProtocolError:
        raise OutboundError(
            f"{call.where}: the request was not valid HTTP (a header name or value?)",
            attempts=attempt,
        ) from None
    except httpx.HTTPError as exc:
        raise _transport_error(call, exc, attempt) from None


#: How often a persistent call's backoff looks at its ``should_continue``.
STOP_CHECK_S = 0.2


def _sleep(seconds: float, persistence: Persistence | None) -> bool:
    """Wait ``seconds``, in slices so a stop is seen within one; False if told to stop."""
    end = time.monotonic() + seconds
    while True:
        if persistence is not None and not persistence.go_on():
            return False
        left = end - time.monotonic()
        if left <= 0:
            return True
        time.sleep(min(left, STOP_CHECK_S))


def request(
    method: str,
    url: str,
    *,
    body: bytes | None = None,
    headers: Mapping[str, str] | None = None,
    timeout_s: float = 30.0,
    max_attempts: int | None = None,
    max_bytes: int = MAX_RESPONSE_BYTES,
    repeatable: bool | None = None,
) -> OutboundResponse:
    """Send a request, retrying as the module docstring says; return the final answer."""
    opened = take()  # the secrets this call carries: its answer may not echo them
    settings = get_settings()
    policy = current_policy()
    call = _Call(
        method=method.upper(),
        target=parse_target(url, policy),
        body=body,
        headers=dict(headers or {}),
        timeout_s=timeout_s,
        max_bytes=max_bytes,
        repeatable=is_repeatable(method, repeatable),
    )
    persistence = current_persistence()
    budget = RetryBudget(
        max_attempts=max(1, max_attempts or settings.http_max_attempts),
        deadline=time.monotonic() + timeout_s if persistence is not None else None,
    )
    client = thread_client(policy)
    attempt = 1
    while True:
        response, failure = _outcome(client, call, attempt, budget.deadline)
        retryable, congestion, wanted = _judge(response, failure, call, attempt, settings)
        delay = retry_delay(attempt, wanted, congestion, budget, time.monotonic())
        ending = _ending(retryable, delay, persistence, attempt)
        if ending is None:
            assert delay is not None
            reason = f"HTTP {response.status}" if response else type(failure).__name__
            log.info("%s: %s, attempt %d, retrying in %.3fs", call.where, reason, attempt, delay)
            if _sleep(delay, persistence):
                attempt += 1
                continue
            ending = "retries stopped"
        if response is not None:
            return _without(opened, response)
        assert failure is not None
        if not retryable:
            raise failure
        raise type(failure)(
            f"{failure} {ending}", attempts=attempt, failure=failure.failure
        ) from None


def _without(opened: frozenset[str], response: OutboundResponse) -> OutboundResponse:
    """``response`` with every copy of the secrets its request carried scrubbed out."""
    if not opened:
        return response
    headers = {name: scrub_text(value, opened) for name, value in response.headers.items()}
    body = scrub(response.body, opened)
    return OutboundResponse(response.status, headers, body, response.attempts)


def _ending(
    retryable: bool, delay: float | None, persistence: Persistence | None, attempt: int
) -> str | None:
    """Why there is no next attempt (None: there is one)."""
    if not retryable:
        return "not retried"
    if persistence is not None and not persistence.go_on():
        return "retries stopped"
    if delay is None:
        return f"after {attempt} attempt(s)"
    if persistence is not None and not persistence.may_retry():
        return f"after {attempt} attempt(s) (the run's retry quota is spent)"
    return None


def _outcome(
    client: httpx.Client, call: _Call, attempt: int, deadline: float | None
) -> tuple[OutboundResponse | None, OutboundError | None]:
    """One attempt's answer or transport failure, reported to the listening scopes."""
    try:
        response = _attempt(client, call, attempt, deadline)
    except OutboundError as exc:
        if exc.failure is None:  # refused, or not a request we could send: not an attempt
            raise
        report(AttemptOutcome(failure=exc.failure, congestion=is_congestion(failure=exc.failure)))
        return None, exc
    report(AttemptOutcome(status=response.status, congestion=is_congestion(response.status)))
    return response, None


def _judge(
    response: OutboundResponse | None,
    failure: OutboundError | None,
    call: _Call,
    attempt: int,
    settings: Settings,
) -> tuple[bool, bool, float]:
    """(retryable, congestion, the delay it asks for) of one attempt's outcome."""
    if response is not None:
        if response.status not in RETRY_STATUSES:
            return False, False, 0.0
        waited = retry_after_s(response.headers.get("retry-after"))
        if waited is None:
            waited = backoff_delay(attempt, settings.http_backoff_base_s)
        return True, is_congestion(response.status), waited
    assert failure is not None and failure.failure is not None
    retryable = may_retry(failure.failure, call.repeatable)
    backoff = backoff_delay(attempt, connection_backoff_base(settings.http_backoff_base_s))
    return retryable, retryable and is_congestion(failure=failure.failure), backoff


def post_json(
    url: str,
    payload: Any,
    headers: Mapping[str, str] | None = None,
    timeout_s: float = 30.0,
    max_attempts: int | None = None,
    repeatable: bool | None = None,
) -> OutboundResponse:
    """POST ``payload`` as JSON (``Content-Type: application/json`` unless given).

    A POST is not repeatable unless ``repeatable`` says so (``retry.is_repeatable``).
    """
    merged = {"Content-Type": "application/json", "Accept": "application/json"}
    for name, value in (headers or {}).items():
        # A caller's header replaces ours whatever its case.
        for ours in [n for n in merged if n.lower() == name.lower()]:
            del merged[ours]
        merged[name] = value
    try:
        body = json.dumps(payload).encode()
    except (TypeError, ValueError) as exc:
        raise OutboundError(f"the request body cannot be encoded as JSON: {exc}") from None
    return request(
        "POST",
        url,
        body=body,
        headers=merged,
        timeout_s=timeout_s,
        max_attempts=max_attempts,
        repeatable=repeatable,
    )
