"""``pawl``: the command line (entry point :func:`pawl.cli.main.main`)."""
