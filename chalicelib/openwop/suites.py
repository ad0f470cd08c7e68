"""An ``AgentEvalSuite`` document: validation, identity, and how its tasks become items.

A suite is validated against the vendored ``agent-eval-suite.schema.json`` (closed
objects, the ``suiteId`` pattern, a semver ``version``) plus the rules the schema states
in prose: task ids are unique within the suite, and a ``golden`` task carries ``match``,
a ``rubric`` task carries ``rubric``.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

from chalicelib.errors import ValidationFailed
from chalicelib.openwop import schemas

#: ``suiteId@version``: the version of a reference (a bare ``suiteId`` means the newest).
REF = re.compile(r"^(?P<suite>[^@]+)@(?P<version>[0-9]+\.[0-9]+\.[0-9]+)$")
MAX_PROBLEMS = 10


@dataclass(frozen=True)
class SuiteRef:
    suite_id: str
    version: str | None


def parse_ref(ref: str) -> SuiteRef:
    """``suiteId@version`` or a bare ``suiteId`` (fixture ids are resolved before this)."""
    match = REF.match(ref)
    if match:
        return SuiteRef(match["suite"], match["version"])
    return SuiteRef(ref, None)


def _where(path: Any) -> str:
    return "/".join(str(p) for p in path) or "(root)"


def problems(document: Any) -> list[dict[str, str]]:
    """Every problem of ``document`` as a suite, ``[]`` when it is a valid suite."""
    found = [
        {"path": _where(error.absolute_path), "message": error.message}
        for error in sorted(
            schemas.suite_validator().iter_errors(document), key=lambda e: list(e.absolute_path)
        )
    ]
    if found or not isinstance(document, dict):
        return found[:MAX_PROBLEMS]
    seen: set[str] = set()
    for index, task in enumerate(document["tasks"]):
        if task["taskId"] in seen:
            found.append(
                {"path": f"tasks/{index}/taskId", "message": f"{task['taskId']!r} is repeated"}
            )
        seen.add(task["taskId"])
        expected = task["expected"]
        needed = "match" if expected["kind"] == "golden" else "rubric"
        if needed not in expected:
            found.append(
                {
                    "path": f"tasks/{index}/expected",
                    "message": f"a {expected['kind']} task needs expected.{needed}",
                }
            )
    return found[:MAX_PROBLEMS]


def check(document: Any) -> dict[str, Any]:
    """``document`` when it is a valid suite, else 400 listing what is wrong."""
    found = problems(document)
    if found:
        summary = "; ".join(f"{p['path']}: {p['message']}" for p in found[:3])
        raise ValidationFailed(f"not a valid AgentEvalSuite: {summary}", problems=found)
    assert isinstance(document, dict)
    return document


def content_hash(document: dict[str, Any]) -> str:
    """Identity of a suite's content: key order and whitespace do not matter."""
    canonical = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def input_messages(task_input: Any) -> list[dict[str, str]]:
    """A task's ``input`` as the agent's messages.

    A string is one user message; a list of ``{role, content}`` messages is used as is;
    anything else is one user message holding its JSON.
    """
    if isinstance(task_input, str):
        return [{"role": "user", "content": task_input}]
    if isinstance(task_input, list) and task_input and all(_is_message(m) for m in task_input):
        return [{"role": m["role"], "content": m["content"]} for m in task_input]
    return [{"role": "user", "content": json.dumps(task_input, ensure_ascii=False)}]


def _is_message(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and set(value) == {"role", "content"}
        and value["role"] in {"system", "user", "assistant", "tool"}
        and isinstance(value["content"], str)
    )


def has_rubric(document: dict[str, Any]) -> bool:
    return any(task["expected"]["kind"] == "rubric" for task in document["tasks"])


def semver_key(version: str) -> tuple[int, int, int]:
    major, minor, patch = (int(part) for part in version.split("."))
    return major, minor, patch
