"""Domain types: what repositories return and what the API serializes.

pydantic models with the public fields of each resource. Secrets (key hashes, webhook
secrets, a run's tool_context) are not fields here; repositories expose them through
dedicated calls only.
"""
