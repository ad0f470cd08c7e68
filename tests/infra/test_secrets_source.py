"""Secret settings come from the environment, or from Secrets Manager by ARN (deployed)."""

from __future__ import annotations

from collections.abc import Iterator

import boto3
import pytest
from moto import mock_aws

from chalicelib import wiring
from chalicelib.secrets_source import secret_from_env
from chalicelib.settings import get_settings


@pytest.fixture
def secret_arn(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    with mock_aws():
        arn = boto3.client("secretsmanager").create_secret(
            Name="pawl-dev/admin", SecretString="from-secrets-manager"
        )["ARN"]
        yield arn
    wiring.reload_settings()


def test_the_admin_key_is_read_from_secrets_manager_once(
    secret_arn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PAWL_ADMIN_KEY")
    monkeypatch.setenv("PAWL_ADMIN_KEY_SECRET_ARN", secret_arn)
    wiring.reload_settings()
    assert get_settings().admin_key == "from-secrets-manager"
    # Read at cold start only: a rotated secret reaches new containers, not this one.
    boto3.client("secretsmanager").put_secret_value(SecretId=secret_arn, SecretString="rotated")
    assert get_settings().admin_key == "from-secrets-manager"
    wiring.reload_settings()
    assert get_settings().admin_key == "rotated"


def test_a_set_variable_wins_over_the_arn(secret_arn: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PAWL_ADMIN_KEY", "operator-override")
    monkeypatch.setenv("PAWL_ADMIN_KEY_SECRET_ARN", secret_arn)
    assert secret_from_env("PAWL_ADMIN_KEY") == "operator-override"


def test_neither_set_is_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PAWL_SERVER_SECRET", raising=False)
    monkeypatch.delenv("PAWL_SERVER_SECRET_ARN", raising=False)
    assert secret_from_env("PAWL_SERVER_SECRET") is None


def test_a_missing_secret_fails_loudly(secret_arn: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PAWL_ADMIN_KEY")
    monkeypatch.setenv("PAWL_ADMIN_KEY_SECRET_ARN", secret_arn + "-gone")
    with pytest.raises(Exception, match="ResourceNotFound"):
        secret_from_env("PAWL_ADMIN_KEY")
