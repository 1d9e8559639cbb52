"""Patches of moto's own classes, one module per service; :func:`jobqueues.emulator.install.install` applies them.

Each ``keep_*``, ``make_*``, ``harden_*``, ... function patches one behaviour in the server process and says
why in its docstring. :mod:`.after_create` is the one way to extend moto's own CloudFormation handlers.
"""
