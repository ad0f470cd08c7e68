"""pawl: an evaluation service for AI agents (everything Chalice ships to Lambda)."""
