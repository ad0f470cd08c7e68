"""``python -m pawl.cli.generate [--check]``: write the API commands' table from the routes.

Builds the OpenAPI document from the route table (the only step that imports the service)
and writes :data:`pawl.cli.operation_table.TABLE_PATH`. ``--check`` writes nothing and
exits 1 when the committed table differs from what the routes give (CI's drift check is
the test ``tests/unit/test_operation_table.py``).
"""

from __future__ import annotations

import argparse
import sys

from pawl.cli import operation_table
from pawl.cli.ops import METHODS, Operation, operations


def table_text() -> str:
    """The table the routes give now, by path and then method: the document lists routes in
    the order their modules were imported, which a process that imported one early (a test,
    a plugin) changes, so the table takes an order of its own."""
    from chalicelib import wiring

    found = operations(wiring.openapi_document())
    return operation_table.dumps(sorted(found, key=_place))


def _place(op: Operation) -> tuple[str, int]:
    return op.path, METHODS.index(op.method.lower())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m pawl.cli.generate", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--check", action="store_true", help="exit 1 if the table is stale")
    args = parser.parse_args(argv)
    text = table_text()
    path = operation_table.TABLE_PATH
    current = path.read_text(encoding="utf-8") if path.exists() else ""
    if args.check:
        if current != text:
            print(f"{path} is stale: run `{operation_table.REGENERATE}`", file=sys.stderr)
            return 1
        return 0
    if current != text:
        path.write_text(text, encoding="utf-8")
    count = len(operation_table.loads(text))
    print(f"{path}: {count} operations" + ("" if current != text else " (unchanged)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
