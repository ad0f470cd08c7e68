"""Triggers: a starter (manual, webhook, schedule, event) bound to an eval, and its firings.

Part of the engine (a firing starts a run through :mod:`chalicelib.engine.start`), below the
HTTP and event edges. :mod:`.service` writes triggers from a validated body (the API and
formations both call it); :mod:`.firing` executes one firing; :mod:`.schedule` claims due
cron slots; :mod:`.events` matches pawl's own events; :mod:`.inbound` verifies signed
webhook calls. See ``docs/triggers.md``.
"""
