"""Pure webhook logic: signatures, event patterns, delivery ids, retry delays, messages."""

from __future__ import annotations

import hashlib
import hmac

import pytest

from chalicelib.webhooks import signing
from chalicelib.webhooks.delivery import MAX_DELAY_S, DeliveryMessage, retry_delay_s
from chalicelib.webhooks.sink import delivery_id, subscribes

SECRET = "whsec_test-secret"
BODY = b'{"event":"eval_run.completed"}'
T = 1_769_865_600


def test_signature_is_hmac_sha256_of_timestamp_dot_body() -> None:
    expected = hmac.new(SECRET.encode(), f"{T}.".encode() + BODY, hashlib.sha256).hexdigest()
    assert signing.sign(SECRET, BODY, T) == f"t={T},v1={expected}"


def test_verify_accepts_a_fresh_signature() -> None:
    header = signing.sign(SECRET, BODY, T)
    assert signing.verify(SECRET, header, BODY, tolerance_s=300, now=T + 299)
    assert signing.verify(SECRET, header, BODY, tolerance_s=300, now=T - 299)


@pytest.mark.parametrize(
    ("secret", "body", "now"),
    [
        ("whsec_other", BODY, T),  # wrong secret
        (SECRET, BODY + b" ", T),  # body changed (or re-serialized)
        (SECRET, BODY, T + 301),  # replayed too late
        (SECRET, BODY, T - 301),  # clock too far ahead
    ],
)
def test_verify_refuses(secret: str, body: bytes, now: int) -> None:
    header = signing.sign(SECRET, BODY, T)
    assert not signing.verify(secret, header, body, tolerance_s=300, now=now)


@pytest.mark.parametrize(
    "header",
    ["", "garbage", f"t={T}", "v1=abc", "t=soon,v1=abc", f"t={T},v1"],
)
def test_verify_refuses_malformed_headers(header: str) -> None:
    assert not signing.verify(SECRET, header, BODY, now=T)


def test_verify_accepts_any_matching_v1_among_several() -> None:
    good = signing.digest(SECRET, T, BODY)
    assert signing.verify(SECRET, f"t={T},v1=deadbeef,v1={good}", BODY, now=T)


def test_new_secrets_are_prefixed_and_distinct() -> None:
    first, second = signing.new_secret(), signing.new_secret()
    assert first.startswith("whsec_") and len(first) >= 40 and first != second


@pytest.mark.parametrize(
    ("patterns", "event", "expected"),
    [
        (["eval_run.*"], "eval_run.completed", True),
        (["eval_run.*"], "eval_run.failed", True),
        (["eval_run.completed"], "eval_run.completed", True),
        (["eval_run.completed"], "eval_run.failed", False),
        (["eval_run.failed", "eval_run.completed"], "eval_run.completed", True),
        (["eval_run.*"], "eval_runs.completed", False),
        ([], "eval_run.completed", False),
    ],
)
def test_subscription_patterns(patterns: list[str], event: str, expected: bool) -> None:
    assert subscribes(patterns, event) is expected


def test_delivery_id_is_deterministic_and_shaped_like_an_id() -> None:
    one = delivery_id("evt_1", "whk_a")
    assert one == delivery_id("evt_1", "whk_a")
    assert one.startswith("whdl_") and len(one) == len("whdl_") + 16 and one[5:].isalnum()
    assert len({one, delivery_id("evt_2", "whk_a"), delivery_id("evt_1", "whk_b")}) == 3


def test_retry_delays_grow_and_are_capped() -> None:
    assert [retry_delay_s(n, 1) for n in (1, 2, 3)] == [1, 4, 16]
    assert retry_delay_s(2, 0) == 0
    assert retry_delay_s(10, 60) == MAX_DELAY_S


def test_message_round_trip_and_refusals() -> None:
    message = DeliveryMessage(delivery_id="whdl_x", attempt=2)
    assert DeliveryMessage.parse('{"delivery_id": "whdl_x", "attempt": 2}') == message
    assert message.body() == {"delivery_id": "whdl_x", "attempt": 2}
    for raw in ("[]", "{}", '{"delivery_id": "x", "attempt": 0}', "not json"):
        with pytest.raises(ValueError):
            DeliveryMessage.parse(raw)
