"""What only a real render shows, HTML and PDF (Typst), with the project's own format options:
a split table keeps its "(continued)" heading and its footnotes in both formats, and the
punctuation after a cross-reference reaches the PDF. Quarto cannot be installed on the
project's build machines (:mod:`contextecho.paper.quarto`): there these tests are skipped,
saying so; ``paper-check`` catches in the sources what it can without Quarto."""
import re
import subprocess

import pandas as pd
import pytest
import yaml

from contextecho.engine.paths import REPO_ROOT
from contextecho.paper import quarto
from contextecho.paper.formats import POINTS, estimate
from contextecho.paper.tables import Column, Table

QUARTO = quarto.find_quarto()
pytestmark = pytest.mark.skipif(QUARTO is None, reason="Quarto is not installed (neither in .venv nor on PATH): the "
                                                       "HTML and PDF render checks need it")
WIDE = Table("wide", "A wide table", (Column("Target", POINTS, "t"),
                                      *(Column(f"Gap {i} [95% CI]", estimate(POINTS), (f"g{i}", f"l{i}", f"h{i}"))
                                        for i in range(6))))


def render(tmp_path, to: str) -> str:
    """Render the small article under the project's format options; the HTML, or the Typst source."""
    formats = quarto.formats(quarto.read_config(REPO_ROOT))
    options = {**formats[to], **({"keep-typ": True} if to == "typst" else {})}
    (tmp_path / "_quarto.yml").write_text(yaml.safe_dump({"format": {to: options}}))
    frame = pd.DataFrame({"t": [1.0], **{f"{c}{i}": [0.5] for i in range(6) for c in "glh"}, "note": ["one note"]})
    (tmp_path / "wide.md").write_text(WIDE.render(frame))
    (tmp_path / "index.qmd").write_text("---\ntitle: T\n---\n\n## Results {#sec-results}\n\n"
                                        "See the gaps (@tbl-wide, and the notes under it).\n\n"
                                        ": The gaps {#tbl-wide}\n\n{{< include wide.md >}}\n")
    done = subprocess.run([str(QUARTO.executable), "render", "index.qmd", "--to", to], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return (tmp_path / ("index.html" if to == "html" else "index.typ")).read_text()


def test_a_split_table_keeps_its_continued_heading_and_notes_in_html(tmp_path):
    page = render(tmp_path, "html")
    assert page.count("A wide table (continued)") == len(WIDE.layout(pd.DataFrame(
        {"t": [1.0], **{f"{c}{i}": [0.5] for i in range(6) for c in "glh"}})).parts) - 1
    assert "One note" in page


def test_the_pdf_keeps_continued_headings_notes_punctuation_and_unhyphenated_headers(tmp_path):
    source = render(tmp_path, "typst")
    assert "A wide table (continued)" in source and "One note" in source
    assert "hyphenate: false" in source and "sticky: true" in source
    for reference in re.finditer(r"#ref\([^)]*\)", source):
        assert source[reference.end()] != ";", "Typst would take the ';' after a reference as the end of it"
    assert re.search(r"(#ref\(<tbl-wide>[^)]*\)|@tbl-wide),", source), "the ',' after the cross-reference is kept"
