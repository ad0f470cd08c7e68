"""``pawl <operation>``: one command per API operation, generated from the OpenAPI document.

The document is built from the route table (``routing.endpoint``), so a route declared
there is a command here with nothing else to write: ``startEvalRun`` is
``pawl start-eval-run``, its path and query parameters and the top-level fields of its
body are ``--kebab-case`` flags, and ``--body FILE|-`` supplies a whole body. The entry
point (:mod:`pawl.cli.main`) hands in the operations, read from the committed table
(:mod:`pawl.cli.operation_table`, written from the document by ``python -m
pawl.cli.generate``); this module never imports the app.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import re
import sys
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pawl.cli import names
from pawl.cli import render as cli_render
from pawl.transport import (
    DEFAULT_SERVER,
    NO_KEY_MESSAGE,
    ApiError,
    ServerUnreachable,
    refusal_hint,
)

EXIT_OK = 0
EXIT_ERROR = 2
METHODS = ("get", "post", "put", "patch", "delete")
#: Flags every operation has; a body field of the same name is set through ``--body``.
COMMON_FLAGS = frozenset({"server", "api-key", "output", "body", "help"})
#: Flags kept for commands written before the path parameter took SOAT's name
#: (``eval_run_id``, ``--eval-run-id``): pawl's CLI said ``--run-id``.
#: ``--eval``, ``--agent``, ``--dataset``: the resource's name or id (``pawl.cli.names``).
FLAG_ALIASES = {
    "eval_run_id": ("run-id",),
    "eval_id": ("eval",),
    "agent_id": ("agent",),
    "dataset_id": ("dataset",),
}


@dataclass(frozen=True)
class Param:
    """One flag: where its value goes (``path``, ``query`` or ``body``) and under what name."""

    name: str
    location: str
    required: bool
    help: str
    metavar: str = "VALUE"

    @property
    def flag(self) -> str:
        return kebab_case(self.name)


@dataclass(frozen=True)
class Operation:
    operation_id: str
    method: str
    path: str
    tag: str
    summary: str
    params: tuple[Param, ...]
    has_body: bool
    public: bool
    #: The media type of a body that is not one JSON object (``items:import``): ``--body``
    #: is sent as it is, and no body field is a flag.
    raw_media_type: str | None = None

    @property
    def command(self) -> str:
        return kebab_case(self.operation_id)


@functools.cache  # the table's 108 names are asked for several times a start-up
def kebab_case(name: str) -> str:
    """``startEvalRun`` -> ``start-eval-run``; ``eval_id`` -> ``eval-id``."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "-", name)
    return spaced.replace("_", "-").lower()


def _resolve(schema: Mapping[str, Any], components: Mapping[str, Any]) -> Mapping[str, Any]:
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/components/schemas/"):
        return _resolve(components[ref.rsplit("/", 1)[-1]], components)
    return schema


def _body_fields(
    schema: Mapping[str, Any], components: Mapping[str, Any]
) -> Iterator[tuple[str, Mapping[str, Any], bool]]:
    """(name, schema, required) of each top-level field, every variant of a union merged."""
    schema = _resolve(schema, components)
    required = set(schema.get("required", []))
    for name, field in schema.get("properties", {}).items():
        yield name, field, name in required
    for key in ("oneOf", "anyOf", "allOf"):
        for variant in schema.get(key, []):
            yield from _body_fields(variant, components)


METAVARS = {"string": "TEXT", "integer": "INT", "number": "NUMBER", "boolean": "true|false"}


def _metavar(field: Mapping[str, Any]) -> str:
    """What a value looks like: TEXT, INT, NUMBER, true|false, or JSON (arrays, objects)."""
    kinds = {field.get("type")} | {v.get("type") for v in field.get("anyOf", [])}
    kinds -= {None, "null"}
    if len(kinds) == 1:
        return METAVARS.get(str(kinds.pop()), "JSON")
    return "JSON"


def _describe(field: Mapping[str, Any], required: bool) -> str:
    text = str(field.get("description") or field.get("title") or "")
    return f"{text} (required)" if required else text


def _operation(
    method: str, path: str, spec: Mapping[str, Any], components: Mapping[str, Any]
) -> Operation:
    params: dict[str, Param] = {}
    for parameter in spec.get("parameters", []):
        name = parameter["name"]
        where = parameter["in"]
        metavar = "ID" if where == "path" else _metavar(parameter.get("schema", {}))
        params[name] = Param(name, where, bool(parameter.get("required")), f"({where})", metavar)
    body = spec.get("requestBody")
    raw_media_type = _raw_media_type(body)
    if body is not None and raw_media_type is None:
        schema = body["content"]["application/json"]["schema"]
        for name, field, required in _body_fields(schema, components):
            flag = kebab_case(name)
            taken = flag in COMMON_FLAGS or any(p.flag == flag for p in params.values())
            if name not in params and not taken:
                described = _describe(field, required)
                params[name] = Param(name, "body", required, described, _metavar(field))
    return Operation(
        operation_id=spec["operationId"],
        method=method.upper(),
        path=path,
        tag=(spec.get("tags") or ["other"])[0],
        summary=str(spec.get("summary", "")).replace("``", "`"),  # docstring markup
        params=tuple(params.values()),
        has_body=body is not None,
        public="security" not in spec,
        raw_media_type=raw_media_type,
    )


def _raw_media_type(body: Mapping[str, Any] | None) -> str | None:
    """The first media type of a body published as text rather than a JSON object."""
    if body is None:
        return None
    content = body["content"]
    json_schema = content.get("application/json", {}).get("schema", {})
    if "application/json" in content and json_schema.get("type") != "string":
        return None
    return next(iter(content))


def operations(document: Mapping[str, Any]) -> list[Operation]:
    """Every operation of the document, in its order."""
    components = document.get("components", {}).get("schemas", {})
    found = []
    for path, item in document["paths"].items():
        for method in METHODS:
            if method in item:
                found.append(_operation(method, path, item[method], components))
    return found


# --- argparse -------------------------------------------------------------------------------


def _add_common_flags(parser: argparse.ArgumentParser, has_body: bool) -> None:
    parser.add_argument("--server", help=f"default: $PAWL_SERVER, else {DEFAULT_SERVER}")
    parser.add_argument("--api-key", help="default: $PAWL_API_KEY")
    parser.add_argument(
        "--output",
        choices=("json", "table"),
        help="json (the API's answer) or table; default: table on a terminal, else json",
    )
    if has_body:
        parser.add_argument(
            "--body",
            metavar="FILE|-",
            help="the whole JSON body from a file or stdin; flags override its fields",
        )


def _add_param_flags(parser: argparse.ArgumentParser, op: Operation) -> None:
    own = {param.flag for param in op.params}
    for param in op.params:
        # An alias is added only where no parameter of the operation has that name.
        aliases = [f"--{a}" for a in FLAG_ALIASES.get(param.name, ()) if a not in own]
        parser.add_argument(
            f"--{param.flag}",
            *aliases,
            dest=f"param__{param.name}",
            metavar=param.metavar,
            required=param.required and param.location == "path",
            help=names.flag_help(param.name, param.help),
        )


def add_operations(
    commands: argparse._SubParsersAction[argparse.ArgumentParser], document: Mapping[str, Any]
) -> list[Operation]:
    """A subcommand per operation of an OpenAPI document (see :func:`add_operation_commands`)."""
    return add_operation_commands(commands, operations(document))


def add_operation_commands(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
    found: Iterable[Operation],
    only: str | None = None,
) -> list[Operation]:
    """A subcommand per operation (no ``help=``: the top-level help groups them itself);
    with ``only``, just that command's (the one being run: the others' flags cost start-up).

    A local command (``serve``, ``run``, ...) keeps its name: an operation that would take
    it is left out rather than break the whole command line.
    """
    added = []
    for op in found:
        if op.command in commands.choices or only not in (None, op.command):
            continue
        parser = commands.add_parser(
            op.command,
            description=f"{op.summary}\n\n{op.method} {op.path}  (operationId {op.operation_id})",
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        _add_param_flags(parser, op)
        _add_common_flags(parser, op.has_body)
        parser.set_defaults(func=lambda args, op=op: run_operation(op, args))
        added.append(op)
    return added


def grouped_help(found: list[Operation], width: int = 100) -> str:
    """The API commands by resource (the tag of each route), for ``pawl --help``."""
    lines = ["API commands, by resource (`pawl COMMAND --help` lists a command's flags):"]
    column = max((len(op.command) for op in found), default=0) + 2
    by_tag: dict[str, list[Operation]] = {}
    for op in found:
        by_tag.setdefault(op.tag, []).append(op)
    for tag, ops in by_tag.items():
        lines.append(f"\n  {tag}:")
        for op in ops:
            line = f"    {op.command:<{column}}{op.summary}"
            lines.append(line if len(line) <= width else line[: width - 3] + "...")
    return "\n".join(lines)


# --- running one --------------------------------------------------------------------------


def parse_value(text: str) -> Any:
    """A flag's value: JSON when it parses (``3``, ``true``, ``[...]``), else the string."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def _read_body(source: str | None) -> dict[str, Any]:
    if source is None:
        return {}
    text = sys.stdin.read() if source == "-" else Path(source).read_text(encoding="utf-8")
    body = json.loads(text)
    if not isinstance(body, dict):
        raise ValueError("--body must hold a JSON object")
    return body


def _read_raw_body(source: str | None) -> bytes:
    if source is None:
        raise ValueError("this operation takes its whole body from --body FILE|-")
    return sys.stdin.buffer.read() if source == "-" else Path(source).read_bytes()


@dataclass(frozen=True)
class Prepared:
    path: str
    query: dict[str, str]
    body: dict[str, Any] | None
    content: bytes | None = None


def prepare(op: Operation, args: argparse.Namespace) -> Prepared:
    """The request the flags describe (``ValueError`` when the body file is not JSON)."""
    source = getattr(args, "body", None)
    content = _read_raw_body(source) if op.raw_media_type else None
    body = _read_body(source) if op.has_body and content is None else None
    path = op.path
    query: dict[str, str] = {}
    for param in op.params:
        value = getattr(args, f"param__{param.name}")
        if value is None:
            continue
        if param.location == "path":
            path = path.replace("{" + param.name + "}", value)
        elif param.location == "query":
            query[param.name] = value
        elif body is not None:
            # A field that can only be a string takes the text as given (`--name 2024`).
            body[param.name] = value if param.metavar == "TEXT" else parse_value(value)
    return Prepared(path, query, body, content)


def _fail(op: Operation, message: str) -> int:
    print(f"pawl {op.command}: {message}", file=sys.stderr)
    return EXIT_ERROR


def run_operation(op: Operation, args: argparse.Namespace) -> int:
    """Send the request; print the answer; 0 on 2xx, 2 otherwise (the API's message)."""
    server = args.server or os.environ.get("PAWL_SERVER") or DEFAULT_SERVER
    api_key = args.api_key or os.environ.get("PAWL_API_KEY")
    if not api_key and not op.public:
        return _fail(op, NO_KEY_MESSAGE)
    try:
        from pawl.cli.sender import StdlibClient  # http.client: not for `--help`

        with StdlibClient(server, api_key) as client:
            names.resolve_args(op, args, client)  # `--eval support-faq`: the eval's id
            try:
                request = prepare(op, args)
            except (OSError, ValueError) as exc:
                return _fail(op, f"--body: {exc}")
            answer = client.send(
                op.method,
                request.path,
                body=request.body,
                params=request.query,
                content=request.content,
                content_type=op.raw_media_type,
            )
    except (ServerUnreachable, names.NameNotResolved) as exc:
        return _fail(op, str(exc))
    except ApiError as exc:
        return _fail(op, f"{exc.status} {exc.code}: {exc.message}{refusal_hint(exc.status)}")
    output = args.output or ("table" if sys.stdout.isatty() else "json")
    cli_render.render(answer, output, op.operation_id)
    return EXIT_OK
