"""Declared manuscript keys: templates with fields, per-target keys, and a writer that
refuses anything undeclared and formats each value by its declared kind."""
import math

import pandas as pd
import pytest
import yaml

from contextecho.paper.declared import Declared, UndeclaredError, undeclared_keys
from contextecho.paper.formats import COUNT, PERCENT, POINTS, P_VALUE, TEXT, interval
from contextecho.paper.outputs import Outputs
from contextecho.paper.variables import NO_ESTIMATE, Variable, by_target, reasons, target_slug

DECLARED = Declared(variables=(
    Variable("gap_{target}", POINTS), Variable("gap_ci_{target}", interval(POINTS)),
    Variable("gap_{score}_{target}", POINTS, score=("discrete", "expected")),
    Variable("held_{source}_{axis}", POINTS, source=("real", "fork"), axis=("role", "style")),
    Variable("n_cells", COUNT), Variable("agree_pct", PERCENT), Variable("perm_p", P_VALUE), Variable("note", TEXT)))


def writer(tmp_path) -> Outputs:
    return Outputs.open("demo", tmp_path / "demo", DECLARED)


def test_a_template_names_its_fields_and_expands_to_keys():
    v = DECLARED.variable("gap_{score}_{target}")
    assert v.fields == ("score", "target") and v.per_target
    assert v.key(score="expected", target="openai/gpt-4o") == "gap_expected_openai_gpt_4o"
    assert v.key(score="expected") == "gap_expected"  # the first target's, unsuffixed
    with pytest.raises(ValueError, match="score 'mean' is not one of discrete, expected"):
        v.key(score="mean", target="x/y")
    with pytest.raises(ValueError, match="takes the fields"):
        DECLARED.variable("held_{source}_{axis}").key(source="real")
    assert target_slug("hosted_vllm/Qwen/Qwen2.5-7B-Instruct") == "hosted_vllm_qwen_qwen2_5_7b_instruct"


@pytest.mark.parametrize("template, kind, domains, message", [
    ("gap_{target}_x", POINTS, {}, "comes last"),
    ("gap_{score}", POINTS, {}, "give the values of every field"),
    ("Gap", POINTS, {}, "lower-case"),
    ("agree_pct", POINTS, {}, "ends '_pct' exactly when it is a percentage"),
    ("agree", PERCENT, {}, "ends '_pct' exactly when it is a percentage"),
])
def test_a_malformed_declaration_is_refused(template, kind, domains, message):
    with pytest.raises(ValueError, match=message):
        Variable(template, kind, **domains)


def test_declared_keys_match_their_patterns_and_nothing_else():
    assert DECLARED.declares("gap") and DECLARED.declares("gap_local_smollm2_135m")
    assert DECLARED.declares("gap_expected_openai_gpt_4o") and DECLARED.declares("held_fork_style")
    assert not DECLARED.declares("held_fork_tone") and not DECLARED.declares("gaps")
    assert not DECLARED.declares("n_cells_x")
    with pytest.raises(ValueError, match="declared twice"):
        Declared(variables=(Variable("n", COUNT),)) + Declared(variables=(Variable("n", COUNT),))


def test_the_writer_refuses_an_undeclared_key_and_formats_by_kind(tmp_path):
    out = writer(tmp_path)
    with pytest.raises(UndeclaredError, match="variable 'n_cell' is not declared"):
        out.set(n_cell=3)
    with pytest.raises(UndeclaredError, match="not declared"):
        out.put("gap_{arm}_{target}", 0.1, arm="real", target="x/y")
    with pytest.raises(ValueError, match="takes the fields score, target"):
        out.set(**{"gap_{score}_{target}": 0.1})
    out.set(n_cells=24.0, agree_pct=12.345, perm_p=0.04938, note="as is")
    out.put("held_{source}_{axis}", 2 / 3, source="fork", axis="role")
    out.put("held_{source}_{axis}", math.nan, source="real", axis="role", why="no valid verdict")
    with pytest.raises(ValueError, match=r"demo.held_real_style: .*say why"):
        out.put("held_{source}_{axis}", None, source="real", axis="style")
    assert out.variables == {"n_cells": 24, "agree_pct": "12.3%", "perm_p": "0.0494", "note": "as is",
                             "held_fork_role": "0.67", "held_real_role": "not estimable (no valid verdict)"}
    out.write_variables()
    assert yaml.safe_load((tmp_path / "demo" / "variables.yml").read_text())["demo"]["agree_pct"] == "12.3%"


def test_per_target_keys_every_target_and_names_the_first_unsuffixed(tmp_path):
    out = writer(tmp_path)
    values = {"openai/gpt-4o": {"gap_{target}": 0.3}, "local/smollm2-135m": {"gap_{target}": 0.1,
                                                                            "gap_ci_{target}": (0.0, 1.0)}}
    out.per_target(("gap_{target}", "gap_ci_{target}"), values, ("local/smollm2-135m", "openai/gpt-4o", "x/none"),
                   {"x/none": "arm 'filler' has no valid verdict"})
    # A value a target lacks says why: its own reason, else the generic one; never a bare n/a.
    generic = f"not estimable ({NO_ESTIMATE})"
    assert out.variables == {"gap_local_smollm2_135m": "0.10", "gap_ci_local_smollm2_135m": "[0.00, 1.00]",
                             "gap": "0.10", "gap_ci": "[0.00, 1.00]",
                             "gap_openai_gpt_4o": "0.30", "gap_ci_openai_gpt_4o": generic,
                             "gap_x_none": "not estimable (arm 'filler' has no valid verdict)",
                             "gap_ci_x_none": "not estimable (arm 'filler' has no valid verdict)"}
    out.per_target(("gap_{score}_{target}",), {"x/y": {"gap_{score}_{target}": -0.25}}, ("x/y",), score="expected")
    assert out.variables["gap_expected_x_y"] == out.variables["gap_expected"] == "\u22120.25"
    with pytest.raises(ValueError, match="not per target"):
        out.per_target(("n_cells",), {}, ("x/y",))


def test_rows_by_target_and_the_reasons_of_failed_rows():
    table = pd.DataFrame({"target": ["a", "a", "b", "c"], "estimate": [0.5, None, 0.1, None],
                          "lo": [0.1, None, None, None], "hi": [0.9, None, None, None],
                          "note": ["", "not estimable: arm 'filler' has no valid verdict", "",
                                   "TOST not estimable: 1 unit"]})
    got = by_target(table.iloc[[0, 2, 3]], {"gap_{target}": "estimate", "gap_ci_{target}": ("lo", "hi")})
    assert got == {"a": {"gap_{target}": 0.5, "gap_ci_{target}": (0.1, 0.9)}, "b": {"gap_{target}": 0.1}, "c": {}}
    assert reasons(table) == {"a": "arm 'filler' has no valid verdict", "c": "1 unit"}
    assert reasons(pd.DataFrame()) == {}


def test_the_manuscript_check_finds_an_undeclared_key(tmp_path):
    qmd = tmp_path / "index.qmd"
    qmd.write_text("Gap {{< var demo.gap_openai_gpt_4o >}}, {{< var demo.held_fork_role >}}, "
                   "{{< var paper.build >}}.\nA planted {{< var demo.gap_planted_x >}}{{< var demo.kappa >}} "
                   "and {{< var other.n >}}.\n")
    problems = undeclared_keys([qmd], {"demo": DECLARED}, {"paper": ("build",)})
    assert problems == [f"{qmd}:2: variable 'demo.kappa' is not declared by the demo experiment",
                        f"{qmd}:2: variable 'other.n': no experiment writes the section 'other'"]
