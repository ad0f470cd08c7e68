"""Webhooks: the built-in HTTP sink plugin, signing, and delivery."""
