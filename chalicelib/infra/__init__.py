"""pawl's AWS resources, defined once.

:mod:`.definitions` derives every table from the PynamoDB models and every queue from the
settings the engine reads; :mod:`chalicelib.bootstrap` creates them on the local stand-in
and :mod:`.template` renders them as the CloudFormation merged into ``chalice package``
(``python -m chalicelib.infra``). See ``infra/README.md``.
"""
