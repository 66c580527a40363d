"""A run's report (:mod:`contextecho.paper.report`): one self-contained HTML page, every
declared section with its tables and embedded figures, the run manifest and the data; a
missing result said, never silently left out; Quarto's render where it is found."""
from __future__ import annotations

import base64
import html
import io
import json
import os
import stat
from html.parser import HTMLParser
from pathlib import Path

import matplotlib
import pandas as pd
import pytest
from PIL import Image

from contextecho.paper import report
from contextecho.paper.formats import COUNT, P_VALUE, POINTS, TEXT, estimate
from contextecho.paper.quarto import Quarto
from contextecho.paper.report import Section, Shown, write_report
from contextecho.paper.tables import Column, Table

matplotlib.use("Agg")

GAPS = Table("gaps", "Drift gap per session", (
    Column("Session", TEXT, "session"), Column("Drift gap Δ (judge points)", estimate(POINTS), ("estimate", "lo", "hi")),
    Column("p", P_VALUE, "p"), Column("Pairs", COUNT, "n")))
LATER = Table("later", "A table the run did not reach", (Column("Session", TEXT, "session"),))


class Page(HTMLParser):
    """What a report page holds: section ids, images (src, alt), links, scripts, table cells."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.sections, self.images, self.links, self.scripts, self.cells = [], [], [], 0, []
        self._cell = None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "section":
            self.sections.append(a["id"])
        elif tag == "img":
            self.images.append((a["src"], a.get("alt", "")))
        elif tag in ("a", "link"):
            self.links.append(a.get("href", ""))
        elif tag == "script":
            self.scripts += 1
        elif tag in ("td", "th"):
            self._cell = ""

    def handle_data(self, data):
        if self._cell is not None:
            self._cell += data

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self.cells.append(self._cell)
            self._cell = None


def decoded(src: str) -> Image.Image:
    """An embedded image, decoded (it must be a base64 PNG)."""
    prefix = "data:image/png;base64,"
    assert src.startswith(prefix), src[:40]
    image = Image.open(io.BytesIO(base64.b64decode(src[len(prefix):])))
    image.load()
    return image


@pytest.fixture
def run_folder(tmp_path):
    import matplotlib.pyplot as plt

    folder = tmp_path / "run"
    (folder / "results").mkdir(parents=True)
    (folder / "figures").mkdir()
    pd.DataFrame({"session": ["S1", "S2"], "estimate": [0.42, float("nan")], "lo": [0.1, float("nan")],
                  "hi": [0.8, float("nan")], "p": [0.012345, float("nan")], "n": [5, 0],
                  "note": ["", "not estimable: arm 'filler' has no valid verdict"]}).to_parquet(
        folder / "results" / "gaps.parquet")
    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    fig.savefig(folder / "figures" / "gaps.png")
    plt.close(fig)
    (folder / "manifest.json").write_text(json.dumps({
        "name": "audit", "status": "complete", "started": "2026-12-02T00:00:00Z", "finished": "2026-12-02T00:01:00Z",
        "wall_s": 60.0, "git": {"commit": "abc123", "dirty": True}, "packages": {"litellm": "1.0"},
        "parameters": {"targets": ["local/smollm2-135m"], "window": 3000}, "models": ["local/smollm2-135m"],
        "batches": {"audit:panel:targets": {"calls": 10, "cached": 4, "computed": 6, "failed": 0}},
        "usage": {"audit:panel:targets": {"prompt_tokens": 1200, "completion_tokens": 60, "cost_usd": 0.0}},
        "plan_vs_actual": {"calls": {"planned": 10, "actual": 10}}}))
    return folder


SECTIONS = (Section("drift", "Drift", "The gap.", (Shown(GAPS, "results/gaps.parquet"),),
                    (("figures/gaps.png", "The gap per session"),)),
            Section("later", "Later", "Not reached.", (Shown(LATER, "results/later.parquet"),),
                    (("figures/later.png", "A figure the run did not reach"),)))


def test_the_report_is_one_page_that_needs_nothing_else(run_folder):
    written = write_report(run_folder, "Audit", SECTIONS, about={"target": "local/smollm2-135m"}, quarto=False)
    assert written.path == run_folder / "report.html" and written.renderer == "standalone"
    text = written.path.read_text()
    page = Page(text)
    assert page.sections == ["drift", "later", "manifest", "data"]
    assert page.scripts == 0 and "http://" not in text and "https://" not in text  # no CDN, no script
    assert all(link.startswith("#") or link.startswith("results/") for link in page.links)
    [(src, alt)] = page.images
    assert alt == "The gap per session" and decoded(src).size[0] > 100
    # cells written by their kinds: an estimate with its interval, p to 3 significant digits,
    # a missing value as a dash with its reason as a footnote
    assert "0.42 [0.10, 0.80]" in page.cells and "0.0123" in page.cells and "—" in page.cells
    assert "not estimable: arm 'filler' has no valid verdict" in html.unescape(text) and "<sup>a</sup>" in text
    assert "A table the run did not reach: not produced" in text and "Figure later: not produced" in text
    # the manifest: its facts, batches (with usage), the plan against the actual, the parameters
    for said in ("abc123 (with uncommitted changes)", "audit:panel:targets", ">1200<", "plan made before the run",
                 "window", "results/gaps.parquet"):
        assert said in text, said


def test_a_run_that_never_started_says_so(tmp_path):
    text = write_report(tmp_path, "Audit", SECTIONS, quarto=False).path.read_text()
    assert "No run manifest" in text and text.count("not produced") == 4


def test_quarto_renders_it_where_found_and_the_page_stands_where_it_fails(run_folder, monkeypatch):
    script = run_folder.parent / "quarto"
    script.write_text("#!/bin/sh\n# render report.qmd --to html --output report.html\n"
                      "test -f report.qmd && grep -q 'embed-resources: true' report.qmd || exit 3\n"
                      "echo '<html>rendered by quarto</html>' > \"$6\"\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setattr(report, "find_quarto", lambda: Quarto(script, "PATH", "9.9"))
    written = write_report(run_folder, "Audit", SECTIONS)
    assert written.renderer.startswith("Quarto 9.9") and "rendered by quarto" in written.path.read_text()
    source = (run_folder / "report.qmd").read_text()
    assert "![The gap per session](figures/gaps.png)" in source and "0.42 \\[0.10, 0.80\\]" in source
    script.write_text("#!/bin/sh\necho 'ERROR: no pandoc' >&2\nexit 1\n")
    written = write_report(run_folder, "Audit", SECTIONS)
    assert written.renderer == "standalone" and "no pandoc" in written.message
    assert Page(written.path.read_text()).sections[0] == "drift"


CHROMIUM = Path("/usr/bin/chromium")
HEADLESS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--no-first-run"]


def chromium() -> Path:
    """Debian's chromium (``.ci/run`` installs it where apt is available); under CI its
    absence fails the test, elsewhere it skips it."""
    if not CHROMIUM.is_file():
        message = f"headless Chromium not found at {CHROMIUM} (apt-get install chromium)"
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(message)
        pytest.skip(message)
    return CHROMIUM


def browse(page: Path, tmp_path: Path, *options: str) -> str:
    """Run headless Chromium on ``page`` with ``options``; its stdout."""
    import subprocess

    done = subprocess.run([str(chromium()), *HEADLESS, f"--user-data-dir={tmp_path / 'profile'}",
                           "--virtual-time-budget=5000", *options, page.as_uri()],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def check_in_chromium(page: Path, tmp_path: Path, sections: list[str], n_images: int) -> Path:
    """Open the report in headless Chromium: every image decoded (its natural width, read
    after load by a copy of the page with one line of script: the report itself has none),
    every section there, and a screenshot that is not blank and shows the figures (it
    differs from one of the page with its images hidden); the screenshot's path."""
    from PIL import ImageChops

    probe = tmp_path / "probe.html"
    probe.write_text(page.read_text().replace(
        "</body>", "<script>window.addEventListener('load', () => document.body.setAttribute('data-decoded', "
                   "Array.from(document.images, i => i.naturalWidth).join(',')));</script></body>"))
    dom = browse(probe, tmp_path, "--dump-dom")
    widths = [int(w) for w in dom.split('data-decoded="', 1)[1].split('"', 1)[0].split(",") if w]
    assert len(widths) == n_images and all(w > 0 for w in widths), widths
    for section in sections:
        assert f'id="{section}"' in dom, section
    hidden = tmp_path / "hidden.html"
    hidden.write_text(page.read_text().replace("</style>", "img { visibility: hidden; }</style>", 1))
    shots = []
    for name, shown in (("shot.png", page), ("without_images.png", hidden)):
        shots.append(tmp_path / name)
        browse(shown, tmp_path, "--window-size=1200,3000", "--hide-scrollbars", f"--screenshot={shots[-1]}")
    image, without = (Image.open(s).convert("RGB") for s in shots)
    colours = image.getcolors(maxcolors=1 << 20) or []
    ink = sum(n for n, rgb in colours if sum(rgb) < 600) / (image.width * image.height)
    assert ink > 0.005 and len(colours) > 50, (ink, len(colours))  # text, rules, figures: not a blank page
    changed = ImageChops.difference(image, without).convert("L").point(lambda v: 255 if v > 16 else 0)
    figures = changed.histogram()[255] / (image.width * image.height)
    assert figures > 0.0005 * n_images, figures  # the figures are on the screenshot (a hidden one changes nothing)
    return shots[0]


def test_the_report_opens_in_headless_chromium_with_its_figures(run_folder, tmp_path):
    page = write_report(run_folder, "Audit", SECTIONS, quarto=False).path
    check_in_chromium(page, tmp_path, ["drift", "later", "manifest", "data"], n_images=1)
