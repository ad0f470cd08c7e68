"""Write :mod:`pawl._operations` from the OpenAPI document of the route table.

``python -m pawl._generate`` (or ``make sdk``) after a route changes. The document is the
one ``pawl <operation>`` is built from (:func:`chalicelib.wiring.openapi_document`), and the
method names are the CLI's command names with ``_`` for ``-`` (:func:`pawl.cli.ops.kebab_case`),
so the client, the CLI and the routes cannot drift apart: a test regenerates the module in
process and fails on any difference.

Path parameters are positional; query parameters and body fields are keyword-only and
typed from their JSON Schema; ``body=`` takes a whole body, the fields override it. Every
listing (an answer with ``data`` and ``next_cursor``) also gets an ``iter_...`` method that
follows the cursor. The output is already in ``ruff format``'s style (every call exploded
with a trailing comma), so formatting the file changes nothing.
"""

from __future__ import annotations

import dataclasses
import json
import keyword
import re
import sys
import textwrap
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pawl.cli.ops import METHODS, kebab_case

TARGET = Path(__file__).with_name("_operations.py")
LINE = 100
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


def _union(parts: list[str]) -> str:
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
            return _union(parts)
    if "allOf" in schema and len(schema["allOf"]) == 1:
        return annotation(schema["allOf"][0], components, literals, depth + 1)
    if literals and "enum" in schema and all(isinstance(v, str) for v in schema["enum"]):
        return "Literal[" + ", ".join(json.dumps(v) for v in schema["enum"]) + "]"
    if schema.get("enum"):
        return _union([SCALARS.get(_json_type(v), "Any") for v in schema["enum"]])
    if "const" in schema:
        return SCALARS.get(_json_type(schema["const"]), "Any")
    kind = schema.get("type")
    if isinstance(kind, list):
        return _union(
            [annotation({**schema, "type": k}, components, literals, depth) for k in kind]
        )
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
        Arg(python_name(name), name, _union(kinds), required[name] and len(kinds) >= variants)
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
    """Every operation of the document as a method, in the document's order."""
    components = document.get("components", {}).get("schemas", {})
    found = [
        method_of(http_method, path, item[http_method], components)
        for path, item in document["paths"].items()
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


# --- methods -> source ----------------------------------------------------------------------

HEADER = '''"""Every ``/api/v1`` operation as a method of ``pawl.Client`` and ``pawl.AsyncClient``.

Generated by ``python -m pawl._generate`` from the OpenAPI document of the route table: do
not edit. ``make sdk`` rewrites it after a route changes; tests/unit/test_sdk_operations.py
fails while this file and the routes disagree.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any, Literal

from pawl._base import OMIT, AsyncCaller, Json, Omit, SyncCaller, body_of, segment
'''

FLAVOURS = {
    "sync": ("SyncOperations", "SyncCaller", "def", "", "Iterator"),
    "async": ("AsyncOperations", "AsyncCaller", "async def", "await ", "AsyncIterator"),
}


def _docstring(lines: list[str], indent: str) -> list[str]:
    """A docstring of wrapped paragraphs (``lines``; an empty string separates them)."""
    text: list[str] = []
    width = LINE - len(indent) - 3  # the opening quotes
    for paragraph in lines:
        escaped = paragraph.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
        text.extend(textwrap.wrap(escaped, width) or [""])
    if len(text) == 1 and len(indent) + len(text[0]) + 6 <= LINE:
        return [f'{indent}"""{text[0]}"""']
    first, *rest = text
    body = [f"{indent}{line}" if line else "" for line in rest]
    return [f'{indent}"""{first}', *body, f'{indent}"""']


def _path_expression(method: Method) -> str:
    if not method.path_params:
        return json.dumps(method.path)
    path = method.path
    for name in method.path_params:
        path = path.replace("{" + name + "}", "{segment(" + python_name(name) + ")}")
    return "f" + json.dumps(path)


def _signature(method: Method, name: str, keyword: str, returns: str, paged: bool) -> list[str]:
    params = ["self"] + [f"{python_name(p)}: str" for p in method.path_params]
    keywords: list[str] = []
    for arg in method.query:
        if paged and arg.wire in {"cursor", "offset"}:
            continue
        default = "" if arg.required else " = None"
        optional = arg.annotation if arg.required else _union([arg.annotation, "None"])
        keywords.append(f"{arg.name}: {optional}{default}")
    keywords += [f"{arg.name}: {_union([arg.annotation, 'Omit'])} = OMIT" for arg in method.fields]
    if method.body_kind == "json":
        keywords.append("body: Mapping[str, Any] | None = None")
    elif method.body_kind == "raw":
        keywords.append("body: bytes | str")
    if keywords:
        params += ["*", *keywords]
    lines = [f"    {keyword} {name}("]
    lines += [f"        {param}," for param in params]
    lines.append(f"    ) -> {returns}:")
    return lines


def _mapping(key: str, args: tuple[Arg, ...], indent: str) -> list[str]:
    if not args:
        return [f"{indent}{key}{{}},"]
    inner = [f'{indent}    "{arg.wire}": {arg.name},' for arg in args]
    return [f"{indent}{key}{{", *inner, f"{indent}}},"]


def _call(method: Method, helper: str, awaited: str) -> list[str]:
    lines = [f"        return {awaited}self.{helper}(", f'            "{method.http_method}",']
    lines.append(f"            {_path_expression(method)},")
    if method.query:
        lines += _mapping("query=", method.query, "            ")
    if method.body_kind == "json":
        lines.append("            json=body_of(")
        lines.append("                body,")
        lines += _mapping("", method.fields, "                ")
        lines.append("            ),")
    elif method.body_kind == "raw":
        lines.append("            content=body,")
        lines.append(f'            content_type="{method.raw_media_type}",')
    lines.append("        )")
    return lines


def _operation(method: Method, flavour: str) -> list[str]:
    _, _, keyword, awaited, _ = FLAVOURS[flavour]
    returns = "None" if method.returns_nothing else "Json"
    doc = [method.summary or method.name, "", f"``{method.http_method} {method.path}``"]
    required = [f"``{arg.name}``" for arg in method.fields if arg.required]
    if required:
        doc += ["", "Required (as a keyword or in ``body``): " + ", ".join(required) + "."]
    lines = _signature(method, method.name, keyword, returns, paged=False)
    lines += _docstring(doc, "        ")
    helper = "_nothing" if method.returns_nothing else "_object"
    return lines + _call(method, helper, awaited)


def _iterator(method: Method, flavour: str) -> list[str]:
    iterator = FLAVOURS[flavour][4]
    doc = [
        f"Every item of :meth:`{method.name}`, page after page (``limit``: the page size).",
        "",
        f"``{method.http_method} {method.path}``, following ``next_cursor``",
    ]
    lines = _signature(method, method.iterator_name, "def", f"{iterator}[Json]", paged=True)
    lines += _docstring(doc, "        ")
    query = tuple(arg for arg in method.query if arg.wire not in {"cursor", "offset"})
    lines += [
        "        return self._pages(",
        f'            "{method.http_method}",',
        f"            {_path_expression(method)},",
    ]
    return lines + _mapping("", query, "            ") + ["        )"]


def _class(found: list[Method], flavour: str) -> list[str]:
    name, base, *_ = FLAVOURS[flavour]
    kind = "awaitable" if flavour == "async" else "blocking"
    lines = [f"class {name}({base}):"]
    lines += _docstring([f"Every operation of the API as a {kind} method."], "    ")
    for method in found:
        lines += ["", *_operation(method, flavour)]
        if method.paged:
            lines += ["", *_iterator(method, flavour)]
    return lines


LITERAL = re.compile(r"Literal\[[^\]]*\]")


def _pascal(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_"))


def _shortened(arg: Arg, alias_prefix: str, aliases: dict[str, str]) -> Arg:
    """``arg`` with each ``Literal[...]`` of a too-long line named by a module-level alias."""
    if len(f"        {arg.name}: {arg.annotation} | Omit | None = OMIT,") <= LINE:
        return arg

    def alias(match: re.Match[str]) -> str:
        return aliases.setdefault(match.group(0), alias_prefix + _pascal(arg.name))

    return dataclasses.replace(arg, annotation=LITERAL.sub(alias, arg.annotation))


def _with_aliases(found: list[Method]) -> tuple[list[Method], dict[str, str]]:
    """The methods with long literal types replaced by aliases, and the aliases."""
    aliases: dict[str, str] = {}
    shortened = []
    for method in found:
        prefix = _pascal(method.name)
        query = tuple(_shortened(arg, prefix, aliases) for arg in method.query)
        fields = tuple(_shortened(arg, prefix, aliases) for arg in method.fields)
        shortened.append(dataclasses.replace(method, query=query, fields=fields))
    return shortened, aliases


def _alias_lines(aliases: dict[str, str]) -> list[str]:
    lines = []
    for literal, name in aliases.items():
        values = literal.removeprefix("Literal[").removesuffix("]").split(", ")
        lines += [f"{name} = Literal[", *[f"    {value}," for value in values], "]"]
    return lines


def render(document: Mapping[str, Any]) -> str:
    """The source of :mod:`pawl._operations` for ``document``."""
    found, aliases = _with_aliases(methods(document))
    paged = sorted(method.name for method in found if method.paged)
    lines = [
        HEADER,
        "#: The longer choices of values (each first met where it is named).",
        *_alias_lines(aliases),
        "",
        "#: The operations whose answer is a page (``data``, ``next_cursor``): what",
        "#: ``paginate`` takes.",
        "PAGED_OPERATIONS = frozenset(",
        "    {",
        *[f'        "{name}",' for name in paged],
        "    }",
        ")",
        "",
        "",
        *_class(found, "sync"),
        "",
        "",
        *_class(found, "async"),
    ]
    return "\n".join(lines) + "\n"


def current_document() -> dict[str, Any]:
    """The document of the route table, as ``pawl <operation>`` reads it."""
    from chalicelib import wiring

    return wiring.openapi_document()


def main() -> int:
    TARGET.write_text(render(current_document()), encoding="utf-8")
    print(f"wrote {TARGET}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
