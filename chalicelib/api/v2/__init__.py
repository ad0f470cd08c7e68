"""``/v2``: the OpenWOP wire surface (RFC 0081 eval runs, RFC 0251 modes and baselines).

A second surface over the same engine, store, scorers and statistics as ``/api/v1``: a
suite version is a dataset, a suite run on an agent is an eval, and a ``/v2`` run is an
ordinary pawl run (see ``docs/openwop.md``). Its routes render every failure in the
OpenWOP envelope (:mod:`chalicelib.api.v2.envelope`).
"""
