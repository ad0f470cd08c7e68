"""Chalice entry point: the app the composition root builds (chalicelib/wiring.py)."""

from chalicelib import long_lived, wiring

app = wiring.create_app()
long_lived.freeze_in_lambda()
