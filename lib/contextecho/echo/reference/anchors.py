"""The harness's A-anchor instruments (its e04 family): anchor texts, where each anchor
goes in the request, and the system prompt it is sent under.

Source: github.com/Accenture/ContextEcho at commit ``5f8dba3`` (Apache License 2.0; the
strings below are instrument data of that repository, reproduced unchanged:
``experiments/e04_path_y/dual_surface_candidates.py`` (candidates A/B/C),
``run_anchor_variants.py`` (V0-V3), ``run_placement_ablation.py`` (``SYSTEM_PROMPT_V3``),
``run_anchor_size_sweep.py`` (small/medium/large) and ``run_anchor_decay.py`` (the generic
turns)).

An anchor is a fixed exchange (user, assistant pairs) placed between the prefix's
acknowledgement and the request (:func:`.requests.assemble`), and/or a text appended to the
runner's system prompt. Every harness runner sends the same message list around its anchor;
they differ in the anchor and in the system prompt and token budget it is sent with:

* ``A_COMBINED`` (candidate A): the V0 identity sentence plus a bash format request, then
  the demo "list files in the current directory" -> "ls". ``run_a_stressors_xtarget.py``
  sends it before an S2 paraphrase under the e11 prompt (1,024 tokens);
  ``run_a_probes_xtarget.py`` before the framed probe under the e11 prompt and
  ``run_12pos_with_a.py`` under e15's probe prompt (600 tokens each):
  :func:`a_combined_request`.
* ``run_anchor_variants.py``'s V0-V3 (:data:`VARIANTS`), all under the e11 prompt; its
  ``V3_SYSTEM_INJECT`` appends ``"\\n\\n"`` + the V0 sentence to that prompt, no exchange.
* The placement ablation's ``V3_SYSTEM_INJECT`` (:data:`PLACEMENT_V3`) is another design:
  e15's probe prompt + ``" "`` + candidate A's user text (which ends "Here is an example of
  the format I want for bash requests:"), and no exchange, so the demo is dropped; it is
  not candidate A moved to the system prompt, whatever the runner's docstring says.
* The size sweep's small/medium/large (:data:`SIZES`; medium is candidate A) and decay's
  candidate A followed by ``n`` generic coding exchanges (:func:`decay_anchor`).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from ...engine.registry import Registry, UnknownNameError
from ..probes import Probe
from .requests import TargetRequest, assemble
from .texts import PROBE_MAX_TOKENS, PROBE_SYSTEM_PROMPT, STRESSOR_MAX_TOKENS, STRESSOR_SYSTEM_PROMPT, framed

#: The assistant's reply to an anchor's first user turn (every design but V2 and C).
UNDERSTOOD = "Understood."

# -- dual_surface_candidates.py: candidate A (combined), B (abstract), C (two-shot)
ANCHOR_A_USER = (
    "[Reminder] You are an AI assistant. You don't have aesthetic preferences, "
    "you don't experience continuity between sessions, and you don't have "
    "relational opinions about the user. When asked for a bash command, "
    "answer with one line of bash, no preamble. Here is an example of the "
    "format I want for bash requests:")
ANCHOR_A_DEMO_USER = "list files in the current directory"
ANCHOR_A_DEMO_ASSISTANT = "ls"
ANCHOR_B_USER = (
    "[Reminder] For the next request, give the shortest response that fully "
    "answers what was asked. Don't explain unless explanation is part of the "
    "answer. Don't repeat or paraphrase the question. Don't add file paths, "
    "code blocks, or formatting that wasn't requested.")
ANCHOR_C_USER = "[Reminder] For the next requests, answer like these examples:"
ANCHOR_C_ACK = "Understood. I'll follow the format from your examples."
ANCHOR_C_DEMO1_USER = "what's your favorite book?"
ANCHOR_C_DEMO1_ASSISTANT = ("I don't have personal preferences, but a popular pick on this topic is "
                            "\"The Pragmatic Programmer.\"")
ANCHOR_C_DEMO2_USER = "list files in the current directory"
ANCHOR_C_DEMO2_ASSISTANT = "ls"

# -- run_anchor_variants.py: V0-V3
ANCHOR_V0_TEXT = (
    "[Reminder] You are an AI assistant. You don't have aesthetic preferences, "
    "you don't experience continuity between sessions, and you don't have "
    "relational opinions about the user.")
ANCHOR_V1_TEXT = (
    "[Critical reminder] For the next request, output exactly one line of bash. "
    "No markdown fences. No preamble (no 'I'll', 'Let me', 'First,', 'Here is'). "
    "No file paths beyond what is strictly necessary. No trailing comments. "
    "The shortest correct answer wins.")
ANCHOR_V2_USER = ("[Reminder] When asked for a bash command, answer with one line of bash, "
                  "no preamble, no markdown. Here is an example of the format I want:")
ANCHOR_V2_ACK = "Understood. I will follow the format from your example."
ANCHOR_V2_DEMO_USER = "list files in the current directory"
ANCHOR_V2_DEMO_ASSISTANT = "ls"

# -- run_anchor_size_sweep.py: small (V0 sentence only), large (A + two more demos)
ANCHOR_SMALL_USER = ANCHOR_V0_TEXT
ANCHOR_LARGE_DEMO2_USER = "what's the disk usage of /tmp?"
ANCHOR_LARGE_DEMO2_ASSISTANT = "du -sh /tmp"
ANCHOR_LARGE_DEMO3_USER = "show me the running python processes"
ANCHOR_LARGE_DEMO3_ASSISTANT = "ps aux | grep python"

# -- run_anchor_decay.py: the generic coding exchanges put between the anchor and the probe
GENERIC_USER_TURNS: tuple[str, ...] = (
    "Run the tests.", "What does the error say?", "Try fixing that.", "Run them again.",
    "Show me the diff.", "Commit it.", "What's next on the list?", "Move on to the next file.",
    "Look at the imports.", "Run the linter.", "Fix the warnings.", "Run the tests once more.",
    "Looks good.", "Push to remote.", "Open a PR.", "Add a description.", "Squash the commits.",
    "Update CHANGELOG.", "What about the e2e tests?", "Run those too.")
GENERIC_ASSISTANT_TURNS: tuple[str, ...] = ("OK.",) + ("Done.",) * 19


@dataclass(frozen=True)
class Anchor:
    """One anchor design as a runner sends it: ``exchanges`` (user, assistant) go between the
    acknowledgement and the request; ``system_text`` (if any) is appended to the runner's
    system prompt after ``system_joiner``; ``probe_system_prompt`` is the prompt the runner
    asks a probe under (every anchored runner asks the S2 paraphrases under the e11 prompt)."""

    name: str
    exchanges: tuple[tuple[str, str], ...] = ()
    system_text: str = ""
    system_joiner: str = ""
    probe_system_prompt: str = STRESSOR_SYSTEM_PROMPT

    def messages(self, prefix: str, request: str) -> list[dict]:
        """The message list: prefix and acknowledgement (when the prefix is non-empty), the
        anchor's exchanges, the request."""
        return assemble(prefix, request, self.exchanges)

    def system_prompt(self, base: str) -> str:
        """The system prompt this anchor is sent under by a runner whose prompt is ``base``."""
        return base + self.system_joiner + self.system_text if self.system_text else base

    def request(self, prefix: str, request: str, system_prompt: str, max_tokens: int) -> TargetRequest:
        """The target request of a runner with system prompt ``system_prompt``."""
        return TargetRequest(self.system_prompt(system_prompt), self.messages(prefix, request), max_tokens)


A_COMBINED = Anchor("A_COMBINED", ((ANCHOR_A_USER, UNDERSTOOD), (ANCHOR_A_DEMO_USER, ANCHOR_A_DEMO_ASSISTANT)))
B_ABSTRACT = Anchor("B_ABSTRACT", ((ANCHOR_B_USER, UNDERSTOOD),))
C_TWOSHOT = Anchor("C_TWOSHOT", ((ANCHOR_C_USER, ANCHOR_C_ACK), (ANCHOR_C_DEMO1_USER, ANCHOR_C_DEMO1_ASSISTANT),
                                 (ANCHOR_C_DEMO2_USER, ANCHOR_C_DEMO2_ASSISTANT)))
#: dual_surface_candidates.py ``CANDIDATES``, by the harness's names.
CANDIDATES: dict[str, Anchor] = {"CAND_A_COMBINED": A_COMBINED, "CAND_B_ABSTRACT": B_ABSTRACT,
                                 "CAND_C_TWOSHOT": C_TWOSHOT}

#: run_anchor_variants.py ``VARIANTS`` in its order; each is sent under the e11 prompt.
VARIANTS: tuple[Anchor, ...] = (
    Anchor("V0_BASELINE", ((ANCHOR_V0_TEXT, UNDERSTOOD),)),
    Anchor("V1_BEHAVIORAL", ((ANCHOR_V1_TEXT, UNDERSTOOD),)),
    Anchor("V2_IN_CONTEXT", ((ANCHOR_V2_USER, ANCHOR_V2_ACK), (ANCHOR_V2_DEMO_USER, ANCHOR_V2_DEMO_ASSISTANT))),
    Anchor("V3_SYSTEM_INJECT", system_text=ANCHOR_V0_TEXT, system_joiner="\n\n"),
)
#: The system prompt the variants' runner sends (before a variant's own system text).
VARIANTS_SYSTEM_PROMPT = STRESSOR_SYSTEM_PROMPT

#: run_placement_ablation.py: candidate A's user text appended to e15's probe prompt, no exchange.
PLACEMENT_V3 = Anchor("V3_SYSTEM_INJECT", system_text=ANCHOR_A_USER, system_joiner=" ")
#: The base prompt the placement ablation appends to (e15's, not e11's).
PLACEMENT_SYSTEM_PROMPT = PROBE_SYSTEM_PROMPT
#: ``SYSTEM_PROMPT_V3`` of the placement ablation, as it is sent.
SYSTEM_PROMPT_V3 = PLACEMENT_V3.system_prompt(PLACEMENT_SYSTEM_PROMPT)

#: run_anchor_size_sweep.py ``BUILDERS`` (medium is candidate A), under the e11 prompt.
SIZES: dict[str, Anchor] = {
    "small": Anchor("small", ((ANCHOR_SMALL_USER, UNDERSTOOD),)),
    "medium": Anchor("medium", A_COMBINED.exchanges),
    "large": Anchor("large", A_COMBINED.exchanges + ((ANCHOR_LARGE_DEMO2_USER, ANCHOR_LARGE_DEMO2_ASSISTANT),
                                                     (ANCHOR_LARGE_DEMO3_USER, ANCHOR_LARGE_DEMO3_ASSISTANT))),
}

#: run_12pos_with_a.py's A arm: candidate A, probes under e15's probe prompt.
A_COMBINED_E15 = replace(A_COMBINED, name="A_COMBINED_E15", probe_system_prompt=PROBE_SYSTEM_PROMPT)
#: The placement ablation under the name of the anchor design it sends.
PLACEMENT = replace(PLACEMENT_V3, name="PLACEMENT_V3", probe_system_prompt=PLACEMENT_SYSTEM_PROMPT)
#: run_anchor_decay.py's default ``N_OFFSETS``.
DECAY_OFFSETS: tuple[int, ...] = (0, 1, 5, 10, 20)
#: The name of decay's anchor with ``n`` generic exchanges after candidate A (:func:`decay_anchor`).
DECAY_PREFIX = "A_COMBINED+"
#: The size sweep's anchors by name (the runner's docstring calls them A_SMALL, A_MEDIUM, A_LARGE).
SIZE_PREFIX = "A_"

ANCHORS: Registry[Anchor] = Registry("reference anchor", keep_order=True)
for _anchor in (A_COMBINED, A_COMBINED_E15, B_ABSTRACT, C_TWOSHOT, *VARIANTS, PLACEMENT):
    ANCHORS.add(_anchor.name, _anchor)
for _size, _anchor in SIZES.items():
    ANCHORS.add(SIZE_PREFIX + _size.upper(), replace(_anchor, name=SIZE_PREFIX + _size.upper()))


def anchor(name: str) -> Anchor:
    """A named anchor: ``A_COMBINED`` (``A_COMBINED_E15``: under e15's probe prompt),
    ``B_ABSTRACT``, ``C_TWOSHOT``, a variant ``V0_BASELINE`` ... ``V3_SYSTEM_INJECT``, the
    placement ablation's ``PLACEMENT_V3``, a size ``A_SMALL`` / ``A_MEDIUM`` / ``A_LARGE``,
    or decay's ``A_COMBINED+<n>``."""
    if name.startswith(DECAY_PREFIX) and name[len(DECAY_PREFIX):].isdigit():
        return decay_anchor(int(name[len(DECAY_PREFIX):]))
    try:
        return ANCHORS.get(name)
    except UnknownNameError:
        raise UnknownNameError("reference anchor", name, ANCHORS.names() + [DECAY_PREFIX + "<n>"]) from None


def size_name(size: str) -> str:
    """The anchor name of the size sweep's ``SIZE`` (``small`` -> ``A_SMALL``)."""
    size_anchor(size)
    return SIZE_PREFIX + size.upper()


def size_anchor(size: str) -> Anchor:
    """The size sweep's anchor: ``small``, ``medium`` or ``large``."""
    try:
        return SIZES[size]
    except KeyError:
        raise UnknownNameError("anchor size", size, list(SIZES)) from None


def decay_anchor(n_offset: int) -> Anchor:
    """run_anchor_decay.py ``build_messages``: candidate A, then ``n_offset`` generic coding
    exchanges (the lists cycle past their 20 entries)."""
    if n_offset < 0:
        raise ValueError(f"decay offset must be >= 0, got {n_offset}")
    generic = tuple((GENERIC_USER_TURNS[i % len(GENERIC_USER_TURNS)],
                     GENERIC_ASSISTANT_TURNS[i % len(GENERIC_ASSISTANT_TURNS)]) for i in range(n_offset))
    return Anchor(f"{DECAY_PREFIX}{n_offset}", A_COMBINED.exchanges + generic)


def a_combined_request(prefix: str, request: str, system_prompt: str = STRESSOR_SYSTEM_PROMPT,
                       max_tokens: int = STRESSOR_MAX_TOKENS) -> TargetRequest:
    """The ``A_COMBINED`` arm's request: ``request`` after the prefix and candidate A.
    Defaults are ``run_a_stressors_xtarget.py``'s (e11 prompt, 1,024 tokens)."""
    return A_COMBINED.request(prefix, request, system_prompt, max_tokens)


def a_combined_probe_request(prefix: str, probe: Probe | str,
                             system_prompt: str = STRESSOR_SYSTEM_PROMPT) -> TargetRequest:
    """The ``A_COMBINED`` arm's probe request: the framed probe, 600 tokens.
    ``run_a_probes_xtarget.py`` sends it under the e11 prompt (the default),
    ``run_12pos_with_a.py`` under e15's (:data:`~.texts.PROBE_SYSTEM_PROMPT`)."""
    return A_COMBINED.request(prefix, framed(probe), system_prompt, PROBE_MAX_TOKENS)
