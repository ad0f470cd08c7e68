"""The packaged stack deploys onto an emulated account, and pawl runs on what it created.

moto's CloudFormation creates the stack from the translated template; then pawl's own code
(the API, repositories and queue handlers) runs against the stack's tables, queues, bucket
and admin-key secret, with no :mod:`chalicelib.bootstrap` anywhere.
"""

from __future__ import annotations

import ast
import fnmatch
from collections.abc import Iterator
from typing import Any
from urllib.parse import unquote

import boto3
import pytest
from moto import mock_aws

from chalicelib import aws
from chalicelib.store.base import connection
from tests.conftest import Api, reset_process_state
from tests.infra.conftest import Packaged
from tests.infra.emulated_account import UNSUPPORTED, Stack, deploy
from tests.support.drain import drain_queues
from tests.support.servers import Reply, Request, serve

STACK = "pawl-dev"


@pytest.fixture
def stack(packaged: Packaged, monkeypatch: pytest.MonkeyPatch) -> Iterator[Stack]:
    with mock_aws():
        created = deploy(packaged.template, packaged.out / "deployment.zip", STACK)
        # moto would play Lambda's part of each mapping in Docker, which is not here;
        # drain_queues plays it instead, calling the same handlers the mappings name.
        lambda_client = boto3.client("lambda")
        for mapping in lambda_client.list_event_source_mappings()["EventSourceMappings"]:
            lambda_client.update_event_source_mapping(UUID=mapping["UUID"], Enabled=False)
        # What the stack gives every function (its template's Environment), nothing else.
        monkeypatch.setenv("PAWL_BUCKET", created.physical["BlobBucket"])
        monkeypatch.delenv("PAWL_ADMIN_KEY")
        monkeypatch.setenv("PAWL_ADMIN_KEY_SECRET_ARN", created.secrets["AdminKeySecret"])
        reset_process_state()
        yield created
        monkeypatch.undo()  # before settings are read again, outside the emulated account
    reset_process_state()


def test_only_unsupported_types_were_skipped(stack: Stack) -> None:
    assert set(stack.skipped.values()) <= set(UNSUPPORTED)
    created_types = {
        r["ResourceType"]
        for r in boto3.client("cloudformation").list_stack_resources(StackName=STACK)[
            "StackResourceSummaries"
        ]
    }
    for expected in ("AWS::DynamoDB::Table", "AWS::SQS::Queue", "AWS::S3::Bucket",
                     "AWS::IAM::Role", "AWS::Lambda::Function", "AWS::Lambda::EventSourceMapping",
                     "AWS::KMS::Key", "AWS::Events::Rule", "AWS::ApiGateway::RestApi"):  # fmt: skip
        assert expected in created_types


def test_event_source_mappings_connect_the_stacks_queues_to_its_functions(stack: Stack) -> None:
    mappings = boto3.client("lambda").list_event_source_mappings()["EventSourceMappings"]
    queues = {stack.physical[q] for q in ("QueueRuns", "QueueItems", "QueueWebhooks")}
    assert len(mappings) == 3
    for mapping in mappings:
        queue_name = mapping["EventSourceArn"].rsplit(":", 1)[-1]
        assert any(url.endswith("/" + queue_name) for url in queues)
        function = mapping["FunctionArn"].rsplit(":", 1)[-1]
        assert function in stack.physical.values()


class CallLog:
    """Every AWS operation pawl's clients make: (service, operation, params)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, dict[str, Any]]] = []

    def attach(self, client: Any) -> None:
        service = client.meta.service_model.signing_name
        client.meta.events.register(f"provide-client-params.{client.meta.service_model.service_name}",
                                    self._record(service))  # fmt: skip

    def _record(self, service: str) -> Any:
        def record(params: dict[str, Any], model: Any, **_: Any) -> None:
            self.calls.append((service, model.name, params))

        return record


def _agent(request: Request) -> Reply:
    question = request.json()["input"][-1]["content"]
    return Reply(body={"output": f"answer to {question}"})


def _a_key_with_a_policy(api: Api, project_id: str) -> None:
    """A policy (created, listed: a Scan) and a key carrying it (read on its request)."""
    document = {"statement": [{"effect": "Allow", "action": ["projects:GetProject"]}]}
    policy = api.post("/api/v1/policies", {"name": "reader", "document": document}).json
    assert [p["id"] for p in api.get("/api/v1/policies").json["data"]] == [policy["id"]]
    body = {"project_id": project_id, "name": "reader", "policy_ids": [policy["id"]]}
    reader = api.as_key(api.post("/api/v1/api-keys", body).json["key"])
    assert reader.get(f"/api/v1/projects/{project_id}").status == 200
    assert reader.get(f"/api/v1/datasets?project_id={project_id}").json["data"] == []


def _one_small_run(api: Api) -> dict[str, Any]:
    project = api.post("/api/v1/projects", {"name": "deployed"}).json
    _a_key_with_a_policy(api, project["id"])
    with serve(_agent) as agent_server:
        agent = api.post("/api/v1/agents", {
            "project_id": project["id"], "name": "remote", "type": "http",
            "config": {"url": agent_server.url + "/agent"},
        }).json  # fmt: skip
        dataset = api.post("/api/v1/datasets", {"project_id": project["id"], "name": "d"}).json
        for question in ("one", "two", "three"):
            body = {"input": [{"role": "user", "content": question}], "expected_output": question}
            assert api.post(f"/api/v1/datasets/{dataset['id']}/items", body).status == 201
        evaluation = api.post("/api/v1/evals", {
            "project_id": project["id"], "name": "e", "agent_id": agent["id"],
            "dataset_id": dataset["id"], "scorers": [{"type": "contains", "value": "answer"}],
        }).json  # fmt: skip
        runs = f"/api/v1/evals/{evaluation['id']}/runs"
        run = api.post(runs, {}).json
        assert run["status"] == "queued", run
        from app import app

        report = drain_queues(app)
        assert report.failed == 0 and report.delivered >= 2
        assert len(agent_server.requests) == 3
    return dict(api.get(f"{runs}/{run['id']}").json)


def test_a_run_goes_through_the_stacks_tables_and_queues(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    from chalice.test import Client

    from app import app
    from chalicelib import wiring
    from chalicelib.settings import get_settings
    from chalicelib.store import shards
    from chalicelib.store.models import FrozenItemModel, ResultModel, RunModel

    # One shard per work item: the three items' rows go to three hash keys (store.shards).
    monkeypatch.setenv("PAWL_RUN_SHARD_ITEMS", "1")
    wiring.reload_settings()

    admin_key = get_settings().admin_key
    secret = boto3.client("secretsmanager").get_secret_value(
        SecretId=stack.secrets["AdminKeySecret"]
    )["SecretString"]
    assert admin_key == secret and len(secret) == 48
    log = CallLog()
    for client in (aws.client("sqs"), aws.client("s3"), connection().client):
        log.attach(client)
    with Client(app) as client:
        done = _one_small_run(Api(client, key=admin_key))
    assert done["status"] == "completed", done
    assert (done["item_count"], done["completed_count"], done["errored_count"]) == (3, 3, 0)
    assert done["aggregate_scores"]["pass_rate"] == 1.0
    # A sharded run: its results, frozen items and counters under the shards' keys.
    assert int(RunModel.get(done["id"]).shards) == 3
    keys = shards.partitions(done["id"], 3)
    assert sum(len(list(ResultModel.query(key))) for key in keys) == 3
    assert sum(len(list(FrozenItemModel.query(key))) for key in keys) >= 1
    assert not list(ResultModel.query(done["id"]))
    # Everything pawl touched is the stack's: no table or queue appeared beside them.
    tables = set(boto3.client("dynamodb").list_tables()["TableNames"])
    assert tables == {stack.physical[k] for k in stack.physical if k.startswith("Table")}
    assert _not_allowed(log, _role_policy(stack)) == []


def _role_policy(stack: Stack) -> list[dict[str, Any]]:
    """The statements moto's IAM holds for the item worker's role (ARNs resolved)."""
    iam = boto3.client("iam")
    role = stack.physical["ExecuteItemsRole"]
    statements: list[dict[str, Any]] = []
    for name in iam.list_role_policies(RoleName=role)["PolicyNames"]:
        document = iam.get_role_policy(RoleName=role, PolicyName=name)["PolicyDocument"]
        if isinstance(document, str):
            # moto's CloudFormation stores an inline policy as the repr of a Python dict.
            document = ast.literal_eval(unquote(document))
        statements += document["Statement"]
    return statements


#: An operation and the IAM actions it needs (a transaction needs each item's action).
NEEDS = {
    "TransactWriteItems": ["PutItem", "UpdateItem", "DeleteItem", "ConditionCheckItem"],
    "TransactGetItems": ["GetItem"],
    # PartiQL: each statement is authorized by its own action on its table.
    "BatchExecuteStatement": ["PartiQLInsert"],
    "DeleteObjects": ["DeleteObject"],
    # SQS authorizes a batch call by the single message action.
    "SendMessageBatch": ["SendMessage"],
    "DeleteMessageBatch": ["DeleteMessage"],
    "ChangeMessageVisibilityBatch": ["ChangeMessageVisibility"],
}


def _resources(service: str, params: dict[str, Any]) -> list[str]:
    account = "arn:aws:{}:us-east-1:123456789012:{}"
    if service == "dynamodb":
        names = [params["TableName"]] if "TableName" in params else []
        names += list(params.get("RequestItems", {}))
        for item in params.get("TransactItems", []):
            names += [op["TableName"] for op in item.values()]
        for statement in params.get("Statements", []):
            names.append(statement["Statement"].split('"')[1])  # INSERT INTO "<table>" ...
        if "IndexName" in params:
            names = [f"{params['TableName']}/index/{params['IndexName']}"]
        return [account.format("dynamodb", f"table/{n}") for n in names]
    if service == "sqs":
        queue = params.get("QueueUrl", "").rsplit("/", 1)[-1] or params.get("QueueName", "")
        return [account.format("sqs", queue)]
    return [f"arn:aws:s3:::{params['Bucket']}/{params.get('Key', '*')}"]


def _allows(statements: list[dict[str, Any]], action: str, resource: str) -> bool:
    for statement in statements:
        actions = (
            statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        )
        resources = (
            statement["Resource"]
            if isinstance(statement["Resource"], list)
            else [statement["Resource"]]
        )
        if action in actions and any(fnmatch.fnmatchcase(resource, r) for r in resources):
            return True
    return False


def _not_allowed(log: CallLog, statements: list[dict[str, Any]]) -> list[str]:
    """Calls the generated least-privilege policy would refuse on AWS."""
    refused = []
    for service, operation, params in log.calls:
        if service == "s3" and "Bucket" not in params:
            continue  # (none expected: pawl lists no buckets once deployed)
        for needed in NEEDS.get(operation, [operation]):
            for resource in _resources(service, params):
                if not _allows(statements, f"{service}:{needed}", resource):
                    refused.append(f"{service}:{needed} on {resource}")
    assert log.calls, "no AWS call was recorded"
    return sorted(set(refused))
