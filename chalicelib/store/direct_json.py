"""DynamoDB requests encoded by ``json.dumps`` instead of botocore's walk over the shapes.

For the JSON protocol botocore's serializer copies the parameters member by member along
the operation's input shape, and changes values only for blobs (base64), timestamps and
renamed members. The item operations pawl sends have neither renamed members nor
timestamps, and pawl's models hold no binary attributes (``tests/unit/test_direct_json.py``
checks both against the installed service model), so for them the copy equals the
parameters and ``json.dumps(parameters)`` is the same body at a fraction of the CPU: the
walk was a fifth of pawl's CPU per item, most of it over a batch's TransactWriteItems.
Any value ``json.dumps`` cannot encode as is (bytes, a datetime) goes through botocore's
own serializer, and so does every other operation.

Answers likewise: for the successful answers of those operations botocore's parser walks
``json.loads``' result along the output shape only to rebuild the same dicts (blobs aside),
so they are taken as ``json.loads`` gives them; an answer holding a binary value, an error
and every other operation go through botocore's parser.

botocore has no public hook for this: :func:`install` replaces the client's serializer
(``client._serializer``, or the one inside its validating wrapper) and its endpoint's
parser factory (``client._endpoint._response_parser_factory``) only when it finds the
classes it was written for; otherwise it leaves that part alone and logs why.
"""

from __future__ import annotations

import json
import logging
import re
from typing import Any

from botocore.parsers import JSONParser, ResponseParserFactory
from botocore.serialize import JSONSerializer
from botocore.validate import ParamValidationDecorator

log = logging.getLogger("pawl.store.direct_json")

#: The operations whose parameters are sent as they are (their inputs: structures, maps,
#: lists, strings, numbers, booleans, and AttributeValues).
DIRECT_OPERATIONS = frozenset(
    {
        "BatchGetItem",
        "BatchWriteItem",
        "DeleteItem",
        "GetItem",
        "PutItem",
        "Query",
        "Scan",
        "TransactGetItems",
        "TransactWriteItems",
        "UpdateItem",
    }
)


#: Their successful answers, likewise: structures, lists, maps, strings, numbers, booleans.
DIRECT_OUTPUTS = frozenset(f"{name}Output" for name in DIRECT_OPERATIONS)
#: A binary AttributeValue in an answer (botocore base64-decodes those): botocore parses it.
_BINARY = re.compile(rb'"BS?"\s*:')


class DirectJSONSerializer(JSONSerializer):
    """botocore's JSON serializer, with the body of :data:`DIRECT_OPERATIONS` encoded directly."""

    def serialize_to_request(self, parameters: Any, operation_model: Any) -> Any:
        if operation_model.name not in DIRECT_OPERATIONS:
            return super().serialize_to_request(parameters, operation_model)
        try:
            body = json.dumps(parameters).encode(self.DEFAULT_ENCODING)
        except (TypeError, ValueError):  # bytes, datetimes...: botocore converts them
            return super().serialize_to_request(parameters, operation_model)
        metadata = operation_model.metadata
        serialized = self._create_default_request()
        serialized["method"] = operation_model.http.get("method", self.DEFAULT_METHOD)
        serialized["headers"] = {
            "X-Amz-Target": f"{metadata['targetPrefix']}.{operation_model.name}",
            "Content-Type": f"application/x-amz-json-{metadata['jsonVersion']}",
        }
        self._handle_query_compatible_trait(operation_model, serialized)
        serialized["body"] = body
        host_prefix = self._expand_host_prefix(parameters, operation_model)
        if host_prefix is not None:
            serialized["host_prefix"] = host_prefix
        return serialized


class DirectJSONParser(JSONParser):
    """botocore's JSON parser, with the successful answers of :data:`DIRECT_OPERATIONS`
    taken as ``json.loads`` gives them (no walk along the output shape)."""

    def _do_parse(self, response: Any, shape: Any) -> Any:
        body = response["body"]
        if shape is None or shape.name not in DIRECT_OUTPUTS or _BINARY.search(body):
            return super()._do_parse(response, shape)
        parsed = self._parse_body_as_json(body)
        self._inject_response_metadata(parsed, response["headers"])
        return parsed


class _DirectParserFactory(ResponseParserFactory):
    def create_parser(self, protocol_name: str) -> Any:
        if protocol_name == "json":
            return DirectJSONParser(**self._defaults)
        return super().create_parser(protocol_name)


def install(client: Any) -> bool:
    """Both directions: :func:`install_serializer` and :func:`install_parser`."""
    return install_serializer(client) & install_parser(client)


def install_parser(client: Any) -> bool:
    """Parse ``client``'s item operation answers directly; False (nothing changed, and a log
    line) if its endpoint is not built the way this was written for."""
    endpoint: Any = getattr(client, "_endpoint", None)
    factory: Any = getattr(endpoint, "_response_parser_factory", None)
    if type(factory) is not ResponseParserFactory:
        log.warning("botocore's DynamoDB endpoint is not as expected: its own parser stays")
        return False
    direct = _DirectParserFactory()
    direct._defaults = dict(factory._defaults)
    endpoint._response_parser_factory = direct
    return True


def install_serializer(client: Any) -> bool:
    """Serialize ``client``'s item operations directly. False (and a log line) if the
    client is not built the way this was written for (botocore changed): then nothing
    changes. A validating client (``parameter_validation``) keeps validating."""
    outer: Any = getattr(client, "_serializer", None)
    validating = isinstance(outer, ParamValidationDecorator)
    inner: Any = getattr(outer, "_serializer", None) if validating else outer
    if type(inner) is not JSONSerializer:
        log.warning("botocore's DynamoDB client is not as expected: its own serializer stays")
        return False
    direct = DirectJSONSerializer()
    direct._timestamp_precision = inner._timestamp_precision
    if validating:
        outer._serializer = direct
    else:
        client._serializer = direct
    return True
