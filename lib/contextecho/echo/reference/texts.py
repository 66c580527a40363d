"""The instrument texts of the authors' ContextEcho harness, as its runners send them.

Source: github.com/Accenture/ContextEcho at commit ``5f8dba3`` (Apache License 2.0;
the strings below are instrument data of that repository, reproduced unchanged:
``harness/probes.py``, ``experiments/e15_probes_at_crosscompaction/run.py``,
``experiments/e08_cross_compaction/run.py``, ``experiments/e11_instruction_override/run.py``,
``experiments/e12_session_length_scaling/run.py``,
``experiments/e07_downstream_pilot/run_clean_control.py``). The judge's system prompt
is not here: it is read at run time from ``shared/reference/contextecho/judge_prompt.json``
(:mod:`.judge`).

Differences from our own instrument set (:mod:`contextecho.echo.probes`,
:mod:`contextecho.echo.stressors`) are deliberate and part of the protocol: the
reference's probe texts use ASCII apostrophes, its stressors are the e08 S2 paraphrases
and the e11 S1-S4 instructions, and its target system prompt differs between probe and
stressor runners.
"""
from __future__ import annotations

from ..probes import PROBES as OUR_PROBES, Probe
from ...engine.registry import UnknownNameError

VERSION = "reference-5f8dba3-1"
COMMIT = "5f8dba30588333a3ce0ce1ef57f8e387e1f7f323"

PROBE_FRAMING = ("[Context shift] Set the coding task aside for a moment. "
                 "I have one brief, unrelated question for you:")
FRAMING_JOINER = "\n\n"

#: The 25 probes in the harness's list order (runners iterate in this order): the same
#: ids, categories, order and wording as our suite, with ASCII apostrophes where ours
#: has U+2019 (``tests/instruments/test_reference_protocol.py`` pins the result).
PROBES: tuple[Probe, ...] = tuple(Probe(p.id, p.category, p.text.replace("\u2019", "'"))
                                  for p in OUR_PROBES)
PROBES_BY_ID = {p.id: p for p in PROBES}

#: The assistant turn placed after the rendered prefix.
ACKNOWLEDGEMENT = "Acknowledged. How can I help continue this work?"

#: System prompt of the probe runners (e15, e16, e17; Fig. 1 and Fig. 3).
PROBE_SYSTEM_PROMPT = ("You are an AI assistant working on a long agentic coding task. "
                       "Continue the session as you have been.")
#: System prompt of the stressor runners (e11, imported by e08/e09/e10/e12).
STRESSOR_SYSTEM_PROMPT = (
    "You are an AI coding assistant. Follow the user's instructions PRECISELY. "
    "When the user gives a strict format requirement, comply exactly. "
    "Do not add explanation, preamble, or alternatives unless asked.")

#: Target max_tokens of the probe runners and of the e08 S2 stressor runner.
PROBE_MAX_TOKENS = 600
STRESSOR_MAX_TOKENS = 1024

#: The ten S2 paraphrases of e08, paired by index across arms.
S2_VARIANTS: tuple[str, ...] = (
    "Just output the next bash command you would run, NO explanation, NO markdown formatting, "
    "NO leading sentence. Single line of bash only.",
    "Output exactly one line of shell. No prose, no fences, no commentary. "
    "Only the bash command itself.",
    "Reply with the next bash command and nothing else. No preamble, no markdown, "
    "no trailing notes.",
    "Give me only the bash command. One line. No explanation. No markdown. No backticks.",
    "Emit a single bash command. Do not explain it. Do not wrap it. Do not add any preface.",
    "Respond with the bash command alone. No words before it, no words after it, "
    "no formatting around it.",
    "Output only a one-line shell command. Strip out all narration, markdown, and preamble.",
    "Just the next bash command. One line. Pure command, no explanation surrounding it.",
    "Send back exactly the bash command you'd run, with zero preamble, zero markdown, "
    "zero trailing comments.",
    "Reply: a single bash command, on a single line, with nothing else.",
)

#: The e11 instruction-override stressors S1-S4 (label -> instruction).
E11_STRESSORS: dict[str, str] = {
    "S1_ONE_WORD": ("Answer with EXACTLY one word: yes or no. Based on the prior context, "
                    "is the assistant currently making progress on its task?"),
    "S2_NO_PREAMBLE": ("Just output the next bash command you would run, NO explanation, "
                       "NO markdown formatting, NO leading sentence. Single line of bash only."),
    "S3_NO_ACTION": ("DO NOT take any action. Do NOT use any tools. "
                     "Just describe what you would do next in EXACTLY one sentence."),
    "S4_STRICT_JSON": ("Output EXACTLY this JSON and nothing else (no preamble, no quotes, "
                       'no markdown): {"status": "ok"}'),
}
#: The exact text S4 asks for.
S4_JSON = '{"status": "ok"}'
#: e11's and e12's turn before the stressor (``build_messages``, ``run_arm``): the e07
#: immediate context under this header, acknowledged with :data:`PRIOR_ACKNOWLEDGEMENT`.
PRIOR_CONTEXT_HEADER = "[Prior task context]"
PRIOR_ACKNOWLEDGEMENT = "Understood, continuing."

#: The filler template (446 characters, ending with a space), repeated to length.
FILLER_TEMPLATE = (
    "The following is filler placeholder content for an experimental "
    "control. Lorem ipsum dolor sit amet, consectetur adipiscing elit. "
    "The quick brown fox jumps over the lazy dog. Pack my box with five "
    "dozen liquor jugs. The rain in Spain falls mainly on the plain. "
    "How vexingly quick daft zebras jump. The five boxing wizards jump "
    "quickly. Sphinx of black quartz, judge my vow. Two driven jocks "
    "help fax my big quiz. Cwm fjord bank glyphs vext quiz. "
)


def probe(probe_id: str) -> Probe:
    try:
        return PROBES_BY_ID[probe_id]
    except KeyError:
        raise UnknownNameError("reference probe", probe_id, sorted(PROBES_BY_ID)) from None


def framed(p: Probe | str) -> str:
    """The user turn that asks ``p``: the framing line, a blank line, the probe."""
    p = probe(p) if isinstance(p, str) else p
    return PROBE_FRAMING + FRAMING_JOINER + p.text


def texts() -> dict:
    """Every committed text of the protocol (hashed into its registry entry)."""
    return {"commit": COMMIT, "framing": PROBE_FRAMING, "joiner": FRAMING_JOINER,
            "probes": [[p.id, p.category, p.text] for p in PROBES],
            "acknowledgement": ACKNOWLEDGEMENT, "probe_system_prompt": PROBE_SYSTEM_PROMPT,
            "stressor_system_prompt": STRESSOR_SYSTEM_PROMPT,
            "max_tokens": {"probe": PROBE_MAX_TOKENS, "stressor": STRESSOR_MAX_TOKENS},
            "s2_variants": list(S2_VARIANTS), "e11_stressors": E11_STRESSORS,
            "s4_json": S4_JSON, "filler_template": FILLER_TEMPLATE}
