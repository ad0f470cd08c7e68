"""The AWS stand-in's own process: moto's server, patched, on 127.0.0.1.

The local runtime starts this as a child (``python -m pawl.local.standin_process``)
so that moto's request handling and pawl's workers do not share one interpreter lock: in
one process each AWS call waited for the workers' Python and the other way round. The
child reads its credentials (one JSON line) from stdin, prints ``{"port": N}`` on its first
line once it accepts connections, and exits when its stdin closes, so it never outlives the
runtime that started it (even one killed with SIGKILL). Every request must be signed with
those credentials (:mod:`pawl.local.standin_auth`, the outermost WSGI layer).

With ``--journal-dir`` every acknowledged mutation is journaled (``local/journal.py``),
and the following stdin lines carry the runtime's control commands, one JSON object a line,
each answered on one stdout line: ``open`` (restore the snapshot into moto, replay the
journal over it, then start a new segment) and ``snapshot`` (cut the journal and write the
state at the cut from a forked child, then drop the segments it holds). A pipe only the
parent holds: no network surface.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import threading
from pathlib import Path
from typing import IO, Any

from pawl.local import moto_patches, moto_server_patches, standin_auth
from pawl.local.journal import Journal
from pawl.local.journal_wsgi import JournalMiddleware, handle_command
from pawl.local.standin import StandInCredentials
from pawl.local.standin_http import keep_alive
from pawl.local.state_lock import STATE_LOCK, OneDynamoDBCallAtATime


def serve(port: int, credentials: StandInCredentials, journal_dir: Path | None = None) -> None:
    from moto.moto_server.werkzeug_app import (
        DomainDispatcherApplication,
        MotoRequestHandler,
        create_backend_app,
    )
    from werkzeug.serving import make_server

    control_out = _claim_stdout()
    moto_patches.apply()  # both refuse (plain moto runs) on a moto they were not written for
    moto_server_patches.apply()
    dispatcher = DomainDispatcherApplication(create_backend_app)
    # The state lock is not a patch: it stays whatever moto is installed (the journal
    # relies on it, and so does moto's DynamoDB under concurrent requests).
    moto_app = OneDynamoDBCallAtATime(moto_server_patches.front(dispatcher))
    app: Any = moto_app
    journal = None
    if journal_dir is not None:
        journal = Journal(journal_dir, STATE_LOCK)
        app = JournalMiddleware(moto_app, journal)
    guarded = standin_auth.RequireSignature(app, credentials)  # outermost: unsigned stops here
    server = make_server(
        "127.0.0.1", port, guarded, threaded=True, request_handler=keep_alive(MotoRequestHandler)
    )
    control = threading.Thread(
        target=_obey_parent, args=(server, journal, moto_app, control_out), daemon=True
    )
    control.start()
    _say(control_out, {"port": server.server_address[1]})
    server.serve_forever(poll_interval=0.2)


def _claim_stdout() -> IO[str]:
    """Keep the real stdout for the control protocol and send stray prints to stderr."""
    control_out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return control_out


def _say(out: IO[str], message: dict[str, Any]) -> None:
    out.write(json.dumps(message) + "\n")
    out.flush()


def _obey_parent(server: Any, journal: Journal | None, moto_app: Any, control_out: IO[str]) -> None:
    """Answer control commands until stdin closes (the parent stopped or died), then exit."""
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            if journal is None:
                raise RuntimeError("this stand-in keeps no journal")
            reply = handle_command(journal, moto_app, json.loads(line))
        except Exception as exc:
            logging.getLogger("pawl.local").exception("control command failed")
            reply = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
        _say(control_out, reply)
    if journal is not None:
        journal.close()
    server.shutdown()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--journal-dir", type=Path, default=None, help="journal mutations here")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="stand-in %(levelname)s %(name)s %(message)s")
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one line per request otherwise
    credentials = StandInCredentials.from_json(sys.stdin.readline())
    serve(args.port, credentials, args.journal_dir)


if __name__ == "__main__":
    main()
