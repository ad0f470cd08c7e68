"""The HTTP edge: blueprints per resource, request parsing, auth, error mapping."""
