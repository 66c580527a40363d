"""The command line: one module per command of ``python -m contextecho``, each exposing
``configure(parser)`` and ``run(args) -> int`` (dispatched by ``contextecho.__main__``)."""
