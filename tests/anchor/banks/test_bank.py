import hashlib
import json
import shutil
from pathlib import Path

import pytest

from contextecho.anchor.banks.bank import FILES, bank_dirs, load_bank
from contextecho.anchor.banks.bank import BankError

FIXTURE = Path(__file__).parents[2] / "fixtures" / "anchor_bank" / "ca_forge_tidyfeed__updated"


@pytest.fixture
def bank_copy(tmp_path):
    """A writable copy of the fixture bank."""
    return Path(shutil.copytree(FIXTURE, tmp_path / FIXTURE.name))


def test_fixture_bank_loads_with_aliases_resolved():
    bank = load_bank(FIXTURE)
    assert bank.bank_id == FIXTURE.name and bank.card.name == "Forge"
    assert bank.session_ids == (1, 2, 3, 4) and len(bank.turns) == 21
    assert [(t.session_id, t.turn) for t in bank.turns] == sorted((t.session_id, t.turn) for t in bank.turns)
    by_id = {i.item_id: i for i in bank.items}
    assert len(by_id) == 7 and len({i.family for i in bank.items}) == 7
    assert by_id["ca_forge-to-01"].letter == "A"  # "answer": "A"
    assert by_id["ca_forge-ue-01"].answer == 2  # "answer_index": 2
    assert by_id["ca_forge-pu-01"].letter == "B"  # "gold": "b"
    assert by_id["ca_forge-ce-01"].stem.startswith("Which commitment")  # "question" for stem
    assert bank.file_sha256 == {n: hashlib.sha256((FIXTURE / n).read_bytes()).hexdigest() for n in FILES}


def test_file_order_and_blank_lines_do_not_matter(bank_copy):
    path = bank_copy / "transcript.jsonl"
    lines = path.read_text().splitlines()
    path.write_text("\n".join(lines[::-1]) + "\n\n  \n")
    assert load_bank(bank_copy).turns == load_bank(FIXTURE).turns


def test_user_profile_is_never_read(bank_copy):
    (bank_copy / "user_profile.json").write_text("{ not even JSON")
    bank = load_bank(bank_copy)
    assert set(bank.file_sha256) == set(FILES)


def _replace_line(path: Path, number: int, row) -> None:
    lines = path.read_text().splitlines()
    lines[number - 1] = row if isinstance(row, str) else json.dumps(row)
    path.write_text("\n".join(lines) + "\n")


def _item(**changes):
    row = {"item_id": "x-1", "family": "T-ORD", "stem": "Which came first?",
           "options": ["a", "b", "c", "d"], "correct_index": 0, "source": {"session_id": 2}}
    row.update(changes)
    return {k: v for k, v in row.items() if v is not None}


TRANSCRIPT_ERRORS = [
    ("{not json", "transcript.jsonl:3: not JSON"),
    ("[1, 2]", "transcript.jsonl:3: expected a JSON object"),
    ({"session_id": "1", "turn": 3, "role": "user", "content": "x"}, "transcript.jsonl:3: 'session_id' must"),
    ({"session_id": 1, "turn": True, "role": "user", "content": "x"}, "transcript.jsonl:3: 'turn' must"),
    ({"session_id": 1, "turn": 3, "role": "system", "content": "x"}, "transcript.jsonl:3: role must"),
    ({"session_id": 1, "turn": 3, "role": "user", "content": None}, "transcript.jsonl:3: 'content' must"),
    ({"session_id": 1, "turn": 1, "role": "user", "content": "x"}, "transcript.jsonl:3: session 1 turn 1 already "
                                                                   "given at .*transcript.jsonl:1"),
]

ITEM_ERRORS = [
    (_item(options=["a", "b", "c"]), "'options' must be 4"),
    (_item(options=["a", "b", "c", "d", "e"]), "'options' must be 4"),
    (_item(options=["a", "b", "b", "d"]), "repeat an option"),
    (_item(correct_index=4), "'correct_index' must be an index 0-3"),
    (_item(correct_index=-1), "'correct_index' must be an index 0-3"),
    (_item(correct_index=None, answer="E"), "'answer' must be an index 0-3 or a letter A-D"),
    (_item(correct_index=None, gold=True), "'gold' must be"),
    (_item(correct_index=None), "missing 'correct_index'"),
    (_item(answer="C"), "correct_index, answer disagree"),
    (_item(source={"session_id": 9}), "source session 9 is not in the transcript"),
    (_item(source=2), "'source' must be an object"),
    (_item(source={"session": 2}), "source: 'session_id' must"),
    (_item(family=None), "'family' must"),
    (_item(stem=" "), "'stem' must"),
    (_item(stem=None), "missing 'stem'"),
    (_item(question="Another stem?"), "stem, question disagree"),
    (_item(item_id="ca_forge-pv-01"), "duplicate item_id 'ca_forge-pv-01' \\(first at .*items.jsonl:1\\)"),
    (_item(item_id=None), "'item_id' must"),
    ("{}{}", "not JSON"),
]


@pytest.mark.parametrize("row, message", TRANSCRIPT_ERRORS)
def test_bad_transcript_lines_name_file_and_line(bank_copy, row, message):
    _replace_line(bank_copy / "transcript.jsonl", 3, row)
    with pytest.raises(BankError, match=message):
        load_bank(bank_copy)


@pytest.mark.parametrize("row, message", ITEM_ERRORS)
def test_bad_item_lines_name_file_and_line(bank_copy, row, message):
    _replace_line(bank_copy / "items.jsonl", 2, row)
    with pytest.raises(BankError, match=f"items.jsonl:2: .*{message}"):
        load_bank(bank_copy)


def test_agreeing_aliases_are_accepted(bank_copy):
    _replace_line(bank_copy / "items.jsonl", 2, _item(answer="A", question="Which came first?"))
    assert load_bank(bank_copy).items[1].answer == 0


@pytest.mark.parametrize("name, text, message", [
    ("items.jsonl", "", "items.jsonl: no items"),
    ("transcript.jsonl", "\n", "transcript.jsonl: no turns"),
    ("persona_card.json", '{"core": {"role": "x"}}', "persona_card.json: persona card lacks"),
    ("items.jsonl", b"\xff\xfe", "items.jsonl: not UTF-8"),
])
def test_bad_files_are_named(bank_copy, name, text, message):
    path = bank_copy / name
    path.write_bytes(text) if isinstance(text, bytes) else path.write_text(text)
    with pytest.raises(BankError, match=message):
        load_bank(bank_copy)


def test_a_missing_file_is_named(bank_copy):
    (bank_copy / "items.jsonl").unlink()
    with pytest.raises(BankError, match="missing items.jsonl"):
        load_bank(bank_copy)


def test_bank_dirs_finds_a_bank_a_release_root_and_a_folder_of_banks(tmp_path, bank_copy):
    assert bank_dirs(bank_copy) == [bank_copy]
    examples = tmp_path / "release" / "data" / "examples"
    for name in ("b_two", "a_one"):
        shutil.copytree(FIXTURE, examples / name)
    (examples / "README.md").write_text("not a bank")
    assert [p.name for p in bank_dirs(tmp_path / "release")] == ["a_one", "b_two"]
    assert [p.name for p in bank_dirs(examples)] == ["a_one", "b_two"]
    with pytest.raises(BankError, match="neither a bank"):
        bank_dirs(tmp_path / "release" / "data")
    with pytest.raises(BankError, match="no such directory"):
        bank_dirs(tmp_path / "absent")
