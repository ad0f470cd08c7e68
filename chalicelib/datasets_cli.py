"""``pawl datasets import FILE.jsonl|FILE.csv --dataset ID``: a large file as many imports.

The file is read as a stream and sent in chunks of at most the server's per-request limit
(99 items, under 1 MB), each one ``POST /api/v1/datasets/{id}/items:import`` that adds all
of its items or none. A JSON Lines file is sent as it is (the server validates each line
exactly as a single create). A CSV file has a header row: ``input`` is the user message
(or, when it starts with ``[``, a JSON list of messages), ``expected_output`` is optional,
``metadata`` is an optional JSON object, and any other column becomes a metadata string.

Chunks are sent one after another (``--parallel N`` sends N at once: faster, but items of
different chunks may then list in any order). When a chunk is refused nothing of it is
written, nothing after it is sent, and the bad lines are reported by their line numbers in
the file; what was imported before stays, and ``--skip N`` resumes after the N data lines
already imported.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import sys
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

#: What one request may hold (the server's ``MAX_LINES`` and well under its byte limit).
CHUNK_LINES = 99
CHUNK_BYTES = 900_000


@dataclass
class Chunk:
    """Data lines of the file (``numbers``: their line numbers) sent as one request."""

    numbers: list[int] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    size: int = 0

    def body(self) -> bytes:
        return "\n".join(self.lines).encode()


def _jsonl_lines(handle: IO[str]) -> Iterator[tuple[int, str]]:
    for number, line in enumerate(handle, start=1):
        if line.strip():
            yield number, line.rstrip("\r\n")


def _csv_item(row: dict[str, str | None]) -> dict[str, Any]:
    text = row.pop("input", None) or ""
    expected = row.pop("expected_output", None)
    raw_metadata = row.pop("metadata", None)
    messages: Any = [{"role": "user", "content": text}]
    if text.lstrip().startswith("["):
        messages = json.loads(text)
    metadata: Any = json.loads(raw_metadata) if raw_metadata else {}
    if isinstance(metadata, dict):
        metadata.update({k: v for k, v in row.items() if k and v is not None})
    item: dict[str, Any] = {"input": messages, "metadata": metadata}
    if expected:
        item["expected_output"] = expected
    return item


def _csv_lines(handle: IO[str]) -> Iterator[tuple[int, str]]:
    """Each CSV row as one JSON line (the server judges it; a bad JSON cell is kept as is)."""
    reader = csv.DictReader(handle)
    for row in reader:
        try:
            line = json.dumps(_csv_item(dict(row)))
        except ValueError:
            line = "{not valid JSON in a cell}"  # refused by the server, naming this line
        yield reader.line_num, line


def file_lines(path: Path, handle: IO[str]) -> Iterator[tuple[int, str]]:
    """``(line number in the file, one JSON object)`` per data line."""
    return _csv_lines(handle) if path.suffix.lower() == ".csv" else _jsonl_lines(handle)


def chunks(lines: Iterable[tuple[int, str]], skip: int = 0) -> Iterator[Chunk]:
    chunk = Chunk()
    for index, (number, line) in enumerate(lines):
        if index < skip:
            continue
        size = len(line.encode()) + 1
        if chunk.lines and (len(chunk.lines) >= CHUNK_LINES or chunk.size + size > CHUNK_BYTES):
            yield chunk
            chunk = Chunk()
        chunk.numbers.append(number)
        chunk.lines.append(line)
        chunk.size += size
    if chunk.lines:
        yield chunk


def describe_refusal(chunk: Chunk, error: Any) -> list[str]:
    """The refusal with the request's line numbers turned into the file's."""
    out = [f"lines {chunk.numbers[0]}-{chunk.numbers[-1]} refused: {error.message}"]
    for problem in (error.meta or {}).get("lines", []):
        number = chunk.numbers[int(problem["line"]) - 1]
        out.append(f"  line {number}: {problem['message']}")
    return out


@dataclass
class Outcome:
    imported: int = 0
    sent_lines: int = 0
    refusal: list[str] = field(default_factory=list)


def import_file(
    client: Any, dataset_id: str, path: Path, *, skip: int = 0, parallel: int = 1
) -> Outcome:
    """Send the file in chunks with a progress bar; stop at the first refused chunk."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from chalicelib.client import ApiError

    outcome = Outcome()
    columns = (TextColumn("importing"), BarColumn(), MofNCompleteColumn(), TextColumn("bytes"))
    size = path.stat().st_size
    with (
        path.open("rb") as raw,
        io.TextIOWrapper(raw, encoding="utf-8", newline="") as handle,
        Progress(*columns, transient=False) as progress,
        ThreadPoolExecutor(max(1, parallel)) as pool,
    ):
        task = progress.add_task("import", total=size)
        pending: list[tuple[Chunk, Future[Any]]] = []

        def settle(chunk: Chunk, future: Future[Any]) -> None:
            try:
                outcome.imported += int(future.result()["imported"])
            except ApiError as exc:
                outcome.refusal = outcome.refusal or describe_refusal(chunk, exc)
            # The bytes read so far (the text layer's own tell() is off while iterating).
            progress.update(task, completed=raw.tell())

        for chunk in chunks(file_lines(path, handle), skip):
            if outcome.refusal:
                break
            pending.append((chunk, pool.submit(client.import_items, dataset_id, chunk.body())))
            outcome.sent_lines += len(chunk.lines)
            while len(pending) >= max(1, parallel):
                settle(*pending.pop(0))
        for chunk, future in pending:
            settle(chunk, future)
        progress.update(task, completed=size)
    return outcome


def cmd_import(args: argparse.Namespace) -> int:
    from chalicelib.client import DEFAULT_SERVER, PawlClient, ServerUnreachable

    server = args.server or os.environ.get("PAWL_SERVER") or DEFAULT_SERVER
    api_key = args.api_key or os.environ.get("PAWL_API_KEY")
    path = Path(args.file)
    if not path.is_file():
        print(f"pawl: no such file: {path}", file=sys.stderr)
        return 2
    try:
        with PawlClient(server, api_key, timeout_s=120) as client:
            outcome = import_file(
                client, args.dataset, path, skip=args.skip, parallel=args.parallel
            )
    except ServerUnreachable as exc:
        print(f"pawl: {exc}", file=sys.stderr)
        return 2
    print(f"imported {outcome.imported} items into {args.dataset}")
    if outcome.refusal:
        print("\n".join(outcome.refusal), file=sys.stderr)
        done = args.skip + outcome.imported
        print(f"fix it and resume with --skip {done} (if the imports before it are all in)")
        return 1
    return 0


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``pawl datasets import`` to the ``pawl`` command."""
    datasets = commands.add_parser("datasets", help="dataset operations")
    actions = datasets.add_subparsers(dest="datasets_command", required=True)
    command = actions.add_parser(
        "import",
        help="add the items of a JSON Lines or CSV file to a dataset",
        description=(__doc__ or "").split("\n\n")[1],
    )
    command.add_argument("file", metavar="FILE.jsonl|FILE.csv")
    command.add_argument("--dataset", required=True, metavar="DATASET_ID")
    command.add_argument("--skip", type=int, default=0, metavar="N", help="skip N data lines")
    command.add_argument("--parallel", type=int, default=1, metavar="N", help="requests at once")
    command.add_argument("--server", help="default: $PAWL_SERVER, else http://127.0.0.1:8000")
    command.add_argument("--api-key", help="default: $PAWL_API_KEY")
    command.set_defaults(func=cmd_import)
