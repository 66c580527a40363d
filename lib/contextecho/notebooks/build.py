"""The notebooks are generated from their experiment (nbformat), so the parameters cell,
the stages and the library never disagree: ``contextecho notebook --build`` rewrites
``notebooks/*.ipynb``; a test checks the committed copies are current.

Every notebook tells one experiment's story in the same shape: its introduction, the
imports, the cell tagged ``parameters`` (from the ``Parameters`` dataclass), a validating
``bind`` (unknown names and out-of-range values fail even under plain papermill, before
any model call), then one short cell per stage of the experiment's ``STAGES``
(:class:`~contextecho.experiments.spine.Stage`): the stage's docstring as text, then
``name = experiment.function(arguments)`` and ``name``, so each stage's grid, table or
figure shows inline and an author can stop after any cell. The last stage writes the
variables and the run log.
"""
from __future__ import annotations

import importlib
import re
from dataclasses import fields
from pathlib import Path

import nbformat

from ..engine.paths import REPO_ROOT
from ..experiments.parameters import declared

NOTEBOOK_DIR = REPO_ROOT / "notebooks"
# In the order `make paper` runs them.
NOTEBOOKS = ("panel", "compaction", "onset", "a_anchor", "cross_judge", "continuation", "cape", "anchor")


def experiment(name: str):
    if name not in NOTEBOOKS:
        raise KeyError(f"unknown notebook {name!r}; choose one of {', '.join(NOTEBOOKS)}")
    return importlib.import_module(f"contextecho.experiments.{name}")


def notebook_path(name: str) -> Path:
    return NOTEBOOK_DIR / f"{name}.ipynb"


def _parameters_source(spec: type) -> str:
    docs = getattr(spec, "HELP", {})
    lines = []
    defaults = declared(spec)
    for f in fields(spec):
        value = defaults[f.name]
        if isinstance(value, tuple):
            value = list(value)
        comment = f"  # {docs[f.name]}" if f.name in docs else ""
        lines.append(f"{f.name} = {value!r}{comment}")
    return "\n".join(lines)


def _text(doc: str) -> str:
    """A docstring as notebook Markdown (Sphinx roles and double back-quotes as code)."""
    doc = re.sub(r":\w+:`~[\w.]*?(\w+)`", r"`\1`", doc)
    doc = re.sub(r":\w+:`([^`]+)`", r"`\1`", doc)
    return doc.replace("``", "`")


def _set_lines(values: dict) -> str:
    """A parameter set as papermill ``-p`` lines."""
    return "\n".join(f"    -p {k} {(','.join(map(str, v)) or repr('')) if isinstance(v, tuple) else v}"
                     for k, v in values.items())


def build(name: str) -> nbformat.NotebookNode:
    module = experiment(name)
    spec = module.Parameters
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    paper_scale = _set_lines(getattr(module, "PAPER_SCALE", {}))
    intro = (f"# {module.TITLE}\n\n{_text((module.__doc__ or '').strip())}\n\n"
             "Parameters are validated before any model call: an unknown or misspelled name, "
             "a value of the wrong type or out of its range is an error naming the valid range. "
             f"Run it with `make {name}` or `papermill notebooks/{name}.ipynb out.ipynb -p <name> <value>`."
             + (f"\n\nThe paper's scale (provider models; hours of compute):\n\n```\n{paper_scale}\n```"
                if paper_scale else "")
             + (f"\n\nThe seed's corpus-scale grid:\n\n```\n{_set_lines(module.CORPUS_GRID)}\n```"
                if hasattr(module, "CORPUS_GRID") else "")
             + "".join(f"\n\nThe {title} (a run of its own):\n\n```\n{_set_lines(values)}\n```"
                       for title, values in getattr(module, "ABLATIONS", {}).items()))
    nb.cells = [
        nbformat.v4.new_markdown_cell(intro),
        nbformat.v4.new_code_cell(f"from contextecho.experiments import {name} as experiment\n"
                                  "from contextecho.experiments.parameters import bind\n"
                                  "_baseline = set(globals())"),
        nbformat.v4.new_code_cell(_parameters_source(spec), metadata={"tags": ["parameters"]}),
        nbformat.v4.new_code_cell("params = bind(experiment.Parameters, globals(), _baseline)\nparams"),
    ]
    for stage in module.STAGES:
        if stage.function.__module__ != module.__name__:
            raise ValueError(f"stage {stage.name} of {name}: {stage.function.__qualname__} is not defined in "
                             f"{module.__name__}, so the notebook cannot call it as experiment.<name>")
        nb.cells += [nbformat.v4.new_markdown_cell(_text(stage.text())),
                     nbformat.v4.new_code_cell(stage.code("experiment"))]
    for cell in nb.cells:  # stable ids, so a rebuild of an unchanged spec is byte-identical
        cell["id"] = f"{name}-{nb.cells.index(cell)}"
    return nb


def render(name: str) -> str:
    return nbformat.writes(build(name)) + "\n"


def write_all(directory: Path = NOTEBOOK_DIR) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for name in NOTEBOOKS:
        path = directory / f"{name}.ipynb"
        path.write_text(render(name))
        paths.append(path)
    return paths
