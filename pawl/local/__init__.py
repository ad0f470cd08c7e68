"""The embedded local runtime behind ``pawl serve``.

One process holds: the AWS stand-in (moto's server on 127.0.0.1), the Chalice app over
HTTP (:mod:`.gateway`), one SQS poller per queue handler that behaves like Lambda's event
source mapping (:mod:`.pollers`), a scheduler for ``@app.schedule`` handlers
(:mod:`.scheduler`) and snapshots that carry the stand-in's state across restarts
(:mod:`.snapshot`). :class:`~pawl.local.runtime.LocalRuntime` composes them.

Nothing here is shipped to Lambda: it is imported by the CLI and the tests only.
"""
