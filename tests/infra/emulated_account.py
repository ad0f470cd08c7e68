"""Deploy the packaged SAM template onto moto's CloudFormation, the way AWS would.

``aws-sam-translator`` turns the SAM template into plain CloudFormation (what
``aws cloudformation deploy`` has AWS do); the code zip goes to an S3 bucket as
``aws cloudformation package`` would put it; then moto's CloudFormation creates the stack.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
from samtranslator.translator.transform import transform

CODE_BUCKET = "pawl-deploy-artifacts"
CODE_KEY = "pawl/deployment.zip"
#: Resource types moto's CloudFormation cannot create, and why; nothing else is skipped.
UNSUPPORTED = {
    # moto creates the RestApi but does not import its OpenAPI body (routes, gateway
    # responses), so a Deployment of it fails with "The REST API doesn't contain any methods".
    "AWS::ApiGateway::Deployment": "moto imports no OpenAPI body into a RestApi",
    "AWS::ApiGateway::Stage": "needs the Deployment",
    "AWS::CloudWatch::Alarm": "not in moto's CloudFormation",
    "AWS::S3::BucketPolicy": "not in moto's CloudFormation",
    # Created beforehand with the same properties (see _create_secrets_by_hand).
    "AWS::SecretsManager::Secret": "not in moto's CloudFormation",
}


@dataclass(frozen=True)
class Stack:
    name: str
    #: logical id -> physical id of every resource the stack created
    physical: dict[str, str]
    skipped: dict[str, str]  # logical id -> type
    secrets: dict[str, str]  # logical id -> ARN of the secret made by hand


def to_cloudformation(sam: dict[str, Any]) -> dict[str, Any]:
    template = copy.deepcopy(sam)
    for resource in template["Resources"].values():
        if resource["Type"] == "AWS::Serverless::Function":
            resource["Properties"]["CodeUri"] = {"Bucket": CODE_BUCKET, "Key": CODE_KEY}
    return dict(transform(template, {}, None))


def _replace_refs(value: Any, replacements: dict[str, str]) -> Any:
    if isinstance(value, dict):
        if set(value) == {"Ref"} and value["Ref"] in replacements:
            return replacements[value["Ref"]]
        return {k: _replace_refs(v, replacements) for k, v in value.items()}
    if isinstance(value, list):
        return [_replace_refs(v, replacements) for v in value]
    return value


def _create_secrets_by_hand(resources: dict[str, Any]) -> dict[str, str]:
    client = boto3.client("secretsmanager")
    made = {}
    for logical_id, resource in resources.items():
        if resource["Type"] == "AWS::SecretsManager::Secret":
            generated = resource["Properties"]["GenerateSecretString"]
            value = client.get_random_password(
                PasswordLength=generated["PasswordLength"],
                ExcludePunctuation=generated["ExcludePunctuation"],
            )["RandomPassword"]
            made[logical_id] = client.create_secret(Name=logical_id, SecretString=value)["ARN"]
    return made


def deploy(sam: dict[str, Any], code_zip: Path, stack_name: str) -> Stack:
    """Create the stack in moto (inside ``mock_aws``); raise unless it is complete."""
    s3 = boto3.client("s3")
    s3.create_bucket(Bucket=CODE_BUCKET)
    s3.put_object(Bucket=CODE_BUCKET, Key=CODE_KEY, Body=code_zip.read_bytes())
    template = to_cloudformation(sam)
    resources = template["Resources"]
    skipped = {k: v["Type"] for k, v in resources.items() if v["Type"] in UNSUPPORTED}
    secrets = _create_secrets_by_hand(resources)
    for logical_id in skipped:
        del resources[logical_id]
    template = _replace_refs(template, secrets)
    cloudformation = boto3.client("cloudformation")
    cloudformation.create_stack(
        StackName=stack_name,
        TemplateBody=json.dumps(template),
        Capabilities=["CAPABILITY_IAM", "CAPABILITY_AUTO_EXPAND"],
    )
    status = cloudformation.describe_stacks(StackName=stack_name)["Stacks"][0]["StackStatus"]
    if status != "CREATE_COMPLETE":
        raise AssertionError(f"stack {stack_name}: {status}")
    summaries = cloudformation.list_stack_resources(StackName=stack_name)["StackResourceSummaries"]
    physical = {
        s["LogicalResourceId"]: s.get("PhysicalResourceId", "")
        for s in summaries
        if s["ResourceStatus"] == "CREATE_COMPLETE"
    }
    missing = set(resources) - set(physical)
    if missing:
        raise AssertionError(f"not created: {sorted(missing)}")
    return Stack(stack_name, physical, skipped, secrets)
