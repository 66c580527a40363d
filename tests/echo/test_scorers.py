"""Each scorer on passing, failing and adversarial responses; never a crash."""
import pytest

from contextecho.echo import SCORERS, is_no_preamble, score
from contextecho.engine.registry import UnknownNameError
from contextecho.echo.contracts import BY_ID as HARDENED
from contextecho.echo.stressors import STRESSORS

S1, S2, S3, S4 = (STRESSORS[k][0] for k in ("S1", "S2", "S3", "S4"))
C1, C2, C5, C6 = (HARDENED[k] for k in ("C1_csv", "C2_yaml", "C5_echo", "C6_json"))
HUGE = "x" * 2_000_000


@pytest.mark.parametrize("response, passed, reason", [
    ("ls -la", True, "ok"),
    ("ls -la\n", True, "ok"),
    ("  find . -name '*.py' | xargs wc -l  \r\n", True, "ok"),
    ("git log --oneline -10", True, "ok"),
    ("```bash\nls -la\n```", False, "markdown fence"),
    ("```ls -la```", False, "markdown fence"),
    ("`ls -la`", False, "inline markdown code"),
    ("Here is the command:\nls -la", False, "2 lines; expected a single line"),
    ("ls -la\r\necho done", False, "2 lines; expected a single line"),
    ("Sure! ls -la", False, "preamble: starts with 'Sure!'"),
    ("You can use ls -la", False, "preamble: starts with 'You'"),
    ("Command: ls -la", False, "preamble: starts with 'Command:'"),
    ("# list files", False, "starts with a markdown marker"),
    ("- ls -la", False, "starts with a markdown marker"),
    ("Use the ls command to list files.", False, "preamble: starts with 'Use'"),
    ("Listing files is easy with ls.", False, "prose sentence, not a command"),
    ("", False, "empty response"),
    ("   \n ", False, "empty response"),
])
def test_no_preamble(response, passed, reason):
    s = score(response, S2)
    assert (s.passed, s.reason) == (passed, reason)
    assert is_no_preamble(response) is passed


def test_byte_exact_one_word_and_json():
    assert score("OK", S1).passed
    assert score("OK\n", S1).reason == "near miss: surrounding whitespace"
    assert score("OK.", S1).reason == "differs from the expected text"
    assert score("ok", S1).passed is False
    assert score("", S1).reason == "empty response"
    assert score('{"status":"ok","count":3}', S4).passed
    assert not score('{"count":3,"status":"ok"}', S4).passed  # reordered keys: not byte-exact
    assert not score('{"status": "ok", "count": 3}', S4).passed
    assert score('```json\n{"status":"ok","count":3}\n```', S4).reason == "markdown fence"


@pytest.mark.parametrize("response, passed", [
    ("A hash map stores key-value pairs for fast lookup.", True),
    ("A hash map maps keys to values, e.g. names to ids.", True),
    ("  It stores pairs.\r\n", True),
    ("It stores pairs. It is fast.", False),
    ("It stores pairs.\nIt is fast.", False),
    ("It stores pairs", False),
    ("```\nIt stores pairs.\n```", False),
    ("", False),
])
def test_one_sentence(response, passed):
    assert score(response, S3).passed is passed


CSV = "name,year\nPython,1991\nJava,1995\nRuby,1995\nGo,2009\nSwift,2014\nRust,2015"


def test_csv_exact():
    assert score(CSV, C1).passed
    assert score(CSV.replace("\n", "\r\n") + "\r\n", C1).passed  # CRLF and a final newline are fine
    assert score("\n" + CSV.replace("\n", "  \n") + "\n\n", C1).passed  # trailing spaces, blank margins
    assert score(f"```csv\n{CSV}\n```", C1).reason == "markdown fence"
    assert score("Here is the CSV:\n" + CSV, C1).reason == "header differs"
    assert score(CSV.replace("Go,2009", "Go, 2009"), C1).reason == "record 4 differs"
    assert score(CSV.replace("\nRust,2015", ""), C1).reason == "5 records; expected 6"
    lines = CSV.split("\n")
    assert not score("\n".join(lines[:1] + lines[2:] + lines[1:2]), C1).passed  # row order is exact
    assert not score(HUGE, C1).passed


YAML = "service: billing\nport: 8080\nregion: eu-west-1"


def test_yaml_flat_exact():
    assert score(YAML, C2).passed
    assert score(YAML.replace("\n", "\r\n") + "  \r\n", C2).passed
    assert score(f"```yaml\n{YAML}\n```", C2).reason == "markdown fence"
    assert "quoted" in score(YAML.replace("billing", '"billing"'), C2).reason
    assert "order is fixed" in score("port: 8080\nservice: billing\nregion: eu-west-1", C2).reason
    assert score("Here you go:\n" + YAML, C2).reason == "4 lines; expected 3"
    assert not score("service: billing\nport: 8080\nregion: eu-west-2", C2).passed
    assert not score("{service: billing, port: 8080, region: eu-west-1}", C2).passed
    assert not score("", C2).passed


ECHO = "\n".join(["AMBER", "OCEAN", "PIANO", "LEMON", "TIGER", "MAPLE", "CLOUD", "STONE", "RIVER", "APPLE"])


def test_lines_exact_echo():
    assert score(ECHO, C5).passed
    assert score(ECHO.replace("\n", "\r\n") + " \r\n", C5).passed
    assert not score(ECHO.lower(), C5).passed
    assert not score("\n".join(reversed(ECHO.split("\n"))), C5).passed
    assert score(f"```\n{ECHO}\n```", C5).reason == "markdown fence"
    assert score("Sure:\n" + ECHO, C5).reason == "11 lines; expected 10"
    assert score(ECHO.replace("\n", " "), C5).reason == "1 lines; expected 10"


def test_json_exact():
    good = '{"name": "contextecho", "stable": true, "version": 2}'
    assert score(good, C6).passed
    assert score('\r\n{\n  "name": "contextecho",\n  "stable": true,\n  "version": 2\n}\r\n', C6).passed
    assert score('{"version": 2, "name": "contextecho", "stable": true}', C6).reason == \
        "keys not in alphabetical order"
    assert score(f"```json\n{good}\n```", C6).reason == "markdown fence"
    assert score("Here it is: " + good, C6).reason.startswith("whole output is not JSON")
    assert score(good + "\nDone.", C6).reason.startswith("whole output is not JSON")
    assert score('{"name": "contextecho", "stable": true, "version": 2.0}', C6).reason == "value of 'version' differs"
    assert score('{"name": "contextecho", "stable": "true", "version": 2}', C6).reason == "value of 'stable' differs"
    assert score('{"name": "a", "name": "contextecho", "stable": true, "version": 2}', C6).reason == "duplicate keys"
    assert score('[1, 2]', C6).reason == "a JSON list, not an object"
    assert score("", C6).reason == "empty response"
    assert not score("[" * 100_000, C6).passed  # deeply nested garbage is a failure, not a crash


def test_every_scorer_handles_empty_none_and_huge():
    for contract in (S1, S2, S3, S4, C1, C2, C5, C6):
        for response in ("", None, HUGE, "\x00\ufeff"):
            s = score(response, contract)
            assert s.reason and s.scorer == contract.scorer
            # A two-megabyte single line is a "command" with no preamble; length catches it.
            assert s.passed is (contract is S2 and response in (HUGE, "\x00\ufeff"))


def test_unknown_scorer_lists_the_valid_ones():
    with pytest.raises(UnknownNameError, match="valid scorers: byte_exact, csv_exact"):
        score("ls", S2, scorer="regex")
    assert set(SCORERS.names()) == {"no_preamble", "byte_exact", "one_sentence", "csv_exact",
                                    "yaml_flat_exact", "lines_exact", "json_exact"}
