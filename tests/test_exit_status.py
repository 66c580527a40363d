"""The exit statuses every command shares (:mod:`contextecho.__main__`): an error the user fixes
that a command does not report itself is printed as its message alone (exit 2), a file or folder
that cannot be read or written likewise, Ctrl-C in one line (130); a bug keeps its traceback."""
from __future__ import annotations

import pytest

import contextecho.cli.cache as cache_cli
from contextecho.__main__ import EXIT_STATUS, main
from contextecho.engine.usage import UsageError


@pytest.fixture
def failing(monkeypatch):
    def fail(error: BaseException):
        def run(args):
            raise error
        monkeypatch.setattr(cache_cli, "run", run)
    return fail


def test_an_error_the_user_fixes_is_one_message_and_exit_2(failing, capsys):
    failing(UsageError("parameter 'window': 0 is out of range; give a positive number"))
    assert main(["cache"]) == 2
    out, err = capsys.readouterr()
    assert err == "contextecho cache: parameter 'window': 0 is out of range; give a positive number\n" and not out


def test_every_error_class_the_user_fixes_is_one(failing, capsys):
    from contextecho.cape.factors import MissingParaphrases
    from contextecho.engine.calls import ModelConfigError
    from contextecho.experiments.parameters import ParameterError
    from contextecho.sessions.errors import SessionFormatError

    for error in (ParameterError("p"), ModelConfigError("m"), MissingParaphrases("x"),
                  SessionFormatError("s.jsonl", 3, "not valid JSON")):
        failing(error)
        assert main(["cache"]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == "contextecho cache: s.jsonl:3: not valid JSON"


def test_a_path_that_cannot_be_read_or_written_is_one_message_and_exit_2(tmp_path, capsys):
    a_file = tmp_path / "not-a-folder"
    a_file.write_text("")
    assert main(["cache", "--dir", str(a_file)]) == 2  # was a NotADirectoryError traceback
    err = capsys.readouterr().err
    assert err.startswith(f"contextecho cache: {a_file}") and "Not a directory" in err and err.count("\n") == 1


def test_ctrl_c_is_one_line_and_exit_130(failing, capsys):
    failing(KeyboardInterrupt())
    assert main(["cache"]) == 130
    assert capsys.readouterr().err.startswith("contextecho cache: interrupted")


@pytest.mark.parametrize("error", [ZeroDivisionError("a bug"), ConnectionRefusedError(111, "refused")])
def test_a_bug_or_a_failure_no_user_fixes_keeps_its_traceback(failing, error):
    failing(error)
    with pytest.raises(type(error)):
        main(["cache"])


def test_every_command_s_help_documents_the_exit_statuses(capsys):
    with pytest.raises(SystemExit) as done:
        main(["cache", "-h"])
    assert done.value.code == 0
    help_text = " ".join(capsys.readouterr().out.split())
    assert " ".join(EXIT_STATUS.split()) in help_text
    for status in ("0 done", "1 the command ran and found a failure", "2 a usage error", "130 interrupted"):
        assert status in EXIT_STATUS
