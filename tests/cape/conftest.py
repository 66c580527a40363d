"""Fixtures for the CAPE tests: a synthetic inventory, a scripted Likert model, the real MPI.

The synthetic items are written here from scratch (no inventory text is committed);
the real MPI-120 is read at run time and its absence skips (or, with CI=true, fails).
"""
from __future__ import annotations

import hashlib

import pytest

from contextecho.cape.inventory import InventoryNotFound, load_inventory

SYNTHETIC = [  # (facet, text, trait, key), ours
    ("Tidiness", "Keep my desk in order", "C", 1),
    ("Curiosity", "Read about distant planets", "O", 1),
    ("Chatter", "Start conversations with strangers", "E", 1),
    ("Warmth", "Help people who are lost", "A", 1),
    ("Nerves", "Fret over small mistakes", "N", 1),
    ("Tidiness", "Leave chores for later", "C", -1),
    ("Curiosity", "Avoid unfamiliar food", "O", -1),
    ("Chatter", "Prefer quiet evenings alone", "E", -1),
    ("Warmth", "Ignore requests for help", "A", -1),
    ("Nerves", "Stay calm in traffic", "N", -1),
]


@pytest.fixture
def synthetic_inventory(tmp_path):
    path = tmp_path / "synthetic.csv"
    lines = ["label_raw,text,label_ocean,key"] + [f"{a},{b},{c},{d}" for a, b, c, d in SYNTHETIC]
    path.write_text("\n".join(lines) + "\n")
    return load_inventory(path)


@pytest.fixture
def mpi120(missing_shared_data):
    try:
        return load_inventory("mpi_120")
    except InventoryNotFound as exc:
        missing_shared_data(f"MPI-120 not available: {exc}")


def likert_reply(model, messages):
    """``cape/<behaviour>``: a scripted respondent that goes through LiteLLM.

    - ``hash``: a letter from the hash of the last message (the question), as "(X)";
    - ``parrot``: copies the letter of the last assistant reply in the history, else ``hash``;
    - ``garbage``: "I would rather not say.".
    """
    behaviour = model.split("/")[-1]
    letter = "ABCDE"[int(hashlib.sha256(messages[-1]["content"].encode()).hexdigest(), 16) % 5]
    if behaviour == "garbage":
        return "I would rather not say."
    if behaviour == "parrot":
        replies = [m["content"] for m in messages if m["role"] == "assistant"]
        if replies:
            letter = replies[-1].strip("( ")[0]
    return f"({letter})"


@pytest.fixture(scope="session")
def likert(provider):
    """The ``cape/...`` respondent (:func:`likert_reply`); ``seen`` keeps every request."""
    return provider("cape", likert_reply, tokens=(1, 1))
