"""Stressors S1–S4: output contracts of different strength, ten wordings each.

From the seed (§2.4, Appendix Q): S1 byte-exact one-word output, S2 the soft
no-preamble constraint — the model is told to "output one bash command, no preamble,
no markdown." and scored by ``is_no_preamble`` plus the response-length ratio — S3 a
soft one-sentence constraint, S4 byte-exact JSON; n = 10 wordings per stressor cell.

Only the S2 constraint clause is given verbatim by the seed; it ends every S2 wording
unchanged, after a task that varies. The S1/S3/S4 prompts and all ten tasks per
stressor are ours, written to the description. Item ids are ``S2#01`` .. ``S2#10``.
"""
from __future__ import annotations

from . import contracts
from .contracts import Contract
from ..engine.registry import UnknownNameError

VERSION = "stressors-1.0"

S2_CLAUSE = "output one bash command, no preamble, no markdown."

S2_TASKS = (
    "List every file in the current directory, including hidden ones",
    "Count the lines in all .py files under src",
    "Find files larger than 100 MB under the home directory",
    "Show the ten most recent git commits on one line each",
    "Print the disk usage of the current directory in human-readable form",
    "Search for the string TODO in all files under the current directory",
    "Create a compressed tar archive of the logs directory",
    "Show which process is listening on port 8080",
    "Replace every occurrence of foo with bar in config.txt in place",
    "Print the last 50 lines of app.log and keep following it",
)

S1_WORDINGS = (
    "Reply with exactly one word: OK. Nothing else.",
    "Respond with the single word OK and nothing more.",
    "Your entire reply must be the one word OK.",
    "Answer with one word only, exactly: OK",
    "Output the word OK, with no other characters.",
    "Say OK. Just that one word, nothing else.",
    "Write exactly OK as your whole response.",
    "Give a one-word reply, and let that word be OK.",
    "Return only the word OK, no punctuation, no explanation.",
    "Reply OK, and only OK.",
)
S1_EXPECTED = "OK"

S3_QUESTIONS = (
    "What does a hash map do?",
    "Why do we write unit tests?",
    "What is a race condition?",
    "What does git rebase do?",
    "What is the purpose of a lock file in a package manager?",
    "What is a memory leak?",
    "Why use environment variables for configuration?",
    "What does an index do in a database?",
    "What is continuous integration?",
    "What is the difference between a process and a thread?",
)
S3_CLAUSE = "Answer in one sentence."

S4_EXPECTED = '{"status":"ok","count":3}'
S4_WORDINGS = tuple(w.format(json=S4_EXPECTED) for w in (
    "Output exactly this JSON and nothing else: {json}",
    "Reply with this exact JSON text, byte for byte: {json}",
    "Your whole response must be the following JSON, unchanged: {json}",
    "Return precisely {json} with no other characters.",
    "Echo this JSON exactly, without spaces added or removed: {json}",
    "Respond with nothing but this JSON: {json}",
    "Copy this JSON as your entire answer, exactly as written: {json}",
    "Print exactly the JSON {json} and no other text.",
    "Send back this JSON verbatim and nothing more: {json}",
    "The only thing you should output is this JSON: {json}",
))


def _items(group: str, texts: tuple[str, ...], scorer: str, expected=None) -> tuple[Contract, ...]:
    return tuple(Contract(f"{group}#{i:02d}", "stressor", text, scorer, expected, group)
                 for i, text in enumerate(texts, 1))


STRESSORS: dict[str, tuple[Contract, ...]] = {
    "S1": _items("S1", S1_WORDINGS, "byte_exact", S1_EXPECTED),
    "S2": _items("S2", tuple(f"{t}: {S2_CLAUSE}" for t in S2_TASKS), "no_preamble"),
    "S3": _items("S3", tuple(f"{q} {S3_CLAUSE}" for q in S3_QUESTIONS), "one_sentence"),
    "S4": _items("S4", S4_WORDINGS, "byte_exact", S4_EXPECTED),
}
BY_ID = {c.id: c for group in STRESSORS.values() for c in group}


def stressor(name: str) -> tuple[Contract, ...]:
    """All wordings of stressor ``name`` ("S1".."S4")."""
    try:
        return STRESSORS[name]
    except KeyError:
        raise UnknownNameError("stressor", name, sorted(STRESSORS)) from None


def texts() -> dict:
    return {c.id: [c.instruction, c.scorer, c.expected] for c in BY_ID.values()}


def contract(contract_id: str) -> Contract:
    """A contract by id: one of the hardened contracts or one stressor wording."""
    if contract_id in contracts.BY_ID:
        return contracts.BY_ID[contract_id]
    if contract_id in BY_ID:
        return BY_ID[contract_id]
    raise UnknownNameError("contract", contract_id, sorted(contracts.BY_ID) + sorted(BY_ID))
