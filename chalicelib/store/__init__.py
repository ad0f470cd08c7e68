"""Persistence: PynamoDB models and repositories.

The only package that imports pynamodb. Repositories return domain objects
(:mod:`chalicelib.domain`), never models, and translate PynamoDB errors into
:mod:`chalicelib.errors`.
"""
