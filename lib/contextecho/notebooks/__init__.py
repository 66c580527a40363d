"""Parameterized notebooks: generated from the experiments, executed with papermill.

    from contextecho.notebooks import run_notebook
    run_notebook("panel", {"targets": "local/smollm2-135m", "n_sessions": 2})

Inside a notebook: ``params = bind(experiment.Parameters, globals())``, then
one cell per stage of the experiment (``run = experiment.start(params)``,
``frame = experiment.grid(run)``, ..., ``variables = experiment.variables(run, ...)``).
"""
from .build import NOTEBOOKS, build, experiment, notebook_path, write_all
from .runner import NotebookRun, run_notebook

__all__ = ["NOTEBOOKS", "build", "experiment", "notebook_path", "write_all", "NotebookRun", "run_notebook"]
