"""Generated infra follows the models and settings; bootstrap builds the same resources."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest
from pynamodb.attributes import TTLAttribute, UnicodeAttribute

from chalicelib.infra import names
from chalicelib.infra.__main__ import policy_path, render, stage_policy
from chalicelib.infra.definitions import queue_specs, table_spec, table_specs
from chalicelib.infra.merge import merge_template
from chalicelib.infra.policy import policy_document
from chalicelib.infra.stage import load_stage
from chalicelib.infra.template import Options, table_resource
from chalicelib.settings import get_settings
from chalicelib.store.base import IdModel


@pytest.mark.parametrize("stage", ["dev", "prod"])
def test_committed_policy_files_are_what_the_generator_writes(stage: str) -> None:
    """A model, index, queue or setting changed without `make package`: regenerate."""
    expected = render(stage_policy(load_stage(stage), Options()))
    assert policy_path(stage).read_text() == expected, (
        f"run `python -m chalicelib.infra generate --stage {stage}` and commit the policy"
    )


def test_stage_settings_follow_chalice_config() -> None:
    prod = load_stage("prod").settings
    assert prod.table_prefix == "pawl-prod"
    assert [q.name for q in queue_specs(prod)] == ["pawl-prod-runs", "pawl-prod-items",
                                                   "pawl-prod-webhooks"]  # fmt: skip


class _Expiring(IdModel):
    class Meta:
        short_name = "expiring"

    note = UnicodeAttribute()
    expires_at = TTLAttribute(attr_name="ttl")


def test_a_model_with_a_ttl_attribute_gets_a_ttl_table() -> None:
    spec = table_spec(_Expiring)
    assert spec.ttl_attribute == "ttl"
    properties = table_resource(spec, Options())["Properties"]
    assert properties["TimeToLiveSpecification"] == {"AttributeName": "ttl", "Enabled": True}
    assert properties["KeySchema"] == [{"AttributeName": "id", "KeyType": "HASH"}]
    properties_of = {t.short_name: table_resource(t, Options())["Properties"]
                     for t in table_specs()}  # fmt: skip
    with_ttl = {name: p["TimeToLiveSpecification"]
                for name, p in properties_of.items() if "TimeToLiveSpecification" in p}  # fmt: skip
    # The inbound webhook's replay guard: its receipts expire a day after they were written.
    assert with_ttl == {
        "trigger-receipts": {"AttributeName": "expires_at", "Enabled": True},
        # Console sign-outs: kept as long as a cookie of the session could be used (12 h).
        "console-revocations": {"AttributeName": "expires_at", "Enabled": True},
    }


def test_lambda_invoke_is_granted_only_on_the_listed_functions() -> None:
    settings = get_settings()
    tables, queues = table_specs(settings), queue_specs(settings)
    assert not [
        s for s in policy_document(tables, queues, [])["Statement"]
        if "lambda:InvokeFunction" in s["Action"]
    ]  # fmt: skip
    arn = "arn:aws:lambda:eu-west-1:111122223333:function:support-agent"
    statements = policy_document(tables, queues, ["triage-tool", arn])["Statement"]
    (invoke,) = [s for s in statements if "lambda:InvokeFunction" in s["Action"]]
    assert invoke["Action"] == ["lambda:InvokeFunction"]
    assert invoke["Resource"] == [names.function_arn("triage-tool"), arn]
    assert "function:triage-tool" in invoke["Resource"][0]["Fn::Sub"]


def _described(client: Any, name: str) -> dict[str, Any]:
    table = client.describe_table(TableName=name)["Table"]
    return {
        "KeySchema": table["KeySchema"],
        "AttributeDefinitions": sorted(
            table["AttributeDefinitions"], key=lambda a: a["AttributeName"]
        ),
        "GlobalSecondaryIndexes": sorted(
            (
                {k: i[k] for k in ("IndexName", "KeySchema", "Projection")}
                for i in table.get("GlobalSecondaryIndexes", [])
            ),
            key=lambda i: i["IndexName"],
        ),
    }


def test_bootstrap_creates_what_the_stack_declares(aws_env: None, app: Any) -> None:
    """The local runtime's tables and queues are the deployed stack's, attribute by attribute."""
    stage = load_stage("dev")
    resources = merge_template(stage, app, Options())["Resources"]
    client = boto3.client("dynamodb")
    declared = {
        r["Properties"]["TableName"]: r["Properties"]
        for r in resources.values()
        if r.get("Type") == "AWS::DynamoDB::Table"
    }
    assert set(client.list_tables()["TableNames"]) == set(declared)
    for name, properties in declared.items():
        expected = {
            "KeySchema": properties["KeySchema"],
            "AttributeDefinitions": properties["AttributeDefinitions"],
            "GlobalSecondaryIndexes": properties.get("GlobalSecondaryIndexes", []),
        }
        assert _described(client, name) == expected, name
    sqs = boto3.client("sqs")
    for spec in queue_specs(stage.settings):
        declared_queue = resources[names.queue_id(spec.role)]["Properties"]
        url = sqs.get_queue_url(QueueName=declared_queue["QueueName"])["QueueUrl"]
        attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
        assert int(attributes["VisibilityTimeout"]) == declared_queue["VisibilityTimeout"]
        redrive = json.loads(attributes["RedrivePolicy"])
        assert int(redrive["maxReceiveCount"]) == declared_queue["RedrivePolicy"]["maxReceiveCount"]
        assert redrive["deadLetterTargetArn"].endswith(":" + spec.dlq_name)
