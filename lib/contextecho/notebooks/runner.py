"""Run one notebook with papermill: validate the overrides (names, types, ranges), execute
in the repository root, leave the executed copy beside the notebook's outputs.

What can be checked before the kernel starts is (so nothing refused reaches papermill's
injected-parameters cell, an endpoint carrying a credential included). What only the run
can check (a count beyond what the corpus or a session holds) fails inside the kernel
before any target call; that failure, and a model the notebook cannot call, come back as
the same errors (:class:`~contextecho.experiments.parameters.ParameterError`,
:class:`~contextecho.engine.calls.ModelConfigError`), which ``contextecho notebook``
answers with exit 2.
"""
from __future__ import annotations

import os
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Mapping, TextIO

import nbformat

from ..engine.paths import REPO_ROOT
from ..engine.progress import PROGRESS_ENV
from ..engine.usage import UsageError
from .build import experiment, notebook_path
from .kernel import ENGINE, SharedKernel, kernel_config
from ..paper.outputs import GENERATED
from ..experiments.parameters import ParameterError, check_overrides, coerce, declared


@dataclass(frozen=True)
class NotebookRun:
    name: str
    output_dir: Path
    executed: Path
    wall_s: float

    @property
    def variables_file(self) -> Path:
        return self.output_dir / "variables.yml"


def parameters_source(path: Path) -> str:
    nb = nbformat.read(path, as_version=4)
    tagged = [c for c in nb.cells if "parameters" in c.get("metadata", {}).get("tags", [])]
    if len(tagged) != 1:
        raise ParameterError(f"{path} must have exactly one cell tagged 'parameters' "
                             f"(found {len(tagged)})")
    return tagged[0].source


def check_parameters(name: str, overrides: Mapping[str, Any], *, notebook: Path | None = None):
    """The notebook's parameters with ``overrides``, before any kernel starts: every name
    is one the notebook's parameters cell assigns, every value has the declared type and
    lies in its declared range (:class:`ParameterError` otherwise)."""
    path = notebook or notebook_path(name)
    check_overrides(parameters_source(path), overrides, f"notebook {path.name}")
    return coerce(experiment(name).Parameters, overrides, where=f"notebook {path.name}")


def output_folder(name: str, overrides: Mapping[str, Any], output_dir: Path | None = None) -> Path:
    """Where notebook ``name`` writes its outputs: ``output_dir``, else the ``output_dir``
    override, else ``paper/_generated/<name>`` (a relative path is the repository's)."""
    folder = Path(output_dir or overrides.get("output_dir") or GENERATED / name)
    return folder if folder.is_absolute() else REPO_ROOT / folder


def run_notebook(name: str, overrides: Mapping[str, Any] | None = None, *,
                 output_dir: Path | None = None, notebook: Path | None = None,
                 log_output: bool = True, kernel_name: str = "python3",
                 kernel: SharedKernel | None = None,
                 console: tuple[TextIO, TextIO] | None = None) -> NotebookRun:
    """Execute ``notebooks/<name>.ipynb`` with ``overrides``; fail before the kernel
    starts on an unknown name, a value of the wrong type or out of range. A model the
    notebook cannot call (no route, no key) stops it before any call and is raised here
    as :class:`~contextecho.engine.calls.ModelConfigError`; a count the run finds out of
    range (more sessions or positions than there are) as :class:`ParameterError`.

    ``log_output``: copy what the notebook's cells print to this process's stdout and
    stderr as they print it (the console log of ``contextecho notebook`` and ``make
    paper``: each batch's summary line once). Only the copy papermill receives is shown:
    papermill's own logging of the outputs stays off, so no line is shown twice whatever
    the logging configuration. ``console``: the (stdout, stderr) it is copied to instead.

    ``kernel``: run in this :class:`~contextecho.notebooks.kernel.SharedKernel` (reset as a
    new one; its environment and working folder are its own) instead of a kernel of its own."""
    import papermill

    overrides = dict(overrides or {})
    module = experiment(name)
    path = notebook or notebook_path(name)
    check_parameters(name, overrides, notebook=path)
    given = overrides.get("output_dir")  # `-p output_dir X` means the same as output_dir=X
    if given and output_dir and Path(given) != Path(output_dir):
        raise ParameterError(f"notebook {path.name}: output_dir given twice ({given!r} and {str(output_dir)!r})")
    output_dir = output_folder(name, overrides, output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    if "output_dir" in declared(module.Parameters):
        overrides["output_dir"] = str(output_dir)
    executed = output_dir / f"{name}.ipynb"
    start = time.perf_counter()
    # The console shows the kernel's stderr: its progress bars are text there, not widgets. A
    # shared kernel has its environment already (and another thread may be running one).
    kernel_env = {PROGRESS_ENV: "text"} if log_output and kernel is None else {}
    shared = {} if kernel is None else {"engine_name": ENGINE, "km": kernel.ready()}
    out, err = console or (sys.stdout, sys.stderr)
    try:
        with _environment(kernel_env):
            papermill.execute_notebook(str(path), str(executed), parameters=overrides, cwd=str(REPO_ROOT),
                                       kernel_name=kernel_name, log_output=False,
                                       stdout_file=out if log_output else None,
                                       stderr_file=err if log_output else None,
                                       progress_bar=False, report_mode=False, config=kernel_config(), **shared)
    except papermill.PapermillExecutionError as exc:
        error = _configuration_error(exc.ename)
        if error is None:
            raise
        message = f"notebook {path.name}: {exc.evalue}"
    else:
        return NotebookRun(name, output_dir, executed, time.perf_counter() - start)
    raise error(message)  # outside the handler: papermill's error (the cell's source) is not chained


@contextmanager
def _environment(values: Mapping[str, str]) -> Iterator[None]:
    """``values`` set in this process's environment (which the kernel it starts inherits) within."""
    before = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in before.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _configuration_error(ename: str) -> type[Exception] | None:
    """The error class to raise for a notebook cell's error named ``ename``, when it is one
    the user fixes (:class:`~contextecho.engine.usage.UsageError`: a parameter out of range, a
    model that cannot be called, a file to supply, ...): the first of these bases its class
    derives from; None for any other."""
    from ..engine.calls import ModelConfigError  # LiteLLM's import: only when a cell failed
    for base in (ModelConfigError, ParameterError, UsageError):
        family, names = [base], set()
        while family:
            cls = family.pop()
            names.add(cls.__name__)
            family += cls.__subclasses__()
        if ename in names:
            return base
    return None
