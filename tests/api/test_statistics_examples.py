"""Every worked example in docs/statistics.md, executed against the API.

A ```` ```json pawl-example ```` block describes an eval, the per-trial scores of a baseline
run and a current run, and what the API answers. This test builds exactly that: an eval
whose agent (``tests.support.agents:scores``) answers each item's scripted scores and whose
scorer (``numeric``, ``tests/support/numeric.py``) scores a trial with the number it
answered, runs the baseline, runs the current run against it, drains the queues as Lambda
would, and checks every ``expect`` path on the current run (or on the answer of the block's
``request``).

The block format (``docs/statistics.md``, "Executable worked examples"):

- ``title`` (required, unique): the test's id.
- ``eval``: fields of the eval's create body (``scorers`` defaults to ``[{"type":
  "numeric"}]``, ``max_concurrency`` to 1 so an item's trials run in order).
- ``pairs`` (pass/fail items: counts of ``pass->pass``, ``pass->fail``, ``fail->pass``,
  ``fail->fail``; each trial of such an item scores 1 or 0) **or** ``items`` (a list of
  ``{"baseline": [score per trial], "current": [score per trial], "metadata": {...}}``;
  scores 0..1, a trial passes at >= 0.5; no ``baseline`` on any item: one run, no baseline).
- ``run``: extra fields of the current run's start body (``early_stop``, ...).
- ``request``: ``"GET /api/v1/..."`` with ``{eval_id}``, ``{run_id}``, ``{baseline_run_id}``
  substituted; ``expect`` is then checked on its answer (which must be a 200). The same
  three are substituted in ``expect``'s string values (``"inputs.run_id": "{run_id}"``).
- ``expect``: ``{"dotted.path[0].key": value}``; a float matches when the actual value rounds
  to it at the decimals written (``-0.301`` matches -0.30149), ``null`` means the key is
  there and null, anything else must be equal (a bool only to a bool).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from chalicelib.domain.runs import TERMINAL_STATUSES
from tests.support import agents
from tests.support.drain import drain_queues
from tests.support.numeric import NumericPlugin
from tests.support.runs import EventLog, HostWith, ProbePlugin

DOC = Path(__file__).resolve().parents[2] / "docs" / "statistics.md"
BLOCK = re.compile(r"^```json pawl-example[ \t]*\n(.*?)^```[ \t]*$", re.DOTALL | re.MULTILINE)
KEYS = {"title", "eval", "pairs", "items", "run", "request", "expect"}
PAIR_KEYS = {"pass->pass": (1.0, 1.0), "pass->fail": (1.0, 0.0)}
PAIR_KEYS |= {"fail->pass": (0.0, 1.0), "fail->fail": (0.0, 0.0)}
ITEM_KEYS = {"baseline", "current", "metadata"}
SCORES_AGENT = "tests.support.agents:scores"
#: What one import request holds (DynamoDB's 100 operations per transaction, one the check).
IMPORT_CHUNK = 99


class Written(float):
    """A float from the document that remembers how many decimals it was written with."""

    decimals: int

    def __new__(cls, text: str) -> Written:
        value = super().__new__(cls, text)
        exponent = Decimal(text).as_tuple().exponent
        value.decimals = max(0, -exponent) if isinstance(exponent, int) else 0
        return value


@dataclass
class Block:
    line: int
    text: str

    @property
    def id(self) -> str:
        try:
            title = json.loads(self.text).get("title")
        except (ValueError, AttributeError):
            title = None
        return str(title) if title else f"line {self.line} (no readable title)"


def blocks() -> list[Block]:
    text = DOC.read_text(encoding="utf-8")
    return [Block(text.count("\n", 0, m.start()) + 1, m.group(1)) for m in BLOCK.finditer(text)]


# --- reading and checking a block ------------------------------------------------------------


def parse(block: Block) -> dict[str, Any]:
    """The block as data, refusing what the format does not know (with the line to fix)."""
    where = f"docs/statistics.md line {block.line}"
    try:
        example = json.loads(block.text, parse_float=Written)
    except ValueError as exc:
        pytest.fail(f"{where}: not valid JSON: {exc}")
    if not isinstance(example, dict):
        pytest.fail(f"{where}: an example is a JSON object")
    unknown = set(example) - KEYS
    assert not unknown, f"{where}: unknown keys {sorted(unknown)} (known: {sorted(KEYS)})"
    assert isinstance(example.get("title"), str) and example["title"], f"{where}: no title"
    assert ("pairs" in example) != ("items" in example), f"{where}: give pairs or items"
    assert isinstance(example.get("expect"), dict) and example["expect"], f"{where}: no expect"
    for key in ("eval", "run"):
        assert isinstance(example.get(key, {}), dict), f"{where}: {key} is an object"
    if "pairs" in example:
        pairs = example["pairs"]
        assert isinstance(pairs, dict), f"{where}: pairs is an object"
        unknown = set(pairs) - set(PAIR_KEYS)
        assert not unknown, f"{where}: unknown pairs {sorted(unknown)} (known: {list(PAIR_KEYS)})"
        assert all(isinstance(n, int) and n >= 0 for n in pairs.values()), f"{where}: counts"
        assert sum(pairs.values()) > 0, f"{where}: pairs hold no item"
    else:
        _check_items(example["items"], where)
        _check_trials(example, where)
    request = example.get("request")
    assert request is None or (isinstance(request, str) and request.startswith("GET /")), (
        f"{where}: request is a string 'GET /api/v1/...'"
    )
    return example


def _check_items(items: Any, where: str) -> None:
    assert isinstance(items, list) and items, f"{where}: items is a non-empty list"
    for i, item in enumerate(items):
        assert isinstance(item, dict), f"{where}: items[{i}] is an object"
        unknown = set(item) - ITEM_KEYS
        assert not unknown, f"{where}: items[{i}] has unknown keys {sorted(unknown)}"
        for side in ("baseline", "current"):
            scores = item.get(side, [0.0] if side == "baseline" else None)
            assert isinstance(scores, list) and scores, f"{where}: items[{i}].{side} scores"
            assert all(
                isinstance(s, int | float) and not isinstance(s, bool) and 0 <= s <= 1
                for s in scores
            ), f"{where}: items[{i}].{side}: scores are numbers in 0..1"
        assert isinstance(item.get("metadata", {}), dict), f"{where}: items[{i}].metadata"
    with_baseline = {"baseline" in item for item in items}
    assert len(with_baseline) == 1, f"{where}: give baseline scores on every item or on none"


def _check_trials(example: dict[str, Any], where: str) -> None:
    """Each item scripts one score per trial the eval runs, in each run."""
    counts = dict(zip(("baseline", "current"), trial_counts(example), strict=True))
    for i, item in enumerate(example["items"]):
        for side, trials in counts.items():
            if side in item:
                assert len(item[side]) == trials, (
                    f"{where}: items[{i}].{side} has {len(item[side])} scores for "
                    f"{trials} trial(s) (eval.trials)"
                )


def trial_counts(example: dict[str, Any]) -> tuple[int, int]:
    """How many trials the baseline run and the current run execute per item."""
    trials = int(example.get("eval", {}).get("trials", 1))
    return trials, int(example.get("run", {}).get("trials", trials))


def scripted_items(example: dict[str, Any]) -> list[dict[str, Any]]:
    """``items``, with ``pairs`` expanded to items scoring 1/0 on every trial."""
    if "items" in example:
        return list(example["items"])
    baseline_trials, current_trials = trial_counts(example)
    expanded = []
    for pair, count in example["pairs"].items():
        before, after = PAIR_KEYS[pair]
        item = {"baseline": [before] * baseline_trials, "current": [after] * current_trials}
        expanded += [item] * count
    return expanded


def _scores_text(item: dict[str, Any]) -> str:
    runs = [item["baseline"]] if "baseline" in item else []
    return "scores:" + "|".join(
        ",".join(repr(float(s)) for s in run) for run in [*runs, item["current"]]
    )


# --- paths and expectations -------------------------------------------------------------------

STEP = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def lookup(document: Any, path: str) -> Any:
    """The value at ``a.b[0].c``; KeyError naming the step that is missing."""
    value = document
    for key, index in STEP.findall(path):
        if key:
            if not isinstance(value, dict) or key not in value:
                known = sorted(value) if isinstance(value, dict) else type(value).__name__
                raise KeyError(f"{path}: no {key!r} (there: {known})")
            value = value[key]
        else:
            if not isinstance(value, list) or int(index) >= len(value):
                raise KeyError(f"{path}: no [{index}] (a {type(value).__name__})")
            value = value[int(index)]
    return value


def matches(expected: Any, actual: Any) -> bool:
    if isinstance(expected, Written):
        if isinstance(actual, bool) or not isinstance(actual, int | float):
            return False
        return abs(actual - expected) <= 0.5 * 10.0**-expected.decimals + 1e-12
    if expected is None or isinstance(expected, bool):
        return actual is expected
    if isinstance(expected, int):
        return (
            not isinstance(actual, bool) and isinstance(actual, int | float) and actual == expected
        )
    return bool(expected == actual)


def mismatches(expect: dict[str, Any], document: Any) -> list[str]:
    found = []
    for path, expected in expect.items():
        try:
            actual = lookup(document, path)
        except KeyError as exc:
            found.append(str(exc.args[0]))
            continue
        if not matches(expected, actual):
            found.append(f"{path}: expected {expected!r}, got {actual!r}")
    return found


# --- running a block through the API ----------------------------------------------------------


@pytest.fixture
def numeric_plugins(api: Any) -> Any:
    """The probe and numeric scorers and an event log installed; scripted agents reset."""
    from chalicelib import wiring

    agents.reset()
    wiring.install_plugins(HostWith(EventLog(), ProbePlugin(), NumericPlugin()))
    yield
    agents.RELEASE.set()


def _ok(response: Any, status: int = 201) -> Any:
    assert response.status == status, response
    return response.json


def make_eval(api: Any, project: dict[str, Any], example: dict[str, Any]) -> dict[str, Any]:
    agent_body = {"project_id": project["id"], "name": "scores", "type": "python"}
    agent = _ok(api.post("/api/v1/agents", {**agent_body, "config": {"callable": SCORES_AGENT}}))
    dataset = _ok(api.post("/api/v1/datasets", {"project_id": project["id"], "name": "example"}))
    body = {
        "project_id": project["id"],
        "name": "example",
        "agent_id": agent["id"],
        "dataset_id": dataset["id"],
        "scorers": [{"type": "numeric"}],
        "max_concurrency": 1,
        **example.get("eval", {}),
    }
    evaluation: dict[str, Any] = _ok(api.post("/api/v1/evals", body))
    return evaluation


def import_items(api: Any, dataset_id: str, items: list[dict[str, Any]]) -> None:
    lines = [{"input": _scores_text(item), "metadata": item.get("metadata", {})} for item in items]
    for start in range(0, len(lines), IMPORT_CHUNK):
        body = "\n".join(json.dumps(line) for line in lines[start : start + IMPORT_CHUNK])
        _ok(api.post(f"/api/v1/datasets/{dataset_id}/items:import", raw=body.encode()))


def run_to_end(api: Any, app: Any, eval_id: str, body: dict[str, Any]) -> dict[str, Any]:
    started = _ok(api.post(f"/api/v1/evals/{eval_id}/runs", body))
    drain_queues(app)
    run: dict[str, Any] = _ok(api.get(f"/api/v1/evals/{eval_id}/runs/{started['id']}"), 200)
    assert run["status"] in TERMINAL_STATUSES, run
    return run


def substitute(text: str, names: dict[str, str]) -> str:
    """``{eval_id}``, ``{run_id}`` and ``{baseline_run_id}`` replaced (nothing else)."""
    for name, value in names.items():
        text = text.replace("{" + name + "}", value)
    return text


def execute(
    api: Any, app: Any, project: dict[str, Any], example: dict[str, Any]
) -> tuple[Any, dict[str, str]]:
    """Run the example: the document its ``expect`` is checked against, and the ids."""
    evaluation = make_eval(api, project, example)
    items = scripted_items(example)
    import_items(api, evaluation["dataset_id"], items)
    names = {"eval_id": evaluation["id"], "baseline_run_id": ""}
    body = dict(example.get("run", {}))
    if "baseline" in items[0]:
        baseline = run_to_end(api, app, evaluation["id"], {})
        assert baseline["status"] == "completed", baseline
        names["baseline_run_id"] = body["baseline_run_id"] = baseline["id"]
    current = run_to_end(api, app, evaluation["id"], body)
    names["run_id"] = current["id"]
    if "request" not in example:
        return current, names
    path = substitute(example["request"].removeprefix("GET "), names)
    return _ok(api.get(path), 200), names


@pytest.mark.parametrize("block", blocks(), ids=lambda b: b.id)
def test_worked_example(
    api: Any, app: Any, project: dict[str, Any], numeric_plugins: None, block: Block
) -> None:
    example = parse(block)
    document, names = execute(api, app, project, example)
    expect = {
        path: substitute(value, names) if isinstance(value, str) else value
        for path, value in example["expect"].items()
    }
    found = mismatches(expect, document)
    assert not found, f"{example['title']} (docs/statistics.md line {block.line}):\n" + "\n".join(
        found
    )


# --- the harness itself -----------------------------------------------------------------------


def test_the_document_has_examples_with_unique_titles() -> None:
    found = blocks()
    assert len(found) >= 4
    ids = [b.id for b in found]
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"title": "t", "pairs": {"pass->pass": 1}, "expect": {"a": 1},}', "not valid JSON"),
        ('{"title": "t", "pairs": {"pass->pass": 1}, "expect": {"a": 1}, "x": 1}', "unknown keys"),
        ('{"title": "t", "pairs": {"pass->win": 1}, "expect": {"a": 1}}', "unknown pairs"),
        ('{"title": "t", "items": [{"current": [1], "b": [1]}], "expect": {"a": 1}}', "unknown"),
        ('{"title": "t", "items": [{"current": [2]}], "expect": {"a": 1}}', "0..1"),
        ('{"title": "t", "items": [{"current": [1]}], "pairs": {}, "expect": {"a": 1}}', "pairs"),
        (
            '{"title": "t", "items": [{"current": [1]}, {"baseline": [1], "current": [1]}],'
            ' "expect": {"a": 1}}',
            "every item or on none",
        ),
        (
            '{"title": "t", "pairs": {"pass->pass": 1}, "expect": {"a": 1}, "request": "POST /x"}',
            "GET",
        ),
        ('{"title": "t", "pairs": {"pass->pass": 0}, "expect": {"a": 1}}', "no item"),
        (
            '{"title": "t", "eval": {"trials": 2}, "items": [{"current": [1]}],'
            ' "expect": {"a": 1}}',
            "1 scores for 2 trial(s)",
        ),
    ],
)
def test_a_malformed_block_fails_with_the_reason(text: str, message: str) -> None:
    with pytest.raises((AssertionError, pytest.fail.Exception)) as raised:
        parse(Block(7, text))
    assert message in str(raised.value) and "line 7" in str(raised.value)


def test_floats_compare_at_the_decimals_written_and_null_means_null() -> None:
    expect = json.loads(
        '{"a.b[1]": -0.301, "a.c": null, "a.d": 129, "a.e": true, "a.f": 0.0, "a.g": "x"}',
        parse_float=Written,
    )
    good = {"a": {"b": [0, -0.30149], "c": None, "d": 129, "e": True, "f": 0.04, "g": "x"}}
    assert mismatches(expect, good) == []
    bad = {"a": {"b": [0, -0.3016], "d": 129.5, "e": 1, "f": 0.06, "g": "y"}}
    found = mismatches(expect, bad)
    assert len(found) == 6, found
    assert any("no 'c'" in f for f in found)


def test_pairs_become_items_scoring_one_and_zero_on_every_trial() -> None:
    example = {"eval": {"trials": 3}, "pairs": {"pass->fail": 2, "fail->pass": 1}}
    items = scripted_items(example)
    assert items == [
        {"baseline": [1.0] * 3, "current": [0.0] * 3},
        {"baseline": [1.0] * 3, "current": [0.0] * 3},
        {"baseline": [0.0] * 3, "current": [1.0] * 3},
    ]
    assert _scores_text(items[2]) == "scores:0.0,0.0,0.0|1.0,1.0,1.0"


def test_each_trial_scores_what_the_example_scripts(
    api: Any, app: Any, project: dict[str, Any], numeric_plugins: None
) -> None:
    """Trial n of an item scores the n-th score of its run's list, in both runs."""
    example: dict[str, Any] = {
        "title": "trials",
        "eval": {"trials": 3},
        "items": [
            {"baseline": [1, 0.2, 0.9], "current": [0.3, 0.4, 0.6], "metadata": {"kind": "a"}},
            {"baseline": [0.7, 0.7, 0.7], "current": [0.1, 0.1, 0.9]},
        ],
        "request": "GET /api/v1/evals/{eval_id}/runs/{run_id}",
        "expect": {"status": "completed"},
    }
    run, _ = execute(api, app, project, example)
    baseline_id = run["baseline_run_id"]
    for side, run_id in (("baseline", baseline_id), ("current", run["id"])):
        path = f"/api/v1/evals/{run['eval_id']}/runs/{run_id}/results?limit=100"
        results = _ok(api.get(path), 200)["data"]
        assert len(results) == 6
        for result in results:
            scripted = example["items"][0 if "|0.3," in result["input"][0]["content"] else 1]
            expected = scripted[side][result["trial"] - 1]
            assert [s["score"] for s in result["scores"]] == [expected], (side, result)
            assert result["passed"] is (expected >= 0.5)
