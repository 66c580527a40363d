"""Item paraphrases for the paraphrasing factor: generated once, cached, reviewable.

The paper used GPT-4 to write two paraphrases per item and checked them by hand
(§3.1, item 6) but gives no prompt; :data:`PARAPHRASE_PROMPT` is ours. The model is
a parameter; every call goes through ``generate`` (so a rerun is free and the same
model string gives the same paraphrases from the cache).

The review file holds the original item beside its paraphrases, i.e. inventory text,
so it is written under the git-ignored ``data/mpi/`` (``paraphrase_path``), never
committed. A reviewer edits it in place: fix a paraphrase, or write ``rejected`` in
``review``; :func:`load_paraphrases` then skips that item (and the paraphrasing factor
refuses to run until every item has both, see ``factors.MissingParaphrases``).
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Mapping

import pandas as pd

from ..engine.cache import CallCache
from ..engine.calls import Transport, generate
from ..engine.model_request import ModelRequest
from ..engine.paths import data_dir
from .inventory import Inventory
from .prompts import item_phrase

PROMPT_VERSION = "paraphrase-v1"
PARAPHRASE_PROMPT = (  # written by us: the paper gives none
    "Rewrite the following personality questionnaire statement in two different ways. "
    "Keep its meaning, its direction and roughly its length, and keep it a phrase that "
    "completes a sentence starting with \"You\".\n"
    "Statement: \"You {item}.\"\n"
    "Answer with exactly two lines, \"1. <phrase>\" and \"2. <phrase>\", without the word \"You\".")
PARAMS: Mapping[str, Any] = {"temperature": 0.0, "max_tokens": 64}
_LINE = re.compile(r"^\s*(?:\*\*)?([12])[.)]\s*(?:\*\*)?\s*(.+?)\s*$")


def parse_paraphrases(text: str | None) -> tuple[str, str] | None:
    """The two phrases from "1. …" / "2. …" lines ("You " and quotes stripped), or None."""
    if not text:
        return None
    found: dict[str, str] = {}
    for line in text.splitlines():
        match = _LINE.match(line)
        if match and match.group(1) not in found:
            phrase = match.group(2).strip().strip("\"'“”*").strip()
            phrase = re.sub(r"^you\s+", "", phrase, flags=re.IGNORECASE).rstrip(".").strip()
            if phrase:
                found[match.group(1)] = phrase[0].upper() + phrase[1:]
    return (found["1"], found["2"]) if len(found) == 2 else None


def generate_paraphrases(inventory: Inventory, model: str, *, params: Mapping[str, Any] = PARAMS,
                         cache: CallCache | None = None, transport: Transport = Transport(),
                         progress: bool = False) -> pd.DataFrame:
    """One row per item: the original, two paraphrases, a status (ok / unparsed / error)."""
    requests = [ModelRequest(model, [{"role": "user", "content": PARAPHRASE_PROMPT.format(
        item=item_phrase(i.text, True))}], dict(params)) for i in inventory.items]
    result = generate(requests, cache=cache, transport=transport, progress=progress,
                      name="cape:paraphrase", parameters={"prompt_version": PROMPT_VERSION})
    rows = []
    for item, record in zip(inventory.items, result.records):
        pair = parse_paraphrases(record.response_text if record.ok else None)
        status = "error" if not record.ok else ("ok" if pair else "unparsed")
        rows.append({"item": item.index, "trait": item.trait, "key": item.key, "text": item.text,
                     "paraphrase_1": pair[0] if pair else None,
                     "paraphrase_2": pair[1] if pair else None, "status": status, "review": "",
                     "model": model, "prompt_version": PROMPT_VERSION, "request_key": record.key,
                     "inventory_sha256": inventory.sha256})
    return pd.DataFrame(rows)


def paraphrase_path(inventory: Inventory, model: str) -> Path:
    """``data/mpi/paraphrases/<inventory>__<model>.csv`` (git-ignored: holds item text)."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", model)
    return data_dir() / "mpi" / "paraphrases" / f"{inventory.name}__{slug}.csv"


def write_paraphrases(table: pd.DataFrame, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(path, index=False)
    return path


def load_paraphrases(path: Path) -> dict[int, tuple[str, str]]:
    """Item index → (paraphrase 1, paraphrase 2), for rows with both and not ``rejected``."""
    table = pd.read_csv(path, keep_default_na=False)
    keep = (table["paraphrase_1"].str.strip() != "") & (table["paraphrase_2"].str.strip() != "") & \
        (table["review"].str.strip().str.lower() != "rejected")
    return {int(r.item): (r.paraphrase_1.strip(), r.paraphrase_2.strip()) for r in table[keep].itertuples()}
