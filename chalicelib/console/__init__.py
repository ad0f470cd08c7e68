"""The web console at ``/console/``: the API with a browser in front (``docs/console.md``)."""
