"""``pawl datasets import FILE --dataset ID``: a JSON Lines or CSV file, all of it or none.

A JSON Lines file (``.jsonl``, ``.ndjson``) holds one item per line, the body
``POST .../items`` takes. A CSV file (``.csv``) has a header row: ``input``, an optional
``expected_output``, an optional ``metadata`` (a JSON object), and any other column becomes
a metadata string; an empty cell is a field left out. Both take the same shapes: ``input``
is a list of messages (in CSV a cell starting with ``[{``, read as JSON) or a string, one
user message. Another file type is refused (``--format`` names the format of a file named
otherwise).

The whole file is checked first, line by line, with the server's own checks; when any line
is bad each bad line is reported once, by its line number in the file, and nothing is sent.
Then the file is sent in chunks of at most 99 items (under 1 MB), each one
``POST /api/v1/datasets/{id}/items:import`` that adds all of its items or none (``--parallel
N`` sends N at once: faster, but items of different chunks may then list in any order). Should
the server still refuse a chunk (a lower size limit, a dataset deleted meanwhile), nothing
more is sent and the items this import added are deleted again. ``--skip N`` leaves out the
first N data lines (say, those an import cut off by a crash had already added).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from chalicelib.errors import ValidationFailed

if TYPE_CHECKING:  # threads load when an import sends: every `pawl` call registers this module
    from concurrent.futures import Future

#: What one request may hold (the server's ``MAX_LINES`` and well under its byte limit).
CHUNK_LINES = 99
CHUNK_BYTES = 900_000
#: File name endings and the format each is read as.
FORMATS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv"}
#: Bad lines listed before "and N more".
MAX_SHOWN_PROBLEMS = 50
ROLLBACK_WORKERS = 4
#: An ``input`` cell read as a JSON list of messages (``[{...}, ...]``, or ``[]``); any
#: other text, ``[urgent] refund`` included, is one user message.
MESSAGE_LIST = re.compile(r"\s*\[\s*[{\]]")


class FileRefused(Exception):
    """The file as a whole cannot be imported (its type, its header, its encoding)."""


@dataclass(frozen=True)
class Line:
    """One data line: its number in the file and the JSON object sent for it."""

    number: int
    text: bytes
    #: What is wrong with it, found while reading it (a CSV cell); else the checks decide.
    problem: str | None = None


def file_format(path: Path, given: str | None = None) -> str:
    """``jsonl`` or ``csv``: ``given``, else from the file's name; FileRefused otherwise."""
    found = given or FORMATS.get(path.suffix.lower())
    if found is None:
        raise FileRefused(
            f"{path.name}: pawl imports JSON Lines (.jsonl, .ndjson) and CSV (.csv) files; "
            "rename it, or name its format with --format jsonl|csv"
        )
    return found


def _jsonl_lines(raw: IO[bytes]) -> Iterator[Line]:
    for number, line in enumerate(raw, start=1):
        if number == 1:
            line = line.removeprefix(b"\xef\xbb\xbf")  # a byte-order mark some editors write
        if line.strip():
            yield Line(number, line.rstrip(b"\r\n"))


def _json_cell(name: str, text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValidationFailed(
            f"{name}: not valid JSON: {exc.msg} at column {exc.colno} of the cell", field=name
        ) from exc


def csv_item(row: dict[str | None, Any]) -> dict[str, Any]:
    """A CSV row (``csv.DictReader``'s) as item fields; ValidationFailed for a bad cell."""
    if None in row:
        extra = len(row.pop(None))
        cells = "cell" if extra == 1 else "cells"
        raise ValidationFailed(f"the row has {extra} {cells} more than the header", field="body")
    item: dict[str, Any] = {}
    text = row.pop("input", None)
    if text:
        item["input"] = _json_cell("input", text) if MESSAGE_LIST.match(text) else text
    if expected := row.pop("expected_output", None):
        item["expected_output"] = expected
    raw_metadata = row.pop("metadata", None)
    metadata = _json_cell("metadata", raw_metadata) if raw_metadata else {}
    if isinstance(metadata, dict):
        metadata.update({k: v for k, v in row.items() if k and v is not None})
    item["metadata"] = metadata
    return item


def _csv_lines(raw: IO[bytes]) -> Iterator[Line]:
    handle = io.TextIOWrapper(raw, encoding="utf-8-sig", newline="")
    reader = csv.DictReader(handle)
    try:
        if "input" not in (reader.fieldnames or []):
            columns = ", ".join(reader.fieldnames or []) or "none"
            raise FileRefused(f"the CSV header has no input column (its columns: {columns})")
        for row in reader:
            try:
                yield Line(reader.line_num, json.dumps(csv_item(dict(row))).encode())
            except ValidationFailed as exc:
                yield Line(reader.line_num, b"", problem=exc.message)
    except UnicodeDecodeError as exc:
        raise FileRefused(f"not UTF-8 text after line {reader.line_num}: {exc.reason}") from exc
    finally:
        handle.detach()


def file_lines(raw: IO[bytes], fmt: str) -> Iterator[Line]:
    """Every data line of the file (``fmt``: ``jsonl`` or ``csv``), blank lines left out."""
    return _csv_lines(raw) if fmt == "csv" else _jsonl_lines(raw)


@dataclass
class Check:
    """What checking every line found: the count, the bad ones (the first few listed)."""

    lines: int = 0
    bad: int = 0
    problems: list[str] = field(default_factory=list)


def problem_of(line: Line) -> str | None:
    """What is wrong with the line as the server's import judges it; None when nothing."""
    from chalicelib.api import item_lines

    if line.problem is not None:
        return line.problem
    try:
        item_lines.parse_line(line.text)
    except ValidationFailed as exc:
        return exc.message
    return None


def check_lines(lines: Iterable[Line]) -> Check:
    check = Check()
    for line in lines:
        check.lines += 1
        if (problem := problem_of(line)) is not None:
            check.bad += 1
            if len(check.problems) < MAX_SHOWN_PROBLEMS:
                check.problems.append(f"line {line.number}: {problem}")
    return check


@dataclass
class Chunk:
    """Data lines of the file (``numbers``: their line numbers) sent as one request."""

    numbers: list[int] = field(default_factory=list)
    lines: list[bytes] = field(default_factory=list)
    size: int = 0

    def body(self) -> bytes:
        return b"\n".join(self.lines)


def chunks(lines: Iterable[Line]) -> Iterator[Chunk]:
    chunk = Chunk()
    for line in lines:
        size = len(line.text) + 1
        if chunk.lines and (len(chunk.lines) >= CHUNK_LINES or chunk.size + size > CHUNK_BYTES):
            yield chunk
            chunk = Chunk()
        chunk.numbers.append(line.number)
        chunk.lines.append(line.text)
        chunk.size += size
    if chunk.lines:
        yield chunk


def describe_refusal(chunk: Chunk, error: Any) -> list[str]:
    """The refusal, each bad line once and by its number in the file (not the request's)."""
    from pawl.transport import refusal_hint

    problems = (error.meta or {}).get("lines") or []
    span = f"lines {chunk.numbers[0]}-{chunk.numbers[-1]} refused"
    if error.status == 413:
        return [f"{span}: {error.message}"]
    if not problems:  # not about these lines: the dataset, the key
        return [f"{error.status} {error.code}: {error.message}{refusal_hint(error.status)}"]
    count = (error.meta or {}).get("invalid_line_count", len(problems))
    out = [f"{span}: the server found {count} of them invalid"]
    for problem in problems:
        out.append(f"  line {chunk.numbers[int(problem['line']) - 1]}: {problem['message']}")
    return out


@dataclass
class Outcome:
    """``imported``: items the file added and that stay; ``refusal``: why it stopped."""

    imported: int = 0
    sent_lines: int = 0
    check: Check = field(default_factory=Check)
    refusal: list[str] = field(default_factory=list)
    item_ids: list[str] = field(default_factory=list)
    #: Items added before a refusal that could not be deleted again.
    left_behind: int = 0
    #: No answer from the server at all (as opposed to a refusal).
    unreachable: bool = False


def _skipped(lines: Iterator[Line], skip: int) -> Iterator[Line]:
    for index, line in enumerate(lines):
        if index >= skip:
            yield line


def _progress_of(lines: Iterator[Line], tick: Callable[[], None], every: int) -> Iterator[Line]:
    for count, line in enumerate(lines, start=1):
        yield line
        if count % every == 0:
            tick()


def _ticker(progress: Any, task: Any, raw: IO[bytes]) -> Callable[[], None]:
    """Moves the bar to the bytes read so far."""
    return lambda: progress.update(task, completed=raw.tell())


def _send(client: Any, dataset_id: str, chunks_: Iterable[Chunk], parallel: int) -> Outcome:
    """Send the chunks, ``parallel`` at once; stop at the first one refused or unanswered."""
    from concurrent.futures import ThreadPoolExecutor

    from pawl.transport import ApiError, ServerUnreachable

    outcome = Outcome()
    with ThreadPoolExecutor(parallel) as pool:
        pending: list[tuple[Chunk, Future[Any]]] = []

        def settle(chunk: Chunk, future: Future[Any]) -> None:
            try:
                outcome.item_ids.extend(future.result()["item_ids"])
            except ApiError as exc:
                outcome.refusal = outcome.refusal or describe_refusal(chunk, exc)
            except ServerUnreachable as exc:
                outcome.refusal = outcome.refusal or [str(exc)]
                outcome.unreachable = True

        for chunk in chunks_:
            if outcome.refusal:
                break
            pending.append((chunk, pool.submit(client.import_items, dataset_id, chunk.body())))
            outcome.sent_lines += len(chunk.lines)
            while len(pending) >= parallel:
                settle(*pending.pop(0))
        for chunk, future in pending:
            settle(chunk, future)
    outcome.imported = len(outcome.item_ids)
    return outcome


def roll_back(client: Any, dataset_id: str, item_ids: list[str]) -> list[str]:
    """Delete the items again; answers those that could not be deleted."""
    from concurrent.futures import ThreadPoolExecutor

    from pawl.transport import ApiError, ServerUnreachable

    def kept(item_id: str) -> bool:
        try:
            client.send("DELETE", f"/api/v1/datasets/{dataset_id}/items/{item_id}")
        except ApiError as exc:
            return exc.status != 404  # gone already (its dataset too, perhaps)
        except ServerUnreachable:
            return True
        return False

    with ThreadPoolExecutor(ROLLBACK_WORKERS) as pool:
        still_there = list(pool.map(kept, item_ids))
    return [item_id for item_id, left in zip(item_ids, still_there, strict=True) if left]


def import_file(
    client: Any,
    dataset_id: str,
    path: Path,
    *,
    skip: int = 0,
    parallel: int = 1,
    fmt: str | None = None,
) -> Outcome:
    """Check every line, then send the file in chunks with a progress bar; a refused chunk
    stops the import and the items it had added are deleted again."""
    from pawl.cli.progress import byte_progress

    fmt = file_format(path, fmt)
    size = path.stat().st_size
    with byte_progress() as progress:
        with path.open("rb") as raw:
            task = progress.add_task("checking", total=size)
            lines = _skipped(file_lines(raw, fmt), skip)
            check = check_lines(_progress_of(lines, _ticker(progress, task, raw), every=200))
            progress.update(task, completed=size)
        if check.bad or not check.lines:
            return Outcome(check=check)
        with path.open("rb") as raw:
            task = progress.add_task("importing", total=size)
            tick = _ticker(progress, task, raw)
            lines = _progress_of(_skipped(file_lines(raw, fmt), skip), tick, every=CHUNK_LINES)
            outcome = _send(client, dataset_id, chunks(lines), max(1, parallel))
            progress.update(task, completed=size)
    outcome.check = check
    if outcome.refusal and outcome.item_ids:
        outcome.left_behind = len(roll_back(client, dataset_id, outcome.item_ids))
        outcome.imported = outcome.left_behind
    return outcome


def _report(outcome: Outcome, args: argparse.Namespace) -> int:
    """Print what happened (refusals on stderr) and answer the exit status."""
    check, name = outcome.check, Path(args.file).name
    if check.bad:
        print(
            f"pawl: nothing imported: {check.bad} of {check.lines} lines of {name} are invalid",
            file=sys.stderr,
        )
        more = check.bad - len(check.problems)
        print("\n".join(f"  {p}" for p in check.problems), file=sys.stderr)
        if more:
            print(f"  ... and {more} more", file=sys.stderr)
        return 1
    if not check.lines:
        after = f" after its first {args.skip} data lines" if args.skip else ""
        print(f"pawl: nothing imported: {name} holds no items{after}", file=sys.stderr)
        return 1
    if not outcome.refusal:
        items = "item" if outcome.imported == 1 else "items"
        print(f"imported {outcome.imported} {items} into {args.dataset}")
        return 0
    print("pawl: " + "\n".join(outcome.refusal), file=sys.stderr)
    added = len(outcome.item_ids)
    if not outcome.left_behind:
        undone = f" (the {added} items it had added were deleted again)" if added else ""
        print(f"pawl: nothing imported{undone}", file=sys.stderr)
    elif outcome.left_behind == added and args.parallel <= 1:
        print(
            f"pawl: the first {added} data lines stay imported (they could not be deleted "
            f"again); resume with --skip {args.skip + added}",
            file=sys.stderr,
        )
    else:
        print(
            f"pawl: {outcome.left_behind} of the {added} items this import added could not "
            f"be deleted again; they stay in {args.dataset}",
            file=sys.stderr,
        )
    return 2 if outcome.unreachable else 1


def cmd_import(args: argparse.Namespace) -> int:
    from pawl.cli.names import NameNotResolved, resolve
    from pawl.transport import DEFAULT_SERVER, NO_KEY_MESSAGE, PawlClient

    server = args.server or os.environ.get("PAWL_SERVER") or DEFAULT_SERVER
    api_key = args.api_key or os.environ.get("PAWL_API_KEY")
    path = Path(args.file)
    if not path.is_file():
        print(f"pawl: no such file: {path}", file=sys.stderr)
        return 2
    if not api_key:
        print(f"pawl: {NO_KEY_MESSAGE}", file=sys.stderr)
        return 2
    try:
        with PawlClient(server, api_key, timeout_s=120) as client:
            dataset_id = resolve(client, "dataset_id", args.dataset)  # a name or an id
            outcome = import_file(
                client, dataset_id, path, skip=args.skip, parallel=args.parallel, fmt=args.format
            )
    except NameNotResolved as exc:
        print(f"pawl: nothing imported: {exc}", file=sys.stderr)
        return 2
    except FileRefused as exc:
        print(f"pawl: nothing imported: {exc}", file=sys.stderr)
        return 2
    return _report(outcome, args)


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``pawl datasets import`` to the ``pawl`` command."""
    datasets = commands.add_parser("datasets", help="dataset operations")
    actions = datasets.add_subparsers(dest="datasets_command", required=True)
    command = actions.add_parser(
        "import",
        help="add the items of a JSON Lines or CSV file to a dataset, all or none",
        description="\n\n".join((__doc__ or "").split("\n\n")[1:3]).replace("``", ""),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    command.add_argument("file", metavar="FILE.jsonl|FILE.ndjson|FILE.csv")
    command.add_argument(
        "--dataset", required=True, metavar="DATASET", help="the dataset's name or id"
    )
    command.add_argument("--format", choices=sorted(set(FORMATS.values())), help="default: by name")
    command.add_argument("--skip", type=int, default=0, metavar="N", help="skip N data lines")
    command.add_argument("--parallel", type=int, default=1, metavar="N", help="requests at once")
    command.add_argument("--server", help="default: $PAWL_SERVER, else http://127.0.0.1:8000")
    command.add_argument("--api-key", help="default: $PAWL_API_KEY")
    command.set_defaults(func=cmd_import)
