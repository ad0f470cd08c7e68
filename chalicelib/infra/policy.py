"""The Lambda functions' IAM policy, least privilege, generated from the definitions.

Chalice cannot see what PynamoDB or the engine call (``autogen_policy: false``), so the
policy is written here: the exact DynamoDB actions on pawl's tables and their indexes, SQS
on pawl's queues, S3 on the bucket's objects, the two secrets and the key that encrypts
them, and ``lambda:InvokeFunction`` only on the functions the operator lists (agents and
tools of type ``lambda``). No DynamoDB, SQS or S3 statement has ``Resource: "*"``.
"""

from __future__ import annotations

from typing import Any

from chalicelib.infra import names
from chalicelib.infra.definitions import QueueSpec, TableSpec

#: What the repositories call on every table (PynamoDB reads ``DescribeTable`` once per
#: model; transactions need the per-item actions, ``ConditionCheckItem`` for their checks;
#: results are created with PartiQL INSERTs, ``store/conditional_puts.py``).
TABLE_ACTIONS = [
    "dynamodb:BatchGetItem",
    "dynamodb:BatchWriteItem",
    "dynamodb:ConditionCheckItem",
    "dynamodb:DeleteItem",
    "dynamodb:DescribeTable",
    "dynamodb:GetItem",
    "dynamodb:PartiQLInsert",
    "dynamodb:PutItem",
    "dynamodb:Query",
    "dynamodb:UpdateItem",
]
#: Tables a repository scans (the admin's lists of every project and every policy).
SCANNED_TABLES = ["projects", "policies"]
INDEX_ACTIONS = ["dynamodb:Query"]
#: Senders and the event source mapping (which uses the function's role to poll).
QUEUE_ACTIONS = [
    "sqs:ChangeMessageVisibility",
    "sqs:DeleteMessage",
    "sqs:GetQueueAttributes",
    "sqs:GetQueueUrl",
    "sqs:ReceiveMessage",
    "sqs:SendMessage",
]
OBJECT_ACTIONS = ["s3:DeleteObject", "s3:GetObject", "s3:PutObject"]
KEY_ACTIONS = ["kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey"]


def _statement(sid: str, actions: list[str], resources: list[Any]) -> dict[str, Any]:
    return {"Sid": sid, "Effect": "Allow", "Action": actions, "Resource": resources}


def policy_document(
    tables: list[TableSpec], queues: list[QueueSpec], invoke_functions: list[str]
) -> dict[str, Any]:
    """The policy every pawl function runs with."""
    statements = [
        _statement(
            "Logs",
            ["logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents"],
            [
                names.sub(
                    "arn:${AWS::Partition}:logs:${AWS::Region}:${AWS::AccountId}"
                    ":log-group:/aws/lambda/${AWS::StackName}-*"
                )
            ],
        ),
        _statement("Tables", TABLE_ACTIONS, [names.table_arn(t.name) for t in tables]),
        _statement(
            "Indexes",
            INDEX_ACTIONS,
            [
                names.table_arn(f"{t.name}/index/{index['IndexName']}")
                for t in tables
                for index in t.global_secondary_indexes
            ],
        ),
        _statement(
            "Scans",
            ["dynamodb:Scan"],
            [names.table_arn(t.name) for t in tables if t.short_name in SCANNED_TABLES],
        ),
        _statement("Queues", QUEUE_ACTIONS, [names.queue_arn(q.name) for q in queues]),
        _statement("BlobObjects", OBJECT_ACTIONS, [names.sub(f"${{{names.BUCKET}.Arn}}/*")]),
        # Settle lists a run's outcome digest parts; with it a missing object is a 404
        # (NoSuchKey), which readers treat as "gone", rather than a 403.
        _statement("BlobListing", ["s3:ListBucket"], [names.sub(f"${{{names.BUCKET}.Arn}}")]),
        _statement(
            "Secrets",
            ["secretsmanager:GetSecretValue"],
            [{"Ref": names.ADMIN_KEY_SECRET}, {"Ref": names.SERVER_SECRET}],
        ),
        _statement("SecretsKey", KEY_ACTIONS, [{"Fn::GetAtt": [names.SECRETS_KEY, "Arn"]}]),
    ]
    if invoke_functions:
        statements.append(
            _statement(
                "InvokeAgentsAndTools",
                ["lambda:InvokeFunction"],
                [names.function_arn(f) for f in invoke_functions],
            )
        )
    return {"Version": "2012-10-17", "Statement": statements}
