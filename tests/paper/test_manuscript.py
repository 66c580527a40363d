from pathlib import Path

import pytest
import yaml

from contextecho import manuscript


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_unknown_keys_and_missing_includes_are_reported_with_file_and_line(tmp_path):
    paper = tmp_path / "paper"
    write(paper / "index.qmd", "Intro {{< var a.b >}}.\n\n{{< var a.missing >}} and {{< var z >}}\n"
                               "{{< include _generated/t.md >}}\n{{< include _generated/gone.md >}}\n")
    write(paper / "_generated" / "t.md", "| x |\n")
    variables = write(tmp_path / "_variables.yml", yaml.safe_dump({"a": {"b": 1}}))
    problems = manuscript.check_sources(paper, variables)
    assert problems == [
        "paper/index.qmd:3: variable 'a.missing' is not in _variables.yml",
        "paper/index.qmd:3: variable 'z' is not in _variables.yml",
        "paper/index.qmd:5: included file '_generated/gone.md' does not exist",
    ]


def test_rendered_output_markers_are_found(tmp_path):
    write(tmp_path / "index.html", "<p>?var:pilot.n_cells and see ?@fig-drift</p><p>fine</p>")
    assert manuscript.check_rendered(tmp_path) == [
        f"{tmp_path / 'index.html'}: unresolved ?@fig-drift",
        f"{tmp_path / 'index.html'}: unresolved ?var:pilot.n_cells",
    ]


def test_write_variables_merges_sections(tmp_path):
    target = tmp_path / "_variables.yml"
    manuscript.write_variables({"pilot": {"n": 1}}, target)
    manuscript.write_variables({"cape": {"tar": 0.5}}, target)
    assert yaml.safe_load(target.read_text()) == {"cape": {"tar": 0.5}, "pilot": {"n": 1}}


def test_render_says_plainly_when_quarto_is_missing(monkeypatch):
    monkeypatch.setattr(manuscript, "check_sources", lambda: [])
    monkeypatch.setattr(manuscript.shutil, "which", lambda name: None)
    outcome = manuscript.render()
    assert not outcome.rendered and "SKIPPED" in outcome.message


def test_render_refuses_sources_with_dangling_references(monkeypatch):
    monkeypatch.setattr(manuscript, "check_sources", lambda: ["paper/index.qmd:1: variable 'x' ..."])
    with pytest.raises(manuscript.ManuscriptError, match="index.qmd:1"):
        manuscript.render()
