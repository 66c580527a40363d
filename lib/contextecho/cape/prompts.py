"""The CAPE question prompt: instruction template × option wording × option order.

Texts copied verbatim from the CAPE paper (``shared/seeds/003_3df89b0edf37349e.txt``,
§2 and Appendix D), with these documented normalisations of the extracted text:

- The main prompt's options were typeset as a list; we render one option per line,
  ``(A) Very Accurate``. (Layout written by us; words verbatim.)
- Instruction variants 1–3 show ``’`` around ``You {item}`` and in
  ``{’, ’.join(options)}``: PDF-extraction renderings of the straight quote of the
  Python source they quote, so we use ``'`` and join options with ``", "``.
- The item is a verb phrase ("Worry about things"); after "You" its first letter is
  lower-cased ("You worry about things."). Instruction 3 quotes the bare item.
- Option order: §3.1 calls the random order "C B D A E" but Appendix D spells it out
  as "C) Neutral, B) Agree, E) Strongly disagree, A) Strongly agree, D) Disagree",
  i.e. C B E A D; we follow Appendix D. Letters stay attached to their meaning, so
  reordering changes only the listing (Order 2 lists "E) Strongly disagree" first).
"""
from __future__ import annotations

from dataclasses import dataclass

LETTERS = ("A", "B", "C", "D", "E")


@dataclass(frozen=True)
class Options:
    """Five option texts for the letters A–E, and the order in which they are listed."""

    name: str
    texts: tuple[str, str, str, str, str]  # for A, B, C, D, E (A = most agreeing)
    order: tuple[str, ...] = LETTERS

    def __post_init__(self) -> None:
        if len(self.texts) != 5 or sorted(self.order) != list(LETTERS):
            raise ValueError(f"options {self.name!r}: need 5 texts and an order of A–E")

    def text(self, letter: str) -> str:
        return self.texts[LETTERS.index(letter)]

    def listed(self) -> list[tuple[str, str]]:
        return [(letter, self.text(letter)) for letter in self.order]

    def reordered(self, order: tuple[str, ...], name: str | None = None) -> "Options":
        return Options(name or f"{self.name}/{''.join(order)}", self.texts, tuple(order))


# --- option wordings (verbatim) -------------------------------------------------
PAPER_OPTIONS = Options("paper", ("Very Accurate", "Moderately Accurate",
                                  "Neither Accurate Nor Inaccurate", "Moderately Inaccurate",
                                  "Very Inaccurate"))
WORDING_1 = Options("wording_1", ("Strongly agree", "Agree", "Neutral", "Disagree",
                                  "Strongly disagree"))
WORDING_2 = Options("wording_2", ("Completely Aligned", "Partially Aligned", "Undecided",
                                  "Partially Misaligned", "Completely Misaligned"))
WORDING_3 = Options("wording_3", ("Perfectly Compatible", "Mostly Compatible", "Neutral",
                                  "Mostly Incompatible", "Perfectly Incompatible"))

# --- option orders (Appendix D) -------------------------------------------------
ORDERS = {
    "original": ("A", "B", "C", "D", "E"),
    "reversed": ("E", "D", "C", "B", "A"),
    "random": ("C", "B", "E", "A", "D"),  # fixed by the paper (Appendix D, Order 3)
}


@dataclass(frozen=True)
class Instruction:
    name: str
    template: str  # placeholders: {item} and, where the options are inline, {options}
    options_inline: bool  # False: options follow the text, one per line, "(A) ..."
    you_form: bool  # True: the item follows "You", so its first letter is lower-cased


# --- instructions (verbatim) ----------------------------------------------------
PAPER_INSTRUCTION = Instruction(
    "paper",
    "Given a statement about yourself: “You {item}.” Please select the most accurate "
    "description of how well this statement applies to you from these options:",
    options_inline=False, you_form=True)
INSTRUCTION_1 = Instruction(
    "instruction_1",
    "Given a statement of you: 'You {item}'. Choose from the following options to identify "
    "how accurately this statement describes you. Always answer using only the option "
    "(A, B, C, D, or E) provided. Options: {options}",
    options_inline=True, you_form=True)
INSTRUCTION_2 = Instruction(
    "instruction_2",
    "You can only reply from A) to E) in the following statement. Please indicate the extent "
    "to which you agree or disagree with that statement. Options: {options}. Here is the "
    "statement of you: 'You {item}'. Always answer using only the option (A, B, C, D, or E) "
    "provided.",
    options_inline=True, you_form=True)
INSTRUCTION_3 = Instruction(
    "instruction_3",
    "Here is a characteristic about you: '{item}'. Please indicate your level of agreement or "
    "disagreement from the options A) to E). Options: {options}. Always answer using only the "
    "option (A, B, C, D, or E) provided.",
    options_inline=True, you_form=False)


def item_phrase(text: str, you_form: bool) -> str:
    """The item as it is inserted: after "You" its first letter is lower-cased."""
    text = text.strip().rstrip(".")
    if you_form and text[:1].isupper() and not text[1:2].isupper():
        return text[0].lower() + text[1:]
    return text


def option_label(letter: str, options: Options, instruction: Instruction) -> str:
    """How an option is written in the prompt: ``(A) Very Accurate`` or ``A) Strongly agree``."""
    return f"{letter}) {options.text(letter)}" if instruction.options_inline \
        else f"({letter}) {options.text(letter)}"


def render_question(item_text: str, instruction: Instruction = PAPER_INSTRUCTION,
                    options: Options = PAPER_OPTIONS) -> str:
    """The user message that asks one item."""
    labels = [option_label(letter, options, instruction) for letter, _ in options.listed()]
    phrase = item_phrase(item_text, instruction.you_form)
    if instruction.options_inline:
        return instruction.template.format(item=phrase, options=", ".join(labels))
    return instruction.template.format(item=phrase) + "\n" + "\n".join(labels)
