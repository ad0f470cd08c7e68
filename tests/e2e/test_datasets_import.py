"""`pawl datasets import` against an embedded runtime over HTTP: chunks, CSV, refusals."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from chalicelib import wiring
from pawl.cli import main as cli
from pawl.cli.datasets import CHUNK_LINES
from pawl.transport import PawlClient
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


def test_a_bad_line_anywhere_imports_nothing_and_each_is_named_once(
    server: tuple[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = [_line(i) for i in range(250)]
    lines[120] = json.dumps({"input": [{"role": "robot", "content": "x"}]})
    lines[230] = '{"input": "unclosed}'
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines))
    dataset_id = _dataset(server, "bad")
    assert _import(server, dataset_id, path) == 1
    err = capsys.readouterr().err
    assert "nothing imported: 2 of 250 lines of bad.jsonl are invalid" in err
    assert err.count("line 121:") == 1 and "line 121: input.0.role: Input should be" in err
    assert err.count("line 231:") == 1
    assert "line 231: not valid JSON: Unterminated string starting at column 11" in err
    assert "request body" not in err
    # Checked before anything was sent: not even the first 99 lines went in.
    assert _contents(server, dataset_id) == []

    lines[120], lines[230] = _line(120), _line(230)
    path.write_text("\n".join(lines))
    assert _import(server, dataset_id, path, "--skip", "200") == 0
    assert [c[0] for c in _contents(server, dataset_id)] == [f"case {i}" for i in range(200, 250)]


def test_jsonl_and_csv_take_the_same_shapes(server: tuple[str, str], tmp_path: Path) -> None:
    jsonl = tmp_path / "shapes.jsonl"
    jsonl.write_text(
        json.dumps({"input": "[urgent] refund?", "expected_output": "yes"})
        + "\n"
        + json.dumps(
            {
                "input": [
                    {"role": "system", "content": "brief"},
                    {"role": "user", "content": "hi"},
                ],
                "metadata": {"n": 1},
            }
        )
    )
    csv_file = tmp_path / "shapes.csv"
    csv_file.write_text(
        "input,expected_output,metadata\n"
        "[urgent] refund?,yes,\n"
        '"[{""role"": ""system"", ""content"": ""brief""}, '
        '{""role"": ""user"", ""content"": ""hi""}]",,"{""n"": 1}"\n'
    )
    imported = []
    for path in (jsonl, csv_file):
        dataset_id = _dataset(server, f"shapes-{path.suffix[1:]}")
        assert _import(server, dataset_id, path) == 0
        with PawlClient(*server) as client:
            items = client._paged(f"/api/v1/datasets/{dataset_id}/items")
            imported.append([(i["input"], i.get("expected_output"), i["metadata"]) for i in items])
    assert imported[0] == imported[1]
    assert imported[0][0] == ([{"role": "user", "content": "[urgent] refund?"}], "yes", {})


def test_a_file_of_another_type_is_refused_naming_the_accepted_ones(
    server: tuple[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "cases.txt"
    path.write_text(_line(1))
    dataset_id = _dataset(server, "typed")
    assert _import(server, dataset_id, path) == 2
    err = capsys.readouterr().err
    assert "cases.txt: pawl imports JSON Lines (.jsonl, .ndjson) and CSV (.csv) files" in err
    assert "--format jsonl|csv" in err
    assert _contents(server, dataset_id) == []
    assert _import(server, dataset_id, path, "--format", "jsonl") == 0
    assert len(_contents(server, dataset_id)) == 1


def test_a_csv_without_an_input_column_or_with_a_bad_cell_imports_nothing(
    server: tuple[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dataset_id = _dataset(server, "csv-bad")
    path = tmp_path / "cases.csv"
    path.write_text("question,answer\nhi,there\n")
    assert _import(server, dataset_id, path) == 2
    assert "the CSV header has no input column (its columns: question, answer)" in (
        capsys.readouterr().err
    )
    path.write_text('input,metadata\nfine,\nbad,"{""level"": }"\nlong,,extra\n')
    assert _import(server, dataset_id, path) == 1
    err = capsys.readouterr().err
    assert "line 3: metadata: not valid JSON: Expecting value at column 11 of the cell" in err
    assert "line 4: the row has 1 cell more than the header" in err
    assert _contents(server, dataset_id) == []


def test_a_chunk_the_server_refuses_after_others_went_in_leaves_nothing(
    server: tuple[str, str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every line passes the checks, but the server's body limit (lower than the CLI's
    chunk size) refuses the second chunk: the first chunk's items are deleted again."""
    small = [_line(i) for i in range(CHUNK_LINES)]
    large = [json.dumps({"input": f"{i} " + "x" * 3000}) for i in range(CHUNK_LINES)]
    path = tmp_path / "big.jsonl"
    path.write_text("\n".join(small + large))
    dataset_id = _dataset(server, "rolled-back")
    monkeypatch.setenv("PAWL_MAX_BODY_BYTES", "100000")
    wiring.reload_settings()
    try:
        assert _import(server, dataset_id, path) == 1
    finally:
        monkeypatch.delenv("PAWL_MAX_BODY_BYTES")
        wiring.reload_settings()
    err = capsys.readouterr().err
    assert f"lines {CHUNK_LINES + 1}-{2 * CHUNK_LINES} refused: request body is larger" in err
    assert f"nothing imported (the {CHUNK_LINES} items it had added were deleted again)" in err
    assert _contents(server, dataset_id) == []


def test_a_foreign_dataset_is_refused_with_nothing_written(
    server: tuple[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "one.jsonl"
    path.write_text(_line(1))
    assert _import(server, "dset_0000000000000000", path) == 1
    assert "not found" in capsys.readouterr().err


def test_the_dataset_is_named_by_its_name_too(
    server: tuple[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "one.jsonl"
    path.write_text(_line(1))
    dataset_id = _dataset(server, "by-name")
    assert _import(server, "by-name", path) == 0
    assert [c[0] for c in _contents(server, dataset_id)] == ["case 1"]
    assert _import(server, "no-such-dataset", path) == 2
    assert "no dataset named 'no-such-dataset' in this project" in capsys.readouterr().err


def test_a_file_without_items_is_refused_rather_than_imported_as_nothing(
    server: tuple[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "blank.jsonl"
    path.write_text("\n  \n")
    dataset_id = _dataset(server, "blank")
    assert _import(server, dataset_id, path) == 1
    assert "nothing imported: blank.jsonl holds no items" in capsys.readouterr().err
    path.write_text(_line(0))
    assert _import(server, dataset_id, path, "--skip", "1") == 1
    assert "holds no items after its first 1 data lines" in capsys.readouterr().err
    assert _contents(server, dataset_id) == []
