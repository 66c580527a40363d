"""Parameter ranges: every notebook's out-of-range values fail, naming the parameter, the
value and the valid range, before any kernel starts and before any model call — through
the runner (`contextecho notebook`, `make <notebook>`), `contextecho paper --set`, and
the notebook's own ``bind`` cell under plain papermill."""
import math
import os
import shutil
import subprocess
import sys
import typing
from dataclasses import dataclass, fields, replace

import nbformat
import pytest

from contextecho.cli import paper as paper_cli
from contextecho.__main__ import main
from contextecho.engine.llm import ensure_providers, registered_providers
from contextecho.notebooks import NOTEBOOKS, experiment, notebook_path
from contextecho.experiments.parameters import ParameterError, coerce, declared
from contextecho.experiments.parameters import (POSITIVE, Checked, Endpoints, File, Folder, Includes, Interval, Lengths, ModelOptionsText, Models, NonEmpty, OneOf,
                                              RangeError, Temperature, rules)
from contextecho.engine.paths import REPO_ROOT

# Every parameter of these kinds declares its range: models and item ids (numbers: all).
NAMED = {"targets", "judges", "target", "summariser", "validators", "probes", "stressors", "contracts",
         "interventions", "raters", "factors", "orderings", "attack_letter", "inventory", "facets", "families",
         "conditions", "endpoints", "validation_judges"}


def spec(name):
    return experiment(name).Parameters


def field_types(name):
    return typing.get_type_hints(spec(name))


def is_numeric(annotation) -> bool:
    inner = typing.get_args(annotation)[0] if typing.get_origin(annotation) is tuple else annotation
    return inner in (int, float)


# ---------------------------------------------------------------- the specs themselves
@pytest.mark.parametrize("name", NOTEBOOKS)
def test_every_numeric_model_and_item_parameter_declares_its_range(name):
    ranged = set(rules(spec(name)))
    numeric = {f for f, t in field_types(name).items() if is_numeric(t)}
    assert numeric and numeric <= ranged
    assert NAMED & set(declared(spec(name))) <= ranged
    assert issubclass(spec(name), Checked)  # checked however it is built


def test_a_range_for_no_parameter_is_an_error():
    @dataclass(frozen=True)
    class Spec(Checked):
        window: int = 1
        RANGES = {"windw": POSITIVE}

    with pytest.raises(TypeError, match="RANGES names no parameter: windw"):
        Spec()


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_the_defaults_and_the_paper_scale_are_in_range(name):
    module = experiment(name)
    assert coerce(module.Parameters, {}) == module.Parameters()
    coerce(module.Parameters, getattr(module, "PAPER_SCALE", {}))
    for values in getattr(module, "NAMED_SETS", {}).values():
        coerce(module.Parameters, values)


# ---------------------------------------------------------------- every rule fails
def bad_values(rule, annotation, default, defaults):
    """Values ``rule`` must reject, worked out from the rule (not from the code under test)."""
    element = typing.get_args(annotation)[0] if typing.get_origin(annotation) is tuple else annotation
    out = []
    if isinstance(rule, Interval):
        if rule.low is not None:
            below = rule.low if rule.low_open else rule.low - 1
            out.append(below if below != 0 or not rule.zero else -1)
            out.append(-3)
        high = rule.high(defaults) if callable(rule.high) else rule.high
        if high is not None:
            out.append(high + 1)
        if element is float:
            out += [math.nan, math.inf, -math.inf]
    elif isinstance(rule, Temperature):
        out += [-5.0, 2.5, math.nan, math.inf]
    elif isinstance(rule, OneOf):
        out.append("no-such-name")
    elif isinstance(rule, Models):
        out += ["nosuchprovider/some-model", "local/no-such-model", "definitely-not-a-model-xyz"]
    elif isinstance(rule, NonEmpty):
        return [()]
    elif isinstance(rule, Includes):
        return [tuple(v for v in default if v != rule.name) or ("no-such-name",)]
    elif isinstance(rule, Lengths):  # one value too few, and one too many
        too_few = min(rule.lengths) - 1 if min(rule.lengths) > 0 else min(n for n in range(1, 99) if n not in rule.lengths)
        return [("local/smollm2-135m",) * too_few, ("local/smollm2-135m",) * (max(rule.lengths) + 1)]
    elif isinstance(rule, Folder):  # no such folder; a file, not a folder
        out += ["no-such-folder", "README.md"]
    elif isinstance(rule, File):  # no such file; a file that exists with another ending
        out += [f"no-such-file{rule.suffix}", "README.md"]
    elif isinstance(rule, ModelOptionsText):  # not JSON, not an object, reasoning turned on without a budget
        return ["{not json", '["a list"]', '{"openai/m": {"reasoning_effort": "high"}}']
    elif isinstance(rule, Endpoints):  # no '=', not http(s), credentials in the URL, a model twice
        return [("hosted_vllm/m",), ("hosted_vllm/m=ftp://h/v1",), ("openai/m=http://u:p@h:8000/v1",),
                ("openai/m=http://a:1/v1", "openai/m=http://b:2/v1")]
    out = [element(v) if element is int and isinstance(v, float) and v.is_integer() else v for v in out]
    return [(*default, v) if isinstance(default, tuple) else v for v in out]


CASES = [(name, f.name, bad)
         for name in NOTEBOOKS
         for f in fields(spec(name))
         for rule in rules(spec(name)).get(f.name, ())
         for bad in bad_values(rule, field_types(name)[f.name], declared(spec(name))[f.name], spec(name)())]


def test_every_kind_of_rule_is_exercised():
    kinds = {type(r) for name in NOTEBOOKS for rs in rules(spec(name)).values() for r in rs}
    assert kinds == {Interval, Temperature, OneOf, Models, NonEmpty, Lengths, Includes, Endpoints, File, Folder,
                     ModelOptionsText}
    numeric = [(n, f) for n in NOTEBOOKS for f, t in field_types(n).items() if is_numeric(t)]
    assert {(n, f) for n, f, _ in CASES} >= set(numeric) and len(numeric) > 60


@pytest.mark.parametrize("name, field, value", CASES, ids=[f"{n}-{f}-{v!r}" for n, f, v in CASES])
def test_an_out_of_range_value_is_an_error_naming_parameter_value_and_range(name, field, value):
    # a model used only with another parameter (the released judge: with a release) is checked with it set
    given = {field: value, **{r.used_with: str(REPO_ROOT / "data") for r in rules(spec(name))[field]
                              if isinstance(r, Models) and r.used_with}}
    with pytest.raises(ParameterError) as caught:
        coerce(spec(name), given, where=f"notebook {name}.ipynb")
    message = str(caught.value)
    shown = value[-1] if isinstance(value, tuple) and value else value
    assert f"parameter {field!r}: " in message and "valid: " in message
    if "u:p@" in repr(value):  # a credential: the value is shown masked, never as given
        assert "u:p" not in message and "'openai/m=http://***@h:8000/v1'" in message
    else:
        assert repr(shown) in message or repr(value) in message or (value == () and "is empty" in message)
    assert f"notebook {name}.ipynb" in message
    with pytest.raises(ParameterError):  # built directly, too (a library call of experiment.run)
        replace(spec(name)(), **given)


# The issue's list, as they come from a command line (strings), for every notebook that has them.
ISSUE = [("n_sessions", "-3"), ("n_positions", "-1"), ("window", "0"), ("window", "-1"),
         ("temperature", "-5"), ("temperature", "nan"), ("temperature", "inf"), ("max_tokens", "-1"),
         ("n_resamples", "0"), ("n_resamples", "99"), ("targets", ""), ("judges", ""),
         ("judges", "nosuchprovider/judge"), ("probes", "C99"), ("resample_seed", "-1"), ("shuffle_seed", "-1"), ("steps", "0,5"),
         ("stressors", "S9"), ("contracts", "C9_nope"), ("interventions", "a_anchor"), ("raters", "bleu"),
         ("factors", "stabilty"), ("families", "nope"), ("conditions", "long"), ("n_items", "-1"),
         ("history_window", "-2"), ("bridge_temperature", "-0.1"), ("target", "nosuchprovider/x"),
         ("inventory", "mpi_999"), ("min_agree", "5"), ("max_compactions", "-1"), ("margin", "0")]
ISSUE_CASES = [(n, k, v) for n in NOTEBOOKS for k, v in ISSUE if k in declared(spec(n))]


@pytest.mark.parametrize("name, field, value", ISSUE_CASES, ids=[f"{n}-{k}-{v}" for n, k, v in ISSUE_CASES])
def test_the_issues_out_of_range_values_fail(name, field, value):
    with pytest.raises(ParameterError, match=f"parameter '{field}'"):
        coerce(spec(name), {field: value})


def test_n_positions_0_asks_every_offered_position_where_the_notebook_says_so():
    """The panel's 0 is every position a session offers (the corpus grid asks it, issue 36);
    a notebook whose positions are a count only still refuses it."""
    assert coerce(spec("panel"), {"n_positions": "0"}).n_positions == 0
    with pytest.raises(ParameterError, match="parameter 'n_positions'"):
        coerce(spec("cross_judge"), {"n_positions": "0"})


def test_every_notebook_has_some_of_the_issues_cases():
    assert {n for n, _, _ in ISSUE_CASES} == set(NOTEBOOKS) and len(ISSUE_CASES) > 60


# ---------------------------------------------------------------- messages and cross-field rules
def test_the_message_says_the_valid_range_in_words():
    cases = {("n_sessions", "-3"): "parameter 'n_sessions': -3 is out of range; valid: an integer >= 1, or 0 for all",
             ("window", "0"): "parameter 'window': 0 is out of range; valid: an integer > 0",
             ("n_resamples", "10"): "parameter 'n_resamples': 10 is out of range; valid: an integer >= 100",
             ("temperature", "nan"): "parameter 'temperature': nan is out of range; valid: a finite number in "
                                     "[0, 2] (the range of local/smollm2-135m)",
             ("probes", "C99"): "parameter 'probes': 'C99' is not a known probe id or battery; valid: one of "
                                "all, coding_self"}
    for (field, value), expected in cases.items():
        with pytest.raises(ParameterError) as caught:
            coerce(spec("panel"), {field: value}, where="notebook panel.ipynb")
        assert expected in str(caught.value), str(caught.value)
    with pytest.raises(ParameterError, match=r"'C1' is not a known probe id or battery \(did you mean 'C01'\?\); "):
        coerce(spec("panel"), {"probes": "C1"})


def test_all_problems_are_reported_at_once():
    with pytest.raises(RangeError) as caught:
        coerce(spec("panel"), {"n_sessions": -3, "window": 0, "probes": "C99,C01"})
    assert [p.split(":")[0] for p in caught.value.problems] == \
        ["parameter 'window'", "parameter 'n_sessions'", "parameter 'probes'"]
    assert "'C99' (in ['C99', 'C01'])" in str(caught.value)


def test_the_temperature_range_is_the_narrowest_of_the_targets_providers():
    panel = spec("panel")
    coerce(panel, {"targets": "openai/gpt-4o", "temperature": 1.5})
    with pytest.raises(ParameterError, match=r"1\.5 is out of range; valid: a finite number in \[0, 1\] "
                                             r"\(the range of anthropic/claude-sonnet-4-5\)"):
        coerce(panel, {"targets": "openai/gpt-4o,anthropic/claude-sonnet-4-5", "temperature": 1.5})
    coerce(panel, {"targets": "anthropic/claude-sonnet-4-5", "temperature": 1.0})
    with pytest.raises(ParameterError, match="sample_temperature"):
        coerce(spec("anchor"), {"validators": "anthropic/claude-sonnet-4-5", "min_agree": 1,
                                   "sample_temperature": 1.2})


def test_min_agree_cannot_exceed_the_validators():
    anchor = spec("anchor")
    coerce(anchor, {"n_evaluators": 4, "min_agree": 4})
    with pytest.raises(ParameterError, match=r"'min_agree': 3 is out of range; valid: an integer >= 1 and "
                                             r"<= the number of validators \(n_evaluators when none\) \(2\)"):
        coerce(anchor, {"validators": "openai/gpt-4o,openai/gpt-4.1", "min_agree": 3})


def test_the_call_site_preflight_shares_the_routing_check(tmp_path):
    """An unknown embedded model now stops the batch before any call, as an unknown provider does."""
    from contextecho.engine.cache import CallCache
    from contextecho.engine.calls import ModelConfigError, generate
    from contextecho.engine.model_request import ModelRequest

    for model in ("local/no-such-model", "nosuchprovider/x"):
        cache = CallCache(tmp_path)
        with pytest.raises(ModelConfigError, match=f"cannot route model '{model}'"):
            generate([ModelRequest(model, [{"role": "user", "content": "hi"}], {}, 0)], cache=cache, progress=False)
        cache.close()


def test_routable_model_strings_pass():
    for model in ("openai/gpt-4o-mini", "anthropic/claude-sonnet-4-5", "hosted_vllm/Qwen/Qwen2.5-7B-Instruct",
                  "gemini/gemini-2.5-pro", "local/smollm2-135m", "fake/echo", "gpt-4o"):
        coerce(spec("panel"), {"targets": model, "judges": model})


def test_a_model_used_only_with_another_parameter_is_checked_only_with_it():
    """The released judge names whose verdicts a release answers: without a release it is never
    asked nor read, and its name is not checked (nor LiteLLM imported to check it)."""
    assert coerce(spec("panel"), {"released_judge": "nosuchprovider/judge"}).released_judge == "nosuchprovider/judge"
    with pytest.raises(ParameterError, match="parameter 'released_judge': 'nosuchprovider/judge' is not a model"):
        coerce(spec("panel"), {"released_judge": "nosuchprovider/judge", "released": str(REPO_ROOT / "data")})


def test_binding_every_notebooks_defaults_never_imports_litellm():
    """The defaults name only the embedded model (and the released judge, unused without a
    release): binding them needs no LiteLLM, whose import costs seconds in every process a
    warm ``make paper`` runs (its kernel and the command's own check)."""
    code = ("import sys\nfrom contextecho.notebooks import NOTEBOOKS\n"
            "from contextecho.notebooks.runner import check_parameters\n"
            "for name in NOTEBOOKS:\n    check_parameters(name, {})\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'litellm')[:3])")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO_ROOT,
                          env={**os.environ, "PYTHONPATH": str(REPO_ROOT / "lib")})
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "[]", done.stdout


def test_an_inventory_path_to_a_csv_file_is_accepted(tmp_path):
    csv = tmp_path / "mine.csv"
    csv.write_text("x\n")
    coerce(spec("cape"), {"inventory": str(csv)})
    with pytest.raises(ParameterError, match="inventory"):
        coerce(spec("cape"), {"inventory": str(tmp_path / "missing.csv")})


# ---------------------------------------------------------------- no kernel, no model call
@pytest.fixture
def no_kernel(monkeypatch):
    """Counts kernels started and model calls made (the fake provider's own counter)."""
    import papermill

    started = []
    monkeypatch.setattr(papermill, "execute_notebook", lambda *a, **k: started.append(a))
    ensure_providers()
    fake = registered_providers()["fake"]
    before = sum(fake.calls.values())
    yield lambda: (len(started), sum(fake.calls.values()) - before)


BAD_ONE = {"panel": ("n_sessions", "-3"), "compaction": ("window", "0"), "onset": ("steps", "0"),
           "a_anchor": ("interventions", "a_anchor"), "cross_judge": ("n_resamples", "0"),
           "continuation": ("n_cutpoints", "0"), "cape": ("bridge_temperature", "-5"), "anchor": ("judges", ""),
           "cross_session": ("n_positions", "-1"), "controls": ("items", ""), "framing": ("replicates", "0"),
           "instruction_override": ("lengths", "0"), "anchor_family": ("n_sessions", "-3"),
           "published": ("released", "no-such-folder")}


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_contextecho_notebook_exits_2_before_the_kernel_and_any_call(name, no_kernel, capsys):
    field, value = BAD_ONE[name]
    names = declared(spec(name))
    model = ["-p", "target" if "target" in names else "targets", "fake/echo"] \
        if {"target", "targets"} & set(names) else []  # a notebook that calls no model names none
    assert main(["notebook", name, *model, "-p", field, value]) == 2
    err = capsys.readouterr().err
    assert f"parameter '{field}'" in err and "valid:" in err
    assert no_kernel() == (0, 0)


def test_a_valid_run_does_reach_the_kernel(no_kernel, tmp_path):
    """The counter above can see a start: the same command with valid values starts one."""
    assert main(["notebook", "panel", "-p", "n_sessions", "1", "--output-dir", str(tmp_path)]) == 0
    assert no_kernel()[0] == 1


@pytest.fixture
def paper(monkeypatch, no_kernel):
    import argparse

    import importlib

    from contextecho.sessions import corpus

    # Import the data commands first: they bind the real fill_corpus, which the patch must not leak into.
    importlib.import_module("contextecho.cli.data")
    filled = []
    monkeypatch.setattr(corpus, "fill_corpus", lambda *a, **k: filled.append(1))
    parser = argparse.ArgumentParser()
    paper_cli.configure(parser)

    def run(*sets, only="", released=""):  # as the command line gives them
        args = parser.parse_args(["--no-render", "--only", only, *(a for s in sets for a in ("--set", s))]
                                 + (["--released", released] if released else []))
        return paper_cli.run(args), filled, no_kernel()
    yield run


@pytest.mark.parametrize("released, only, needle", [
    ("no-such-folder", "", "parameter 'released': 'no-such-folder' is not an existing folder"),
    ("tests", "panel", "--released is read by the published notebook"),
])
def test_paper_released_is_checked_before_anything_runs(paper, capsys, released, only, needle):
    status, filled, (kernels, calls) = paper(only=only, released=released)
    assert status == 2 and needle in capsys.readouterr().err
    assert (filled, kernels, calls) == ([], 0, 0)


@pytest.mark.parametrize("sets, only, needle", [
    (["window=0"], "", "parameter 'window': 0"),
    (["n_sessions=-3"], "panel", "parameter 'n_sessions': -3"),
    (["temperature=nan"], "", "parameter 'temperature': nan"),
    (["history_window=-1"], "", "notebook cape.ipynb"),  # the sixth notebook: still before the first runs
    (["window=4000", "n_resamples=50"], "panel,onset", "parameter 'n_resamples': 50"),
    (["windw=4000"], "", "--set windw: no notebook"),
    (["margin=0.1"], "panel", "--set margin: no notebook of panel declares it"),
    (["window"], "", "--set takes KEY=VALUE"),
])
def test_paper_set_is_checked_for_every_notebook_before_anything_runs(paper, capsys, sets, only, needle):
    status, filled, (kernels, calls) = paper(*sets, only=only)
    assert status == 2 and needle in capsys.readouterr().err
    assert (filled, kernels, calls) == ([], 0, 0)


def test_paper_set_gives_each_notebook_the_keys_it_declares():
    shares = paper_cli.set_overrides(["targets=anthropic/claude-sonnet-4-5", "window=30000",
                                      "history_window=3", "n_items=0"], list(NOTEBOOKS))
    assert shares["panel"] == {"targets": "anthropic/claude-sonnet-4-5", "window": "30000"}
    assert shares["cape"] == {"targets": "anthropic/claude-sonnet-4-5", "history_window": "3", "n_items": "0"}
    assert shares["anchor"] == {"targets": "anthropic/claude-sonnet-4-5", "window": "30000", "n_items": "0"}


# ---------------------------------------------------------------- the notebook's own cell
def executed_until_error(name, parameters):
    """Run the committed notebook's cells in order in one namespace, with papermill's own
    injected-parameters cell (what a kernel would do, its input history ``In`` included);
    return (index of the failing cell, error)."""
    from papermill.iorw import load_notebook_node
    from papermill.parameterize import parameterize_notebook

    nb = parameterize_notebook(load_notebook_node(str(notebook_path(name))), parameters)
    namespace: dict = {"In": [""]}
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        namespace["In"].append(cell.source)
        try:
            exec(compile(cell.source, f"<cell {index}>", "exec"), namespace)
        except Exception as exc:  # noqa: BLE001 - the test inspects it
            return index, nb.cells, exc
    return None, nb.cells, None


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_the_notebooks_bind_cell_fails_before_the_run_cell(name, no_kernel):
    field, value = BAD_ONE[name]
    typed = {"n_sessions": -3, "window": 0, "steps": [0], "n_resamples": 0, "bridge_temperature": -5.0,
             "judges": [], "interventions": ["a_anchor"], "n_cutpoints": 0, "n_positions": -1, "items": [],
             "replicates": 0, "lengths": [0], "released": "no-such-folder"}[field]
    index, cells, exc = executed_until_error(name, {field: typed})
    assert isinstance(exc, ParameterError) and f"parameter '{field}'" in str(exc)
    assert cells[index].source.startswith("params = bind(")
    assert any("experiment.start(params)" in c.source for c in cells[index + 1:])  # never reached
    assert no_kernel()[1] == 0


def test_plain_papermill_fails_in_the_bind_cell_with_the_message(tmp_path):
    out = tmp_path / "out.ipynb"
    result = subprocess.run(
        [sys.executable, "-m", "papermill", str(REPO_ROOT / "notebooks" / "panel.ipynb"), str(out),
         "-p", "n_sessions", "-3", "-p", "targets", "fake/echo", "--no-progress-bar"],
        capture_output=True, text=True, timeout=240)
    assert result.returncode != 0
    assert "parameter 'n_sessions': -3 is out of range; valid: an integer >= 1, or 0 for all" in \
        result.stdout + result.stderr
    executed = nbformat.read(out, as_version=4)
    first_stage = next(c for c in executed.cells if "experiment.start(params)" in c.source)
    assert first_stage.execution_count is None  # no model call: the first stage never started


# ---------------------------------------------------------------- make <notebook>
@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_notebook_target_fails_with_the_message_before_the_kernel():
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT / "lib") + os.pathsep + os.environ.get("PYTHONPATH", "")}
    # -o: never rebuild the virtual environment from here; PY: this interpreter.
    result = subprocess.run(["make", "-s", "-o", ".venv/.installed", "panel", "SESSIONS=-3", "WINDOW=0",
                             f"PY={sys.executable}"], cwd=REPO_ROOT, env=env, capture_output=True, text=True,
                            timeout=240)
    assert result.returncode != 0
    assert "parameter 'n_sessions': -3 is out of range" in result.stderr
    assert "parameter 'window': 0 is out of range" in result.stderr
    assert "Error 2" in result.stderr  # the recipe's own exit status
    assert "panel: done" not in result.stdout


def test_a_notebooks_plan_cells_stop_at_a_placeholder_without_failing(tmp_path, monkeypatch, capsys):
    """Plain papermill ``-p plan true`` on an empty cache: CAPE's Table 1 needs the answers'
    option letters, which a plan has not got; its cell reports the stage not computed (as
    ``contextecho notebook --plan`` does) instead of raising, and the plan is written."""
    monkeypatch.setenv("CONTEXTECHO_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "cape"
    index, cells, exc = executed_until_error("cape", {"plan": True, "n_items": 5,
                                                       "bridge_positions": 1, "bridge_runs": 1,
                                                       "output_dir": str(out)})
    assert exc is None, (cells[index].source if index is not None else "", exc)
    printed = capsys.readouterr().out
    assert "not computed in this plan" in printed
    assert (out / "plan.json").is_file()
