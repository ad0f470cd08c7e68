"""Formations: a template of pawl resources, resolved and ordered (pure; no I/O here).

The deploy that reconciles a template with the project's resources lives at the HTTP
edge (``chalicelib/api/formation_*.py``): it creates and updates resources through the
same route handlers a REST call reaches, so it validates exactly as they do.
"""
