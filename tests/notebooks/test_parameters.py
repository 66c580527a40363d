from dataclasses import dataclass

import pytest

from contextecho.experiments.parameters import ParameterError, bind, check_overrides, coerce, declared
from contextecho.experiments.parameters import parameters_cell_names


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


def test_bind_sees_only_names_added_after_the_baseline():
    namespace = {"experiment": object(), "bind": bind, "_i1": "x", "In": [], "Out": {}}
    baseline = set(namespace)
    namespace.update(targets="m", n_sessions=4, _="ipython scratch")
    assert bind(Spec, namespace, baseline) == Spec(targets=("m",), n_sessions=4)
    namespace["tyop"] = 1
    with pytest.raises(ParameterError, match="tyop"):
        bind(Spec, namespace, baseline)


def test_runner_check_compares_overrides_with_the_parameters_cell():
    source = "targets = ['a']  # models\nn_sessions: int = 2\nwindow = 100\n"
    assert parameters_cell_names(source) == ["targets", "n_sessions", "window"]
    check_overrides(source, {"window": 5}, "nb")
    with pytest.raises(ParameterError, match="windw"):
        check_overrides(source, {"windw": 5}, "nb")
