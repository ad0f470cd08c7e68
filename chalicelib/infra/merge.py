"""Assemble the merge template: pawl's resources plus properties of Chalice's functions."""

from __future__ import annotations

from typing import Any

from chalice import Chalice
from chalice.app import CloudWatchEventConfig, ScheduledEventConfig, SQSEventConfig
from chalice.utils import to_cfn_resource_name

from chalicelib.infra import names
from chalicelib.infra.definitions import API_TIMEOUT_S, QueueSpec, queue_specs, table_specs
from chalicelib.infra.gateway_responses import GATEWAY_RESPONSES, response_template
from chalicelib.infra.stage import Stage
from chalicelib.infra.template import (
    FUNCTION_MEMORY_MB,
    SCHEDULE_TIMEOUT_S,
    Options,
    alarm_resources,
    function_environment,
    queue_resources,
    secret_resources,
    storage_resources,
    table_resource,
)

#: Chalice's logical id of the one Lambda that serves every route.
API_FUNCTION = "APIHandler"


def gateway_responses() -> dict[str, Any]:
    """API Gateway's own refusals in pawl's ``/api/v1`` error envelope."""
    responses = {}
    for response_type, answer in sorted(GATEWAY_RESPONSES.items()):
        responses[response_type] = {
            "StatusCode": answer.status,
            "ResponseTemplates": {"application/json": response_template(answer)},
        }
    return responses


def _function(stage: Stage, timeout_s: int) -> dict[str, Any]:
    return {
        "Properties": {
            "Timeout": timeout_s,
            "MemorySize": FUNCTION_MEMORY_MB,
            "Environment": {"Variables": function_environment(stage)},
        }
    }


def _sqs_event_id(config: SQSEventConfig) -> str:
    return to_cfn_resource_name(f"{config.name}-sqs-event-source")  # as Chalice names it


def _sqs_consumer(stage: Stage, config: SQSEventConfig, spec: QueueSpec) -> dict[str, Any]:
    function = _function(stage, spec.function_timeout_s)
    function["Properties"]["Events"] = {
        _sqs_event_id(config): {
            "Properties": {
                "FunctionResponseTypes": ["ReportBatchItemFailures"],
                "ScalingConfig": {"MaximumConcurrency": spec.max_concurrency},
            }
        }
    }
    return function


def link_event_sources(template: dict[str, Any], stage: Stage, app: Chalice) -> None:
    """Point each SQS event source at the stack's queue resource instead of a name.

    Chalice writes the queue's ARN as a string (``Fn::Sub`` of its name), which tells
    CloudFormation nothing about order: the mapping could be created before its queue.
    A ``GetAtt`` makes the dependency real. The merge template cannot do this (a deep merge
    would keep Chalice's ``Fn::Sub`` beside it), so ``package`` applies it afterwards.
    """
    by_queue = {spec.name: spec for spec in queue_specs(stage.settings)}
    for config in app.event_sources:
        if isinstance(config, SQSEventConfig):
            function = template["Resources"][to_cfn_resource_name(config.name)]
            event = function["Properties"]["Events"][_sqs_event_id(config)]
            spec = by_queue[config.queue or ""]
            event["Properties"]["Queue"] = {"Fn::GetAtt": [names.queue_id(spec.role), "Arn"]}


def function_overrides(stage: Stage, app: Chalice) -> dict[str, Any]:
    """Per Chalice function: timeout, memory, environment, event source settings."""
    by_queue = {spec.name: spec for spec in queue_specs(stage.settings)}
    overrides = {API_FUNCTION: _function(stage, API_TIMEOUT_S)}
    for config in app.event_sources:
        logical_id = to_cfn_resource_name(config.name)
        if isinstance(config, SQSEventConfig):
            spec = by_queue.get(config.queue or "")
            if spec is None:
                raise ValueError(f"{config.name} reads {config.queue!r}, which is no pawl queue")
            overrides[logical_id] = _sqs_consumer(stage, config, spec)
        elif isinstance(config, (ScheduledEventConfig, CloudWatchEventConfig)):
            overrides[logical_id] = _function(stage, SCHEDULE_TIMEOUT_S)
        else:
            raise ValueError(f"{config.name}: no infra for {type(config).__name__}")
    return overrides


def merge_template(stage: Stage, app: Chalice, options: Options) -> dict[str, Any]:
    """The whole ``--merge-template`` for ``stage``."""
    resources: dict[str, Any] = {}
    for table in table_specs(stage.settings):
        resources[names.table_id(table.short_name)] = table_resource(table, options)
    for queue in queue_specs(stage.settings):
        resources.update(queue_resources(queue))
        resources.update(alarm_resources(queue))
    resources.update(storage_resources(options))
    resources.update(secret_resources(stage))
    resources.update(function_overrides(stage, app))
    resources[names.REST_API] = {
        "Properties": {"Name": f"pawl-{stage.name}", "GatewayResponses": gateway_responses()}
    }
    outputs = {
        "AdminKeySecretArn": {"Value": {"Ref": names.ADMIN_KEY_SECRET}},
        "BlobBucketName": {"Value": {"Ref": names.BUCKET}},
        "AlarmTopicArn": {"Value": {"Ref": names.ALARM_TOPIC}},
    }
    return {"Resources": resources, "Outputs": outputs}
