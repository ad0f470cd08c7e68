"""Webhook delivery handler (to be written)."""

from __future__ import annotations

from chalice import Blueprint

bp = Blueprint(__name__)
