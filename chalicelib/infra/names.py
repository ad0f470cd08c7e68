"""CloudFormation logical ids and ARNs of pawl's resources (shared by template and policy)."""

from __future__ import annotations

from typing import Any

BUCKET = "BlobBucket"
BUCKET_POLICY = "BlobBucketPolicy"
SECRETS_KEY = "SecretsKey"
ADMIN_KEY_SECRET = "AdminKeySecret"
SERVER_SECRET = "ServerSecret"
ALARM_TOPIC = "AlarmTopic"
REST_API = "RestAPI"  # chalice's name for the API


def camel(name: str) -> str:
    """``api-keys`` / ``webhook_deliveries`` -> ``ApiKeys`` / ``WebhookDeliveries``."""
    return "".join(part[:1].upper() + part[1:] for part in name.replace("_", "-").split("-"))


def table_id(short_name: str) -> str:
    return f"Table{camel(short_name)}"


def queue_id(role: str) -> str:
    return f"Queue{camel(role)}"


def dlq_id(role: str) -> str:
    return f"Queue{camel(role)}Dlq"


def sub(text: str) -> dict[str, Any]:
    return {"Fn::Sub": text}


_REGIONAL = "arn:${AWS::Partition}:%s:${AWS::Region}:${AWS::AccountId}:%s"


def table_arn(table_name: str) -> dict[str, Any]:
    return sub(_REGIONAL % ("dynamodb", f"table/{table_name}"))


def queue_arn(queue_name: str) -> dict[str, Any]:
    return sub(_REGIONAL % ("sqs", queue_name))


def function_arn(name_or_arn: str) -> Any:
    if name_or_arn.startswith("arn:"):
        return name_or_arn
    return sub(_REGIONAL % ("lambda", f"function:{name_or_arn}"))
