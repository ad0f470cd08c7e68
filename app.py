"""Chalice entry point: the app the composition root builds (chalicelib/wiring.py)."""

from chalicelib import wiring

app = wiring.create_app()
