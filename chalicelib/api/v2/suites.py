"""Suite versions of a project: register, resolve a reference, list, read.

A registered suite version is a pawl dataset whose items are its tasks, in suite order
(each item's metadata carries ``taskId``, ``taskIndex`` and the task's ``expected``),
plus a row of facts (``store/openwop.py``) and the document in S3. Versions are
immutable: the same content again is accepted, different content is 409.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any

from chalicelib.errors import ValidationFailed
from chalicelib.openwop import errors, fixtures, suites
from chalicelib.store import datasets
from chalicelib.store import openwop as records

#: Advertised ``maxTasksPerSuite``: a run of a larger suite is refused at create.
MAX_TASKS_PER_SUITE = 1000
#: What registration itself accepts (a larger suite can be stored, not run).
MAX_TASKS_REGISTERED = 5000


@dataclass(frozen=True)
class Suite:
    """A suite version a run may name: registered (``record``) or a fixture not yet
    registered in this project (``document`` only)."""

    suite_id: str
    version: str
    modes: list[str]
    task_count: int
    has_rubric: bool
    document: dict[str, Any] | None = None
    record: dict[str, Any] | None = None


def facts_of(document: dict[str, Any]) -> dict[str, Any]:
    return {
        "suiteId": document["suiteId"],
        "version": document["version"],
        "hash": suites.content_hash(document),
        "modes": list(document["modes"]),
        "thresholds": dict(document.get("thresholds") or {}),
        "taskCount": len(document["tasks"]),
        "hasRubric": suites.has_rubric(document),
    }


def _suite(record: dict[str, Any]) -> Suite:
    return Suite(
        suite_id=record["suiteId"],
        version=record["version"],
        modes=list(record["modes"]),
        task_count=int(record["taskCount"]),
        has_rubric=bool(record["hasRubric"]),
        record=record,
    )


def _same_or_conflict(existing: dict[str, Any], wanted_hash: str) -> dict[str, Any]:
    if existing["hash"] != wanted_hash:
        raise errors.version_conflict(
            f"suite {existing['suiteId']} version {existing['version']} is already registered "
            "with different content; versions are immutable, register a new version"
        )
    return existing


def _materialize(project_id: str, document: dict[str, Any], facts: dict[str, Any]) -> str:
    """A new dataset holding the suite's tasks; returns its id (tasks recorded in facts)."""
    name = f"openwop {document['suiteId'][:120]}@{document['version']} {secrets.token_hex(4)}"
    dataset = datasets.create_dataset(project_id, name, "tasks of an OpenWOP suite (/v2)")
    try:
        contents = [
            datasets.NewItem(
                input=suites.input_messages(task["input"]),
                expected_output=None,
                metadata={
                    "taskId": task["taskId"],
                    "taskIndex": index,
                    "expected": task["expected"],
                },
            )
            for index, task in enumerate(document["tasks"])
        ]
        step = datasets.MAX_ITEMS_PER_TRANSACTION
        items = [
            item
            for start in range(0, len(contents), step)
            for item in datasets.create_items(
                dataset.id, project_id, contents[start : start + step]
            )
        ]
        facts["tasks"] = [
            [t["taskId"], item.id] for t, item in zip(document["tasks"], items, strict=True)
        ]
        facts["datasetId"] = dataset.id
        key = records.suite_document_key(project_id, facts["suiteId"], facts["version"])
        records.put_document(key, document)
    except Exception:
        datasets.delete_dataset(dataset)
        raise
    return dataset.id


def register(project_id: str, document: Any) -> tuple[dict[str, Any], bool]:
    """Register a suite version: ``(record, created)``; 400 invalid, 409 changed content."""
    document = suites.check(document)
    if len(document["tasks"]) > MAX_TASKS_REGISTERED:
        raise ValidationFailed(
            f"a suite holds at most {MAX_TASKS_REGISTERED} tasks here",
            limit=MAX_TASKS_REGISTERED,
        )
    facts = facts_of(document)
    pk = records.suite_key(project_id, facts["suiteId"])
    existing = records.get(pk, facts["version"])
    if existing is not None:
        return _same_or_conflict(existing, facts["hash"]), False
    dataset_id = _materialize(project_id, document, facts)
    if records.put_new(pk, facts["version"], project_id, facts):
        return facts, True
    # Another request registered this version meanwhile: ours is withdrawn.
    datasets.delete_dataset(datasets.get_dataset(dataset_id))
    winner = records.get(pk, facts["version"])
    assert winner is not None
    return _same_or_conflict(winner, facts["hash"]), False


def versions(project_id: str, suite_id: str) -> list[dict[str, Any]]:
    """The project's versions of a suite, oldest semver first."""
    found = records.query(records.suite_key(project_id, suite_id))
    return sorted(found, key=lambda r: suites.semver_key(r["version"]))


def record_of(project_id: str, suite_id: str, version: str) -> dict[str, Any] | None:
    return records.get(records.suite_key(project_id, suite_id), version)


def document_of(project_id: str, suite_id: str, version: str) -> dict[str, Any] | None:
    if record_of(project_id, suite_id, version) is None:
        return None
    return records.get_document(records.suite_document_key(project_id, suite_id, version))


def resolve(project_id: str, ref: str) -> Suite | None:
    """The suite version ``ref`` names for this project (reads only), or None."""
    fixture = fixtures.fixture(ref)
    if fixture is not None:
        registered = record_of(project_id, fixture["suiteId"], fixture["version"])
        if registered is not None and registered["hash"] == suites.content_hash(fixture):
            return _suite(registered)
        facts = facts_of(fixture)
        return Suite(
            suite_id=facts["suiteId"],
            version=facts["version"],
            modes=facts["modes"],
            task_count=facts["taskCount"],
            has_rubric=facts["hasRubric"],
            document=fixture,
        )
    parsed = suites.parse_ref(ref)
    if parsed.version is not None:
        record = record_of(project_id, parsed.suite_id, parsed.version)
        return _suite(record) if record is not None else None
    found = versions(project_id, parsed.suite_id)
    return _suite(found[-1]) if found else None


def registered(project_id: str, suite: Suite) -> dict[str, Any]:
    """The suite's record, registering a fixture in this project on its first run."""
    if suite.record is not None:
        return suite.record
    assert suite.document is not None
    record, _ = register(project_id, suite.document)
    return record
