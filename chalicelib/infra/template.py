"""Resources of the CloudFormation Chalice cannot express (assembled in :mod:`.merge`).

``chalice package --merge-template`` deep-merges this into the SAM template it generates:
dicts merge key by key, anything else replaces. So this adds whole resources (tables,
queues with DLQs, bucket, key, secrets, alarms) and *properties* of Chalice's functions and
API (timeouts, environment, ``ReportBatchItemFailures`` and maximum concurrency on each
event source, gateway responses), never a whole Chalice resource.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from chalicelib.infra import names
from chalicelib.infra.definitions import OLDEST_MESSAGE_ALARM_S, QueueSpec, TableSpec
from chalicelib.infra.stage import Stage
from chalicelib.secrets_source import arn_variable

#: Timeout of scheduled handlers (the reaper may settle a run).
SCHEDULE_TIMEOUT_S = 900
FUNCTION_MEMORY_MB = 512
#: SQS keeps a parked message this long (the maximum), time to look at it and re-drive.
DLQ_RETENTION_S = 14 * 24 * 3600


@dataclass(frozen=True)
class Options:
    """Knobs of a deployment that are not pawl settings."""

    #: Lambda functions pawl may invoke (agents and tools of type ``lambda``): names or ARNs.
    invoke_functions: list[str] = field(default_factory=list)
    #: Keep tables and the bucket when the stack is deleted (production data).
    retain_data: bool = False


def table_resource(spec: TableSpec, options: Options) -> dict[str, Any]:
    properties: dict[str, Any] = {
        "TableName": spec.name,
        "BillingMode": "PAY_PER_REQUEST",
        "KeySchema": spec.key_schema,
        "AttributeDefinitions": spec.attribute_definitions,
        "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True},
        "SSESpecification": {"SSEEnabled": True},
    }
    if spec.global_secondary_indexes:
        properties["GlobalSecondaryIndexes"] = spec.global_secondary_indexes
    if spec.ttl_attribute:
        properties["TimeToLiveSpecification"] = {
            "AttributeName": spec.ttl_attribute,
            "Enabled": True,
        }
    return _retained({"Type": "AWS::DynamoDB::Table", "Properties": properties}, options)


def _retained(resource: dict[str, Any], options: Options) -> dict[str, Any]:
    policy = "Retain" if options.retain_data else "Delete"
    return {**resource, "DeletionPolicy": policy, "UpdateReplacePolicy": policy}


def queue_resources(spec: QueueSpec) -> dict[str, Any]:
    dlq = names.dlq_id(spec.role)
    return {
        dlq: {
            "Type": "AWS::SQS::Queue",
            "Properties": {
                "QueueName": spec.dlq_name,
                "MessageRetentionPeriod": DLQ_RETENTION_S,
                "SqsManagedSseEnabled": True,
            },
        },
        names.queue_id(spec.role): {
            "Type": "AWS::SQS::Queue",
            "Properties": {
                "QueueName": spec.name,
                "VisibilityTimeout": spec.visibility_timeout_s,
                "RedrivePolicy": {
                    "deadLetterTargetArn": {"Fn::GetAtt": [dlq, "Arn"]},
                    "maxReceiveCount": spec.max_receive_count,
                },
                "SqsManagedSseEnabled": True,
            },
        },
    }


def _alarm(description: str, queue: dict[str, Any], metric: str, threshold: int) -> Any:
    return {
        "Type": "AWS::CloudWatch::Alarm",
        "Properties": {
            "AlarmDescription": description,
            "Namespace": "AWS/SQS",
            "MetricName": metric,
            "Dimensions": [{"Name": "QueueName", "Value": queue}],
            "Statistic": "Maximum",
            "Period": 300,
            "EvaluationPeriods": 1,
            "Threshold": threshold,
            "ComparisonOperator": "GreaterThanThreshold",
            "TreatMissingData": "notBreaching",
            "AlarmActions": [{"Ref": names.ALARM_TOPIC}],
        },
    }


def alarm_resources(spec: QueueSpec) -> dict[str, Any]:
    dlq = {"Fn::GetAtt": [names.dlq_id(spec.role), "QueueName"]}
    queue = {"Fn::GetAtt": [names.queue_id(spec.role), "QueueName"]}
    return {
        f"{names.dlq_id(spec.role)}DepthAlarm": _alarm(
            f"Messages parked in {spec.dlq_name}: re-drive them (README, Deploy to AWS).",
            dlq,
            "ApproximateNumberOfMessagesVisible",
            0,
        ),
        f"{names.queue_id(spec.role)}AgeAlarm": _alarm(
            f"The oldest message in {spec.name} waited over {OLDEST_MESSAGE_ALARM_S} s.",
            queue,
            "ApproximateAgeOfOldestMessage",
            OLDEST_MESSAGE_ALARM_S,
        ),
    }


def storage_resources(options: Options) -> dict[str, Any]:
    """The blob bucket (private, encrypted, TLS only)."""
    bucket = {
        "Type": "AWS::S3::Bucket",
        "Properties": {
            "BucketEncryption": {
                "ServerSideEncryptionConfiguration": [
                    {"ServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}
                ]
            },
            "PublicAccessBlockConfiguration": {
                "BlockPublicAcls": True,
                "BlockPublicPolicy": True,
                "IgnorePublicAcls": True,
                "RestrictPublicBuckets": True,
            },
            "OwnershipControls": {"Rules": [{"ObjectOwnership": "BucketOwnerEnforced"}]},
        },
    }
    deny_plain_http = {
        "Sid": "TlsOnly",
        "Effect": "Deny",
        "Principal": "*",
        "Action": "s3:*",
        "Resource": [
            {"Fn::GetAtt": [names.BUCKET, "Arn"]},
            names.sub(f"${{{names.BUCKET}.Arn}}/*"),
        ],
        "Condition": {"Bool": {"aws:SecureTransport": "false"}},
    }
    return {
        names.BUCKET: _retained(bucket, options),
        names.BUCKET_POLICY: {
            "Type": "AWS::S3::BucketPolicy",
            "Properties": {
                "Bucket": {"Ref": names.BUCKET},
                "PolicyDocument": {"Version": "2012-10-17", "Statement": [deny_plain_http]},
            },
        },
    }


def secret_resources(stage: Stage) -> dict[str, Any]:
    """The KMS key for secrets at rest, the admin key and the server secret (random)."""
    account_root = names.sub("arn:${AWS::Partition}:iam::${AWS::AccountId}:root")
    key_policy = {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "AccountAdministers",
                "Effect": "Allow",
                "Principal": {"AWS": account_root},
                "Action": "kms:*",
                "Resource": "*",
            }
        ],
    }

    def secret(description: str) -> dict[str, Any]:
        return {
            "Type": "AWS::SecretsManager::Secret",
            "Properties": {
                "Description": description,
                "KmsKeyId": {"Ref": names.SECRETS_KEY},
                "GenerateSecretString": {"PasswordLength": 48, "ExcludePunctuation": True},
            },
        }

    return {
        names.SECRETS_KEY: {
            "Type": "AWS::KMS::Key",
            "Properties": {
                "Description": f"pawl {stage.name}: encrypts secrets at rest",
                "EnableKeyRotation": True,
                "KeyPolicy": key_policy,
            },
        },
        names.ADMIN_KEY_SECRET: secret(f"pawl {stage.name}: the admin API key (PAWL_ADMIN_KEY)"),
        names.SERVER_SECRET: secret(
            f"pawl {stage.name}: server secret (PAWL_SERVER_SECRET: HMACs API keys, seals"
            " webhook secrets)"
        ),
        names.ALARM_TOPIC: {
            "Type": "AWS::SNS::Topic",
            "Properties": {"KmsMasterKeyId": "alias/aws/sns"},
        },
    }


def function_environment(stage: Stage) -> dict[str, Any]:
    """What every function reads: the stage's names, and references instead of secrets."""
    settings = stage.settings
    return {
        "PAWL_TABLE_PREFIX": settings.table_prefix,
        "PAWL_RUN_QUEUE": settings.run_queue,
        "PAWL_ITEM_QUEUE": settings.item_queue,
        "PAWL_WEBHOOK_QUEUE": settings.webhook_queue,
        "PAWL_BUCKET": {"Ref": names.BUCKET},
        arn_variable("PAWL_ADMIN_KEY"): {"Ref": names.ADMIN_KEY_SECRET},
        arn_variable("PAWL_SERVER_SECRET"): {"Ref": names.SERVER_SECRET},
        "PAWL_KMS_KEY_ID": {"Ref": names.SECRETS_KEY},
    }
