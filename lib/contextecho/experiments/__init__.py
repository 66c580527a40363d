"""The experiment behind each notebook: a ``Parameters`` dataclass (the notebook's
parameters cell is generated from it), ``TITLE``, ``PAPER_SCALE`` (the parameter set of
the paper's scale) and ``run(params) -> notebooks.Result``, which writes the
notebook's outputs (results, figures, tables, variables, manifest)."""
