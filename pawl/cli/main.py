"""The ``pawl`` command: ``serve`` (the local runtime), ``plugins``, ``demo``, ``run`` (CI),
and a command per API operation (:mod:`pawl.cli.ops`).

Not shipped to Lambda's behaviour: it only composes :mod:`pawl.local` and the plugin
manager for a terminal.

Start-up is kept to the command being run (docs/cli.md): the API commands come from the
committed table (:mod:`pawl.cli.operation_table`), not from importing the routes; only the
command being run gets its flags; anything heavier than the standard library is imported
inside the command that needs it.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import os
import signal
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

from pawl.cli import parsing, pipes, registry

if TYPE_CHECKING:  # imported lazily: `pawl plugins` need not load moto and the app
    import threading

    from rich.console import Console

    from pawl.cli.logs import FileLog
    from pawl.demo.walkthrough import DemoOptions
    from pawl.local.runtime import LocalRuntime, RuntimeConfig

DEFAULT_STATE_DIR = ".pawl-state"
#: Repeated stop signals within this many seconds are one request (see _stop_on_signals).
SIGNAL_GRACE_S = 2.0


def _runtime_config(args: argparse.Namespace, state_dir: Path) -> RuntimeConfig:
    from pawl.local.compaction import CompactionPolicy
    from pawl.local.runtime import RuntimeConfig

    workers: dict[str, int] = {}
    for spec in args.workers or []:
        queue, _, count = spec.partition("=")
        workers[queue] = int(count)
    return RuntimeConfig(
        host=args.host,
        port=args.port,
        state_dir=state_dir,
        aws_endpoint=args.aws_endpoint,
        use_real_aws=args.use_aws,
        snapshot_interval_s=args.snapshot_interval,
        compaction=CompactionPolicy.from_megabytes(
            args.snapshot_min_journal_mb, args.snapshot_journal_ratio
        ),
        workers=workers,
        item_workers=args.item_workers,
        retry_delay_s=args.retry_delay,
        run_schedules=not args.no_schedules,
        standin_restarts=args.standin_restarts,
    )


@contextmanager
def _stop_on_signals() -> Iterator[threading.Event]:
    """An event set by SIGINT/SIGTERM.

    A wrapper that forwards signals (``timeout``, a process manager, a terminal's process
    group) often delivers the same stop twice; repeats within ``SIGNAL_GRACE_S`` are
    ignored so the final snapshot is not cut short. A signal after that forces the exit.
    """
    import threading

    stop = threading.Event()
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    first_at: list[float] = []

    def request_stop(signum: int, frame: FrameType | None) -> None:
        if not first_at:
            first_at.append(time.monotonic())
            stop.set()
        elif time.monotonic() - first_at[0] > SIGNAL_GRACE_S:
            print("pawl: forced exit (journaled writes are kept)", file=sys.stderr)
            os._exit(128 + signum)

    for sig in previous:
        signal.signal(sig, request_stop)
    try:
        yield stop
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _banner(runtime: LocalRuntime, log_path: Path) -> None:
    from chalicelib.settings import get_settings

    print(f"pawl is serving on {runtime.url}", flush=True)
    print(f"  admin key   {runtime.admin_key}   (Authorization: Bearer <key>)", flush=True)
    print(f"  console     {runtime.url}/console/   (sign in with an API key)", flush=True)
    if runtime.persists_state:
        print(f"  state dir   {runtime.state_dir}", flush=True)
        print(f"  AWS         moto stand-in at {runtime.aws_endpoint}", flush=True)
    else:
        print(
            f"  AWS         {runtime.aws_endpoint or 'real AWS'} (keeps its own state)", flush=True
        )
    allowed = get_settings().allow_private_urls
    outbound = f"public and PAWL_ALLOW_PRIVATE_URLS={allowed}" if allowed else "public only"
    print(f"  outbound    {outbound} (never pawl's own ports)", flush=True)
    if runtime.restored_counts is not None:
        from pawl.local.snapshot import describe_counts

        print(f"  restored    {describe_counts(runtime.restored_counts)}", flush=True)
    print(f"  log         {log_path}   (INFO lines; --verbose shows them here too)", flush=True)
    if runtime.persists_state:
        print("  stop with Ctrl-C (every acknowledged write is journaled first)", flush=True)
    else:
        print("  stop with Ctrl-C", flush=True)


def _dump_stacks_on_sigusr1() -> None:
    """`kill -USR1 <pid>` prints every thread's stack (where is a stuck stop waiting?)."""
    if not hasattr(signal, "SIGUSR1"):
        return
    import faulthandler

    # stderr may not be a real file (an embedding host captured it): then do without.
    with contextlib.suppress(ValueError, OSError, AttributeError):
        faulthandler.register(signal.SIGUSR1, all_threads=True)


def start_failure(exc: BaseException, host: str, port: int) -> str:
    """Why the runtime did not start, with what to do when the port is taken."""
    if isinstance(exc, OSError) and exc.errno == errno.EADDRINUSE:
        return (
            f"port {port} on {host} is already in use (another `pawl serve`?): stop what "
            f"holds it, or choose another port with --port (e.g. --port {port + 1})"
        )
    return str(exc)


def serve_until_stopped(runtime: LocalRuntime, stop: threading.Event) -> str | None:
    """Wait until a signal asks to stop or the runtime gives up on its stand-in (then the
    one line saying why, which the caller prints before exiting non-zero)."""
    while not stop.wait(0.5) and runtime.failure is None:
        pass
    return runtime.failure


def print_failure(command: str, failure: str) -> None:
    # One line, no traceback: the journal holds every acknowledged write for the next start.
    print(f"{command}: {failure}", file=sys.stderr, flush=True)


def cmd_serve(args: argparse.Namespace) -> int:
    from pawl.cli import logs
    from pawl.cli.extras import require

    require("moto", "werkzeug")  # the stand-in (the `local` extra), before anything is written
    with logs.file_log(Path(args.state_dir)) as log:
        return _serve(args, log)


def _serve(args: argparse.Namespace, log: FileLog) -> int:
    import gc

    from pawl.local.runtime import LocalRuntime

    runtime = LocalRuntime(_runtime_config(args, Path(args.state_dir)))
    _dump_stacks_on_sigusr1()
    with _stop_on_signals() as stop:
        try:
            runtime.start()
        except (OSError, RuntimeError) as exc:
            print(f"pawl serve: {start_failure(exc, args.host, args.port)}", file=sys.stderr)
            return 1
        _banner(runtime, log.open())
        from chalicelib.long_lived import freeze_start_up_heap

        freeze_start_up_heap()  # a full collection of the start-up heap paused every thread
        failure = serve_until_stopped(runtime, stop)
        if failure is None:
            print("pawl: stopping (saving state)...", flush=True)
        runtime.stop()
    if failure is not None:
        print_failure("pawl serve", failure)
        return 1
    print("pawl: stopped", flush=True)
    # The state is saved: skip the interpreter's final garbage collection of every object
    # (about 1 s here), which would only free memory the exit frees anyway.
    gc.freeze()
    return 0


def cmd_plugins(args: argparse.Namespace) -> int:
    from chalicelib import wiring
    from chalicelib.plugins.report import report_lines

    host = wiring.services().plugins
    print("\n".join(report_lines(host.report)))
    return 1 if host.report.failed else 0


def cmd_demo(args: argparse.Namespace) -> int:
    from pawl.cli.extras import require

    require("moto", "werkzeug", "rich")  # the stand-in and the walkthrough's output
    import tempfile

    from pawl.cli import logs
    from pawl.demo.judge import demo_judge

    with demo_judge() as judge_url, tempfile.TemporaryDirectory(prefix="pawl-demo-") as temp_dir:
        state_dir = Path(args.state_dir or temp_dir)
        with logs.file_log(state_dir) as log:
            return _demo_in(state_dir, judge_url, args, log)


def _demo_in(state_dir: Path, judge_url: str, args: argparse.Namespace, log: FileLog) -> int:
    from pawl.demo.walkthrough import AGENT_MODULE, DemoOptions
    from pawl.local.runtime import LocalRuntime, RuntimeConfig

    options = DemoOptions(report_path=Path(args.report), quick=args.quick, judge_url=judge_url)
    config = RuntimeConfig(
        port=args.port, state_dir=state_dir, python_agent_modules=(AGENT_MODULE,)
    )
    runtime = LocalRuntime(config)
    try:
        runtime.start()
    except (OSError, RuntimeError) as exc:
        print(f"pawl demo: {start_failure(exc, config.host, args.port)}", file=sys.stderr)
        return 1
    log_path = log.open()
    with _stop_on_signals() as stop:
        try:
            return _demo_on(runtime, options, args, stop, log_path)
        finally:
            runtime.stop()


def _demo_on(
    runtime: LocalRuntime,
    options: DemoOptions,
    args: argparse.Namespace,
    stop: threading.Event,
    log_path: Path,
) -> int:
    from pawl.demo.walkthrough import DemoFailed, run_demo

    print(
        f"pawl demo: runtime on {runtime.url} (state in {runtime.state_dir}, log {log_path})",
        flush=True,
    )
    if args.formations:
        from pawl.demo.formation_walkthrough import walkthrough

        return walkthrough(runtime.url, runtime.admin_key)
    try:
        result = run_demo(runtime.url, runtime.admin_key, options)
    except DemoFailed as exc:
        print(f"pawl demo failed: {exc}", file=sys.stderr)
        return 1
    if args.keep_running:
        from pawl.demo.walkthrough import demo_links

        print("\n".join(demo_links(runtime.url, result)))
        return keep_serving(runtime, stop)
    return 0


def keep_serving(runtime: LocalRuntime, stop: threading.Event) -> int:
    """``pawl demo --keep-running`` after the walkthrough: serve until Ctrl-C (0), or until
    the runtime gives up on its stand-in (1, with the one line ``pawl serve`` prints)."""
    print("pawl demo: still serving; stop with Ctrl-C", flush=True)
    failure = serve_until_stopped(runtime, stop)
    if failure is None:
        return 0
    print_failure("pawl demo", failure)
    return 1


def cmd_run(args: argparse.Namespace) -> int:
    # Only what the start request needs: the rest loads while the run executes.
    from pawl.demo.ci import Consoles, RunRequest, run_for_ci
    from pawl.demo.ci_outputs import ReportTargets
    from pawl.transport import DEFAULT_SERVER

    request = RunRequest(
        server=args.server or os.environ.get("PAWL_SERVER") or DEFAULT_SERVER,
        api_key=args.api_key or os.environ.get("PAWL_API_KEY"),
        eval_id=args.eval_id,
        baseline=args.baseline,
        agent_version=args.agent_version,
        max_concurrency=args.concurrency,
        early_stop=args.early_stop,
        metadata=dict(args.metadata or []),
        timeout_s=args.timeout,
        reports=ReportTargets(args.junit, args.markdown, args.github_output),
    )
    code = run_for_ci(request, Consoles(_console))
    # The verdict and the reports are out: skip the interpreter's final collection of the
    # client's, the models' and rich's objects (0.3-0.4 s of a loaded machine's exit; the
    # process's end frees the memory anyway), as `pawl serve` does.
    import gc

    gc.freeze()
    return code


def _console(stderr: bool) -> Console:
    from pawl.demo.comparison import make_console

    return make_console(stderr=stderr)


def _non_negative(text: str) -> float:
    value = float(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text} is negative: give 0 or more")
    return value


def _metadata_pair(text: str) -> tuple[str, str]:
    from pawl.demo.ci import parse_metadata_pair

    try:
        return parse_metadata_pair(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _add_run_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    run = commands.add_parser(
        "run",
        help="start a run on a running server and exit with its verdict (for CI)",
        description="Exit 0: passed (or no gate applies); 1: failed its gates; "
        "2: refused, unreachable, the run failed, was cancelled or timed out, or a report "
        "asked for could not be written.",
    )
    run.add_argument("--eval", dest="eval_id", required=True, metavar="NAME|ID")
    run.add_argument(
        "--baseline",
        metavar="RUN_ID|latest|latest-or-none",
        help="latest: the newest completed run of the eval (exit 2 if none); latest-or-none: "
        "that run, or no baseline (the threshold alone) when the eval has none yet",
    )
    run.add_argument("--agent-version", type=int, metavar="N", help="default: the latest version")
    run.add_argument(
        "--concurrency", type=int, metavar="N", help="items in flight at once (default: the eval's)"
    )
    run.add_argument(
        "--early-stop",
        action="store_true",
        help="run the items in a random order and stop once a sequential test decides "
        "regressed / not worse against the baseline (needs --baseline)",
    )
    run.add_argument("--server", help="default: $PAWL_SERVER, else http://127.0.0.1:8000")
    run.add_argument("--api-key", help="default: $PAWL_API_KEY")
    run.add_argument(
        "--metadata", nargs="+", action="extend", type=_metadata_pair, metavar="KEY=VALUE"
    )
    run.add_argument(
        "--timeout", type=float, default=3600.0, metavar="SECONDS", help="longest wait for the run"
    )
    _add_report_arguments(run)
    run.set_defaults(func=cmd_run)


def _add_report_arguments(run: argparse.ArgumentParser) -> None:
    reports = run.add_argument_group(
        "reports (the Markdown is also appended to $GITHUB_STEP_SUMMARY when that is set)"
    )
    reports.add_argument(
        "--junit", type=Path, metavar="FILE", help="JUnit XML: one test case per item"
    )
    reports.add_argument(
        "--markdown", type=Path, metavar="FILE", help="Markdown for a pull-request comment"
    )
    reports.add_argument(
        "--github-output",
        type=Path,
        metavar="FILE",
        help="append step outputs (passed, status, run-id, console-url) to this file, "
        "as GitHub's $GITHUB_OUTPUT",
    )


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The ``pawl`` parser: every command, each with its flags.

    ``only`` (the command being run) gives just that command its flags and adds just that
    API command: the others are listed by name (and the API commands in the epilog, from
    the committed table), so start-up pays for one command. ``""``: no command's flags
    (``pawl --help``).
    """
    parser = argparse.ArgumentParser(
        prog="pawl",
        description="pawl: evaluations for AI agents",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", title="commands"
    )

    def wanted(name: str) -> bool:
        return only is None or only == name

    serve = commands.add_parser("serve", help="run the API, workers and schedules locally")
    if wanted("serve"):
        _add_serve_flags(serve)
    serve.set_defaults(func=cmd_serve)

    plugins = commands.add_parser("plugins", help="what plugins were found (exit 1 if one failed)")
    plugins.set_defaults(func=cmd_plugins)

    demo = commands.add_parser("demo", help="start a runtime in-process and walk through pawl")
    if wanted("demo"):
        _add_demo_flags(demo)
    demo.set_defaults(func=cmd_demo)

    _add_run_parser(commands)
    registry.add_commands_of_other_modules(commands, only)
    registry.add_api_commands(parser, commands, only)
    parsing.add_to_every_command(
        parser,
        "-v",
        "--verbose",
        action="store_true",
        help="log INFO lines too (default: warnings and errors; also $PAWL_LOG_LEVEL)",
        only=only,
    )
    return parser


def _add_serve_flags(serve: argparse.ArgumentParser) -> None:
    from pawl.local.compaction import DEFAULT_JOURNAL_RATIO, DEFAULT_MIN_JOURNAL_BYTES, MB

    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--state-dir", default=DEFAULT_STATE_DIR)
    serve.add_argument(
        "--aws-endpoint", help="use this AWS endpoint (default: $AWS_ENDPOINT_URL, else moto)"
    )
    serve.add_argument(
        "--use-aws", action="store_true", help="use real AWS with the usual boto3 credentials"
    )
    serve.add_argument(
        "--snapshot-interval",
        type=float,
        default=1.0,
        metavar="SECONDS",
        help="how often to check whether a snapshot is due (0: only at a clean stop)",
    )
    serve.add_argument(
        "--snapshot-min-journal-mb",
        type=_non_negative,
        default=DEFAULT_MIN_JOURNAL_BYTES / MB,
        metavar="MB",
        help="a snapshot needs at least this much journal since the last one (default %(default)g)",
    )
    serve.add_argument(
        "--snapshot-journal-ratio",
        type=_non_negative,
        default=DEFAULT_JOURNAL_RATIO,
        metavar="R",
        help="...and at least R x the last snapshot's size (default %(default)g)",
    )
    serve.add_argument("--item-workers", type=int, default=4, help="threads on the item queue")
    serve.add_argument(
        "--workers", action="append", metavar="QUEUE=N", help="threads for a named queue"
    )
    serve.add_argument("--retry-delay", type=int, default=2, metavar="SECONDS")
    serve.add_argument("--no-schedules", action="store_true", help="run schedules only on demand")
    serve.add_argument(
        "--standin-restarts",
        type=int,
        default=3,
        metavar="N",
        help="restart a dead AWS stand-in up to N times a minute, then exit 1 (0: exit at once)",
    )


def _add_demo_flags(demo: argparse.ArgumentParser) -> None:
    demo.add_argument("--state-dir", help="keep the demo's state here (default: a temp dir)")
    demo.add_argument("--port", type=int, default=0, help="default: a free port")
    demo.add_argument("--keep-running", action="store_true", help="serve until Ctrl-C")
    demo.add_argument("--report", default="pawl-report.html", help="where to write the HTML report")
    demo.add_argument("--quick", action="store_true", help="a sample of 12 cases (faster)")
    demo.add_argument("--formations", action="store_true", help="pawl plan/apply of the suite")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    command = parsing.command_of(argv)
    parser = build_parser(only=command or "")
    if command is not None and command not in (names := registry.command_names(parser)):
        parser.error(parsing.unknown_command(command, names))
    args = parsing.parse(parser, argv)
    from pawl.cli import logs  # after parsing: `pawl --help` loads no logging

    try:
        logs.configure(logs.console_level(args.verbose, os.environ))
    except ValueError as exc:
        parser.error(str(exc))
    return pipes.quiet_when_stdout_closes(lambda: _run_command(args))


def _run_command(args: argparse.Namespace) -> int:
    try:
        return int(args.func(args))
    except ModuleNotFoundError as exc:  # a package of the `local` extra, not installed
        from pawl.cli.extras import missing_extra_message

        message = missing_extra_message(args.command, exc)
        if message is None:
            raise
        print(message, file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
