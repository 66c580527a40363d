"""Role-playing agents (RPAs) and the BFI against human OCEAN labels (CAPE §6.5, Table 2).

Data: ``shared/data/rpa`` (its README is the specification; nothing of it is committed):
``characters.jsonl`` (InCharacter's 32 characters with human BFI labels; 16 have a
ChatHaruhi agent, system prompt and dialogue snippets, 16 are RoleLLM characters with
labels only, since their profiles and dialogues are not available here) and ``bfi.json``
(the 44 BFI items, dimensions, reverse keys, InCharacter's prompt strings).

**The agent's messages** (InCharacter's ChatHaruhi wrapper, README "How InCharacter builds
the agent", with our stand-in for the retrieval):

1. ``system``: the character's system prompt, verbatim;
2. ``user``: ``"Classic scenes for the role are as follows:\\n"`` followed by the character's
   dialogue snippets joined by ``"\\n###\\n"``: the snippets in file order, whole, while the
   joined snippets stay within ``scene_chars`` characters; the first snippet that would
   exceed it ends the list (ChatHaruhi retrieves the top-19 scenes by embedding similarity
   and caps them at 1,500 tokens; no embeddings are used here, so every item gets the same
   scenes);
3. RPA++ (context-dependent) only: the earlier question–answer pairs of the run, the query
   as a ``user`` turn and the agent's reply as an ``assistant`` turn, all of them (no
   token cap: ChatHaruhi's 1,200-token history cap would silently drop the early pairs; a
   request too long for the model fails before any call, nothing is truncated); RPA
   (context-free, InCharacter's way) has none;
4. ``user``: the query ``<experimenter>:「<question>」``.

**The question** is InCharacter's self-report (``choose``) form in the character's
language (``en`` or ``zh``), from ``bfi.json`` → ``incharacter_prompts``, verbatim:
``rpa_choose_prefix`` with ``<statement>`` replaced by the item's ``text_<language>``
(InCharacter's ``origin_*`` statement, e.g. "Is talkative."), then
``rpa_choice_instruction``; the two are joined by one space in English and with nothing
in Chinese (our choice: the README quotes the English joined by a space; Chinese text
has no spaces between sentences).

**The reply** is read as the first digit 1–5 in it (ASCII or full-width); a reply with
none (a refusal, an unparsable reply) or a failed call counts as choice 3, InCharacter's
rule, and is counted (``status`` unparsable / error).

**Scoring** (InCharacter): item score s = c, or 6 − c for a reverse-keyed item;
dimension score S_d = the mean of its items' s; type H if S_d > 3, else L.

**Alignment** against the human ``annotation`` labels, per (character, dimension) pair,
on the mean of the runs' S_d (CAPE: "the average OCEAN in MA metrics"); a pair is
skipped under the ambiguity rule: ``pdb`` (InCharacter's code: the PDB label type is X;
3 of 160 pairs) or ``annotation`` (the annotators' own type is X; 23 of 160).

- accuracy: the predicted type equals the label's type;
- MAE = |S_d − label| / 4, InCharacter's error as a fraction of the 1–5 span (CAPE does
  not state its MAE's units; its 6.42–8.21 are not this fraction);
- OA (CAPE: its OC metric between the human and the LLM OCEAN): per character,
  :func:`~contextecho.cape.consistency.ocean_consistency` of the two vectors (human
  labels, mean LLM S_d) over the character's non-skipped dimensions (OC needs two or
  more; fewer: not estimable for that character).

**Items**: all 44 (InCharacter, CAPE), or a trait-balanced subset for a short run
(:meth:`Bfi.balanced`); a dimension score is then the mean of the items asked.

**Random** (CAPE's baseline): choices uniform on 1–5 from a generator seeded by the seed,
the character and the run (:func:`~contextecho.engine.hashing.rng_for`); no model call.

**Consistency** over a character's runs in one condition: TAR, ED, TC and OC of the
runs' item-score trajectories (the scored values, refusals as 3), CAPE's Table 1
functions (:func:`~contextecho.cape.analyses.consistency_row`). With one run they are
not estimable; at temperature 0 the runs repeat each other and measure only determinism.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from ..engine.cache import CallCache
from ..engine.calls import Transport, generate
from ..engine.hashing import rng_for
from ..engine.model_request import ModelRequest
from ..engine.paths import shared_dir
from .administer import history_messages
from .analyses import consistency_row
from .consistency import ocean_consistency
from .inventory import TRAITS
from .parsing import ERROR, OK

#: InCharacter's dimension names, in OCEAN order (``TRAITS`` letters, index for index).
DIMENSIONS = ("Openness", "Conscientiousness", "Extraversion", "Agreeableness", "Neuroticism")
LETTER = dict(zip(DIMENSIONS, TRAITS))
LANGUAGES = ("en", "zh")
#: How the choose prefix and the choice instruction are joined, per language (module doc).
JOIN = MappingProxyType({"en": " ", "zh": ""})
SCENES_HEADER = "Classic scenes for the role are as follows:\n"
SCENE_SEPARATOR = "\n###\n"
#: The ambiguity rules: which label type X makes a (character, dimension) pair skipped.
AMBIGUITY_RULES = MappingProxyType({
    "pdb": "its Personality Database label type is X (InCharacter's code)",
    "annotation": "the annotators' own label type is X"})
AMBIGUITY = tuple(AMBIGUITY_RULES)
#: The conditions, in Table 2's order: no model; context-free; context-dependent.
RANDOM, RPA, RPA_PLUS = "Random", "RPA", "RPA++"
CONDITIONS = (RANDOM, RPA, RPA_PLUS)
MIDPOINT = 3
#: A reply without a choice (a refusal, other text): scored as 3 and counted. A failed call is
#: ``parsing.ERROR``, a choice read ``parsing.OK`` (the statuses ``answer_counts`` reads).
UNPARSABLE = "unparsable"
_CHOICE = re.compile(r"[1-5\uff11-\uff15]")


def rpa_dir() -> Path:
    return shared_dir() / "data" / "rpa"


@dataclass(frozen=True)
class BfiItem:
    id: int
    dimension: str
    reverse_keyed: bool
    text: Mapping[str, str]  # language → InCharacter's statement


@dataclass(frozen=True)
class Bfi:
    items: tuple[BfiItem, ...]
    choose_prefix: Mapping[str, str]  # language → "… <statement> …"
    choice_instruction: Mapping[str, str]

    def balanced(self, n_items: int) -> "Bfi":
        """The first ``n_items // 5`` items of each dimension (at least one), asked in the
        BFI's order (which cycles through the five dimensions, so the first ten are items
        1–10); all 44 for 0 or at least 44 (the rule of CAPE's ``Inventory.balanced``)."""
        if n_items <= 0 or n_items >= len(self.items):
            return self
        per = max(1, n_items // len(DIMENSIONS))
        rank = {item.id: sum(o.dimension == item.dimension for o in self.items[:k]) for k, item in
                enumerate(self.items)}
        return replace(self, items=tuple(i for i in self.items if rank[i.id] < per))

    def question(self, item: BfiItem, language: str) -> str:
        """InCharacter's self-report question for ``item`` in ``language`` (module doc)."""
        return (self.choose_prefix[language].replace("<statement>", item.text[language])
                + JOIN[language] + self.choice_instruction[language])


@dataclass(frozen=True)
class Label:
    score: float  # 1–5
    type: str  # H, L or X


@dataclass(frozen=True)
class Character:
    id: str
    name: str
    language: str
    framework: str  # ChatHaruhi or RoleLLM
    experimenter: str
    system_prompt: str | None
    dialogues: tuple[str, ...]
    labels: Mapping[str, Label]  # dimension → the annotators' label
    labels_pdb: Mapping[str, Label]
    missing: tuple[str, ...]  # the parts the data lacks (system_prompt, dialogues)
    missing_note: str | None

    @property
    def has_agent(self) -> bool:
        return self.system_prompt is not None and bool(self.dialogues)


def load_bfi(path: Path | None = None) -> Bfi:
    raw = json.loads((path or rpa_dir() / "bfi.json").read_text(encoding="utf-8"))
    prompts = raw["incharacter_prompts"]
    items = tuple(BfiItem(int(i["id"]), i["dimension"], bool(i["reverse_keyed"]),
                          MappingProxyType({lang: i[f"text_{lang}"] for lang in LANGUAGES}))
                  for i in raw["items"])
    return Bfi(items, MappingProxyType(dict(prompts["rpa_choose_prefix"])),
               MappingProxyType(dict(prompts["rpa_choice_instruction"])))


def _labels(raw: Mapping[str, Any]) -> Mapping[str, Label]:
    return MappingProxyType({d: Label(float(raw[d]["score"]), raw[d]["type"]) for d in DIMENSIONS})


def load_characters(path: Path | None = None) -> tuple[Character, ...]:
    lines = (path or rpa_dir() / "characters.jsonl").read_text(encoding="utf-8").splitlines()
    out = []
    for line in filter(str.strip, lines):
        c = json.loads(line)
        out.append(Character(c["id"], c["name"], c["language"], c["source_framework"], c["experimenter"],
                             c.get("system_prompt"), tuple(d["text"] for d in c.get("dialogues") or ()),
                             _labels(c["bfi_labels"]), _labels(c["bfi_labels_pdb"]), tuple(c.get("missing") or ()),
                             c.get("missing_note")))
    return tuple(out)


def agent_ids(path: Path | None = None) -> list[str]:
    """The ids of the characters with an agent (none when the data is absent)."""
    try:
        return [c.id for c in load_characters(path) if c.has_agent]
    except FileNotFoundError:
        return []


# ---------------------------------------------------------------- the agent's messages
def scenes(character: Character, scene_chars: int) -> str:
    """The scenes message: whole snippets in file order within ``scene_chars`` (module doc)."""
    kept: list[str] = []
    for text in character.dialogues:
        if len(SCENE_SEPARATOR.join([*kept, text])) > scene_chars:
            break
        kept.append(text)
    return SCENES_HEADER + SCENE_SEPARATOR.join(kept)


def query(character: Character, item: BfiItem, bfi: Bfi) -> str:
    return f"{character.experimenter}:「{bfi.question(item, character.language)}」"


def messages(character: Character, item: BfiItem, bfi: Bfi, scene_chars: int,
             history: Sequence[tuple[str, str]] = ()) -> list[dict]:
    """System prompt, scenes, the earlier (query, reply) pairs, the query (module doc)."""
    if not character.has_agent:
        raise ValueError(f"{character.id} has no agent: {character.missing_note}")
    return [{"role": "system", "content": character.system_prompt},
            {"role": "user", "content": scenes(character, scene_chars)},
            *history_messages(list(history), None),
            {"role": "user", "content": query(character, item, bfi)}]


# ---------------------------------------------------------------- replies and scores
def parse_choice(text: str | None) -> int | None:
    """The first digit 1–5 in ``text`` (ASCII or full-width), else None."""
    found = _CHOICE.search(text or "")
    return None if found is None else int(found.group().translate({0xFF11 + k: str(k + 1) for k in range(5)}))


def item_score(choice: int | None, reverse_keyed: bool) -> int:
    """InCharacter's item score: a missing choice is 3; reverse-keyed 6 − c."""
    c = MIDPOINT if choice is None else choice
    return 6 - c if reverse_keyed else c


def trait_type(score: float) -> str:
    return "H" if score > MIDPOINT else "L"


@dataclass(frozen=True)
class RpaAnswer:
    """One item of one run of one character in one condition: a row of the answers frame."""

    character: str
    condition: str
    run: int  # 1-based
    position: int  # 1-based, asking order
    item: int
    dimension: str
    reverse_keyed: bool
    question: str | None  # the query sent (None: Random)
    response: str | None
    choice: int | None  # parsed (Random: drawn)
    status: str  # ok | unparsable | error
    score: int  # the item score (a missing choice as 3)
    n_history: int
    error_type: str | None = None
    request_key: str | None = None
    cached: bool = False

    def row(self) -> dict[str, Any]:
        return {"run_id": f"{self.condition}/{self.character}/r{self.run}", **{
            k: getattr(self, k) for k in self.__dataclass_fields__}, "trait": LETTER[self.dimension]}


def answer_frame(answers: Sequence[RpaAnswer]) -> pd.DataFrame:
    return pd.DataFrame([a.row() for a in answers])


def random_answers(characters: Sequence[Character], bfi: Bfi, n_runs: int, seed: int) -> list[RpaAnswer]:
    """CAPE's Random baseline: uniform choices 1–5, seeded per character and run."""
    out = []
    for c in characters:
        for r in range(1, n_runs + 1):
            drawn = rng_for(seed, "cape-rpa-random", c.id, r).integers(1, 6, size=len(bfi.items))
            out += [RpaAnswer(c.id, RANDOM, r, t + 1, item.id, item.dimension, item.reverse_keyed, None, None,
                              int(choice), OK, item_score(int(choice), item.reverse_keyed), 0)
                    for t, (item, choice) in enumerate(zip(bfi.items, drawn))]
    return out


def administer_rpa(characters: Sequence[Character], bfi: Bfi, model: str, *, n_runs: int, scene_chars: int,
                   params: Mapping[str, Any], conditions: Sequence[str] = (RPA, RPA_PLUS),
                   cache: CallCache | None = None, transport: Transport = Transport(), progress: bool = False,
                   name: str = "cape:rpa") -> list[RpaAnswer]:
    """Ask every character's agent the items ``n_runs`` times, in each condition: RPA in one
    round; RPA++ one round per item (each reply joins the next request's history). A run is
    the request's ``replicate`` (run r: r − 1), so runs are distinct requests; the condition
    is the request's ``tag``, so RPA++'s first item (no history yet, the same messages as
    RPA's) is a call of its own, not RPA's answer read from the cache."""
    conversations = [(c, r) for c in characters for r in range(1, n_runs + 1)]
    out: list[RpaAnswer] = []

    def ask(condition, asked, histories, round_name):
        requests = [ModelRequest(model, messages(c, bfi.items[t], bfi, scene_chars, histories[(c.id, r)]),
                                 dict(params), r - 1, tag={"rpa": condition}) for c, r, t in asked]
        result = generate(requests, cache=cache, transport=transport, progress=progress, name=round_name)
        answers = []
        for k, ((c, r, t), req) in enumerate(zip(asked, requests)):
            record, item = result.records[k], bfi.items[t]
            text = record.response_text if record.ok else None
            choice = parse_choice(text)
            answers.append(RpaAnswer(c.id, condition, r, t + 1, item.id, item.dimension, item.reverse_keyed,
                                     req.messages[-1]["content"], text, choice,
                                     ERROR if text is None else OK if choice is not None else UNPARSABLE,
                                     item_score(choice, item.reverse_keyed), len(histories[(c.id, r)]),
                                     record.error_type, record.key, result.cached[k]))
        return answers

    for condition in conditions:
        histories: dict[tuple[str, int], list[tuple[str, str]]] = {(c.id, r): [] for c, r in conversations}
        if condition == RPA:
            out += ask(condition, [(c, r, t) for c, r in conversations for t in range(len(bfi.items))], histories,
                       f"{name}:context_free")
        elif condition == RPA_PLUS:
            for t in range(len(bfi.items)):
                step = ask(condition, [(c, r, t) for c, r in conversations], histories, f"{name}:step{t + 1}")
                for a in step:
                    if a.response is not None:  # a failed call has no reply to show
                        histories[(a.character, a.run)].append((a.question, a.response))
                out += step
        else:
            raise ValueError(f"condition must be {RPA!r} or {RPA_PLUS!r}, got {condition!r}")
    return out


# ---------------------------------------------------------------- scoring and alignment
def dimension_scores(answers: pd.DataFrame) -> pd.DataFrame:
    """S_d per (condition, character, run): the mean item score per dimension (columns in
    OCEAN order)."""
    table = answers.pivot_table(index=["condition", "character", "run"], columns="dimension", values="score",
                                aggfunc="mean")
    return table.reindex(columns=list(DIMENSIONS))


def skipped(character: Character, dimension: str, rule: str) -> bool:
    """Whether the (character, dimension) pair is left out under the ambiguity ``rule``."""
    if rule not in AMBIGUITY:
        raise ValueError(f"ambiguity rule must be one of {AMBIGUITY}, got {rule!r}")
    labels = character.labels_pdb if rule == "pdb" else character.labels
    return labels[dimension].type == "X"


def n_skipped(characters: Sequence[Character], rule: str) -> int:
    return sum(skipped(c, d, rule) for c in characters for d in DIMENSIONS)


def alignment(answers: pd.DataFrame, characters: Sequence[Character], rule: str) -> pd.DataFrame:
    """One row per (condition, character, dimension) not skipped: the mean over runs of
    S_d (``predicted``), the label, whether the types agree, and MAE = |S_d − label| / 4."""
    by_id = {c.id: c for c in characters}
    mean = dimension_scores(answers).groupby(level=["condition", "character"]).mean()
    rows = []
    for (condition, cid), scores in mean.iterrows():
        c = by_id[cid]
        for d in DIMENSIONS:
            if skipped(c, d, rule):
                continue
            label = c.labels[d]
            rows.append({"condition": condition, "character": cid, "dimension": d, "predicted": scores[d],
                         "label": label.score, "label_type": label.type,
                         "correct": trait_type(scores[d]) == label.type,
                         "mae": abs(scores[d] - label.score) / 4})
    return pd.DataFrame(rows, columns=["condition", "character", "dimension", "predicted", "label", "label_type",
                                       "correct", "mae"])


def ocean_alignment(pairs: pd.DataFrame) -> float:
    """OA of one character in one condition: OC of (human labels, LLM S_d) over its pairs
    (rows of :func:`alignment`); NaN with fewer than two dimensions."""
    if len(pairs) < 2:
        return float("nan")
    return ocean_consistency(np.vstack([pairs["label"].to_numpy(float), pairs["predicted"].to_numpy(float)])).value


def character_rows(answers: pd.DataFrame, characters: Sequence[Character], rule: str) -> pd.DataFrame:
    """Per (condition, character): OA, MAE and accuracy over its pairs, and TAR, ED, TC, OC
    over its runs (NaN where not estimable: one run, fewer than two pairs)."""
    pairs = alignment(answers, characters, rule)
    rows = []
    for (condition, cid), group in answers.groupby(["condition", "character"], sort=False):
        mine = pairs[(pairs["condition"] == condition) & (pairs["character"] == cid)]
        run_ids = list(dict.fromkeys(group.sort_values("run")["run_id"]))
        metrics = consistency_row(group, run_ids) if len(run_ids) >= 2 else \
            {m: float("nan") for m in ("tar", "ed", "tc", "oc")}
        rows.append({"condition": condition, "character": cid, "oa": ocean_alignment(mine),
                     "mae": mine["mae"].mean() if len(mine) else float("nan"),
                     "accuracy": mine["correct"].mean() if len(mine) else float("nan"), "n_pairs": len(mine),
                     "n_runs": len(run_ids), **{m: metrics[m] for m in ("tar", "ed", "tc", "oc")}})
    return pd.DataFrame(rows)


def table2(answers: pd.DataFrame, characters: Sequence[Character], rule: str) -> pd.DataFrame:
    """One row per condition (Random, RPA, RPA++): the means over characters of OA, MAE,
    accuracy, TAR, ED, TC, OC (OA, MAE, accuracy, TAR, TC, OC in %: MAE as % of the 1–5
    span), the pairs compared and the characters; a ``note`` says why a value is missing."""
    per = character_rows(answers, characters, rule)
    rows = []
    for condition in [c for c in CONDITIONS if c in set(per["condition"])]:
        mine = per[per["condition"] == condition]
        row = {"condition": condition, "n_pairs": int(mine["n_pairs"].sum()), "n_characters": len(mine)}
        for m in ("oa", "mae", "accuracy", "tar", "ed", "tc", "oc"):
            value = mine[m].mean() if mine[m].notna().any() else float("nan")
            row[m] = value if m == "ed" else 100 * value
        why = []
        if mine["n_runs"].max() < 2:
            why.append("TAR, ED, TC and OC compare two or more runs, and this condition has one")
        if row["n_pairs"] == 0:
            why.append("every (character, dimension) pair is skipped as ambiguous")
        elif np.isnan(row["oa"]):
            why.append("OA needs two or more unskipped dimensions of a character")
        row["note"] = "not estimable: " + "; ".join(why) if why else ""
        rows.append(row)
    return pd.DataFrame(rows)
