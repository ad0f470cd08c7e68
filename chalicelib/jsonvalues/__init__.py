"""JSON values pawl accepts: the rules a request body meets, the same rules as JSON Schema,
and the JSON Logic pawl evaluates. Imports nothing above errors; the API and scoring share it."""
