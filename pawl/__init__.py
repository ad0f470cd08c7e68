"""pawl: an evaluation service for AI agents.

The package holds what runs where a developer works: the command line (:mod:`pawl.cli`),
the embedded local runtime (:mod:`pawl.local`), the demo (:mod:`pawl.demo`) and the HTTP
client they share (:mod:`pawl.transport`). The service itself (what Lambda runs) is
``chalicelib``.
"""
