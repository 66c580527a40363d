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
        "paper/index.qmd:1: cross-reference @fig-gone has no {#fig-gone} identifier in the document",
    ]


def test_a_value_that_could_not_be_estimated_says_why(tmp_path):
    """Never a bare n/a: the writer refuses it (naming the key), not_estimable carries the
    reason, and the manuscript check flags a bare one and a '%' after a variable."""
    from contextecho.paper.declared import Declared
    from contextecho.paper.formats import COEFFICIENT, PERCENT, POINTS, not_estimable
    from contextecho.paper.outputs import Outputs
    from contextecho.paper.variables import Variable

    declared = Declared(variables=(Variable("gap", POINTS), Variable("kappa", COEFFICIENT),
                                   Variable("agree_pct", PERCENT)))
    out = Outputs.open("x", tmp_path / "x", declared)
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
    out.set(agree_pct=12.5)
    assert out.variables["agree_pct"] == "12.5%"
    out.put("agree_pct", None, why="x")
    assert out.variables["agree_pct"] == "not estimable (x)"
    paper = tmp_path / "paper"
    paper.mkdir()
    (paper / "index.qmd").write_text("A {{< var p.gap >}} B {{< var p.agree_pct >}}%\n")
    variables = write(tmp_path / "_variables.yml", yaml.safe_dump({"p": {"gap": "n/a", "agree_pct": "1.0%"}}))
    problems = manuscript.check_sources(paper, variables)
    assert any("'p.gap' is 'n/a'" in p and "say why" in p for p in problems)
    assert any("'p.agree_pct' is followed by '%'" in p for p in problems)


ARTICLE = ("---\ntitle: T\nabstract: As @sec-method shows.\n---\n\n## Method {#sec-method}\n\n"
           "{{< include _generated/t.md >}}\n\n: Gaps {#tbl-gaps}\n\nSee @tbl-gaps and @sec-method.\n")


def document(tmp_path: Path, article: str, table: str = "| a |\n|---|\n| 1 |\n") -> list[str]:
    paper = tmp_path / "paper"
    write(paper / "index.qmd", article)
    write(paper / "_generated" / "t.md", table)
    return manuscript.check_sources(paper, write(tmp_path / "_variables.yml", "{}\n"))


def test_a_document_with_unique_identifiers_and_resolving_references_passes(tmp_path):
    assert document(tmp_path, ARTICLE) == []


def test_a_planted_duplicate_identifier_fails_naming_both_places(tmp_path):
    planted = ARTICLE + "\n## Again {#sec-method}\n"
    assert document(tmp_path, planted) == [
        "paper/index.qmd:14: duplicate identifier #sec-method (first at paper/index.qmd:6); "
        "Quarto warns and every reference reaches only one of them"]


@pytest.mark.parametrize("article, table, where, first", [
    # a figure and a table may not share an id with a section, nor with each other
    (ARTICLE + '\n![F](f.png){#sec-method fig-alt="Dots."}\n', None, "paper/index.qmd:14", "paper/index.qmd:6"),
    # a generated include defines the id the article defines too
    (ARTICLE, "| a |\n|---|\n| 1 |\n\n: Other {#tbl-gaps}\n", "paper/index.qmd:10", "paper/_generated/t.md:5"),
    # an explicit id equal to the automatic id pandoc gave an earlier heading
    (ARTICLE + "\n## Results\n\n::: {#results .callout}\nx\n:::\n", None, "paper/index.qmd:16", "paper/index.qmd:14"),
    # an equation and any #id attribute count too
    (ARTICLE + "\n$$ x $$ {#eq-a}\n\n[word]{.mark #eq-a}\n", None, "paper/index.qmd:16", "paper/index.qmd:14"),
])
def test_every_kind_of_identifier_counts_across_includes(tmp_path, article, table, where, first):
    write(tmp_path / "paper" / "f.png", "png")
    problems = document(tmp_path, article, *([table] if table else []))
    assert len(problems) == 1 and problems[0].startswith(f"{where}: duplicate identifier #")
    assert f"(first at {first})" in problems[0]


def test_a_reference_to_a_missing_identifier_fails(tmp_path):
    planted = ARTICLE + "\nAs @fig-gone shows [@smith2020; -@tbl-none], mail me@sec-x.org.\n"
    assert document(tmp_path, planted) == [
        "paper/index.qmd:14: cross-reference @fig-gone has no {#fig-gone} identifier in the document",
        "paper/index.qmd:14: cross-reference @tbl-none has no {#tbl-none} identifier in the document",
    ]


def test_code_comments_and_automatic_heading_ids_are_read_as_pandoc_reads_them(tmp_path):
    """A reference in code or in an HTML comment is no reference, a # line in a code block is
    no heading, and repeated headings without ids get pandoc's distinct automatic ids."""
    extra = ("\n`@fig-in-code` <!-- @fig-in-comment -->\n\n<!--\n@fig-commented {#sec-method}\n-->\n\n"
             "```sh\n# comment {#sec-method}\n@fig-in-block\n```\n\n## Notes\n\n## Notes\n")
    assert document(tmp_path, ARTICLE + extra) == []


def test_footnotes_defined_twice_undefined_or_unused_fail(tmp_path):
    """Two generated tables that each define [^1] collide once both are included."""
    table = "| a[^1] |\n|---|\n| 1 |\n\n[^1]: First.\n"
    write(tmp_path / "paper" / "_generated" / "u.md", table.replace("First", "Second"))
    article = ARTICLE + "\n{{< include _generated/u.md >}}\n\nText[^gone].\n\n[^spare]: Never used.\n"
    assert document(tmp_path, article, table) == [
        "paper/_generated/u.md:5: footnote [^1] is defined again (first at paper/_generated/t.md:5)",
        "paper/index.qmd:16: footnote [^gone] is never defined",
        "paper/index.qmd:18: footnote [^spare] is defined but never used",
    ]


def test_an_include_cycle_is_named(tmp_path):
    assert document(tmp_path, ARTICLE, "{{< include _generated/t.md >}}\n") == [
        "paper/_generated/t.md:1: '_generated/t.md' includes a file that includes it (an include cycle)"]


def test_the_real_manuscript_has_unique_identifiers_and_resolving_references():
    """Without the generated outputs (a clean clone) the variables and includes are missing,
    but every identifier the sources define is unique and every reference resolves."""
    structural = ("identifier", "cross-reference", "footnote", "link reference", "include cycle")
    problems = manuscript.check_sources()
    assert [p for p in problems if any(word in p for word in structural)] == []


def test_a_section_file_is_checked_where_the_article_includes_it(tmp_path):
    """paper/sections/x.qmd, pulled in by the article, is read as part of it: its paths relative
    to the article's folder, its cross-references to the article's identifiers; a section no
    document includes is a document of its own."""
    paper = tmp_path / "paper"
    write(paper / "index.qmd", "## Intro {#sec-intro}\n\n{{< include sections/x.qmd >}}\n")
    write(paper / "sections" / "x.qmd", "### X {#sec-x}\n\nSee @sec-intro, {{< var a.b >}}.\n\n"
                                        "{{< include _generated/t.md >}}\n")
    write(paper / "_generated" / "t.md", "| x |\n")
    variables = write(tmp_path / "_variables.yml", yaml.safe_dump({"a": {"b": 1}}))
    assert manuscript.articles(paper) == [paper / "index.qmd"]
    assert manuscript.sources(paper) == [paper / "index.qmd", paper / "sections" / "x.qmd"]
    assert manuscript.check_sources(paper, variables) == []
    write(paper / "sections" / "y.qmd", "See @sec-intro.\n")
    assert manuscript.check_sources(paper, variables) == [
        "paper/sections/y.qmd:1: cross-reference @sec-intro has no {#sec-intro} identifier in the document"]


def _check(tmp_path: Path, text: str, variables: dict, tables: dict[str, str] = {}) -> list[str]:
    paper = tmp_path / "paper"
    write(paper / "index.qmd", text)
    for name, table in tables.items():
        write(paper / "_generated" / "x" / "tables" / name, table)
    return manuscript.check_sources(paper, write(tmp_path / "_variables.yml", yaml.safe_dump(variables)))


ALL_DASH = "| Target | Gap | p |\n|:--|--:|--:|\n| a | — | — |\n| b | — | — |\n"


def test_a_planted_table_of_dashes_without_a_footnote_fails_the_check(tmp_path):
    problems = _check(tmp_path, ": Gaps {#tbl-g}\n\n{{< include _generated/x/tables/g.md >}}\n", {}, {"g.md": ALL_DASH})
    assert problems == [
        "paper/index.qmd:3: table '_generated/x/tables/g.md': row 'a' is all '—' and no footnote says why",
        "paper/index.qmd:3: table '_generated/x/tables/g.md': row 'b' is all '—' and no footnote says why",
        "paper/index.qmd:3: table '_generated/x/tables/g.md': column 'Gap' is all '—' and no footnote says why on "
        "every row",
        "paper/index.qmd:3: table '_generated/x/tables/g.md': column 'p' is all '—' and no footnote says why on every row"]
    explained = ALL_DASH.replace("| a |", "| a^a^ |").replace("| b |", "| b^a^ |") + "\n^a^ Not estimable: one unit\n"
    assert _check(tmp_path, ": Gaps {#tbl-g}\n\n{{< include _generated/x/tables/g.md >}}\n", {},
                  {"g.md": explained}) == []


def test_a_claim_that_contradicts_its_value_fails_the_check(tmp_path):
    text = 'The gap is [close to zero]{claim="abs(panel.gap) < 0.1"}.\n'
    assert _check(tmp_path, text, {"panel": {"gap": "0.05"}}) == []
    assert _check(tmp_path, text, {"panel": {"gap": "0.36"}}) == [
        "paper/index.qmd:1: claim 'abs(panel.gap) < 0.1' is false for this build's numbers; write the words from the "
        "values (paper.sentences) or change them"]
    assert _check(tmp_path, text, {"panel": {"gap": "not estimable (no valid verdict)"}})[0].endswith(
        "cannot be checked: abs(panel.gap) needs a number, and panel.gap is 'not estimable (no valid verdict)'")


def test_a_semicolon_after_a_cross_reference_n_a_and_a_reason_named_twice_are_problems(tmp_path):
    why = "not estimable (no complete case)"
    text = ("![F](f.png){#fig-f fig-alt=\"F\"}\n\nSee (@fig-f; more) and [@fig-f; @fig-f], n/a where missing.\n\n"
            "The gap is {{< var a.gap >}} (95% CI {{< var a.ci >}}).\n")
    write(tmp_path / "paper" / "f.png", "png")
    assert _check(tmp_path, text, {"a": {"gap": why, "ci": why}}) == [
        "paper/index.qmd:3: '@fig-f;': Typst drops a ';' right after a cross-reference (Quarto writes it as #ref(...), "
        "and ';' ends that expression); write ',' or reword",
        "paper/index.qmd:3: 'n/a': a missing value is '—' in a table (its footnote says why) and "
        "'not estimable (<reason>)' in a variable; say which",
        "paper/index.qmd:5: one sentence says 'not estimable (no complete case)' 2 times: name the reason once and "
        "refer to it (paper.sentences)",
        "paper/index.qmd:5: 'not estimable (no complete case)' stands inside parentheses: write the sentence so that "
        "the reason is not nested (paper.sentences)"]
