"""Which sessions of the corpus a run may use: openly licensed, long enough, of a format
the run reads, longest first; where each file lies; the public labels S1..Sn the
manuscript shows instead of paths."""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

from ..engine.paths import shared_dir
from .corpus import local_corpus, read_manifest
from .model import Session

#: Licences that allow publishing derived numbers; sources that state none are left out.
OPEN_LICENCES = ("MIT", "Apache-2.0", "BSD", "CC-BY")
#: The transcript formats of the corpus.
FORMATS = ("claude_code", "codex_cli")


def corpus_rows(min_assistant: int = 20, min_compactions: int = 0,
                events: Sequence[str] = (), formats: Sequence[str] = FORMATS) -> list[dict]:
    """Manifest rows of usable sessions, longest first (ties by file name).

    ``events`` (``compaction``, ``microcompaction``): keep only sessions with at least one
    event of one of these types (manifest column ``n_<type>s``; absent counts as 0).
    """
    rows = [r for r in read_manifest()
            if r["format"] in formats and "/subagents/" not in r["file"]
            and r["license"].startswith(OPEN_LICENCES)
            and int(r["n_assistant_msgs"]) >= min_assistant
            and int(r["n_compactions"] or 0) >= min_compactions
            and (not events or any(int(r.get(f"n_{e}s") or 0) > 0 for e in events))]
    rows.sort(key=lambda r: (-int(r["n_assistant_msgs"]), r["file"]))
    return rows


def session_file(name: str, corpus: Path | None = None) -> Path:
    """``data/corpus/<name>`` (filled by `make data`), else the shared corpus beside the checkout."""
    for root in ([corpus] if corpus else [local_corpus(), shared_dir() / "corpus" / "real"]):
        if (root / name).is_file():
            return root / name
    raise FileNotFoundError(f"session {name} is in neither data/corpus nor ../shared/corpus/real; "
                            "run `make data`")


def session_labels(sessions: Sequence[Session]) -> dict[str, str]:
    """Short public labels S1..Sn for session ids (the manuscript never shows paths)."""
    return {s.session_id: f"S{i}" for i, s in enumerate(sessions, start=1)}
