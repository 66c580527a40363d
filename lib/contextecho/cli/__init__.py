"""The command line: one module per command of ``python -m contextecho``, each exposing
``configure(parser)`` and ``run(args) -> int`` (dispatched by ``contextecho.__main__``); ``confirm``
is the step the commands that run after a plan share."""
