"""Finding 5 (secrets at rest): webhook secrets sealed, API keys as keyed hashes.

The raw DynamoDB rows and a snapshot of every table (what ``snapshot.json`` holds) carry no
webhook secret and no unkeyed key hash, while deliveries are still signed with the secret
and keys still authenticate. Without a server secret, nothing that needs one is written.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

from chalicelib import aws, secretbox, wiring
from chalicelib.plugins.manager import plugins
from chalicelib.settings import get_settings
from chalicelib.store import webhooks as webhook_store
from chalicelib.store.models import ApiKeyModel, WebhookModel
from pawl.local import standin_state
from tests.conftest import SERVER_SECRET, Api
from tests.integration.test_webhook_delivery import Receiver, drain, run_event
from tests.support.servers import serve

OTHER_SECRET = "another-server-secret-abcdefghijklmnopqrstuvwxyz"
WEBHOOK_SECRET = "whsec_tenant-chosen-secret-0123456789"


def _use_server_secret(monkeypatch: pytest.MonkeyPatch, value: str | None) -> None:
    if value is None:
        monkeypatch.delenv("PAWL_SERVER_SECRET", raising=False)
    else:
        monkeypatch.setenv("PAWL_SERVER_SECRET", value)
    wiring.reload_settings()
    # Load now: inside a request chalice.test.Client swaps in the stage's environment.
    assert get_settings().server_secret == value


def _raw_row(table: str, item_id: str) -> dict[str, Any]:
    item = aws.client("dynamodb").get_item(
        TableName=get_settings().table_name(table), Key={"id": {"S": item_id}}
    )
    row: dict[str, Any] = item["Item"]
    return row


def _create_webhook(api: Api, project_id: str, url: str) -> Any:
    body = {"project_id": project_id, "url": url, "events": ["eval_run.*"]}
    response = api.post("/api/v1/webhooks", {**body, "secret": WEBHOOK_SECRET})
    assert response.status == 201 and response.json["secret"] == WEBHOOK_SECRET, response
    return response.json


def _delivered_and_verified(project_id: str, receiver: Receiver) -> None:
    receiver.secret = WEBHOOK_SECRET  # what the tenant holds
    assert plugins().deliver_event(run_event(project_id)) == []
    assert drain() == []
    assert receiver.verified == [True]


def test_webhook_secret_is_sealed_at_rest_and_still_signs(
    api: Api, project: dict[str, Any], project_key: str
) -> None:
    receiver = Receiver([200])
    with serve(receiver) as server:
        hook = _create_webhook(api.as_key(project_key), project["id"], f"{server.url}/hook")
        stored = _raw_row("webhooks", hook["id"])["secret"]["S"]
        assert stored.startswith("sb1.") and WEBHOOK_SECRET not in stored
        document = json.dumps(standin_state.dump(get_settings().region, get_settings().bucket))
        assert hook["id"] in document and WEBHOOK_SECRET not in document
        _delivered_and_verified(project["id"], receiver)
    assert "secret" not in api.get(f"/api/v1/webhooks/{hook['id']}").json


def test_webhook_secret_sealed_with_kms(
    api: Api, project: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    key_id = aws.client("kms").create_key(Description="pawl secrets")["KeyMetadata"]["KeyId"]
    monkeypatch.setenv("PAWL_KMS_KEY_ID", key_id)
    wiring.reload_settings()
    assert get_settings().kms_key_id == key_id
    receiver = Receiver([200])
    with serve(receiver) as server:
        hook = _create_webhook(api, project["id"], f"{server.url}/hook")
        stored = _raw_row("webhooks", hook["id"])["secret"]["S"]
        assert stored.startswith("kms1.") and WEBHOOK_SECRET not in stored
        # The prefix names the scheme: still readable once KMS is no longer configured.
        monkeypatch.delenv("PAWL_KMS_KEY_ID")
        wiring.reload_settings()
        _delivered_and_verified(project["id"], receiver)


def test_sealed_values_are_bound_to_their_key_and_purpose(
    aws_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    sealed = secretbox.seal("s3cret", secretbox.WEBHOOK_SECRET)
    assert sealed != secretbox.seal("s3cret", secretbox.WEBHOOK_SECRET)  # fresh nonce
    assert secretbox.open_sealed(sealed, secretbox.WEBHOOK_SECRET) == "s3cret"
    with pytest.raises(secretbox.SealedValueUnreadable, match="another use"):
        secretbox.open_sealed(sealed, secretbox.TRIGGER_SECRET)
    flipped = sealed[:-2] + ("A" if sealed[-2] != "A" else "B") + sealed[-1]
    with pytest.raises(secretbox.SealedValueUnreadable):
        secretbox.open_sealed(flipped, secretbox.WEBHOOK_SECRET)
    _use_server_secret(monkeypatch, OTHER_SECRET)
    with pytest.raises(secretbox.SealedValueUnreadable, match="another PAWL_SERVER_SECRET"):
        secretbox.open_sealed(sealed, secretbox.WEBHOOK_SECRET)


def test_a_legacy_clear_webhook_secret_is_used_then_sealed(project: dict[str, Any]) -> None:
    row = WebhookModel(
        id="webhook_legacy000000001",
        project_id=project["id"],
        url="https://hooks.invalid/x",
        events=["eval_run.*"],
        secret=WEBHOOK_SECRET,
        created_at="2026-01-01T00:00:00.000Z",
        updated_at="2026-01-01T00:00:00.000Z",
        created_key="2026-01-01T00:00:00.000Z#webhook_legacy000000001",
    )
    row.save()
    target = webhook_store.get_target(row.id)
    assert target is not None and target.secret == WEBHOOK_SECRET
    assert _raw_row("webhooks", row.id)["secret"]["S"].startswith("sb1.")
    again = webhook_store.get_target(row.id)
    assert again is not None and again.secret == WEBHOOK_SECRET


@pytest.mark.parametrize("configured", [None, "too-short"])
def test_no_usable_server_secret_fails_closed(
    api: Api,
    project: dict[str, Any],
    project_key: str,
    monkeypatch: pytest.MonkeyPatch,
    configured: str | None,
) -> None:
    _use_server_secret(monkeypatch, configured)
    webhook = {
        "project_id": project["id"],
        "url": "https://hooks.invalid/x",
        "events": ["eval_run.*"],
    }
    key = {"project_id": project["id"], "name": "k"}
    for path, body in (("/api/v1/webhooks", webhook), ("/api/v1/api-keys", key)):
        refused = api.post(path, body)
        assert refused.status == 500 and refused.code == "SERVER_MISCONFIGURED", refused
        assert "PAWL_SERVER_SECRET" in refused.json["error"]["message"]
    # Nothing was written: the only key is the fixture's, no webhook exists.
    assert len(api.get(f"/api/v1/api-keys?project_id={project['id']}").json["data"]) == 1
    assert api.get(f"/api/v1/webhooks?project_id={project['id']}").json["data"] == []
    assert api.as_key(project_key).get("/api/v1/agents").code == "SERVER_MISCONFIGURED"


def _key_row(key: str) -> ApiKeyModel:
    return ApiKeyModel.get(key.split(".")[1], consistent_read=True)


def test_api_key_hash_is_keyed_by_the_server_secret(
    api: Api, project_key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret_part = project_key.split(".")[2]
    stored = _key_row(project_key).key_hash
    assert stored.startswith("hmac1.") and secret_part not in stored
    assert hashlib.sha256(secret_part.encode()).hexdigest() not in stored
    assert api.as_key(project_key).get("/api/v1/agents").status == 200
    _use_server_secret(monkeypatch, OTHER_SECRET)
    assert api.as_key(project_key).get("/api/v1/agents").status == 401
    _use_server_secret(monkeypatch, SERVER_SECRET)
    assert api.as_key(project_key).get("/api/v1/agents").status == 200


def test_a_legacy_unsalted_key_hash_is_verified_then_upgraded(api: Api, project_key: str) -> None:
    secret_part = project_key.split(".")[2]
    row = _key_row(project_key)
    row.key_hash = hashlib.sha256(secret_part.encode()).hexdigest()  # an old state dir's row
    row.save()
    wrong = ".".join([*project_key.split(".")[:2], "not-the-secret"])
    assert api.as_key(wrong).get("/api/v1/agents").status == 401
    assert _key_row(project_key).key_hash == row.key_hash  # a failed check upgrades nothing
    assert api.as_key(project_key).get("/api/v1/agents").status == 200
    assert _key_row(project_key).key_hash.startswith("hmac1.")
    assert api.as_key(project_key).get("/api/v1/agents").status == 200
