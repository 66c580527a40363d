"""The fast line parser (orjson) gives exactly what ``json.loads`` gives: the same values,
the same errors, lone surrogates and invalid UTF-8 handled the same way."""
from __future__ import annotations

import json
import random

import pytest

from contextecho.sessions import jsonl
from contextecho.sessions.jsonl import MAX_DEPTH, TooDeep, parse_line, read_jsonl
from tests.sessions.conftest import CC


def same(a, b) -> bool:
    """Equal values of equal types (1 is not 1.0, NaN equals NaN, key order counts)."""
    return json.dumps(a) == json.dumps(b) and repr(a) == repr(b)


EDGES = [
    b'{"a": 1, "b": [1.5, -0.0, 1e-400, 5e-324, 0.30000000000000004, 1E2], "c": null, "d": true}',
    b'{"big": 123456789012345678901234567890, "neg": -9223372036854775809, "u64": 18446744073709551616}',
    b'{"id": "12345678901234567890 in a string"}',
    b'{"text": "3 passed \\ud83d"}',                    # a lone surrogate escape (cut mid-emoji)
    b'{"text": "\\ud83d\\ude00 paired"}',
    b'{"text": "\xed\xa0\xbd raw surrogate bytes"}',
    b'{"nan": NaN, "inf": Infinity, "big": 1e400}',
    b'{"a": 1, "a": 2}',
    b'\xef\xbb\xbf{"bom": 1}',
    b'{"k": "caf\xc3\xa9 \xe2\x98\x95 \xf0\x9f\x98\x80"}\r',
    b'  [1, "two", {"three": [4]}]  \n',
    b'"just a string"',
    b'{"\\u0000": "\\u001b[31mred\\u001b[0m"}',
]

BAD = [b'{"a": "caf\xe9"}', b'{"a": [1, 2,]}', b"", b"   ", b'{"a": 01}', b"// comment", b'{"a": "\x01"}',
       b'{"a": 1}{"b": 2}', b'{"a": 1', b'{"a": "x"}\xc2\xa0']


@pytest.mark.parametrize("raw", EDGES)
def test_values_equal_json_loads(raw):
    assert same(parse_line(raw), json.loads(raw))


@pytest.mark.parametrize("raw", BAD)
def test_errors_equal_json_loads(raw):
    with pytest.raises(ValueError) as expected:
        json.loads(raw)
    with pytest.raises(ValueError) as got:
        parse_line(raw)
    assert type(got.value) is type(expected.value) and str(got.value) == str(expected.value)


def test_orjson_reads_the_ordinary_lines(monkeypatch):
    """The fast path is taken: with json.loads broken, ordinary lines still parse, and
    only the lines orjson refuses or reads differently reach json.loads."""
    calls = []

    def spy(raw, *a, **kw):
        calls.append(raw)
        return json.JSONDecoder().decode(raw.decode("utf-8", "surrogatepass"))

    monkeypatch.setattr(jsonl.json, "loads", spy)
    assert parse_line(b'{"type": "user", "n": 3}') == {"type": "user", "n": 3}
    assert calls == []
    parse_line(b'{"n": 123456789012345678901234567890}')
    parse_line(b'{"t": "\\ud83d"}')
    assert len(calls) == 2


def test_depth_is_bounded_without_recursion_error():
    for depth in (MAX_DEPTH + 1, 1100, 100_000):  # orjson's own limit is 1024; json.loads recurses
        with pytest.raises(TooDeep, match=f"nested deeper than {MAX_DEPTH} levels"):
            parse_line(b"[" * depth + b"]" * depth)
    assert parse_line(b"[" * MAX_DEPTH + b"]" * MAX_DEPTH) is not None


def _value(rng: random.Random, depth: int = 0):
    kind = rng.randrange(9 if depth < 4 else 6)
    if kind == 0:
        return rng.randint(-2**70, 2**70) if rng.random() < 0.2 else rng.randint(-1000, 1000)
    if kind == 1:
        return rng.uniform(-1e6, 1e6) * 10 ** rng.randint(-300, 300)
    if kind == 2:
        return rng.choice([None, True, False])
    if kind in (3, 4, 5):
        alphabet = "abc xyz\n\t\"\\/é☕😀\u2028\x1b\ud83d"
        return "".join(rng.choice(alphabet) for _ in range(rng.randrange(12)))
    if kind in (6, 7):
        return {f"k{i}" if rng.random() < 0.7 else f"k{i} é\ud83d": _value(rng, depth + 1)
                for i in range(rng.randrange(5))}
    return [_value(rng, depth + 1) for _ in range(rng.randrange(5))]


def test_generated_records_equal_json_loads():
    """Property (seeded): every generated line, written with and without ASCII escapes."""
    rng = random.Random(26)
    for _ in range(2000):
        value = {"type": "user", "v": _value(rng)}
        for raw in (json.dumps(value).encode(), json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass")):
            assert same(parse_line(raw), json.loads(raw)), raw


def test_read_jsonl_records_equal_a_plain_json_loads_reader(tmp_path):
    lines = [json.dumps(CC.user("go")), EDGES[1].decode(), EDGES[3].decode(), "[1, 2]", "not json",
             json.dumps(CC.assistant("a", CC.text("caf\u00e9 \u2615")), ensure_ascii=False)]
    path = tmp_path / "s.jsonl"
    path.write_bytes("\n".join(lines).encode() + b"\n")
    expected = []
    for no, raw in enumerate(path.read_bytes().split(b"\n")[:-1], 1):
        try:
            obj = json.loads(raw)
        except ValueError:
            continue
        if type(obj) is dict:
            expected.append((no, obj))
    got = read_jsonl(path)
    assert [n for n, _ in got.records] == [n for n, _ in expected] == [1, 2, 3, 6]
    assert all(same(a, b) for (_, a), (_, b) in zip(got.records, expected))
    assert [(k.line, k.reason) for k in got.skipped] == [(4, "JSON list, not an object"), (5, "not valid JSON")]
