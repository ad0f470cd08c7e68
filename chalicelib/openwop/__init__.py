"""The OpenWOP (RFC 0081 / RFC 0251) wire contract of ``/v2``: schemas, suites, fixtures,
the summary and events of an eval run, the error envelope. Pure: no I/O beyond reading
the vendored schema files; the HTTP edge is :mod:`chalicelib.api.v2`."""
