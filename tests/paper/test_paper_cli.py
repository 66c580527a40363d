import argparse

import yaml

from contextecho.paper import manuscript
from contextecho.cli import paper as paper_cli


def _setup(tmp_path, monkeypatch, sections):
    generated = tmp_path / "paper" / "_generated"
    for name, variables in sections.items():
        (generated / name).mkdir(parents=True)
        (generated / name / "variables.yml").write_text(yaml.safe_dump(variables))
    (tmp_path / "paper" / "index.qmd").write_text("Gap {{< var panel.gap >}}, TAR {{< var cape.cf_tar_pct >}}.\n")
    monkeypatch.setattr(paper_cli, "GENERATED", generated)
    monkeypatch.setattr(manuscript, "VARIABLES_FILE", tmp_path / "_variables.yml")
    monkeypatch.setattr(manuscript, "PAPER_DIR", tmp_path / "paper")
    monkeypatch.setattr(manuscript.check_sources, "__defaults__",
                        (tmp_path / "paper", tmp_path / "_variables.yml"))
    monkeypatch.setattr(manuscript.write_variables, "__defaults__", (tmp_path / "_variables.yml",))
    return argparse.Namespace(check_only=True, only="", set=[], no_render=True)


def test_check_only_merges_the_notebooks_variables_and_checks(tmp_path, monkeypatch, capsys):
    args = _setup(tmp_path, monkeypatch, {"panel": {"panel": {"gap": 0.1}}, "cape": {"cape": {"cf_tar_pct": 50.0}}})
    assert paper_cli.run(args) == 0
    assert yaml.safe_load((tmp_path / "_variables.yml").read_text()) == {"panel": {"gap": 0.1}, "cape": {"cf_tar_pct": 50.0}}
    assert "resolves" in capsys.readouterr().out


def test_a_duplicate_key_or_a_dangling_variable_fails(tmp_path, monkeypatch, capsys):
    args = _setup(tmp_path, monkeypatch, {"panel": {"panel": {"gap": 0.1}}, "cape": {"panel": {"gap": 0.2}}})
    assert paper_cli.run(args) == 1
    assert "panel.gap" in capsys.readouterr().err
    args = _setup(tmp_path / "b", monkeypatch, {"panel": {"panel": {"gap": 0.1}}})
    assert paper_cli.run(args) == 1
    assert "'cape.cf_tar_pct' is not in" in capsys.readouterr().err


def test_paper_check_fails_on_a_planted_duplicate_identifier(tmp_path, monkeypatch, capsys):
    args = _setup(tmp_path, monkeypatch, {"panel": {"panel": {"gap": 0.1}}, "cape": {"cape": {"cf_tar_pct": 50.0}}})
    article = tmp_path / "paper" / "index.qmd"
    article.write_text("## Anchor {#sec-anchor}\n\n" + article.read_text() + "\n## ANCHOR {#sec-anchor}\n")
    assert paper_cli.run(args) == 1
    assert "paper/index.qmd:5: duplicate identifier #sec-anchor (first at paper/index.qmd:1)" in capsys.readouterr().err


def test_paper_check_fails_on_a_reference_to_a_missing_identifier(tmp_path, monkeypatch, capsys):
    args = _setup(tmp_path, monkeypatch, {"panel": {"panel": {"gap": 0.1}}, "cape": {"cape": {"cf_tar_pct": 50.0}}})
    article = tmp_path / "paper" / "index.qmd"
    article.write_text(article.read_text() + "\nAs @tbl-gone shows [@smith2020].\n")
    assert paper_cli.run(args) == 1
    assert "paper/index.qmd:3: cross-reference @tbl-gone has no {#tbl-gone} identifier in the document" in capsys.readouterr().err


def test_paper_check_fails_on_a_key_no_experiment_declares(tmp_path, monkeypatch, capsys):
    args = _setup(tmp_path, monkeypatch, {"panel": {"panel": {"gap": 0.1, "planted": 1}},
                                          "cape": {"cape": {"cf_tar_pct": 50.0}}})
    article = tmp_path / "paper" / "index.qmd"
    article.write_text(article.read_text() + "\nPlanted {{< var panel.planted >}}.\n")
    assert paper_cli.run(args) == 1
    assert "variable 'panel.planted' is not declared by the panel experiment" in capsys.readouterr().err
