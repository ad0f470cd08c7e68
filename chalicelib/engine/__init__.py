"""The run lifecycle and its guarantees (``docs/engine.md``).

- :mod:`~chalicelib.engine.start`: validate every start rule, write the run, run it
  synchronously (``wait: true``) or hand it to the fan-out queue.
- :mod:`~chalicelib.engine.fanout`: freeze a queued run's item set and enqueue its items.
- :mod:`~chalicelib.engine.execute_item`: execute one (run, item, trial) — the one path.
- :mod:`~chalicelib.engine.item_batch`: a batch of work items: skip, execute, record, claim.
- :mod:`~chalicelib.engine.settle`: aggregate, compare, decide, settle.
- :mod:`~chalicelib.engine.lifecycle`: terminal transitions and their one event.
- :mod:`~chalicelib.engine.reaper` / :mod:`~chalicelib.engine.recovery`: nothing stuck.
- :mod:`~chalicelib.engine.generations`: agent calls outside an eval, curation, purge.

And the rules of the catalog's writes, which the API calls rather than deciding in its
handlers: :mod:`~chalicelib.engine.agents`, :mod:`~chalicelib.engine.evals`,
:mod:`~chalicelib.engine.tools`, :mod:`~chalicelib.engine.deciders`,
:mod:`~chalicelib.engine.ai_providers`, :mod:`~chalicelib.engine.webhooks`.
"""
