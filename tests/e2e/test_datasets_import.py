"""`pawl datasets import` against an embedded runtime over HTTP: chunks, CSV, refusals."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from chalicelib import cli
from chalicelib.client import PawlClient
from chalicelib.datasets_cli import CHUNK_LINES
from tests.support.runtime import runtime_with_project


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    state_dir: Path = tmp_path_factory.mktemp("import-state")
    with runtime_with_project(state_dir, "import-tests") as (runtime, key):
        yield runtime.url, key


def _dataset(server: tuple[str, str], name: str) -> str:
    with PawlClient(*server) as client:
        return str(client.create_dataset({"name": name})["id"])


def _contents(server: tuple[str, str], dataset_id: str) -> list[Any]:
    with PawlClient(*server) as client:
        return [
            (i["input"][-1]["content"], i.get("expected_output"), i["metadata"])
            for i in client._paged(f"/api/v1/datasets/{dataset_id}/items")
        ]


def _import(server: tuple[str, str], dataset_id: str, path: Path, *extra: str) -> int:
    url, key = server
    args = ["datasets", "import", str(path), "--dataset", dataset_id]
    return cli.main([*args, "--server", url, "--api-key", key, *extra])


def _line(i: int) -> str:
    return json.dumps({"input": [{"role": "user", "content": f"case {i}"}], "metadata": {"i": i}})


def test_a_jsonl_file_larger_than_one_request_is_imported_in_order(
    server: tuple[str, str], tmp_path: Path
) -> None:
    count = 2 * CHUNK_LINES + 7
    path = tmp_path / "cases.jsonl"
    path.write_text("\n".join(_line(i) for i in range(count)) + "\n\n")
    dataset_id = _dataset(server, "many")
    assert _import(server, dataset_id, path) == 0
    contents = _contents(server, dataset_id)
    assert [c[0] for c in contents] == [f"case {i}" for i in range(count)]


def test_a_csv_file_maps_its_columns(server: tuple[str, str], tmp_path: Path) -> None:
    path = tmp_path / "cases.csv"
    path.write_text(
        "input,expected_output,metadata,topic\n"
        '"What is 2+2, really?",4,"{""level"": 1}",math\n'
        '"[{""role"": ""system"", ""content"": ""be brief""}, '
        '{""role"": ""user"", ""content"": ""hi""}]",,,greeting\n'
    )
    dataset_id = _dataset(server, "csv")
    assert _import(server, dataset_id, path) == 0
    assert _contents(server, dataset_id) == [
        ("What is 2+2, really?", "4", {"level": 1, "topic": "math"}),
        ("hi", None, {"topic": "greeting"}),
    ]


def test_a_bad_line_stops_the_import_naming_its_line_in_the_file(
    server: tuple[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = [_line(i) for i in range(150)]
    lines[120] = json.dumps({"input": [{"role": "robot", "content": "x"}]})
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines))
    dataset_id = _dataset(server, "bad")
    assert _import(server, dataset_id, path) == 1
    err = capsys.readouterr().err
    assert f"lines {CHUNK_LINES + 1}-150 refused" in err
    assert "line 121: input.0.role" in err
    # The first chunk went in; nothing of the refused one did.
    assert len(_contents(server, dataset_id)) == CHUNK_LINES

    lines[120] = _line(120)
    path.write_text("\n".join(lines))
    assert _import(server, dataset_id, path, "--skip", str(CHUNK_LINES)) == 0
    assert [c[0] for c in _contents(server, dataset_id)] == [f"case {i}" for i in range(150)]


def test_a_foreign_dataset_is_refused_with_nothing_written(
    server: tuple[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "one.jsonl"
    path.write_text(_line(1))
    assert _import(server, "dset_0000000000000000", path) == 1
    assert "not found" in capsys.readouterr().err
