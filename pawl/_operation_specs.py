"""The operations of the OpenAPI document as the client's methods: names, parameters, types.

What :mod:`pawl._generate` writes :mod:`pawl._operations` from. The names are the CLI's
command names with ``_`` for ``-`` (:func:`pawl.cli.ops.kebab_case`, the function ``pawl
<operation>`` uses), so a method and its command are always spelled alike. Path parameters
are positional; query parameters and body fields are keyword-only and typed from their JSON
Schema; every listing (an answer with ``data`` and ``next_cursor``) gets an ``iter_...``
method as well.
"""

from __future__ import annotations

import json
import keyword
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from pawl.cli.ops import METHODS, kebab_case

#: Body fields and query parameters the client never takes as keywords.
RESERVED = frozenset({"self", "body"})
SCALARS = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "None"}


@dataclass(frozen=True)
class Arg:
    """One keyword of a method: its Python name, its wire name, its annotation."""

    name: str
    wire: str
    annotation: str
    required: bool


@dataclass(frozen=True)
class Method:
    name: str
    http_method: str
    path: str
    summary: str
    path_params: tuple[str, ...]
    query: tuple[Arg, ...]
    fields: tuple[Arg, ...]
    #: "json" (a JSON object), "raw" (text of a media type) or "" (no body).
    body_kind: str
    raw_media_type: str | None
    returns_nothing: bool
    paged: bool

    @property
    def iterator_name(self) -> str:
        return "iter_" + self.name.removeprefix("list_")


def python_name(wire: str) -> str:
    """``from`` -> ``from_``: a wire name that is a Python keyword gets a trailing ``_``."""
    return f"{wire}_" if keyword.iskeyword(wire) else wire


# --- JSON Schema -> annotation ------------------------------------------------------------


def _resolve(schema: Mapping[str, Any], components: Mapping[str, Any]) -> Mapping[str, Any]:
    seen: set[str] = set()
    while isinstance(schema.get("$ref"), str) and schema["$ref"] not in seen:
        seen.add(schema["$ref"])
        schema = components[schema["$ref"].rsplit("/", 1)[-1]]
    return schema


def members(annotation_text: str) -> list[str]:
    """The members of a union annotation (``|`` outside brackets splits it)."""
    found, depth, start = [], 0, 0
    for at, char in enumerate(annotation_text):
        depth += {"[": 1, "]": -1}.get(char, 0)
        if char == "|" and depth == 0:
            found.append(annotation_text[start:at].strip())
            start = at + 1
    return [*found, annotation_text[start:].strip()]


#: Where a union's members go last, in this order (ruff's RUF036: ``None`` comes last).
LAST = {"Omit": 1, "None": 2}


def union(parts: list[str]) -> str:
    unique = list(dict.fromkeys(m for part in parts for m in members(part)))
    if "Any" in unique:
        return "Any"
    unique.sort(key=lambda part: LAST.get(part, 0))
    return " | ".join(unique) if unique else "Any"


def annotation(
    schema: Mapping[str, Any], components: Mapping[str, Any], literals: bool = True, depth: int = 0
) -> str:
    """A Python annotation for values of ``schema``; objects are ``dict[str, Any]``.

    An ``enum`` becomes a ``Literal`` only where ``literals`` (query parameters: the
    service's own filters). A body's choices are often the deployment's own (agent, tool
    and scorer types come from plugins, the python agent from the operator's allow-list),
    so there they are ``str``: the module is the same whatever is installed, and a choice
    pawl does not know is refused by the server, naming the field.
    """
    schema = _resolve(schema, components)
    if depth > 4:
        return "Any"
    for key in ("anyOf", "oneOf"):
        if key in schema:
            parts = [annotation(s, components, literals, depth + 1) for s in schema[key]]
            return union(parts)
    if "allOf" in schema and len(schema["allOf"]) == 1:
        return annotation(schema["allOf"][0], components, literals, depth + 1)
    if literals and "enum" in schema and all(isinstance(v, str) for v in schema["enum"]):
        return "Literal[" + ", ".join(json.dumps(v) for v in schema["enum"]) + "]"
    if schema.get("enum"):
        return union([SCALARS.get(_json_type(v), "Any") for v in schema["enum"]])
    if "const" in schema:
        return SCALARS.get(_json_type(schema["const"]), "Any")
    kind = schema.get("type")
    if isinstance(kind, list):
        return union([annotation({**schema, "type": k}, components, literals, depth) for k in kind])
    if kind == "array":
        items = schema.get("items")
        item = annotation(items, components, literals, depth + 1) if items else "Any"
        return f"list[{item}]"
    if kind == "object":
        return "dict[str, Any]"
    return SCALARS.get(str(kind), "Any")


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    return "string" if isinstance(value, str) else "object"


# --- the document -> methods --------------------------------------------------------------


def _body_fields(
    schema: Mapping[str, Any], components: Mapping[str, Any]
) -> Iterator[tuple[str, str, bool]]:
    """(name, annotation, required) of each top-level field, every variant of a union."""
    schema = _resolve(schema, components)
    required = set(schema.get("required", []))
    for name, field in schema.get("properties", {}).items():
        yield name, annotation(field, components, literals=False), name in required
    for key in ("oneOf", "anyOf", "allOf"):
        for variant in schema.get(key, []):
            yield from _body_fields(variant, components)


def _merged_fields(
    schema: Mapping[str, Any], components: Mapping[str, Any], taken: set[str]
) -> tuple[Arg, ...]:
    """One keyword per field name; a field of several variants takes the union of types.

    Required only when every variant requires it (reported in the docstring: the keyword
    itself is optional, since ``body=`` may carry it).
    """
    types: dict[str, list[str]] = {}
    required: dict[str, bool] = {}
    for name, found, needed in _body_fields(schema, components):
        types.setdefault(name, []).append(found)
        required[name] = required.get(name, True) and needed
    variants = len(_resolve(schema, components).get("oneOf", [])) or 1
    return tuple(
        Arg(python_name(name), name, union(kinds), required[name] and len(kinds) >= variants)
        for name, kinds in types.items()
        if name not in taken and python_name(name) not in RESERVED
    )


def _raw_media_type(body: Mapping[str, Any] | None) -> str | None:
    """The media type of a body sent as text (``items:import``), as :mod:`pawl.cli.ops` reads
    it; None for a JSON object or no body."""
    if body is None:
        return None
    content: Mapping[str, Any] = body["content"]
    first = str(next(iter(content)))
    if content.get("application/json", {}).get("schema", {}).get("type") == "string":
        return first
    return None if "application/json" in content else first


def _is_page(spec: Mapping[str, Any], components: Mapping[str, Any]) -> bool:
    ok = spec["responses"].get("200", {}).get("content", {}).get("application/json", {})
    properties = _resolve(ok.get("schema", {}), components).get("properties", {})
    return {"data", "next_cursor"} <= set(properties)


def method_of(
    http_method: str, path: str, spec: Mapping[str, Any], components: Mapping[str, Any]
) -> Method:
    path_params: list[str] = []
    query: list[Arg] = []
    for parameter in spec.get("parameters", []):
        if parameter["in"] == "path":
            path_params.append(parameter["name"])
        elif parameter["in"] == "query":
            kind = annotation(parameter.get("schema", {}), components)
            name = python_name(parameter["name"])
            query.append(Arg(name, parameter["name"], kind, bool(parameter.get("required"))))
    body = spec.get("requestBody")
    raw = _raw_media_type(body)
    fields: tuple[Arg, ...] = ()
    if body is not None and raw is None:
        taken = {*path_params, *(arg.wire for arg in query)}
        schema = body["content"]["application/json"]["schema"]
        fields = _merged_fields(schema, components, taken)
    success = [status for status in spec["responses"] if status.startswith("2")]
    query_names = {arg.wire for arg in query}
    return Method(
        name=kebab_case(spec["operationId"]).replace("-", "_"),
        http_method=http_method.upper(),
        path=path,
        summary=str(spec.get("summary", "")).strip(),
        path_params=tuple(path_params),
        query=tuple(query),
        fields=fields,
        body_kind="" if body is None else ("raw" if raw else "json"),
        raw_media_type=raw,
        returns_nothing=success == ["204"],
        paged="cursor" in query_names and _is_page(spec, components),
    )


def methods(document: Mapping[str, Any]) -> list[Method]:
    """Every operation of the document as a method, sorted by path then method.

    Not the document's order: that follows which route module a process imported first, so
    the generated module would differ after other tests ran.
    """
    components = document.get("components", {}).get("schemas", {})
    found = [
        method_of(http_method, path, item[http_method], components)
        for path, item in sorted(document["paths"].items())
        for http_method in METHODS
        if http_method in item
    ]
    _check_names(found)
    return found


#: What the client classes define themselves: an operation may not take these names.
CLIENT_OWN = frozenset({"close", "aclose", "paginate"})


def _check_names(found: list[Method]) -> None:
    """Refuse a document whose names would collide (one method hiding another)."""
    names = [m.name for m in found] + [m.iterator_name for m in found if m.paged]
    repeated = sorted({name for name in names if names.count(name) > 1})
    clashes = sorted(CLIENT_OWN.intersection(names))
    if repeated or clashes:
        raise ValueError(
            f"operation names collide: {', '.join(repeated + clashes)} "
            "(rename the route's operationId)"
        )
