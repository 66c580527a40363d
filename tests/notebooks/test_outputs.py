
import pandas as pd
import pytest
import yaml

from contextecho.paper.declared import Declared
from contextecho.paper.formats import COEFFICIENT, COUNT
from contextecho.paper.outputs import DuplicateVariableError, Outputs, merge_variables
from contextecho.paper.tables import Column, Table
from contextecho.paper.variables import Variable

DEMO = Declared(variables=(Variable("n", COUNT), Variable("share", COEFFICIENT), Variable("bad", COEFFICIENT)),
                tables=(Table("t", "A table", (Column("A", COUNT, "a"),)),))


def test_merge_joins_sections_and_fails_on_a_duplicate_key(tmp_path):
    a = tmp_path / "a.yml"
    b = tmp_path / "b.yml"
    c = tmp_path / "c.yml"
    a.write_text(yaml.safe_dump({"panel": {"gap": 0.1, "n": 3}}))
    b.write_text(yaml.safe_dump({"cape": {"tar": 50.0}, "panel": {"other": 1}}))
    c.write_text(yaml.safe_dump({"panel": {"gap": 0.2}}))
    assert merge_variables([a, b]) == {"panel": {"gap": 0.1, "n": 3, "other": 1}, "cape": {"tar": 50.0}}
    with pytest.raises(DuplicateVariableError, match="panel.gap"):
        merge_variables([a, b, c])


def test_a_leaf_and_a_section_with_the_same_name_collide(tmp_path):
    a = tmp_path / "a.yml"
    b = tmp_path / "b.yml"
    a.write_text(yaml.safe_dump({"panel": 1}))
    b.write_text(yaml.safe_dump({"panel": {"gap": 1}}))
    with pytest.raises(DuplicateVariableError):
        merge_variables([a, b])


def test_outputs_write_every_kind_and_refuse_nan_variables(tmp_path):
    import matplotlib.pyplot as plt

    out = Outputs.open("demo", tmp_path / "demo", DEMO)
    out.parquet("cells", pd.DataFrame({"a": [1, 2], "params": [{"t": 0}, {"t": 1}]}))
    fig, ax = plt.subplots()
    ax.plot([0, 1])
    out.figure("line", fig)
    out.table("t", pd.DataFrame({"a": [1]}))
    out.set(n=3, share=0.5)
    with pytest.raises(ValueError, match="demo.bad: .*missing.*say why"):
        out.set(bad=float("nan"))
    out.write_variables()
    root = tmp_path / "demo"
    for rel in ("results/cells.parquet", "figures/line.png", "figures/line.pdf", "tables/t.md"):
        assert (root / rel).is_file(), rel
    assert yaml.safe_load((root / "variables.yml").read_text()) == {"demo": {"n": 3, "share": "0.50"}}
    assert (root / "tables" / "t.md").read_text() == "| A |\n|-----:|\n| 1 |\n"
    assert out.manifest == root / "manifest.json"  # where the run log goes
    # A second run starts from an empty folder (stale figures do not survive).
    Outputs.open("demo", root)
    assert not (root / "figures" / "line.png").exists()
