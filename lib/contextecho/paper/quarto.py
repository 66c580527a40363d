"""Quarto, the tool that renders the manuscript: where it is, what it would refuse, the render.

Quarto cannot be installed on the project's build machines (the ``quarto-cli`` wheel
downloads its binaries while it builds), so everything Quarto would reject that can be
seen without it is checked here, from ``_quarto.yml`` and the manuscript sources:

- a cross-reference to a section (``@sec-…``) in a format that cannot reference an
  unnumbered heading: Typst stops with "cannot reference heading without numbering", and
  LaTeX PDF/Beamer need numbering too (quarto-cli issue 4364);
- an option whose value Quarto's schema refuses, for the options the project uses
  (``src/resources/schema/document-*.yml`` in quarto-cli: ``number-sections`` and
  ``keep-typ`` are booleans, ``section-numbering`` a string, ``html-math-method`` one of
  pandoc's methods or ``{method, url}``, ...);
- an option that leaves render files at the project root: in a project with a library
  folder (``site_libs/`` of a manuscript, website or book), Quarto moves that folder into
  the output folder after the render, but copies it, leaving the original behind, as soon
  as one format keeps its intermediate files (``keep-md``, ``keep-tex``, ``keep-typ``:
  ``keepLibsDir`` in quarto-cli ``src/command/render/project.ts``).

Quarto only warns about what it cannot resolve (an unknown variable, a cross-reference to
a missing identifier, a duplicate identifier) and exits 0, so :func:`render` fails on any
warning line it prints (:func:`warning_lines`), and on a library folder left at the root.

Figures without alt text, duplicate identifiers and cross-references to missing ones are
source problems, checked in :mod:`contextecho.paper.manuscript`.

``find_quarto`` prefers the virtual environment's Quarto (``make setup`` tries to install
``quarto-cli`` there) and then one on ``PATH``. The ``quarto`` console script of the
``quarto-cli`` wheel drops Quarto's exit status, so the binary inside the package is run
directly, and the render is also judged by the files it must produce.
"""
from __future__ import annotations

import collections
import importlib.util
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

import yaml

from . import manuscript
from ..engine.paths import REPO_ROOT

CONFIG_FILE = "_quarto.yml"
OUTPUT_DIR = "_manuscript"

# Formats whose section cross-references need numbered headings (see the module doc).
NEEDS_SECTION_NUMBERS = ("typst", "pdf", "beamer")
# What each rendered format writes beside the article's name.
OUTPUT_SUFFIX = {"html": ".html", "typst": ".pdf", "pdf": ".pdf", "docx": ".docx"}

# Project types whose HTML dependencies go to one library folder (quarto-cli's ``libDir``).
LIB_DIR = {"manuscript": "site_libs", "website": "site_libs", "book": "site_libs"}
# Options that make Quarto copy the library folder instead of moving it (see the module doc).
KEEPS_INTERMEDIATES = ("keep-md", "keep-tex", "keep-typ")
# A line Quarto prints as a warning: its own (``WARNING (filter.lua:12) ...``, ``WARN: ...``,
# yellow in ANSI codes even when piped), pandoc's (``[WARNING] Duplicate identifier ...``) and
# Typst's (``warning: unknown font family``, from the first column: the metadata Quarto
# prints holds indented lines such as ``  warning: false``).
_WARNING = re.compile(r"^(?:\s*(?:\[WARNING\]|WARNING\b|WARN\b)|warning:)")
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")

_MATH_METHODS = ("plain", "webtex", "gladtex", "mathml", "mathjax", "katex")
_HTML_FORMATS = ("html", "revealjs", "dashboard")


def _boolean(value: Any) -> str | None:
    return None if isinstance(value, bool) else "a boolean (true or false)"


def _string(value: Any) -> str | None:
    return None if isinstance(value, str) else "a string"


def _number(value: Any) -> str | None:
    return None if isinstance(value, (int, float)) and not isinstance(value, bool) else "a number"


def _math_method(value: Any) -> str | None:
    method = value.get("method") if isinstance(value, Mapping) else value
    return None if method in _MATH_METHODS else f"one of {', '.join(_MATH_METHODS)} (or {{method, url}})"


def _include(value: Any) -> str | None:
    """An include option (``include-in-header`` ...): a path, ``{text: ...}`` or ``{file: ...}``, or a list of them."""
    items = value if isinstance(value, list) else [value]
    ok = all(isinstance(i, str) or (isinstance(i, Mapping) and len(i) == 1 and set(i) <= {"text", "file"}
                                    and isinstance(next(iter(i.values())), str)) for i in items)
    return None if ok and items else "a path, {text: ...} or {file: ...}, or a list of them"


@dataclass(frozen=True)
class OptionRule:
    """What Quarto's schema accepts for one option, and in which formats it means anything."""

    check: Callable[[Any], str | None]
    formats: tuple[str, ...] = ()  # empty: every format


# Quarto's schema for the options this project uses (quarto-cli src/resources/schema:
# document-toc.yml, document-numbering.yml, document-render.yml, document-text.yml, document-includes.yml).
OPTION_RULES: dict[str, OptionRule] = {
    "toc": OptionRule(_boolean),
    "toc-depth": OptionRule(_number),
    "number-sections": OptionRule(_boolean),
    "number-depth": OptionRule(_number, ("html", "pdf", "beamer", "docx")),
    "section-numbering": OptionRule(_string, ("typst",)),
    "page-numbering": OptionRule(lambda v: None if v is False else _string(v), ("typst",)),
    "keep-typ": OptionRule(_boolean, ("typst",)),
    "keep-tex": OptionRule(_boolean, ("pdf", "beamer")),
    "html-math-method": OptionRule(_math_method, _HTML_FORMATS),
    "embed-resources": OptionRule(_boolean, _HTML_FORMATS),
    "include-in-header": OptionRule(_include),
}


class QuartoError(RuntimeError):
    """Quarto failed, or did not produce what the manuscript project asks of it."""


def read_config(project_dir: Path = REPO_ROOT) -> dict:
    path = project_dir / CONFIG_FILE
    try:
        config = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{CONFIG_FILE}:{mark.line + 1}" if mark else CONFIG_FILE
        raise QuartoError(f"{where}: not valid YAML ({getattr(exc, 'problem', exc)})") from None
    if not isinstance(config, dict):
        raise QuartoError(f"{CONFIG_FILE}: expected a mapping at the top level")
    return config


def formats(config: Mapping[str, Any]) -> dict[str, dict]:
    """The formats the project renders, each with its options ({} for ``html: default``)."""
    listed = config.get("format") or {}
    if isinstance(listed, str):
        listed = {listed: {}}
    return {str(name): (options if isinstance(options, dict) else {}) for name, options in listed.items()}


def article(config: Mapping[str, Any], project_dir: Path = REPO_ROOT) -> Path:
    """The manuscript's article (``manuscript.article``), default ``index.qmd``."""
    name = (config.get("manuscript") or {}).get("article", "index.qmd")
    return project_dir / name


def lib_folder(config: Mapping[str, Any]) -> str | None:
    """The project's library folder (``project.lib-dir``, else its type's), or None."""
    project = config.get("project") or {}
    return project.get("lib-dir") or LIB_DIR.get(project.get("type", ""))


def front_matter(source: Path) -> dict:
    text = source.read_text()
    match = re.match(r"---\s*\n(.*?)\n---\s*(\n|$)", text, re.S)
    if not match:
        return {}
    loaded = yaml.safe_load(match.group(1))
    return loaded if isinstance(loaded, dict) else {}


def _numbered(fmt: str, options: Mapping[str, Any], document: Mapping[str, Any]) -> bool:
    for scope in (options, document):
        if scope.get("number-sections") is True:
            return True
        if fmt == "typst" and scope.get("section-numbering"):
            return True
    return False


def check_project(project_dir: Path = REPO_ROOT) -> list[str]:
    """What ``quarto render`` would reject in this project, found without Quarto."""
    problems: list[str] = []
    try:
        config = read_config(project_dir)
    except QuartoError as exc:
        return [str(exc)]
    listed = formats(config)
    if not listed:
        problems.append(f"{CONFIG_FILE}: no format listed under 'format:'")
    source = article(config, project_dir)
    if not source.is_file():
        return problems + [f"{CONFIG_FILE}: the article {source.relative_to(project_dir)} does not exist"]
    document = {**{k: v for k, v in config.items() if k in OPTION_RULES}, **front_matter(source)}
    for fmt, options in listed.items():
        for option, value in options.items():
            rule = OPTION_RULES.get(option)
            if rule is None:
                continue
            if rule.formats and fmt not in rule.formats:
                problems.append(f"{CONFIG_FILE}: format {fmt}: option {option!r} applies only to "
                                f"{', '.join(rule.formats)}")
                continue
            expected = rule.check(value)
            if expected:
                problems.append(f"{CONFIG_FILE}: format {fmt}: {option}: {value!r} is refused by Quarto "
                                f"(expected {expected})")
    lib_dir = lib_folder(config)
    if lib_dir:
        for fmt, options in listed.items():
            for option in KEEPS_INTERMEDIATES:
                scope = OPTION_RULES[option].formats if option in OPTION_RULES else ()
                if options.get(option) is True and (not scope or fmt in scope):
                    problems.append(f"{CONFIG_FILE}: format {fmt}: {option}: true makes Quarto copy {lib_dir}/ "
                                    f"into the output folder instead of moving it, leaving {lib_dir}/ at the "
                                    "project root; remove it")
    try:
        section_refs = manuscript.section_references(source, project_dir)
    except manuscript.ManuscriptError:
        section_refs = []  # an include cycle: manuscript.check_sources names it
    for fmt, options in listed.items():
        if fmt in NEEDS_SECTION_NUMBERS and section_refs and not _numbered(fmt, options, document):
            where, ref = section_refs[0]
            problems.append(f"{CONFIG_FILE}: format {fmt} cannot cross-reference unnumbered headings "
                            f"({len(section_refs)} @sec- references, first @{ref} at {where}); "
                            "set number-sections: true for it")
    return problems


@dataclass(frozen=True)
class Quarto:
    """An installed Quarto: the executable to run, where it was found, its version."""

    executable: Path
    origin: str  # "virtual environment" or "PATH"
    version: str

    def describe(self) -> str:
        return f"Quarto {self.version} ({self.origin}: {self.executable})"


def _version(executable: Path) -> str:
    try:
        done = subprocess.run([str(executable), "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as exc:
        raise QuartoError(f"{executable} --version failed: {exc}") from None
    version = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    if done.returncode != 0 or not version:
        raise QuartoError(f"{executable} --version failed (exit {done.returncode}): "
                          f"{(done.stderr or done.stdout).strip()[-500:]}")
    return version


def _venv_quarto() -> Path | None:
    """The binary inside the virtual environment's ``quarto_cli`` package, if installed."""
    spec = importlib.util.find_spec("quarto_cli")
    if spec is not None and spec.submodule_search_locations:
        for location in spec.submodule_search_locations:
            binary = Path(location) / "bin" / "quarto"
            if binary.is_file():
                return binary
    script = Path(sys.prefix) / "bin" / "quarto"
    return script if script.is_file() else None


def find_quarto() -> Quarto | None:
    """The virtual environment's Quarto first, then one on ``PATH``; None when neither."""
    venv = _venv_quarto()
    if venv is not None:
        return Quarto(venv, "virtual environment", _version(venv))
    on_path = shutil.which("quarto")
    if on_path is not None:
        return Quarto(Path(on_path), "PATH", _version(Path(on_path)))
    return None


@dataclass(frozen=True)
class RenderOutcome:
    rendered: bool
    message: str
    outputs: tuple[Path, ...] = ()


def expected_outputs(project_dir: Path = REPO_ROOT) -> dict[str, Path]:
    """Each listed format's output file, ``_manuscript/<article path>.<ext>``."""
    config = read_config(project_dir)
    output_dir = project_dir / (config.get("project") or {}).get("output-dir", OUTPUT_DIR)
    stem = article(config, project_dir).relative_to(project_dir).with_suffix("")
    return {fmt: output_dir / stem.with_suffix(OUTPUT_SUFFIX[fmt])
            for fmt in formats(config) if fmt in OUTPUT_SUFFIX}


def warning_lines(output: str) -> list[str]:
    """The warning lines of Quarto's output (stdout and stderr), ANSI colour codes removed."""
    lines = (_ANSI.sub("", line).rstrip() for line in output.splitlines())
    return [line.strip() for line in lines if _WARNING.match(line)]


@dataclass(frozen=True)
class Run:
    """What one Quarto command did: its exit status, the last lines it printed, every warning."""

    status: int
    tail: str
    warnings: tuple[str, ...]


def _run(command: list[str], cwd: Path, keep: int = 40) -> Run:
    """Run Quarto with its output shown as it comes."""
    tail: collections.deque[str] = collections.deque(maxlen=keep)
    found: list[str] = []
    with subprocess.Popen(command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, errors="replace") as process:
        assert process.stdout is not None
        for line in process.stdout:
            print(f"      | {line.rstrip()}", flush=True)
            tail.append(line.rstrip())
            found += warning_lines(line)
    return Run(process.returncode, "\n".join(tail), tuple(found))


def render(project_dir: Path = REPO_ROOT, quarto: Quarto | None = None) -> RenderOutcome:
    """Render with Quarto where it is installed, else say plainly that the step was skipped.

    Before rendering, the sources and the project must pass every check; after it, Quarto
    must have printed no warning, every listed format's file must exist and be new, the HTML
    must carry no unresolved marker, and no library folder may be left at the project root.
    Any failure raises :class:`QuartoError` (or :class:`manuscript.ManuscriptError`) with
    Quarto's words.
    """
    config = read_config(project_dir)
    source = article(config, project_dir)
    problems = (manuscript.check_sources(source.parent, project_dir / manuscript.VARIABLES_FILE.name)
                + check_project(project_dir))
    if problems:
        raise manuscript.ManuscriptError("the manuscript would not render:\n  " + "\n  ".join(problems))
    quarto = quarto or find_quarto()
    if quarto is None:
        return RenderOutcome(False, "Quarto is not installed (neither in .venv nor on PATH): the render "
                                    "step was SKIPPED. Every artifact was regenerated and the manuscript "
                                    "sources and _quarto.yml were checked. Install it with "
                                    "`.venv/bin/pip install quarto-cli` to build HTML and PDF.")
    print(f"      rendering with {quarto.describe()}", flush=True)
    started = time.time()
    done = _run([str(quarto.executable), "render"], project_dir)
    if done.status != 0:
        raise QuartoError(f"quarto render failed (exit {done.status}) with {quarto.describe()}:\n{done.tail}")
    if done.warnings:
        raise QuartoError(f"quarto render printed {len(done.warnings)} warning(s) with {quarto.describe()}; "
                          "a warning fails the build (its full output is above):\n  "
                          + "\n  ".join(done.warnings))
    outputs = expected_outputs(project_dir)
    missing = [f"{fmt}: {path}" for fmt, path in outputs.items()
               if not path.is_file() or path.stat().st_mtime < started - 1]
    if missing:
        raise QuartoError(f"quarto render exited 0 but did not write: {', '.join(missing)}\n{done.tail}")
    problems = manuscript.check_rendered(outputs["html"].parent) if "html" in outputs else []
    if problems:
        raise QuartoError("rendered manuscript has unresolved references:\n  " + "\n  ".join(problems))
    lib_dir = lib_folder(config)
    if lib_dir and (project_dir / lib_dir).exists():
        raise QuartoError(f"quarto render left {lib_dir}/ at the project root ({project_dir / lib_dir}): it "
                          "belongs in the output folder, and Quarto copies it instead of moving it there when "
                          f"a format in {CONFIG_FILE} keeps its intermediate files ({', '.join(KEEPS_INTERMEDIATES)}); "
                          "remove such an option, and the folder")
    listing = ", ".join(str(path.relative_to(project_dir)) for path in outputs.values())
    return RenderOutcome(True, f"rendered with {quarto.describe()}: {listing}", tuple(outputs.values()))
