"""Scorers: the contract and the built-ins, registered through the plugin hook."""
