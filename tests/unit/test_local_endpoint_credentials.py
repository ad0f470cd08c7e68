"""``pawl serve --aws-endpoint URL``: a local endpoint gets dummy credentials if none exist."""

from __future__ import annotations

from pathlib import Path

import pytest

from pawl.local.prepare import DUMMY_CREDENTIALS, local_endpoint_credentials

CREDENTIAL_VARIABLES = (
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_SECURITY_TOKEN",
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
)


@pytest.fixture
def no_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in CREDENTIAL_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


@pytest.mark.parametrize(
    "endpoint", ["http://127.0.0.1:4566", "http://localhost:5000/", "http://[::1]:4566"]
)
def test_a_loopback_endpoint_without_credentials_gets_dummy_ones(
    no_credentials: None, endpoint: str
) -> None:
    assert local_endpoint_credentials(endpoint) == DUMMY_CREDENTIALS


@pytest.mark.parametrize(
    "endpoint", ["https://dynamodb.us-east-1.amazonaws.com", "http://10.0.0.5:4566", "nonsense"]
)
def test_a_remote_endpoint_never_gets_dummy_credentials(
    no_credentials: None, endpoint: str
) -> None:
    assert local_endpoint_credentials(endpoint) == {}


def test_configured_credentials_are_kept(
    no_credentials: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "mine")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "mine-too")
    assert local_endpoint_credentials("http://127.0.0.1:4566") == {}
