"""Parameterized notebooks: generation, validated parameters, papermill runs, outputs.

    from contextecho.notebooks import run_notebook
    run_notebook("panel", {"targets": "local/smollm2-135m", "n_sessions": 2})

Inside a notebook: ``params = bind(experiment.Parameters, globals(), _baseline)`` then
``result = experiment.run(params)`` and ``show(result)``.
"""
from .build import NOTEBOOKS, build, experiment, notebook_path, write_all
from .outputs import DuplicateVariableError, Outputs, cell_counts, merge_variables, style
from .parameters import ParameterError, bind, check_overrides, coerce, declared
from .runner import NotebookRun, run_notebook
from .show import Result, show

__all__ = ["NOTEBOOKS", "build", "experiment", "notebook_path", "write_all", "Outputs",
           "DuplicateVariableError", "cell_counts", "merge_variables", "style",
           "ParameterError", "bind", "check_overrides", "coerce", "declared",
           "NotebookRun", "run_notebook", "Result", "show"]
