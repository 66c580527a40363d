"""A notebook whose outputs are what a run would write again is not run (``contextecho paper``):
the stamp a repeatable run leaves, and every reason it is not enough."""
import json

import pytest

from contextecho.notebooks import freshness
from contextecho.notebooks.freshness import STAMP, Inputs, asked_no_model, inputs, record, stale


def finished(folder, *, status="complete", failed=0, computed=0):
    (folder / "results").mkdir(parents=True, exist_ok=True)
    (folder / "results" / "cells.parquet").write_bytes(b"PAR1...")
    (folder / "variables.yml").write_text("n: 3\n")
    (folder / "manifest.json").write_text(json.dumps(
        {"status": status, "batches": {"x:targets": {"calls": 4, "cached": 4 - failed - computed, "failed": failed,
                                                     "computed": computed}, "x:judges": {"calls": 0}}}))
    return folder


NOW = Inputs("panel", {"notebook": "a", "library": "b", "data": "c"})


def test_a_complete_run_without_failed_calls_is_stamped_and_then_up_to_date(tmp_path):
    folder = finished(tmp_path / "panel")
    assert stale(NOW, folder) == "no record of a repeatable run"
    assert record(NOW, folder) is True
    stamp = json.loads((folder / STAMP).read_text())
    assert stamp["inputs"] == dict(NOW.parts) and set(stamp["outputs"]) == {
        "manifest.json", "variables.yml", "results/cells.parquet"}
    assert stale(NOW, folder) is None
    freshness.forget(folder)  # what `contextecho paper` does before it runs the notebook again
    assert stale(NOW, folder) == "no record of a repeatable run"


@pytest.mark.parametrize("change, why", [
    (lambda f: None, None),
    (lambda f: (f / "variables.yml").write_text("n: 4\n"), "its outputs are not those its last run wrote"),
    (lambda f: (f / "results" / "cells.parquet").unlink(), "its outputs are not those its last run wrote"),
    (lambda f: (f / "figures").mkdir() or (f / "figures" / "new.png").write_bytes(b"x"),
     "its outputs are not those its last run wrote"),
    (lambda f: (f / STAMP).write_text("{not json"), "no record of a repeatable run"),
])
def test_outputs_changed_after_the_run_make_it_stale(tmp_path, change, why):
    folder = finished(tmp_path / "panel")
    record(NOW, folder)
    change(folder)
    assert stale(NOW, folder) == why


def test_each_changed_part_of_the_inputs_is_named(tmp_path):
    folder = finished(tmp_path / "panel")
    record(NOW, folder)
    later = Inputs("panel", {**NOW.parts, "library": "B", "environment": "e"})
    assert stale(later, folder) == "changed since its last run: environment, library"


@pytest.mark.parametrize("status, failed, why", [
    ("complete", 2, "its last run has 2 failed call(s), which a run again calls again"),
    ("incomplete", 0, "its last run is incomplete"),
])
def test_a_run_that_a_run_again_would_not_repeat_is_not_stamped(tmp_path, status, failed, why):
    folder = finished(tmp_path / "panel")
    record(NOW, folder)  # an earlier repeatable run's stamp goes with the run that replaced it
    finished(folder, status=status, failed=failed)
    assert record(NOW, folder) is False and not (folder / STAMP).exists()
    assert stale(NOW, folder) == "no record of a repeatable run"
    (folder / STAMP).write_text(json.dumps({"inputs": dict(NOW.parts), "outputs": freshness._outputs(folder)}))
    assert stale(NOW, folder) == why  # a stamp that does not hold is not believed


def test_the_inputs_follow_the_library_the_data_the_overrides_and_the_environment(tmp_path, monkeypatch):
    library, data = tmp_path / "lib", tmp_path / "data"
    (library / "__pycache__").mkdir(parents=True)
    (library / "a.py").write_text("x = 1\n")
    (data / "corpus").mkdir(parents=True)
    (data / "mpi.csv").write_text("id\n1\n")
    monkeypatch.setattr(freshness, "LIBRARY", library)
    monkeypatch.setattr(freshness, "data_dir", lambda: data)
    monkeypatch.delenv("CONTEXTECHO_THREADS", raising=False)
    first = inputs("panel", {"window": 3000})

    def changed(**kwargs):
        return inputs("panel", kwargs.get("overrides", {"window": 3000})).changed(first.parts)

    assert changed() == []
    (library / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"compiled")
    assert changed() == []  # compiled files are not the code
    assert changed(overrides={"window": 4000}) == ["overrides"]
    (library / "a.py").write_text("x = 2\n")
    assert changed() == ["library"]
    (library / "a.py").write_text("x = 1\n")
    (data / "mpi.csv").write_text("id\n2\n")
    assert changed() == ["data"]
    (data / "mpi.csv").write_text("id\n1\n")
    (data / "corpus" / "extra.jsonl").write_text("{}\n")
    assert changed() == ["corpus"]  # a session added to the corpus folder is read
    import os
    os.utime(data / "corpus" / "extra.jsonl", ns=(1, 1))
    added = inputs("panel", {"window": 3000})
    (data / "corpus" / "extra.jsonl").write_text("[]\n")  # the same size, written again
    assert inputs("panel", {"window": 3000}).changed(added.parts) == ["corpus"]
    (data / "corpus" / "extra.jsonl").unlink()
    (data / "released" / "v1.0").mkdir(parents=True)
    (data / "released" / "v1.0" / "cell.json").write_text("{}")
    assert changed() == []  # the release is not hashed each run: no notebook reads it
    monkeypatch.setenv("CONTEXTECHO_THREADS", "1")
    assert changed() == ["environment"]
    monkeypatch.delenv("CONTEXTECHO_THREADS")
    monkeypatch.setenv("SOMEPROVIDER_API_KEY", "sk-planted")
    assert changed() == ["environment"]
    assert "sk-planted" not in json.dumps(dict(inputs("panel", {"window": 3000}).parts))


@pytest.mark.parametrize("status, computed, failed, asked", [
    ("complete", 0, 0, True), ("complete", 1, 0, False), ("complete", 0, 1, False), ("failed", 0, 0, False)])
def test_a_run_asked_no_model_where_it_completed_answered_wholly_from_the_cache(tmp_path, status, computed, failed,
                                                                              asked):
    assert asked_no_model(finished(tmp_path / "x", status=status, computed=computed, failed=failed)) is asked
    assert not asked_no_model(tmp_path / "never-run")
    (tmp_path / "x" / "manifest.json").write_text("{not json")
    assert not asked_no_model(tmp_path / "x")
