"""A run's report: one HTML file a person reads, that opens offline.

An experiment declares what its report shows, section by section (:class:`Section`: a
title, a paragraph, its declared :class:`~contextecho.paper.tables.Table` s with the
result each reads, its figures with their alt text); :func:`write_report` reads the run's
folder (``results/*.parquet``, ``figures/*.png``, ``manifest.json``) and writes
``report.html`` beside them, adding two sections of its own: the run manifest (status,
time, commit, packages, parameters, models, the counts of every batch, and the plan beside
what the run called) and the per-cell data (a link to every Parquet file).

The page is self-contained: the figures are embedded as base64 PNG, the style sheet is
inline, nothing is fetched (no CDN, no script). Tables are written by their declared
columns (:meth:`Table.layout <contextecho.paper.tables.Table.layout>`: human headers with
units, each kind of number by its one rule, intervals as ``[lo, hi]``, p-values to three
significant digits) with the rows' notes as footnotes. A section whose result the run did
not produce (it stopped before that stage) says so instead of a table.

Where Quarto is installed (:func:`~contextecho.paper.quarto.find_quarto`), the same
sections are written as ``report.qmd`` and Quarto renders ``report.html`` with its
resources embedded; where it is not, or its render fails (its message is kept), the
standalone page is the report.
"""
from __future__ import annotations

import base64
import html
import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import pandas as pd
import yaml

from .formats import COUNT, Decimals
from .quarto import find_quarto
from .declared import Declared
from .tables import Table

REPORT = "report.html"
SOURCE = "report.qmd"
#: Dollars as the manifest's cost is shown.
DOLLARS = Decimals("US dollars", unit="USD", digits=4)

STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1d1d1f; margin: 0;
       background: #fafafa; line-height: 1.45; }
main { max-width: 1040px; margin: 0 auto; padding: 24px 32px 64px; background: #fff; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; } h2 { font-size: 1.25em; margin-top: 2em;
     border-bottom: 1px solid #ddd; padding-bottom: 0.2em; } h3 { font-size: 1.05em; margin-top: 1.4em; }
.meta { color: #555; font-size: 0.92em; } nav ol { columns: 2; font-size: 0.92em; }
table { border-collapse: collapse; margin: 0.6em 0; font-size: 0.88em; } .wide { overflow-x: auto; }
th, td { border-bottom: 1px solid #e2e2e2; padding: 4px 10px; text-align: left; vertical-align: top; }
th { background: #f2f2f2; font-weight: 600; } td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
caption { text-align: left; font-weight: 600; padding: 4px 0; }
.notes { font-size: 0.85em; color: #444; margin: 0 0 1em; } .notes p { margin: 0.1em 0; }
figure { margin: 1em 0; } figure img { max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption { font-size: 0.85em; color: #444; } .missing { color: #8a4b00; background: #fff6e5; padding: 6px 10px; }
.status-complete { color: #1a7f37; } .status-failed, .status-incomplete { color: #b3261e; }
code { font-size: 0.9em; } dl { display: grid; grid-template-columns: max-content auto; gap: 2px 16px; }
dt { font-weight: 600; } dd { margin: 0; }
"""


@dataclass(frozen=True)
class Shown:
    """A declared table of a section and the result it reads (``results/<stem>.parquet``
    relative to the run's folder); ``rows``: a ``DataFrame.query`` that keeps the rows shown."""

    table: Table
    result: str
    rows: str = ""

    @classmethod
    def of(cls, declared: Declared, stem: str, rows: str = "") -> Shown:
        """The declared table ``stem`` of ``declared`` beside the result of the same name."""
        return cls(declared.table(stem), f"results/{stem}.parquet", rows)


@dataclass(frozen=True)
class Section:
    """One section of a report: its ``id`` (the anchor), ``title``, ``text`` (a paragraph,
    plain text), the ``tables`` it shows and its ``figures`` (``(png path relative to the
    run's folder, alt text)``)."""

    id: str
    title: str
    text: str
    tables: tuple[Shown, ...] = ()
    figures: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Written:
    """A written report: where, and what rendered it (``standalone`` or Quarto), and why
    Quarto did not where it was found."""

    path: Path
    renderer: str
    message: str = ""


def write_report(folder: str | Path, title: str, sections: Sequence[Section], *, about: Mapping[str, str] = {},
                 quarto: bool = True) -> Written:
    """Write the report of the run in ``folder`` (module doc); ``about``: the lines under the
    title (target, judge, sessions...). ``quarto`` false: the standalone page only."""
    folder = Path(folder)
    manifest = _read_json(folder / "manifest.json")
    standalone = page(folder, title, sections, manifest, about)
    path = folder / REPORT
    path.write_text(standalone, encoding="utf-8")
    found = find_quarto() if quarto else None
    if found is None:
        return Written(path, "standalone")
    (folder / SOURCE).write_text(markdown(folder, title, sections, manifest, about), encoding="utf-8")
    try:
        done = subprocess.run([str(found.executable), "render", SOURCE, "--to", "html", "--output", REPORT],
                              cwd=folder, capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.SubprocessError) as exc:
        return Written(path, "standalone", f"{found.describe()} could not render the report: {exc}")
    if done.returncode != 0 or not path.is_file() or path.read_text(encoding="utf-8") == standalone:
        path.write_text(standalone, encoding="utf-8")
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-5:])
        return Written(path, "standalone", f"{found.describe()} failed (exit {done.returncode}): {tail}")
    return Written(path, found.describe())


# --------------------------------------------------------------------------- the page
def page(folder: Path, title: str, sections: Sequence[Section], manifest: Mapping[str, Any] | None,
         about: Mapping[str, str]) -> str:
    """The standalone HTML page."""
    status = (manifest or {}).get("status", "not started")
    body = [f"<h1>{_e(title)}</h1>", '<p class="meta">'
            + "<br>".join(f"<b>{_e(k)}</b>: {_e(v)}" for k, v in about.items())
            + f'<br><b>status</b>: <span class="status-{_e(status)}">{_e(status)}</span></p>']
    everything = [*sections, *own_sections(folder)]
    body.append("<nav><ol>" + "".join(f'<li><a href="#{_e(s.id)}">{_e(s.title)}</a></li>' for s in everything)
                + "</ol></nav>")
    for section in sections:
        body.append(_section(folder, section, status))
    body.append(_manifest_html(manifest))
    body.append(_data_html(folder))
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{_e(title)}</title><style>{STYLE}</style></head>\n<body><main>\n"
            + "\n".join(body) + "\n</main></body></html>\n")


def own_sections(folder: Path) -> list[Section]:
    """The sections every report ends with (their headings in the table of contents)."""
    return [Section("manifest", "Run manifest", ""), Section("data", "Per-cell data", "")]


def _section(folder: Path, section: Section, status: str) -> str:
    out = [f'<section id="{_e(section.id)}"><h2>{_e(section.title)}</h2>']
    if section.text:
        out.append(f"<p>{_e(section.text)}</p>")
    for shown in section.tables:
        frame = _result(folder, shown)
        if frame is None:
            out.append(f'<p class="missing">{_e(shown.table.title)}: not produced; the run stopped before this '
                       f"stage (status {_e(status)}; see the run manifest).</p>")
        elif frame.empty:
            out.append(f'<p class="missing">{_e(shown.table.title)}: no rows.</p>')
        else:
            out.append(table_html(shown.table, frame))
    for png, alt in section.figures:
        out.append(figure_html(folder / png, alt, status))
    return "\n".join(out) + "</section>"


def _result(folder: Path, shown: Shown) -> pd.DataFrame | None:
    path = folder / shown.result
    if not path.is_file():
        return None
    frame = pd.read_parquet(path)
    return frame.query(shown.rows).reset_index(drop=True) if shown.rows and len(frame) else frame


def table_html(table: Table, frame: pd.DataFrame) -> str:
    """A declared table as HTML: its columns' titles, every cell by its column's kind, each
    row's note as a footnote marked on its first cell."""
    layout = table.layout(frame)
    numeric = [c.kind.numeric for c in layout.columns]
    head = "".join(f'<th{_num(n)}>{_e(c.title)}</th>' for c, n in zip(layout.columns, numeric))
    rows = []
    for cells, mark in zip(layout.cells, layout.marks):
        tds = [f"<td{_num(n)}>{_e(text)}" + (f"<sup>{_e(mark)}</sup>" if i == 0 and mark else "") + "</td>"
               for i, (text, n) in enumerate(zip(cells, numeric))]
        rows.append("<tr>" + "".join(tds) + "</tr>")
    marks = list(dict.fromkeys(m for m in layout.marks if m))  # one per note, in the notes' order
    notes = "".join(f"<p><sup>{_e(m)}</sup> {_e(note)}</p>" for m, note in zip(marks, layout.notes))
    return (f'<div class="wide"><table><caption>{_e(table.title)}</caption><thead><tr>{head}</tr></thead><tbody>'
            + "".join(rows) + "</tbody></table></div>" + (f'<div class="notes">{notes}</div>' if notes else ""))


def figure_html(png: Path, alt: str, status: str = "") -> str:
    """A figure embedded as a base64 PNG, its alt text as the caption; a missing one says so."""
    if not png.is_file():
        return (f'<p class="missing">Figure {_e(png.stem)}: not produced; the run stopped before this stage '
                f"(status {_e(status)}).</p>")
    data = base64.b64encode(png.read_bytes()).decode("ascii")
    return (f'<figure><img src="data:image/png;base64,{data}" alt="{_e(alt)}">'
            f"<figcaption>{_e(alt)}</figcaption></figure>")


def _manifest_html(manifest: Mapping[str, Any] | None) -> str:
    out = ['<section id="manifest"><h2>Run manifest</h2>']
    if manifest is None:
        out.append('<p class="missing">No run manifest: the run did not start.</p></section>')
        return "\n".join(out)
    facts = manifest_facts(manifest)
    out.append("<dl>" + "".join(f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>" for k, v in facts.items()) + "</dl>")
    batches = manifest_batches(manifest)
    if len(batches):
        out.append(_plain_table("Batches of model calls (computed calls' tokens and cost)", batches))
    versus = manifest.get("plan_vs_actual")
    if versus:
        rows = pd.DataFrame([{"": k, "planned": v.get("planned"), "actual": v.get("actual")}
                             for k, v in versus.items()])
        out.append(_plain_table("The plan made before the run against what it called (totals)", rows))
    params = manifest.get("parameters") or {}
    if params:
        out.append(_plain_table("Parameters", pd.DataFrame(
            [{"parameter": k, "value": _value(v)} for k, v in params.items()])))
    return "\n".join(out) + "</section>"


def manifest_facts(manifest: Mapping[str, Any]) -> dict[str, str]:
    """What a person asks first of a run's log: status, time, code, models, protocol."""
    git = manifest.get("git") or {}
    protocol = manifest.get("protocol") or {}
    packages = manifest.get("packages") or {}
    return {"status": str(manifest.get("status")), "started": str(manifest.get("started")),
            "finished": str(manifest.get("finished")), "wall time": f"{manifest.get('wall_s', 0):.0f} s",
            "commit": f"{git.get('commit') or 'unknown'}" + (" (with uncommitted changes)" if git.get("dirty") else ""),
            "models": ", ".join(manifest.get("models") or []),
            "protocol": " ".join(str(protocol.get(k, "")) for k in ("protocol", "protocol_version")).strip()
                        + (f", sha256 {str(protocol.get('protocol_sha256'))[:12]}" if protocol.get("protocol_sha256")
                           else ""),
            "packages": ", ".join(f"{k} {v}" for k, v in packages.items() if v)}


def manifest_batches(manifest: Mapping[str, Any]) -> pd.DataFrame:
    """One row per batch of the run log: its counts, traffic and usage."""
    rows = []
    for name, counts in (manifest.get("batches") or {}).items():
        traffic = (manifest.get("traffic") or {}).get(name, {})
        usage = (manifest.get("usage") or {}).get(name, {})
        rows.append({"batch": name, **counts, **traffic, **usage})
    return pd.DataFrame(rows)


def _plain_table(caption: str, frame: pd.DataFrame) -> str:
    """A table of a run log's values (counts, texts), each cell as it is written there."""
    numeric = [pd.api.types.is_numeric_dtype(frame[c]) for c in frame.columns]
    head = "".join(f"<th{_num(n)}>{_e(c)}</th>" for c, n in zip(frame.columns, numeric))
    body = "".join("<tr>" + "".join(f"<td{_num(n)}>{_e(_cell(v))}</td>" for v, n in zip(row, numeric)) + "</tr>"
                   for row in frame.itertuples(index=False))
    return (f'<div class="wide"><table><caption>{_e(caption)}</caption><thead><tr>{head}</tr></thead>'
            f"<tbody>{body}</tbody></table></div>")


def _cell(value: Any) -> str:
    if value is None or (isinstance(value, float) and value != value):
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return COUNT.text(value)
    if isinstance(value, float):
        return COUNT.text(value) if value.is_integer() else DOLLARS.text(value)
    return _value(value)


def _value(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return ", ".join(map(str, value)) or "none"
    if isinstance(value, Mapping):
        return json.dumps(value, sort_keys=True, default=str)
    return str(value)


def _data_html(folder: Path) -> str:
    files = data_files(folder)
    items = "".join(f'<li><a href="{_e(f)}"><code>{_e(f)}</code></a></li>' for f in files)
    return ('<section id="data"><h2>Per-cell data</h2><p>Every result of this run as Parquet, beside this '
            f"report in <code>{_e(str(folder))}</code> (read with <code>pandas.read_parquet</code>); "
            "<code>cells.parquet</code> holds one row per cell and judge: the request's key, the answer, "
            f"the verdict.</p><ul>{items}</ul></section>")


def data_files(folder: Path) -> list[str]:
    """Every Parquet result under ``folder``, relative to it."""
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*.parquet"))


# --------------------------------------------------------------------------- Quarto's source
def markdown(folder: Path, title: str, sections: Sequence[Section], manifest: Mapping[str, Any] | None,
             about: Mapping[str, str]) -> str:
    """The same report as a Quarto document (``report.qmd``), its resources embedded."""
    front = {"title": title, "format": {"html": {"embed-resources": True, "toc": True}}}
    out = ["---", yaml.safe_dump(front, sort_keys=False, allow_unicode=True).strip(), "---", ""]
    out += [f"**{k}**: {v}  " for k, v in about.items()]
    status = (manifest or {}).get("status", "not started")
    out.append(f"**status**: {status}\n")
    for section in sections:
        out += [f"## {section.title} {{#{section.id}}}", "", section.text, ""]
        for shown in section.tables:
            frame = _result(folder, shown)
            if frame is None or frame.empty:
                out += [f"*{shown.table.title}: {'not produced' if frame is None else 'no rows'}.*", ""]
            else:
                out += [f": {shown.table.title}", "", shown.table.render(frame), ""]
        for png, alt in section.figures:
            out += [f"![{alt}]({png}){{fig-alt=\"{alt}\"}}" if (folder / png).is_file()
                    else f"*Figure {Path(png).stem}: not produced.*", ""]
    out += ["## Run manifest {#manifest}", "", "```{=html}", _manifest_html(manifest), "```", "",
            "```{=html}", _data_html(folder), "```", ""]
    return "\n".join(out)


# --------------------------------------------------------------------------- helpers
def _read_json(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _num(numeric: bool) -> str:
    return ' class="num"' if numeric else ""
