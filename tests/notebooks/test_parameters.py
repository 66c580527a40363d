from dataclasses import dataclass

import pytest

from contextecho.echo.protocols import PROTOCOLS
from contextecho.experiments.parameters import ParameterError, bind, check_overrides, coerce, declared
from contextecho.experiments.parameters import (OneOf, assigns_values_only, ignored, parameter_cells, parameter_help,
                                              parameters_cell_names, protocols_of)
from contextecho.notebooks import NOTEBOOKS, experiment


@dataclass(frozen=True)
class Spec:
    targets: tuple[str, ...] = ("a",)
    n_sessions: int = 2
    window: int = 100
    temperature: float = 0.0
    redact: bool = True
    output_dir: str = ""


def test_declared_defaults():
    assert declared(Spec) == {"targets": ("a",), "n_sessions": 2, "window": 100, "temperature": 0.0,
                              "redact": True, "output_dir": ""}


def test_values_are_coerced_to_the_declared_types():
    p = coerce(Spec, {"targets": "x/a, y/b", "n_sessions": "3", "temperature": 1, "redact": "false"})
    assert p == Spec(targets=("x/a", "y/b"), n_sessions=3, temperature=1.0, redact=False)
    assert coerce(Spec, {"targets": ["one"]}).targets == ("one",)


@pytest.mark.parametrize("name, value", [("n_sessions", "three"), ("n_sessions", 2.5),
                                         ("redact", "maybe"), ("output_dir", 3)])
def test_a_value_of_the_wrong_type_names_the_parameter(name, value):
    with pytest.raises(ParameterError, match=name):
        coerce(Spec, {name: value})


def test_a_misspelled_parameter_is_an_error_with_a_suggestion():
    with pytest.raises(ParameterError, match=r"'n_sesions' \(did you mean 'n_sessions'\?\)"):
        coerce(Spec, {"n_sesions": 3})


IMPORTS = "from contextecho.experiments import panel as experiment\nfrom contextecho.experiments.parameters import bind"
PARAMETERS = "# comments hold under protocol 'x'\ntargets = ['a']  # models\nn_sessions = 2\nwindow = 100\n"
BIND = "params = bind(experiment.Parameters, globals())\nparams"
STAGE = "frame = experiment.grid(run)\nframe"


def kernel(*cells: str, **values) -> dict:
    """A namespace as an IPython kernel leaves it: ``In`` holds every cell run (the current
    one, ``bind``'s, last), ``values`` what they assigned."""
    return {"In": ["", *cells], "Out": {}, "_ih": None, "experiment": object(), "bind": bind, **values}


def test_bind_reads_each_declared_value_from_the_kernel():
    ns = kernel(IMPORTS, PARAMETERS, BIND, targets=["m"], n_sessions=4)
    assert bind(Spec, ns) == Spec(targets=("m",), n_sessions=4)


def test_bind_honours_an_edit_rerun_in_the_same_kernel():
    """Run All twice: the second run's parameters cell is what counts (the old baseline of
    globals() took every name as set before it, so the edit fell back to the default)."""
    first_run = [IMPORTS, PARAMETERS, BIND, STAGE]
    ns = kernel(*first_run, IMPORTS, PARAMETERS.replace("n_sessions = 2", "n_sessions = 1"), BIND,
                targets=["a"], n_sessions=1, window=100, params=Spec(), frame=[1, 2], by_score={"a": 1.0},
                categories=["x"], run=object())
    assert bind(Spec, ns).n_sessions == 1


def test_bind_runs_from_the_parameters_cell_down_beside_an_earlier_runs_results():
    """Run Selected Cell and All Below: the earlier run's results (lists, dicts, numbers:
    by_score, categories, ...) are no parameters, and no error."""
    ns = kernel(IMPORTS, PARAMETERS, BIND, STAGE, PARAMETERS.replace("window = 100", "window = 7"), BIND,
                targets=["a"], n_sessions=2, window=7, by_score={"a": 1.0}, categories=["x", "y"], n_cells=12)
    assert bind(Spec, ns).window == 7


def test_a_misspelled_name_in_the_cells_just_run_is_an_error_with_a_suggestion():
    edited = PARAMETERS + "n_sesions = 3\n"
    with pytest.raises(ParameterError, match=r"'n_sesions' \(did you mean 'n_sessions'\?\)"):
        bind(Spec, kernel(IMPORTS, edited, BIND, n_sesions=3))


def test_papermills_injected_cell_is_checked_too():
    injected = "# Parameters\ntemperature = float('nan')\ntyop = 1\nPAPERMILL_INPUT_PATH = 'nb.ipynb'\n"
    with pytest.raises(ParameterError, match="tyop") as caught:
        bind(Spec, kernel(IMPORTS, PARAMETERS, injected, BIND, tyop=1, temperature=float("nan")))
    assert "PAPERMILL_INPUT_PATH" not in str(caught.value)
    fine = "# Parameters\nn_sessions = 5\nPAPERMILL_INPUT_PATH = 'nb.ipynb'\n"
    assert bind(Spec, kernel(IMPORTS, PARAMETERS, fine, BIND, n_sessions=5)).n_sessions == 5


def test_only_the_cells_just_before_bind_are_read():
    """The walk back stops at the first cell that does more than assign values: an earlier
    exploratory assignment is not a parameter."""
    ns = kernel("x = 3", IMPORTS, PARAMETERS, BIND, x=3)
    assert bind(Spec, ns) == Spec()
    with pytest.raises(ParameterError, match="'x'"):  # but one run right before bind is
        bind(Spec, kernel(IMPORTS, PARAMETERS, "x = 3", BIND, x=3))


def test_a_parameter_shadowed_by_an_earlier_cells_result_is_an_error_naming_it():
    with pytest.raises(ParameterError, match="window in this kernel hold.* no parameter value .*run the parameters"):
        bind(Spec, kernel(STAGE, BIND, window=object()))


def test_without_input_history_the_literal_names_are_checked():
    """The cells run as a plain script: the namespace holds the imports and the parameters."""
    namespace = {"__builtins__": {}, "experiment": pytest, "bind": bind, "targets": "m", "n_sessions": 4}
    assert bind(Spec, namespace) == Spec(targets=("m",), n_sessions=4)
    namespace["tyop"] = 1
    with pytest.raises(ParameterError, match="tyop"):
        bind(Spec, namespace)


@pytest.mark.parametrize("source, expected", [
    ("a = 1", True), ("# Parameters\na = 'x'  # c\nb: int = 2\n", True), ("a = [1, 2.5, -3, None, True]", True),
    ("a = {'k': (1, 2)}", True), ("a = float('nan')\nb = [float('-inf')]", True), ("a = 3000 * 2", True),
    ("a = b = 1", True), ("", False), ("# only a comment", False), ("a = f(1)", False), ("a = b", False),
    ("import os", False), ("a = 1\na", False), ("a.b = 1", False), ("a, b = 1, 2", False),
    ("a += 1", False), ("a = float(x)", False), ("%time a = 1", False), ("a = (", False)])
def test_assigns_values_only(source, expected):
    assert assigns_values_only(source) is expected


def test_parameter_cells_walks_back_from_the_current_cell():
    assert parameter_cells(["", "import x", "a = 1", "b = 2", "bind()"]) == ["b = 2", "a = 1"]
    assert parameter_cells(["", "a = 1", "bind()"]) == ["a = 1"]
    assert parameter_cells(["", "bind()"]) == []


# ---------------------------------------------------------------- help per protocol
@dataclass(frozen=True)
class ProtocolSpec:
    temperature: float = 0.0
    window: int = 100
    s2_requests: str = "e08"
    protocol: str = "reference"

    HELP = {"temperature": "sampling temperature", "window": "prefix characters", "protocol": "instrument set"}
    PROTOCOL_HELP = {"window": {"reference": "prefix characters (the harness's 30,000)"}}
    IGNORED = {"temperature": {"reference": "the provider's default"}, "s2_requests": {"contextecho": "ours"}}
    RANGES = {"protocol": OneOf(("reference", "contextecho"), "protocol")}


def test_help_and_ignored_parameters_per_protocol():
    assert parameter_help(ProtocolSpec, "reference")["window"] == "prefix characters (the harness's 30,000)"
    assert parameter_help(ProtocolSpec, "contextecho")["window"] == "prefix characters"
    assert parameter_help(ProtocolSpec)["temperature"] == "sampling temperature"
    assert ignored(ProtocolSpec, "reference") == {"temperature": "the provider's default"}
    assert ignored(ProtocolSpec, "contextecho") == {"s2_requests": "ours"}
    assert ignored(ProtocolSpec, None) == {} and ignored(Spec, "reference") == {}
    assert protocols_of(ProtocolSpec) == ("reference", "contextecho") and protocols_of(Spec) == ()


def test_a_help_or_ignored_entry_for_no_parameter_is_an_error():
    @dataclass(frozen=True)
    class Wrong:
        window: int = 1
        IGNORED = {"windw": {"reference": "typo"}}

    with pytest.raises(TypeError, match="IGNORED names no parameter: windw"):
        ignored(Wrong, "reference")


def test_bind_notes_a_value_the_chosen_protocol_ignores(capsys):
    ns = kernel(IMPORTS, "temperature = 0.7\nwindow = 5", BIND, temperature=0.7, window=5)
    assert bind(ProtocolSpec, ns).temperature == 0.7
    assert capsys.readouterr().out == ("note: temperature = 0.7 is ignored under protocol 'reference': "
                                       "the provider's default\n")
    bind(ProtocolSpec, kernel(IMPORTS, "temperature = 0.7\nprotocol = 'contextecho'", BIND, temperature=0.7,
                              protocol="contextecho"))
    assert capsys.readouterr().out == ""  # read under contextecho; s2_requests left at its default


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_every_experiments_protocol_help_names_its_parameters_and_known_protocols(name):
    spec = experiment(name).Parameters
    for attribute in ("PROTOCOL_HELP", "IGNORED"):
        table = getattr(spec, attribute, {})
        assert set(table) <= set(declared(spec)), attribute
        for texts in table.values():
            assert set(texts) <= set(PROTOCOLS.names()) and all(t.strip() and "=" not in t for t in texts.values())
    for protocol in protocols_of(spec) or (None,):
        unread = ignored(spec, protocol)
        assert "protocol" not in unread and set(unread) <= set(declared(spec))
        parameter_help(spec, protocol)


def test_runner_check_compares_overrides_with_the_parameters_cell():
    source = "targets = ['a']  # models\nn_sessions: int = 2\nwindow = 100\n"
    assert parameters_cell_names(source) == ["targets", "n_sessions", "window"]
    check_overrides(source, {"window": 5}, "nb")
    with pytest.raises(ParameterError, match="windw"):
        check_overrides(source, {"windw": 5}, "nb")
