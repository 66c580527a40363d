import argparse
import time

import pytest

import yaml

from contextecho.paper import manuscript
from contextecho.cli import paper as paper_cli


def _setup(tmp_path, monkeypatch, sections):
    generated = tmp_path / "paper" / "_generated"
    for name, variables in sections.items():
        (generated / name).mkdir(parents=True)
        (generated / name / "variables.yml").write_text(yaml.safe_dump(variables))
    (tmp_path / "paper" / "index.qmd").write_text("Gap {{< var panel.gap >}}, TAR {{< var cape.cf_tar_pct >}}.\n")
    monkeypatch.setattr(paper_cli, "GENERATED", generated)
    monkeypatch.setattr(manuscript, "VARIABLES_FILE", tmp_path / "_variables.yml")
    monkeypatch.setattr(manuscript, "PAPER_DIR", tmp_path / "paper")
    monkeypatch.setattr(manuscript.check_sources, "__defaults__",
                        (tmp_path / "paper", tmp_path / "_variables.yml"))
    monkeypatch.setattr(manuscript.write_variables, "__defaults__", (tmp_path / "_variables.yml",))
    return argparse.Namespace(check_only=True, only="", set=[], no_render=True)


def test_check_only_merges_the_notebooks_variables_and_checks(tmp_path, monkeypatch, capsys):
    args = _setup(tmp_path, monkeypatch, {"panel": {"panel": {"gap": 0.1}}, "cape": {"cape": {"cf_tar_pct": 50.0}}})
    assert paper_cli.run(args) == 0
    assert yaml.safe_load((tmp_path / "_variables.yml").read_text()) == {"panel": {"gap": 0.1}, "cape": {"cf_tar_pct": 50.0}}
    assert "resolves" in capsys.readouterr().out


def test_a_duplicate_key_or_a_dangling_variable_fails(tmp_path, monkeypatch, capsys):
    args = _setup(tmp_path, monkeypatch, {"panel": {"panel": {"gap": 0.1}}, "cape": {"panel": {"gap": 0.2}}})
    assert paper_cli.run(args) == 1
    assert "panel.gap" in capsys.readouterr().err
    args = _setup(tmp_path / "b", monkeypatch, {"panel": {"panel": {"gap": 0.1}}})
    assert paper_cli.run(args) == 1
    assert "'cape.cf_tar_pct' is not in" in capsys.readouterr().err


def test_paper_check_fails_on_a_planted_duplicate_identifier(tmp_path, monkeypatch, capsys):
    args = _setup(tmp_path, monkeypatch, {"panel": {"panel": {"gap": 0.1}}, "cape": {"cape": {"cf_tar_pct": 50.0}}})
    article = tmp_path / "paper" / "index.qmd"
    article.write_text("## Anchor {#sec-anchor}\n\n" + article.read_text() + "\n## ANCHOR {#sec-anchor}\n")
    assert paper_cli.run(args) == 1
    assert "paper/index.qmd:5: duplicate identifier #sec-anchor (first at paper/index.qmd:1)" in capsys.readouterr().err


def test_paper_check_fails_on_a_reference_to_a_missing_identifier(tmp_path, monkeypatch, capsys):
    args = _setup(tmp_path, monkeypatch, {"panel": {"panel": {"gap": 0.1}}, "cape": {"cape": {"cf_tar_pct": 50.0}}})
    article = tmp_path / "paper" / "index.qmd"
    article.write_text(article.read_text() + "\nAs @tbl-gone shows [@smith2020].\n")
    assert paper_cli.run(args) == 1
    assert "paper/index.qmd:3: cross-reference @tbl-gone has no {#tbl-gone} identifier in the document" in capsys.readouterr().err


def test_paper_check_fails_on_a_key_no_experiment_declares(tmp_path, monkeypatch, capsys):
    args = _setup(tmp_path, monkeypatch, {"panel": {"panel": {"gap": 0.1, "planted": 1}},
                                          "cape": {"cape": {"cf_tar_pct": 50.0}}})
    article = tmp_path / "paper" / "index.qmd"
    article.write_text(article.read_text() + "\nPlanted {{< var panel.planted >}}.\n")
    assert paper_cli.run(args) == 1
    assert "variable 'panel.planted' is not declared by the panel experiment" in capsys.readouterr().err


class FakeKernel:
    """A SharedKernel stand-in: what it was made with, and whether it started."""

    made: list["FakeKernel"] = []

    def __init__(self, cwd, env=None, kernel_name="python3", preload=()):
        self.env, self.preload, self.started = dict(env or {}), list(preload), False
        FakeKernel.made.append(self)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        pass

    def start(self):
        if self.env.get("FAKE_START_FAILS"):
            raise RuntimeError("no socket")
        self.started = True


def _lanes(tmp_path, monkeypatch, *, read_only, asks_a_model=(), dies=(), cache_holds=True, second_starts=True,
           todo=("panel", "cape", "anchor", "published")):
    """Run ``run_notebooks`` on fakes: every notebook of ``todo`` stale, those of ``read_only`` last
    run from the cache, those of ``asks_a_model`` asking one now; [(notebook, kernel)] as run."""
    from nbclient.exceptions import DeadKernelError
    from papermill import PapermillExecutionError

    from contextecho.engine import cache as cache_module
    from contextecho.engine.calls import CACHE_ONLY_ENV
    from contextecho.notebooks import freshness, runner
    from contextecho.sessions import corpus
    from contextecho.cli import data

    FakeKernel.made = []
    monkeypatch.setattr(paper_cli, "SharedKernel", FakeKernel)
    imported = []  # what this process imports for the manuscript check, in a thread beside one kernel
    monkeypatch.setattr(paper_cli, "experiment", imported.append)
    if not second_starts:
        monkeypatch.setattr(paper_cli, "PROGRESS_ENV", "FAKE_START_FAILS")  # the second kernel's env: its start fails
    monkeypatch.setattr(corpus, "fill_corpus", lambda: argparse.Namespace(copied=0, downloaded=0, present=1))
    monkeypatch.setattr(data, "fill_inventories", lambda: "inventories verified")
    monkeypatch.setattr(freshness, "shared_parts", lambda: {})
    monkeypatch.setattr(freshness, "inputs", lambda name, own, shared: freshness.Inputs(name, {}))
    monkeypatch.setattr(freshness, "stale", lambda now, folder: "changed since its last run: library")
    monkeypatch.setattr(freshness, "asked_no_model", lambda folder: folder.name in read_only)
    monkeypatch.setattr(freshness, "record", lambda now, folder: True)
    monkeypatch.setattr(cache_module, "holds_records", lambda: cache_holds)
    monkeypatch.setattr(paper_cli, "GENERATED", tmp_path / "paper" / "_generated")
    monkeypatch.setattr(runner, "output_folder", lambda name, own: tmp_path / "paper" / "_generated" / name)
    ran = []

    def run_notebook(name, own, *, kernel, console):
        if kernel.env.get(CACHE_ONLY_ENV) == "1" and name in dies:
            raise DeadKernelError("Kernel died")
        if kernel.env.get(CACHE_ONLY_ENV) == "1" and name in asks_a_model:
            raise PapermillExecutionError(3, 1, "frame = run.step(...)", "UncachedCall",
                                          f"round '{name}:targets': 2 of its 4 requests are not in the cache", [])
        if kernel.env.get(CACHE_ONLY_ENV) != "1":
            time.sleep(0.2)  # the first lane's notebooks take a while: the second takes what it may
        console[0].write(f"[{name}:targets] calls=4, cached=4\n")
        ran.append((name, "second" if kernel.env.get(CACHE_ONLY_ENV) == "1" else "first"))
        folder = tmp_path / "paper" / "_generated" / name
        return runner.NotebookRun(name, folder, folder / f"{name}.ipynb", 1.0)

    monkeypatch.setattr(runner, "run_notebook", run_notebook)
    first = FakeKernel(tmp_path)
    args = argparse.Namespace(plan=False, force=False)
    assert paper_cli.run_notebooks(args, list(todo), {name: {} for name in todo}, first) is None
    time.sleep(0.1)
    assert bool(imported) is not bool(FakeKernel.made[1].preload)  # where two kernels were to work: after them
    return ran, first, FakeKernel.made[1]


def test_notebooks_that_asked_no_model_run_beside_and_one_that_asks_one_is_handed_back(tmp_path, monkeypatch,
                                                                                       capsys):
    from contextecho.engine.calls import CACHE_ONLY_ENV

    ran, first, second = _lanes(tmp_path, monkeypatch, read_only={"cape", "published"}, asks_a_model={"published"})
    assert sorted(ran) == [("anchor", "first"), ("cape", "second"), ("panel", "first"), ("published", "first")]
    assert second.started and second.env[CACHE_ONLY_ENV] == "1" and first.started and CACHE_ONLY_ENV not in first.env
    assert second.preload == ["contextecho.experiments.cape", "contextecho.experiments.published"]
    out = capsys.readouterr().out
    assert ("[4/4] notebook published asks a model this time (round 'published:targets': 2 of its 4 requests are "
            "not in the cache); it runs in the first kernel") in out
    assert ("[2/4] notebook cape (changed since its last run: library; from the cache, in a second kernel) ...\n"
            "[cape:targets] calls=4, cached=4\n      cape: 1 s -> paper/_generated/cape\n") in out


@pytest.mark.parametrize("case", ["an empty cache", "one notebook to run", "none asked no model"])
def test_no_second_kernel_starts_where_it_could_not_help(tmp_path, monkeypatch, case):
    kwargs = {"an empty cache": dict(read_only={"cape"}, cache_holds=False),
              "one notebook to run": dict(read_only={"cape"}, todo=("cape",)),
              "none asked no model": dict(read_only=set())}[case]
    ran, first, second = _lanes(tmp_path, monkeypatch, **kwargs)
    assert not second.started and second.preload == [] and {lane for _, lane in ran} == {"first"}


def test_a_second_kernel_that_died_or_did_not_start_leaves_its_notebooks_to_the_first(tmp_path, monkeypatch, capsys):
    ran, _, second = _lanes(tmp_path, monkeypatch, read_only={"cape", "published"}, dies={"published"})
    assert sorted(ran) == [("anchor", "first"), ("cape", "second"), ("panel", "first"), ("published", "first")]
    assert "[4/4] notebook published lost the second kernel (Kernel died); it runs in the first kernel" in (
        capsys.readouterr().out)
    ran, _, second = _lanes(tmp_path, monkeypatch, read_only={"cape", "published"}, second_starts=False)
    assert not second.started and {lane for _, lane in ran} == {"first"} and len(ran) == 4
    assert "the second kernel did not start (RuntimeError: no socket); every notebook runs in the first" in (
        capsys.readouterr().out)
