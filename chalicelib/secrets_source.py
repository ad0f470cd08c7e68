"""Where a secret setting's value comes from: the environment, or AWS Secrets Manager.

Locally (and in tests) a secret such as ``PAWL_ADMIN_KEY`` is a plain environment
variable. The deployed stack never puts a secret in a Lambda's environment (readable by
anyone who may read the function's configuration); it sets the secret's ARN instead
(:func:`arn_variable`), and the value is fetched from Secrets Manager once per container,
when settings are first read (cold start). A set variable wins over an ARN.
"""

from __future__ import annotations

import os

from botocore.config import Config

#: Timeouts and retries of every boto3 client pawl makes (chalicelib.aws uses it too).
CLIENT_CONFIG = Config(
    connect_timeout=5,
    read_timeout=30,
    retries={"mode": "standard", "max_attempts": 5},
    max_pool_connections=32,
)


def arn_variable(name: str) -> str:
    """The variable naming the secret behind ``name``: ``PAWL_ADMIN_KEY_SECRET_ARN``,
    ``PAWL_SERVER_SECRET_ARN`` (not ``..._SECRET_SECRET_ARN``)."""
    return f"{name}_ARN" if name.endswith("_SECRET") else f"{name}_SECRET_ARN"


def secret_from_env(name: str) -> str | None:
    """``$name`` if set, else the value of the secret :func:`arn_variable` names, else None."""
    value = os.environ.get(name)
    if value:
        return value
    arn = os.environ.get(arn_variable(name))
    if not arn:
        return None
    return _fetch(arn)


def _fetch(arn: str) -> str:
    # Not chalicelib.aws.client: it reads settings, and this runs while settings are built.
    import boto3

    region = os.environ.get("AWS_DEFAULT_REGION") or os.environ.get("AWS_REGION", "us-east-1")
    client = boto3.client(
        "secretsmanager",
        region_name=region,
        endpoint_url=os.environ.get("AWS_ENDPOINT_URL") or None,
        config=CLIENT_CONFIG,
    )
    response = client.get_secret_value(SecretId=arn)
    secret = response.get("SecretString")
    if not secret:
        raise RuntimeError(f"secret {arn} has no string value")
    return str(secret)
