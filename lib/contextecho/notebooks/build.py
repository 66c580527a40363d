"""The notebooks are generated from their experiment (nbformat), so the parameters cell,
the stages and the library never disagree: ``contextecho notebook --build`` rewrites
``notebooks/*.ipynb``; a test checks the committed copies are current.

Every notebook tells one experiment's story in the same shape: its introduction, the
imports, the cell tagged ``parameters`` (from the ``Parameters`` dataclass), a validating
``bind`` (unknown names and out-of-range values fail even under plain papermill, before
any model call; an edited value is honoured however the cells are run:
:func:`~contextecho.experiments.parameters.bind`), then one short cell per stage of the
experiment's ``STAGES`` (:class:`~contextecho.experiments.spine.Stage`): the stage's
docstring as text, then ``run = experiment.start(params)`` for the first and
``name = run.step("name", experiment.function, arguments)`` for each later one (a plan's
placeholders are reported, not raised, and a failing stage marks the run log failed, as a
whole run does: :meth:`~contextecho.experiments.spine.Run.step`) and ``name``, so each
stage's grid, table or figure shows inline and an author can stop after any cell. The
last stage writes the variables and the run log.

The parameters cell is commented from the experiment's help as it applies under the
notebook's default protocol (:func:`~contextecho.experiments.parameters.parameter_help`),
a parameter that protocol does not read says so, and a first comment line names what
changes under each other protocol the notebook accepts.

A notebook is written as git stores it: no outputs, no execution counts, cell ids
numbered in order and no ``language_info`` (the kernel's, which JupyterLab adds on
save), so the ``nbstripout`` filter git runs on ``notebooks/*.ipynb`` (``.gitattributes``,
installed by ``make setup``) leaves a generated notebook as it is and strips what an
author's session adds.
"""
from __future__ import annotations

import importlib
import re
from dataclasses import fields
from pathlib import Path

import nbformat

from ..engine.paths import REPO_ROOT
from ..experiments.parameters import declared, ignored, parameter_help, protocols_of

NOTEBOOK_DIR = REPO_ROOT / "notebooks"
# In the order `make paper` runs them.
NOTEBOOKS = ("panel", "compaction", "onset", "a_anchor", "anchor_family", "cross_judge", "cross_session", "controls",
             "framing", "instruction_override", "continuation", "cape", "anchor", "published")


def experiment(name: str):
    if name not in NOTEBOOKS:
        raise KeyError(f"unknown notebook {name!r}; choose one of {', '.join(NOTEBOOKS)}")
    return importlib.import_module(f"contextecho.experiments.{name}")


def notebook_path(name: str) -> Path:
    return NOTEBOOK_DIR / f"{name}.ipynb"


def _parameters_source(spec: type) -> str:
    """One line per parameter, commented with its help under the default protocol (a
    parameter that protocol ignores says so); first, where the spec has a protocol, a
    comment naming the default and what each other protocol reads differently. No
    comment holds an equals sign: papermill's reader would skip the line."""
    defaults = declared(spec)
    protocol = defaults.get("protocol")
    docs = parameter_help(spec, protocol)
    unread = ignored(spec, protocol)
    lines = [_protocol_line(spec, protocol)] if protocol else []
    for f in fields(spec):
        value = defaults[f.name]
        if isinstance(value, tuple):
            value = list(value)
        text = f"ignored under {protocol}: {unread[f.name]}" if f.name in unread else docs.get(f.name)
        lines.append(f"{f.name} = {value!r}" + (f"  # {text}" if text else ""))
    return "\n".join(lines)


def _protocol_line(spec: type, protocol: str) -> str:
    """The parameters cell's first line: whose comments these are, and per other protocol
    which parameters it reads that ``protocol`` ignores and which it ignores itself."""
    others = [name for name in protocols_of(spec) if name != protocol]
    text = f"# The comments hold under protocol {protocol!r}, this notebook's {'default' if others else 'only one'}"
    unread = set(ignored(spec, protocol))
    for other in others:
        theirs = set(ignored(spec, other))
        changes = ([f"reads {', '.join(sorted(unread - theirs))}"] if unread - theirs else []) + \
                  ([f"ignores {', '.join(sorted(theirs - unread))}"] if theirs - unread else [])
        text += f"; {other!r} " + (" and ".join(changes) if changes else "reads the same parameters")
    return text + "."


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
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    paper_scale = _set_lines(getattr(module, "PAPER_SCALE", {}))
    intro = (f"# {module.TITLE}\n\n{_text((module.__doc__ or '').strip())}\n\n"
             "Parameters are validated before any model call: an unknown or misspelled name, "
             "a value of the wrong type or out of its range is an error naming the valid range. "
             f"Run it with `make {name}` or `papermill notebooks/{name}.ipynb out.ipynb -p <name> <value>`. "
             "In JupyterLab, edit a value in the parameters cell, then run that cell and the ones below it "
             "(Run All, or Run Selected Cell and All Below; no kernel restart is needed): the `params` "
             "cell shows the values the run uses."
             + (f"\n\nThe paper's scale (provider models; hours of compute):\n\n```\n{paper_scale}\n```"
                if paper_scale else "")
             + "".join(f"\n\nThe {title} (a run of its own):\n\n```\n{_set_lines(values)}\n```"
                       for title, values in getattr(module, "NAMED_SETS", {}).items()))
    nb.cells = [
        nbformat.v4.new_markdown_cell(intro),
        nbformat.v4.new_code_cell(f"from contextecho.experiments import {name} as experiment\n"
                                  "from contextecho.experiments.parameters import bind"),
        nbformat.v4.new_code_cell(_parameters_source(spec), metadata={"tags": ["parameters"]}),
        nbformat.v4.new_code_cell("params = bind(experiment.Parameters, globals())\nparams"),
    ]
    opened = False  # whether a stage before this one opened the run
    for stage in module.STAGES:
        if stage.function.__module__ != module.__name__:
            raise ValueError(f"stage {stage.name} of {name}: {stage.function.__qualname__} is not defined in "
                             f"{module.__name__}, so the notebook cannot call it as experiment.<name>")
        nb.cells += [nbformat.v4.new_markdown_cell(_text(stage.text())),
                     nbformat.v4.new_code_cell(stage.code("experiment", opened=opened))]
        opened = opened or stage.name == "run"
    for index, cell in enumerate(nb.cells):  # stable ids, numbered as nbstripout numbers them
        cell["id"] = str(index)
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
