"""What the experiments' tests share: a ten-item inventory (two items per OCEAN trait, one keyed
each way) for CAPE's runs on in-process models."""
import pytest

ITEMS = [("Tidiness", "Keep my desk in order", "C", 1), ("Curiosity", "Read about distant planets", "O", 1),
         ("Chatter", "Start conversations with strangers", "E", 1), ("Warmth", "Help people who are lost", "A", 1),
         ("Nerves", "Fret over small mistakes", "N", 1), ("Tidiness", "Leave chores for later", "C", -1),
         ("Curiosity", "Avoid unfamiliar food", "O", -1), ("Chatter", "Prefer quiet evenings alone", "E", -1),
         ("Warmth", "Ignore requests for help", "A", -1), ("Nerves", "Stay calm in traffic", "N", -1)]


@pytest.fixture
def inventory(tmp_path):
    """:data:`ITEMS` as an inventory file."""
    path = tmp_path / "ten.csv"
    path.write_text("label_raw,text,label_ocean,key\n" + "".join(f"{a},{b},{c},{d}\n" for a, b, c, d in ITEMS))
    return str(path)
