from pathlib import Path

import pytest
import yaml

from contextecho.paper import manuscript


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


def test_figures_cross_references_and_code_cells_are_checked(tmp_path):
    paper = tmp_path / "paper"
    write(paper / "_generated" / "panel" / "figures" / "forest.png", "png")
    write(paper / "_generated" / "panel" / "tables" / "gaps.md", "| a |\n|---|\n| 1 |\n")
    write(paper / "index.qmd",
          "See @fig-forest, @tbl-gaps, @sec-method and @fig-gone.\n\n"
          "## Method {#sec-method}\n\n"
          "![Forest](_generated/panel/figures/forest.png){#fig-forest fig-alt=\"Dots.\"}\n\n"
          "![Missing](_generated/panel/figures/none.png){#fig-none fig-alt=\"Dots.\"}\n\n"
          "{{< include _generated/panel/tables/gaps.md >}}\n\n: Gaps {#tbl-gaps}\n\n"
          "```{python}\n1 + 1\n```\n\nMail me at someone@example.org.\n")
    variables = write(tmp_path / "_variables.yml", "{}\n")
    problems = manuscript.check_sources(paper, variables)
    assert problems == [
        "paper/index.qmd:7: figure file '_generated/panel/figures/none.png' does not exist",
        "paper/index.qmd:13: executable code cell (the manuscript holds none)",
        "paper/index.qmd:1: cross-reference @fig-gone has no {#fig-gone} label",
    ]


def test_a_value_that_could_not_be_estimated_says_why(tmp_path):
    """Never a bare n/a: the writer refuses it (naming the key), not_estimable carries the
    reason, and the manuscript check flags a bare one and a '%' after a variable."""
    from contextecho.paper.outputs import Outputs, manuscript_form, not_estimable

    out = Outputs.open("x", tmp_path / "x")
    for bare in ("n/a", "N/A ", "nan", "not estimable"):
        with pytest.raises(ValueError, match=r"x\.gap: .*say why"):
            out.set(gap=bare)
    with pytest.raises(ValueError):
        not_estimable("  ")
    out.set(gap=not_estimable("arm 'filler' has no valid verdict"))
    assert out.variables["gap"] == "not estimable (arm 'filler' has no valid verdict)"
    out.default("no second rater", "kappa", "gap")
    assert out.variables["kappa"] == "not estimable (no second rater)" and out.variables["gap"].endswith("verdict)")
    # A percentage carries its own sign in the manuscript; a reason stays a reason.
    assert manuscript_form({"p": {"agree_pct": 12.5, "n_pct": 3, "why_pct": "not estimable (x)", "gap": 0.1}}) == \
        {"p": {"agree_pct": "12.5%", "n_pct": "3%", "why_pct": "not estimable (x)", "gap": 0.1}}
    paper = tmp_path / "paper"
    paper.mkdir()
    (paper / "index.qmd").write_text("A {{< var p.gap >}} B {{< var p.agree_pct >}}%\n")
    variables = write(tmp_path / "_variables.yml", yaml.safe_dump({"p": {"gap": "n/a", "agree_pct": "1.0%"}}))
    problems = manuscript.check_sources(paper, variables)
    assert any("'p.gap' is 'n/a'" in p and "say why" in p for p in problems)
    assert any("'p.agree_pct' is followed by '%'" in p for p in problems)
