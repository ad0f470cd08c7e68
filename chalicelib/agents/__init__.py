"""Agent adapters: how pawl calls the agent under test, one contract for every type."""
