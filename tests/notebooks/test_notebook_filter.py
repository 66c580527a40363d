"""Tracked notebooks stay output-free: in a git repository laid out like the project (its
``.gitattributes``, its notebooks) with the filter the Makefile's ``notebook-filter`` target
configures, a notebook saved with outputs, as JupyterLab saves it, changes nothing git
sees; an edit of a cell's source is all a diff or a commit holds."""
import shutil
import subprocess
import sys

import nbformat
import pytest

from contextecho.engine.paths import REPO_ROOT
from contextecho.notebooks import NOTEBOOKS, notebook_path

pytestmark = [pytest.mark.timeout(240),
              pytest.mark.skipif(not (shutil.which("git") and shutil.which("make")), reason="needs git and make")]


def git(repo, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args], cwd=repo,
                          capture_output=True, text=True, check=check)


def project_repo(tmp_path, names=("panel",)):
    """A fresh repository with the project's .gitattributes, the notebooks ``names``
    committed, and the filter configured by ``make notebook-filter`` (with this interpreter)."""
    (tmp_path / "notebooks").mkdir()
    shutil.copy(REPO_ROOT / ".gitattributes", tmp_path / ".gitattributes")
    for name in names:
        shutil.copy(notebook_path(name), tmp_path / "notebooks" / f"{name}.ipynb")
    git(tmp_path, "init", "-q")
    made = subprocess.run(["make", "-s", "-f", str(REPO_ROOT / "Makefile"), "-C", str(tmp_path), "notebook-filter",
                           f"PY={sys.executable}"], capture_output=True, text=True)
    assert made.returncode == 0, made.stderr
    assert "git strips outputs from notebooks/*.ipynb" in made.stdout
    assert (tmp_path / ".gitattributes").read_text() == (REPO_ROOT / ".gitattributes").read_text()  # left as is
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-q", "-m", "notebooks")
    return tmp_path


def saved_from_lab(path, *, edit: str = "") -> None:
    """Write ``path`` as JupyterLab saves a notebook after a run: outputs of every kind,
    execution counts, the kernel's language_info, widget state, per-cell timing."""
    nb = nbformat.read(path, as_version=4)
    for count, cell in enumerate((c for c in nb.cells if c.cell_type == "code"), start=1):
        cell.execution_count = count
        cell.metadata["execution"] = {"iopub.status.busy": "2026-01-01T00:00:00.000Z"}
        cell.outputs = [
            nbformat.v4.new_output("stream", name="stdout", text="[panel:targets] calls=12, cached=0\n"),
            nbformat.v4.new_output("stream", name="stderr", text="a warning\n"),
            nbformat.v4.new_output("display_data", data={"image/png": "iVBORw0KGgo=", "text/plain": "<Figure>"}),
            nbformat.v4.new_output("execute_result", data={"text/html": "<table></table>", "text/plain": "t"},
                                   execution_count=count)]
    nb.metadata["language_info"] = {"name": "python", "version": "3.11.7", "mimetype": "text/x-python",
                                    "codemirror_mode": {"name": "ipython", "version": 3}, "file_extension": ".py",
                                    "nbconvert_exporter": "python", "pygments_lexer": "ipython3"}
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}, "version_major": 2,
                                                                             "version_minor": 0}}
    if edit:
        cell = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
        cell.source = cell.source.replace("n_sessions = 2", edit)
    nbformat.write(nb, path)


def test_outputs_saved_from_lab_never_reach_git(tmp_path):
    repo = project_repo(tmp_path)
    path = repo / "notebooks" / "panel.ipynb"
    committed = path.read_text()
    saved_from_lab(path)
    assert '"outputs": [\n' in path.read_text() and "iVBORw0KGgo=" in path.read_text()  # on disk, as saved
    assert git(repo, "diff", "--exit-code", check=False).returncode == 0
    # git status compares sizes first, so it lists the file until it is added; adding stages nothing.
    git(repo, "add", "-A")
    assert git(repo, "status", "--porcelain").stdout == ""
    assert git(repo, "diff", "--cached", "--exit-code", check=False).returncode == 0
    assert git(repo, "show", ":notebooks/panel.ipynb").stdout == committed


def test_an_edited_source_is_all_a_commit_holds(tmp_path):
    repo = project_repo(tmp_path)
    path = repo / "notebooks" / "panel.ipynb"
    saved_from_lab(path, edit="n_sessions = 1")
    diff = git(repo, "diff", "--", "notebooks/panel.ipynb").stdout
    changed = [line for line in diff.splitlines() if line[:1] in "+-" and line[:3] not in ("+++", "---")]
    assert len(changed) == 2 and "n_sessions = 2" in changed[0] and "n_sessions = 1" in changed[1], diff
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "edit")
    stored = nbformat.reads(git(repo, "show", "HEAD:notebooks/panel.ipynb").stdout, as_version=4)
    code = [c for c in stored.cells if c.cell_type == "code"]
    assert all(c.outputs == [] and c.execution_count is None and "execution" not in c.metadata for c in code)
    assert "language_info" not in stored.metadata and "widgets" not in stored.metadata


def test_every_generated_notebook_is_stored_as_generated(tmp_path):
    """The generator writes what the filter keeps (ids in order, no outputs, no
    language_info): staging the notebooks as generated changes no byte."""
    repo = project_repo(tmp_path, NOTEBOOKS)
    for name in NOTEBOOKS:
        assert git(repo, "show", f":notebooks/{name}.ipynb").stdout == notebook_path(name).read_text(), name
