import json

import pytest

from contextecho.anchor.persona import CODING_ASSISTANT, PersonaCardError, card_from_dict, load_card


def test_card_round_trips_through_anchor_layout(tmp_path):
    path = tmp_path / "persona_card.json"
    path.write_text(json.dumps(CODING_ASSISTANT.to_dict()))
    card = load_card(path)
    assert card == CODING_ASSISTANT
    assert card.sha256 == CODING_ASSISTANT.sha256


def test_system_prompt_lists_every_trait():
    text = CODING_ASSISTANT.system_prompt()
    for part in CODING_ASSISTANT.style + CODING_ASSISTANT.values + CODING_ASSISTANT.boundaries:
        assert f"- {part}" in text
    assert text.startswith("You are Forge, a careful software-engineering assistant")


def test_a_changed_card_changes_its_hash():
    other = card_from_dict({**CODING_ASSISTANT.to_dict(), "mutable_seed": {"active_task": "other"}})
    assert other.sha256 != CODING_ASSISTANT.sha256


@pytest.mark.parametrize("text, message", [
    ("{not json", r"persona_card.json:1: not JSON"),
    ('{"core": {"role": "x", "style": ["a"], "values": ["b"]}}', "lacks boundaries"),
    ('{"core": {"role": "x", "style": [], "values": ["b"], "boundaries": ["c"]}}', "style: expected"),
    ('[1, 2]', "is a JSON object"),
])
def test_bad_cards_name_the_file_and_the_problem(tmp_path, text, message):
    path = tmp_path / "persona_card.json"
    path.write_text(text)
    with pytest.raises(PersonaCardError, match=message):
        load_card(path)
