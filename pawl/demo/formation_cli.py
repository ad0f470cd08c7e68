"""``pawl plan FILE`` and ``pawl apply FILE``: evals as code, against a running server.

The template is YAML or JSON; the formation is named after the file's stem unless
``--name`` says otherwise. Both talk to ``$PAWL_SERVER`` with ``$PAWL_API_KEY`` as
``pawl run`` does. Exit codes: 0 done (a plan, or a deploy that succeeded); 1 the deploy
ran and failed (the formation is ``failed``, what it created walked back); 2 refused,
unreachable, or the file could not be read.
"""

from __future__ import annotations

import argparse
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pawl.transport import ApiError, PawlClient, ServerUnreachable

if TYPE_CHECKING:  # yaml and rich load when a command runs: every `pawl` call registers these
    from rich.console import Console

DEFAULT_SERVER = "http://127.0.0.1:8000"
EXIT_OK, EXIT_FAILED, EXIT_REFUSED = 0, 1, 2
STYLES = {
    "create": ("+", "green"),
    "update": ("~", "yellow"),
    "delete": ("-", "red"),
    "unchanged": ("=", "dim"),
}


class TemplateFileError(Exception):
    """The template file is missing, unreadable, or not a YAML/JSON object."""


@dataclass(frozen=True)
class Target:
    server: str
    api_key: str | None
    project_id: str | None
    name: str
    template: dict[str, Any]
    parameters: dict[str, str]


def escape(text: str) -> str:
    """``text`` with rich's markup escaped (rich imported on first use)."""
    from rich.markup import escape as escape_markup

    return escape_markup(text)


def load_template(path: Path) -> dict[str, Any]:
    """The file's object (YAML is a superset of JSON, so one parser reads both)."""
    import yaml

    try:
        loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise TemplateFileError(f"cannot read {path}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise TemplateFileError(f"{path} is not valid YAML or JSON: {exc}") from None
    if not isinstance(loaded, dict):
        raise TemplateFileError(f"{path} must hold an object with a 'resources' key")
    return loaded


def parse_parameter(text: str) -> tuple[str, str]:
    """``KEY=VALUE``, or a bare ``KEY`` read from the environment variable of that name."""
    key, sep, value = text.partition("=")
    if not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    if not sep:
        if key not in os.environ:
            raise argparse.ArgumentTypeError(f"--param {key}: no environment variable {key}")
        value = os.environ[key]
    return key, value


def target_of(args: argparse.Namespace) -> Target:
    path = Path(args.file)
    return Target(
        server=args.server or os.environ.get("PAWL_SERVER") or DEFAULT_SERVER,
        api_key=args.api_key or os.environ.get("PAWL_API_KEY"),
        project_id=args.project_id or os.environ.get("PAWL_PROJECT_ID"),
        name=args.name or path.stem,
        template=load_template(path),
        parameters=dict(args.param or []),
    )


def _describe(change: dict[str, Any]) -> str:
    where = change.get("physical_resource_id") or ""
    text = f"{change['logical_id']} ({change['resource_type']}) {where}".rstrip()
    if change["action"] == "update":
        current = change["diff"].get("current") or {}
        desired = change["diff"]["desired"]
        moves = [
            f"{key}: {json.dumps(current.get(key))} -> {json.dumps(desired.get(key))}"
            for key in change.get("changed", [])
        ]
        text += "\n      " + "\n      ".join(moves)
    return text


def print_plan(console: Console, plan: dict[str, Any]) -> None:
    existing = plan.get("formation_id")
    heading = (
        f"formation {plan.get('name')} ({existing})"
        if existing
        else (f"formation {plan.get('name')} does not exist yet: every resource is created")
    )
    console.print(f"[bold]plan[/bold] {escape(heading)}")
    counts = dict.fromkeys(STYLES, 0)
    for change in plan["changes"]:
        sign, style = STYLES[change["action"]]
        counts[change["action"]] += 1
        line = f"{sign} {change['action']:<9} {_describe(change)}"
        console.print(f"[{style}]{escape(line)}[/{style}]")
    console.print(
        f"{counts['create']} to create, {counts['update']} to update, "
        f"{counts['delete']} to delete, {counts['unchanged']} unchanged"
    )


def _body(target: Target) -> dict[str, Any]:
    body: dict[str, Any] = {"template": target.template, "parameters": target.parameters}
    return body


def cmd_plan(args: argparse.Namespace, out: Console, err: Console) -> int:
    def work(client: PawlClient, target: Target) -> int:
        body = {**_body(target), "name": target.name}
        if target.project_id:
            body["project_id"] = target.project_id
        print_plan(out, client.plan_formation(body))
        return EXIT_OK

    return _guarded(args, err, work)


def print_outcome(
    out: Console,
    err: Console,
    formation: dict[str, Any],
    verb: str,
    unchanged: frozenset[str] = frozenset(),
) -> int:
    """The formation after a deploy. A resource's ``status`` is its last lifecycle step
    (``created`` since the first deploy); one the plan left alone reads ``unchanged``."""
    status = formation["status"]
    style = "green" if status == "active" else "red"
    out.print(
        f"[bold]{verb}[/bold] formation {escape(formation['name'])} ({formation['id']}): "
        f"[{style}]{status}[/{style}]"
    )
    for resource in formation["resources"]:
        if resource["status"] != "deleted":
            out.print(
                f"  {resource['logical_id']} ({resource['resource_type']}) "
                f"{resource['physical_resource_id']} "
                f"{'unchanged' if resource['logical_id'] in unchanged else resource['status']}"
            )
    for name, value in (formation.get("outputs") or {}).items():
        out.print(f"  output {escape(name)} = {escape(json.dumps(value))}")
    if status == "active":
        return EXIT_OK
    error = formation.get("error") or {}
    failed_at = (error.get("meta") or {}).get("logical_id", "?")
    err.print(
        f"{verb}: the deploy failed at resource {failed_at!r}; the formation is {status!r}. "
        f"{error.get('code')}: {escape(str(error.get('message')))}"
    )
    return EXIT_FAILED


def cmd_apply(args: argparse.Namespace, out: Console, err: Console) -> int:
    def work(client: PawlClient, target: Target) -> int:
        existing = client.find_formation(target.name, target.project_id)
        scope = {"project_id": target.project_id} if target.project_id else {}
        if existing is None:
            body = {**_body(target), "name": target.name, **scope}
            return print_outcome(out, err, client.create_formation(body), "apply (create)")
        plan = client.plan_formation({**_body(target), "name": target.name, **scope})
        unchanged = frozenset(
            change["logical_id"] for change in plan["changes"] if change["action"] == "unchanged"
        )
        updated = client.update_formation(existing["id"], _body(target))
        return print_outcome(out, err, updated, "apply (update)", unchanged)

    return _guarded(args, err, work)


def _guarded(args: argparse.Namespace, err: Console, work: Any) -> int:
    try:
        target = target_of(args)
        with PawlClient(target.server, target.api_key) as client:
            code: int = work(client, target)
            return code
    except TemplateFileError as exc:
        err.print(f"pawl {args.command}: {escape(str(exc))}")
    except ApiError as exc:
        field = exc.meta.get("field")
        where = f" (field {field})" if field else ""
        err.print(f"pawl {args.command}: refused: {exc.code}: {escape(exc.message)}{where}")
    except ServerUnreachable as exc:
        err.print(f"pawl {args.command}: server unreachable: {escape(str(exc))}")
    return EXIT_REFUSED


def add_parsers(commands: Any) -> None:
    """``plan`` and ``apply`` on the ``pawl`` command (pawl/cli/main.py calls this)."""
    for name, run, summary in (
        ("plan", cmd_plan, "show what applying a formation template would change"),
        ("apply", cmd_apply, "create or update a formation from a template (exit 1 if it failed)"),
    ):
        parser = commands.add_parser(name, help=summary, description=__doc__.split("\n\n")[1])
        parser.add_argument("file", metavar="FILE", help="the template (YAML or JSON)")
        parser.add_argument("--name", help="the formation's name (default: the file's stem)")
        parser.add_argument("--param", action="append", type=parse_parameter, metavar="K=V")
        parser.add_argument("--server", help="default: $PAWL_SERVER, else http://127.0.0.1:8000")
        parser.add_argument("--api-key", help="default: $PAWL_API_KEY")
        parser.add_argument("--project-id", help="needed with the admin key ($PAWL_PROJECT_ID)")
        parser.set_defaults(func=_with_consoles(run))


def _with_consoles(run: Any) -> Any:
    def entry(args: argparse.Namespace) -> int:
        from pawl.demo.comparison import make_console

        code: int = run(args, make_console(), make_console(stderr=True))
        return code

    return entry
