"""The AWS stand-in's own process: moto's server, patched, on 127.0.0.1.

The local runtime starts this as a child (``python -m chalicelib.local.standin_process``)
so that moto's request handling and pawl's workers do not share one interpreter lock: in
one process each AWS call waited for the workers' Python and the other way round. The
child reads its credentials (one JSON line) from stdin, prints ``{"port": N}`` on its first
line once it accepts connections, and exits when its stdin closes, so it never outlives the
runtime that started it (even one killed with SIGKILL). Every request must be signed with
those credentials (:mod:`chalicelib.local.standin_auth`, the outermost WSGI layer).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import threading
from typing import Any

from chalicelib.local import moto_patches, moto_server_patches, standin_auth
from chalicelib.local.standin import StandInCredentials


def serve(port: int, credentials: StandInCredentials) -> None:
    from moto.moto_server.werkzeug_app import (
        DomainDispatcherApplication,
        MotoRequestHandler,
        create_backend_app,
    )
    from werkzeug.serving import make_server

    moto_patches.apply()
    moto_server_patches.apply()
    app = moto_server_patches.JsonProtocolFront(DomainDispatcherApplication(create_backend_app))
    guarded = standin_auth.RequireSignature(app, credentials)  # outermost: unsigned stops here
    server = make_server(
        "127.0.0.1", port, guarded, threaded=True, request_handler=MotoRequestHandler
    )
    threading.Thread(target=_exit_with_parent, args=(server,), daemon=True).start()
    print(json.dumps({"port": server.server_address[1]}), flush=True)
    server.serve_forever(poll_interval=0.2)


def _exit_with_parent(server: Any) -> None:
    sys.stdin.read()  # returns at EOF: the parent closed the pipe or died
    server.shutdown()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    args = parser.parse_args(argv)
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one line per request otherwise
    credentials = StandInCredentials.from_json(sys.stdin.readline())
    serve(args.port, credentials)


if __name__ == "__main__":
    main()
