"""The packaged template (`make package`) holds the properties that matter, and lints clean."""

from __future__ import annotations

import json
from typing import Any

from chalicelib.infra.definitions import MAX_RECEIVE_COUNT, VISIBILITY_FACTOR
from chalicelib.infra.gateway_responses import GATEWAY_RESPONSES
from chalicelib.store.base import registered_models
from chalicelib.workers.queues import (
    ITEM_BATCH_MESSAGES,
    ITEM_BATCH_SIZE,
    ITEM_BATCHING_WINDOW_S,
)
from tests.infra.conftest import PROJECT, Packaged

FUNCTION = "AWS::Serverless::Function"
STORAGE_SERVICES = ("dynamodb:", "sqs:", "s3:")


def _sqs_events(packaged: Packaged) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    found = []
    for name, function in packaged.of_type(FUNCTION).items():
        for event in function["Properties"].get("Events", {}).values():
            if event["Type"] == "SQS":
                found.append((name, function, event["Properties"]))
    return found


def _queue_by_arn(packaged: Packaged, arn: dict[str, Any]) -> dict[str, Any]:
    """The stack's queue an event source reads: a reference, so CloudFormation orders them."""
    logical_id, attribute = arn["Fn::GetAtt"]
    assert attribute == "Arn"
    queue = packaged.resources[logical_id]
    assert queue["Type"] == "AWS::SQS::Queue"
    return dict(queue["Properties"])


def test_cfn_lint_finds_nothing(packaged: Packaged) -> None:
    assert packaged.lint_exit == 0, packaged.lint_output
    assert packaged.lint_output.strip() == ""


def test_every_queue_consumer_reports_batch_item_failures_and_is_bounded(
    packaged: Packaged,
) -> None:
    events = _sqs_events(packaged)
    assert {name for name, _, _ in events} == {"FanOutRun", "ExecuteItems", "DeliverWebhooks"}
    for name, function, properties in events:
        assert properties["FunctionResponseTypes"] == ["ReportBatchItemFailures"], name
        assert 2 <= properties["ScalingConfig"]["MaximumConcurrency"] <= 1000, name
        # Lambda's rule for a standard queue: up to 10 per batch, or up to 10,000 with a
        # batching window of at least 1 s.
        window = properties.get("MaximumBatchingWindowInSeconds", 0)
        assert 1 <= properties["BatchSize"] <= (10 if window < 1 else 10_000), name
        queue = _queue_by_arn(packaged, properties["Queue"])
        timeout = function["Properties"]["Timeout"]
        assert queue["VisibilityTimeout"] >= VISIBILITY_FACTOR * timeout >= 6 * timeout, name


def test_the_item_worker_takes_batches_of_9_messages_without_a_window(packaged: Packaged) -> None:
    (properties,) = [p for name, _, p in _sqs_events(packaged) if name == "ExecuteItems"]
    assert properties["BatchSize"] == ITEM_BATCH_MESSAGES == 9
    assert ITEM_BATCH_SIZE == 90  # work items: ten per message
    assert properties.get("MaximumBatchingWindowInSeconds", 0) == ITEM_BATCHING_WINDOW_S == 0


def test_every_queue_has_a_dead_letter_queue_and_alarms(packaged: Packaged) -> None:
    queues = packaged.of_type("AWS::SQS::Queue")
    work_queues = {k: v for k, v in queues.items() if "RedrivePolicy" in v["Properties"]}
    dead_letter = {k for k in queues if k not in work_queues}
    assert len(work_queues) == 3 and len(dead_letter) == 3
    alarmed = [
        (a["Properties"]["MetricName"], a["Properties"]["Dimensions"][0]["Value"]["Fn::GetAtt"][0])
        for a in packaged.of_type("AWS::CloudWatch::Alarm").values()
    ]
    for name, queue in work_queues.items():
        redrive = queue["Properties"]["RedrivePolicy"]
        assert redrive["deadLetterTargetArn"]["Fn::GetAtt"][0] in dead_letter
        assert redrive["maxReceiveCount"] == MAX_RECEIVE_COUNT >= 5
        assert ("ApproximateAgeOfOldestMessage", name) in alarmed
        dlq = redrive["deadLetterTargetArn"]["Fn::GetAtt"][0]
        assert ("ApproximateNumberOfMessagesVisible", dlq) in alarmed


def test_every_model_has_an_on_demand_table_with_point_in_time_recovery(
    packaged: Packaged,
) -> None:
    tables = {
        t["Properties"]["TableName"]: t["Properties"]
        for t in packaged.of_type("AWS::DynamoDB::Table").values()
    }
    expected = {f"pawl-dev-{m.Meta.short_name}" for m in registered_models()}
    assert set(tables) == expected
    for name, table in tables.items():
        assert table["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}
        assert table["BillingMode"] == "PAY_PER_REQUEST", name
        assert table["SSESpecification"]["SSEEnabled"] is True, name


def _statements(packaged: Packaged) -> list[dict[str, Any]]:
    statements = []
    for role in packaged.of_type("AWS::IAM::Role").values():
        for policy in role["Properties"].get("Policies", []):
            statements += policy["PolicyDocument"]["Statement"]
    return statements


def test_no_storage_statement_grants_every_resource(packaged: Packaged) -> None:
    statements = _statements(packaged)
    assert statements
    for statement in statements:
        actions = (
            statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        )
        resources = statement["Resource"]
        resources = resources if isinstance(resources, list) else [resources]
        assert resources, statement
        assert not any(a in {"*", "dynamodb:*", "sqs:*", "s3:*"} for a in actions), statement
        if any(a.startswith(STORAGE_SERVICES) for a in actions):
            assert "*" not in resources, statement
            assert all(isinstance(r, dict) for r in resources), statement


def test_dynamodb_statements_name_exactly_the_tables_and_indexes(packaged: Packaged) -> None:
    granted = set()
    for statement in _statements(packaged):
        if any(a.startswith("dynamodb:") for a in statement["Action"]):
            granted.update(r["Fn::Sub"].split(":table/", 1)[1] for r in statement["Resource"])
    tables = packaged.of_type("AWS::DynamoDB::Table").values()
    expected = {t["Properties"]["TableName"] for t in tables}
    expected |= {
        f"{t['Properties']['TableName']}/index/{i['IndexName']}"
        for t in tables
        for i in t["Properties"].get("GlobalSecondaryIndexes", [])
    }
    assert granted == expected


def test_no_lambda_may_be_invoked_unless_configured(packaged: Packaged) -> None:
    actions = {a for s in _statements(packaged) for a in s["Action"]}
    assert "lambda:InvokeFunction" not in actions


def test_the_bucket_is_private_encrypted_and_tls_only(packaged: Packaged) -> None:
    ((bucket_id, bucket),) = packaged.of_type("AWS::S3::Bucket").items()
    properties = bucket["Properties"]
    assert properties["PublicAccessBlockConfiguration"] == {
        "BlockPublicAcls": True,
        "BlockPublicPolicy": True,
        "IgnorePublicAcls": True,
        "RestrictPublicBuckets": True,
    }
    rule = properties["BucketEncryption"]["ServerSideEncryptionConfiguration"][0]
    assert rule["ServerSideEncryptionByDefault"]["SSEAlgorithm"] in {"AES256", "aws:kms"}
    (policy,) = packaged.of_type("AWS::S3::BucketPolicy").values()
    assert policy["Properties"]["Bucket"] == {"Ref": bucket_id}
    (deny,) = policy["Properties"]["PolicyDocument"]["Statement"]
    assert deny["Effect"] == "Deny"
    assert deny["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}


def test_functions_get_secret_references_never_secrets(packaged: Packaged) -> None:
    secrets = packaged.of_type("AWS::SecretsManager::Secret")
    assert len(secrets) == 2
    for name, function in packaged.of_type(FUNCTION).items():
        variables = function["Properties"]["Environment"]["Variables"]
        assert "PAWL_ADMIN_KEY" not in variables and "PAWL_SERVER_SECRET" not in variables
        assert variables["PAWL_ADMIN_KEY_SECRET_ARN"]["Ref"] in secrets, name
        assert variables["PAWL_SERVER_SECRET_ARN"]["Ref"] in secrets, name
        assert variables["PAWL_KMS_KEY_ID"] == {"Ref": "SecretsKey"}, name
        assert variables["PAWL_TABLE_PREFIX"] == "pawl-dev", name
    for secret in secrets.values():
        assert secret["Properties"]["KmsKeyId"] == {"Ref": "SecretsKey"}
        assert "SecretString" not in secret["Properties"]  # generated by AWS, never in git


def test_the_reaper_runs_on_its_schedule(packaged: Packaged) -> None:
    reaper = packaged.resources["ReapQuietRuns"]["Properties"]
    (event,) = reaper["Events"].values()
    assert event == {"Type": "Schedule", "Properties": {"Schedule": "rate(1 minute)"}}


def test_gateway_responses_are_pawls_error_envelope(packaged: Packaged) -> None:
    responses = packaged.resources["RestAPI"]["Properties"]["GatewayResponses"]
    assert set(responses) == set(GATEWAY_RESPONSES)
    for response_type, answer in GATEWAY_RESPONSES.items():
        response = responses[response_type]
        assert response["StatusCode"] == answer.status
        # API Gateway substitutes a quoted JSON string for the message and the request id.
        template = response["ResponseTemplates"]["application/json"]
        filled = template.replace("$context.error.messageString", '"a message"')
        body = json.loads(filled.replace("$context.requestId", "req-1"))
        assert body == {
            "error": {"code": answer.code, "message": "a message", "meta": {"request_id": "req-1"}}
        }
    assert responses["MISSING_AUTHENTICATION_TOKEN"]["StatusCode"] == 404


def test_the_readme_deploy_section_names_what_the_stack_and_makefile_have(
    packaged: Packaged,
) -> None:
    readme = (PROJECT / "README.md").read_text()
    section = readme.split("## Deploy to AWS", 1)[1].split("\n## ", 1)[0]
    for output in ("AdminKeySecretArn", "EndpointURL", "AlarmTopicArn"):
        assert output in section and output in packaged.template["Outputs"], output
    makefile = (PROJECT / "Makefile").read_text()
    for target in ("package:", "deploy:"):
        assert f"\n{target}" in makefile
    assert "make package STAGE=dev" in section and "make deploy STAGE=dev" in section
    assert "delete-stack --stack-name pawl-dev" in section
