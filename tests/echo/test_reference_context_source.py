"""e03 A1's context-source conditions built from a GPT-5 source transcript, by hand."""
from contextecho.echo.reference.context_source import A1_CONDITIONS, A1Slices, a1_conditions, a1_design
from contextecho.echo.reference.filler import make_filler
from contextecho.echo.reference.texts import ACKNOWLEDGEMENT

ACK = {"role": "assistant", "content": ACKNOWLEDGEMENT}


def test_slices_cut_the_last_14000_at_3000():
    text = "".join(chr(ord("a") + i % 26) for i in range(20_000))
    s = A1Slices.of(text)
    assert s.recent_3K == text[-3000:] and s.earlier_11K == text[-14000:-3000]
    assert s.filler_11K == make_filler(11_000) and s.filler_14K == make_filler(14_000)
    assert list(s.named()) == ["recent_3K", "earlier_11K", "filler_11K", "filler_14K"]


def test_a_short_slice_gives_a_short_earlier_part_and_its_filler():
    s = A1Slices.of("x" * 3500)
    assert s.recent_3K == "x" * 3000 and s.earlier_11K == "x" * 500 and s.filler_11K == make_filler(500)
    s = A1Slices.of("abc")
    assert (s.recent_3K, s.earlier_11K, s.filler_11K) == ("abc", "", "")


def test_five_conditions_in_order_with_the_ack():
    s = A1Slices.of("r" * 5000)
    conditions = a1_conditions(s)
    assert [c.label for c in conditions] == list(A1_CONDITIONS)
    by = {c.label: c for c in conditions}
    assert by["scratch"].messages == () and by["scratch"].chars == 0
    assert by["recent3K"].messages == ({"role": "user", "content": "r" * 3000}, ACK)
    assert by["recent3K_filler"].messages[0]["content"] == make_filler(2000) + "r" * 3000
    assert by["recent3K_earlier"].messages[0]["content"] == "r" * 5000
    assert by["filler14K"].messages == ({"role": "user", "content": make_filler(14_000)}, ACK)
    assert [c.chars for c in conditions] == [0, 3000, 5000, 5000, 14_000]


def test_design_reads_records_the_a1_way():
    records = [{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"},
               {"role": "assistant", "content": [{"type": "text", "text": "ok"}]}]
    slices, conditions = a1_design(records)
    assert slices.verbatim_full == "[user]: hi\n\n[assistant]: ok"
    assert conditions[1].messages[0]["content"] == slices.verbatim_full
