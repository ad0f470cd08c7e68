"""The demo and the CI runner: a support agent in two versions and its test cases; the
comparison figures (``summary``), their terminal tables (``comparison``) and HTML report
(``report``, ``plot``), run progress, ``pawl demo`` (``walkthrough``) and ``pawl run`` (``ci``)."""
