"""What Quarto would refuse, found without it; finding Quarto; the render, with a fake Quarto."""
import os
import re
import stat
from pathlib import Path

import pytest
import yaml

from contextecho.paper import manuscript, quarto
from contextecho.engine.paths import REPO_ROOT

ARTICLE = ("---\ntitle: T\n---\n\n## Method {#sec-method}\n\nSee @sec-method.\n\n"
           '![A plot](fig.png){#fig-a fig-alt="Bars of x against y."}\n\nNumber {{< var a.b >}}.\n')


def project(tmp_path: Path, formats: dict, article: str = ARTICLE, top: dict | None = None) -> Path:
    config = {"project": {"type": "manuscript", "output-dir": "_manuscript", "render": ["paper/index.qmd"]},
              "manuscript": {"article": "paper/index.qmd"}, "format": formats, **(top or {})}
    (tmp_path / "_quarto.yml").write_text(yaml.safe_dump(config))
    (tmp_path / "paper").mkdir(exist_ok=True)
    (tmp_path / "paper" / "index.qmd").write_text(article)
    (tmp_path / "paper" / "fig.png").write_bytes(b"png")
    (tmp_path / "_variables.yml").write_text(yaml.safe_dump({"a": {"b": 1}}))
    return tmp_path


def test_the_projects_own_manuscript_passes():
    assert quarto.check_project(REPO_ROOT) == []
    listed = quarto.formats(quarto.read_config(REPO_ROOT))
    assert listed["typst"]["number-sections"] is True
    assert listed["html"]["html-math-method"] == "mathml"


def test_typst_without_numbering_cannot_reference_a_section(tmp_path):
    problems = quarto.check_project(project(tmp_path, {"html": {"toc": True}, "typst": {"toc": False}}))
    assert problems == ["_quarto.yml: format typst cannot cross-reference unnumbered headings "
                        "(1 @sec- references, first @sec-method at paper/index.qmd:7); "
                        "set number-sections: true for it"]


@pytest.mark.parametrize("formats, top", [
    ({"typst": {"number-sections": True}}, None),
    ({"typst": {"section-numbering": "1.1.a"}}, None),
    ({"typst": {}}, {"number-sections": True}),
    ({"html": {}}, None),  # HTML references unnumbered headings by title
])
def test_numbering_anywhere_it_applies_is_enough(tmp_path, formats, top):
    assert quarto.check_project(project(tmp_path, formats, top=top)) == []


def test_numbering_in_the_front_matter_counts_and_no_section_reference_needs_none(tmp_path):
    numbered = ARTICLE.replace("title: T\n", "title: T\nnumber-sections: true\n")
    assert quarto.check_project(project(tmp_path, {"typst": {}}, numbered)) == []
    unreferenced = ARTICLE.replace("See @sec-method.", "See the method.")
    assert quarto.check_project(project(tmp_path, {"pdf": {}}, unreferenced)) == []


def test_a_section_reference_in_an_included_file_counts(tmp_path):
    root = project(tmp_path, {"typst": {}}, ARTICLE.replace("See @sec-method.", "{{< include part.md >}}"))
    (root / "paper" / "part.md").write_text("As @sec-method shows.\n")
    assert "first @sec-method at paper/part.md:1" in quarto.check_project(root)[0]


def test_option_values_quarto_refuses(tmp_path):
    root = project(tmp_path, {
        "html": {"number-sections": "yes", "html-math-method": "mathmlx", "keep-typ": True, "toc": True},
        "typst": {"number-sections": True, "keep-typ": 1, "html-math-method": "mathml"}})
    assert sorted(quarto.check_project(root)) == sorted([
        "_quarto.yml: format html: number-sections: 'yes' is refused by Quarto (expected a boolean (true or false))",
        "_quarto.yml: format html: html-math-method: 'mathmlx' is refused by Quarto (expected one of plain, "
        "webtex, gladtex, mathml, mathjax, katex (or {method, url}))",
        "_quarto.yml: format html: option 'keep-typ' applies only to typst",
        "_quarto.yml: format typst: keep-typ: 1 is refused by Quarto (expected a boolean (true or false))",
        "_quarto.yml: format typst: option 'html-math-method' applies only to html, revealjs, dashboard",
    ])
    good = {"html": {"html-math-method": {"method": "katex", "url": "k/"}}, "typst": {"section-numbering": "1."}}
    assert quarto.check_project(project(tmp_path, good)) == []


def test_broken_config_and_missing_article_are_named(tmp_path):
    (tmp_path / "_quarto.yml").write_text("format:\n  html:\n    toc: [true\n")
    assert quarto.check_project(tmp_path)[0].startswith("_quarto.yml:4: not valid YAML")
    (tmp_path / "_quarto.yml").write_text(yaml.safe_dump({"manuscript": {"article": "paper/gone.qmd"},
                                                          "format": {"html": {}}}))
    assert quarto.check_project(tmp_path) == ["_quarto.yml: the article paper/gone.qmd does not exist"]


def test_a_figure_without_alt_text_is_a_source_problem(tmp_path):
    root = project(tmp_path, {"html": {}}, ARTICLE.replace(' fig-alt="Bars of x against y."', "")
                   + '\n![B](fig.png){#fig-b fig-alt=""}\n![C](fig.png){#fig-c fig-alt=\'Dots.\'}\n')
    problems = manuscript.check_sources(root / "paper", root / "_variables.yml")
    assert problems == [
        "paper/index.qmd:9: figure 'fig.png' has no alt text (add fig-alt=\"...\" to its attributes)",
        "paper/index.qmd:13: figure 'fig.png' has no alt text (add fig-alt=\"...\" to its attributes)",
    ]


def fake_quarto(folder: Path, body: str, version: str = "1.7.34") -> Path:
    script = folder / "quarto"
    script.write_text(f'#!/bin/sh\nif [ "$1" = "--version" ]; then echo {version}; exit 0; fi\n{body}\n')
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return script


WRITES_BOTH = ("mkdir -p _manuscript/paper _manuscript/site_libs && echo '<p>fine</p>' > _manuscript/paper/index.html "
               "&& echo '%PDF' > _manuscript/paper/index.pdf")


def test_the_virtual_environments_quarto_comes_before_the_one_on_path(tmp_path, monkeypatch):
    (tmp_path / "venv").mkdir()
    (tmp_path / "path").mkdir()
    venv = fake_quarto(tmp_path / "venv", "", "1.7.34")
    on_path = fake_quarto(tmp_path / "path", "", "1.8.1")
    monkeypatch.setattr(quarto, "_venv_quarto", lambda: venv)
    monkeypatch.setattr(quarto.shutil, "which", lambda name: str(on_path))
    found = quarto.find_quarto()
    assert (found.executable, found.origin, found.version) == (venv, "virtual environment", "1.7.34")
    monkeypatch.setattr(quarto, "_venv_quarto", lambda: None)
    found = quarto.find_quarto()
    assert (found.executable, found.origin, found.version) == (on_path, "PATH", "1.8.1")
    monkeypatch.setattr(quarto.shutil, "which", lambda name: None)
    assert quarto.find_quarto() is None


def test_a_missing_quarto_is_the_one_case_that_skips(tmp_path, monkeypatch):
    monkeypatch.setattr(quarto, "find_quarto", lambda: None)
    outcome = quarto.render(project(tmp_path, {"html": {}, "typst": {"number-sections": True}}))
    assert not outcome.rendered and "SKIPPED" in outcome.message


def test_a_render_reports_the_version_and_the_files(tmp_path):
    root = project(tmp_path, {"html": {}, "typst": {"number-sections": True}})
    # Quarto's metadata listing holds an indented "warning: false": no warning.
    found = quarto.Quarto(fake_quarto(tmp_path, "echo 'metadata'; echo '  warning: false'; " + WRITES_BOTH),
                          "PATH", "1.7.34")
    outcome = quarto.render(root, found)
    assert outcome.rendered
    assert "Quarto 1.7.34 (PATH" in outcome.message
    assert outcome.outputs == (root / "_manuscript/paper/index.html", root / "_manuscript/paper/index.pdf")


def test_a_render_failure_fails_with_quartos_message(tmp_path):
    root = project(tmp_path, {"typst": {"number-sections": True}})
    found = quarto.Quarto(fake_quarto(tmp_path, "echo 'error: cannot reference heading without numbering' >&2; exit 1"),
                          "PATH", "1.7.34")
    with pytest.raises(quarto.QuartoError, match="exit 1.*\n.*cannot reference heading without numbering"):
        quarto.render(root, found)


def test_a_render_that_writes_no_pdf_or_leaves_markers_fails(tmp_path):
    root = project(tmp_path, {"html": {}, "typst": {"number-sections": True}})
    html_only = quarto.Quarto(fake_quarto(tmp_path, "mkdir -p _manuscript/paper && echo ok > "
                                                    "_manuscript/paper/index.html"), "PATH", "1.7.34")
    with pytest.raises(quarto.QuartoError, match="did not write: typst"):
        quarto.render(root, html_only)
    marked = quarto.Quarto(fake_quarto(tmp_path, WRITES_BOTH + " && echo 'see ?@sec-gone' >> "
                                                               "_manuscript/paper/index.html"), "PATH", "1.7.34")
    with pytest.raises(quarto.QuartoError, match=r"index.html: unresolved \?@sec-gone"):
        quarto.render(root, marked)


def test_sources_that_would_not_render_stop_before_quarto_runs(tmp_path):
    root = project(tmp_path, {"typst": {}})
    never = quarto.Quarto(fake_quarto(tmp_path, "touch ran; exit 0"), "PATH", "1.7.34")
    with pytest.raises(manuscript.ManuscriptError, match="cannot cross-reference unnumbered headings"):
        quarto.render(root, never)
    assert not (root / "ran").exists()


@pytest.mark.parametrize("line", [
    # Quarto's own (a Lua filter's warn(), yellow even when piped), pandoc's, Quarto's WARN:, Typst's
    r"\033[33mWARNING (/opt/quarto/share/filters/main.lua:14000) Unable to resolve crossref @fig-gone\033[39m",
    "[WARNING] Duplicate identifier 'sec-anchor' at paper/index.qmd line 461 column 1",
    "WARN: File 'paper/x.png' was not found.",
    "warning: unknown font family: libertinus serif",
])
def test_a_render_warning_fails_the_build_and_is_printed(tmp_path, monkeypatch, capsys, line):
    """A fake quarto on PATH that prints one warning line on stderr, writes every output and exits 0."""
    root = project(tmp_path, {"html": {}, "typst": {"number-sections": True}})
    (tmp_path / "bin").mkdir()
    fake_quarto(tmp_path / "bin", f"printf '%b\\n' \"{line}\" >&2; {WRITES_BOTH}")
    monkeypatch.setattr(quarto, "_venv_quarto", lambda: None)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    with pytest.raises(quarto.QuartoError, match=r"printed 1 warning\(s\) with Quarto 1\.7\.34 \(PATH") as failed:
        quarto.render(root)
    plain = re.sub(r"\033\[[0-9;]*m", "", line.replace(r"\033", "\033"))
    assert str(failed.value).endswith("\n  " + plain)
    assert plain in capsys.readouterr().out  # shown as it came, with the rest of Quarto's output


def test_keeping_intermediate_files_would_leave_site_libs_at_the_root(tmp_path):
    root = project(tmp_path, {"html": {}, "typst": {"number-sections": True, "keep-typ": True}})
    assert quarto.check_project(root) == [
        "_quarto.yml: format typst: keep-typ: true makes Quarto copy site_libs/ into the output folder "
        "instead of moving it, leaving site_libs/ at the project root; remove it"]


def test_a_render_that_leaves_site_libs_at_the_root_fails(tmp_path):
    root = project(tmp_path, {"html": {}, "typst": {"number-sections": True}})
    leaves = quarto.Quarto(fake_quarto(tmp_path, WRITES_BOTH + " && cp -r _manuscript/site_libs site_libs"),
                           "PATH", "1.7.34")
    with pytest.raises(quarto.QuartoError, match="left site_libs/ at the project root"):
        quarto.render(root, leaves)


def test_an_include_is_a_path_a_text_or_a_file(tmp_path):
    assert quarto._include({"text": "#show table: set text(hyphenate: false)"}) is None
    assert quarto._include(["a.typ", {"file": "b.typ"}]) is None
    problems = quarto.check_project(project(tmp_path, {"typst": {"number-sections": True,
                                                                 "include-in-header": {"txt": "x"}}}))
    assert problems == ["_quarto.yml: format typst: include-in-header: {'txt': 'x'} is refused by Quarto (expected a "
                        "path, {text: ...} or {file: ...}, or a list of them)"]
