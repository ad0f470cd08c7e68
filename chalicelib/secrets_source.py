"""Where a secret setting's value comes from: the environment, or AWS Secrets Manager.

Locally (and in tests) a secret such as ``PAWL_ADMIN_KEY`` is a plain environment
variable. The deployed stack never puts a secret in a Lambda's environment (readable by
anyone who may read the function's configuration); it sets ``<NAME>_SECRET_ARN`` instead,
and the value is fetched from Secrets Manager once per container, when settings are first
read (cold start). A set variable wins over an ARN, so an operator can override it.
"""

from __future__ import annotations

import os

#: Appended to a secret setting's variable name to name the Secrets Manager secret holding it.
ARN_SUFFIX = "_SECRET_ARN"


def secret_from_env(name: str) -> str | None:
    """The value of secret setting ``name``: ``$name``, else the secret ``$name_SECRET_ARN``."""
    value = os.environ.get(name)
    if value:
        return value
    arn = os.environ.get(name + ARN_SUFFIX)
    if not arn:
        return None
    return _fetch(arn)


def _fetch(arn: str) -> str:
    # Not chalicelib.aws.client: it reads settings, and this runs while settings are built.
    import boto3

    from chalicelib.aws import CLIENT_CONFIG

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
