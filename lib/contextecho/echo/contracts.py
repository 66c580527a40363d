"""Output contracts as data, and the four hardened non-bash contracts of Appendix J.

A :class:`Contract` is an instruction (the whole user message the target sees), the
expected structure, and the name of the pure scorer that checks a response against it
(:mod:`.scorers`). Stressors S1–S4 (:mod:`.stressors`) are contracts too.

The seed (Appendix J) describes the four frozen contracts — C1_csv (six-record CSV with
an exact header and rows), C2_yaml (three-key flat YAML mapping, fixed key order,
unquoted values), C5_echo (ten given words, reversed, uppercased, one per line), C6_json
(strict JSON object, alphabetical keys, exact values, whole-output parse) — and the two
hardening levers: the format constraint is stated exactly once per prompt, with "only",
and the required structure is exact. It does not print the prompts: the instructions
and expected values below are ours, written to that description. "Reversed" in C5 is
read as the word order reversed (the last given word first).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any


VERSION = "contracts-1.0"


@dataclass(frozen=True)
class Contract:
    id: str  # e.g. "C1_csv", or "S2#03" for wording 3 of stressor S2
    family: str  # "contract" | "stressor"
    instruction: str
    scorer: str  # a name in scorers.SCORERS
    expected: Any = None  # JSON-able structure the scorer compares with
    group: str = ""  # the contract a wording belongs to ("S2"); defaults to id

    @property
    def base(self) -> str:
        return self.group or self.id


C1_ROWS = [["name", "year"], ["Python", "1991"], ["Java", "1995"], ["Ruby", "1995"],
           ["Go", "2009"], ["Swift", "2014"], ["Rust", "2015"]]
C2_PAIRS = [["service", "billing"], ["port", "8080"], ["region", "eu-west-1"]]
C5_WORDS = ["apple", "river", "stone", "cloud", "maple", "tiger", "lemon", "piano", "ocean", "amber"]
C6_OBJECT = {"name": "contextecho", "stable": True, "version": 2}

HARDENED: tuple[Contract, ...] = (
    Contract(
        "C1_csv", "contract",
        "Here are six programming languages and the year each first appeared: Python 1991, "
        "Java 1995, Ruby 1995, Go 2009, Swift 2014, Rust 2015. Write them as CSV with the "
        "header line name,year followed by one row per language, in the order listed. "
        "Output only the CSV.",
        "csv_exact", C1_ROWS),
    Contract(
        "C2_yaml", "contract",
        "Write a flat YAML mapping with exactly three keys in this order: service with the "
        "value billing, port with the value 8080, region with the value eu-west-1. Do not "
        "quote the values. Output only the YAML.",
        "yaml_flat_exact", C2_PAIRS),
    Contract(
        "C5_echo", "contract",
        "Take these ten words: " + ", ".join(C5_WORDS) + ". Write them in reverse order, "
        "each in uppercase, one word per line. Output only the ten words.",
        "lines_exact", [w.upper() for w in reversed(C5_WORDS)]),
    Contract(
        "C6_json", "contract",
        "Write a JSON object with three keys: name with the string value contextecho, "
        "version with the integer value 2, and stable with the boolean value true. Put the "
        "keys in alphabetical order. Output only the JSON object.",
        "json_exact", C6_OBJECT),
)
BY_ID = {c.id: c for c in HARDENED}


def texts() -> dict:
    return {c.id: [c.instruction, c.scorer, c.expected] for c in HARDENED}
