"""Deciders: asking a versioned question set about an input (see :mod:`.decide`)."""
