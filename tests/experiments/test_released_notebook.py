"""A notebook under ``reference`` answered from the authors' released cells (``released``): a cell
the release holds is answered by it and nothing is sent; a cell it lacks is lost, counted and
said, never sent, unless ``fill`` asks the provider."""
from __future__ import annotations

import asyncio
import json

import pandas as pd
import pytest

from contextecho.echo.reference.released import ONSET_CELLS, PANEL_CELLS, import_release
from contextecho.echo.reference.released_answers import OTHER, NotInRelease, ReleasedClient, item_name
from contextecho.engine.model_request import ModelRequest
from contextecho.experiments.parameters import ParameterError, declared
from contextecho.notebooks import experiment
from contextecho.notebooks.build import NOTEBOOKS
from tests.conftest import JUDGE_LABELS, scripted_reply

TINY = dict(n_sessions=1, n_positions=2, probes=("C01",), stressors=("S2#01",), n_resamples=200, max_tokens=16,
            window=3000, judge_labels=str(JUDGE_LABELS))
ARMS = {"real": "claude_session", "filler": "filler"}


def _release(cells: pd.DataFrame, root, folder: str = PANEL_CELLS) -> dict[tuple, tuple[str, int | None]]:
    """An experiment's cells written in the harness's layout (probe files, a replicate after the
    first as ``_vNN``; the panel's S2 files) under ``root``/``folder``, each with a response and
    (a probe) a score of its own; -> identity: (text, score, path)."""
    written = {}
    for i, row in enumerate(cells.drop_duplicates("key").itertuples()):
        folder_at = root / folder / row.target.split("/", 1)[1] / row.position
        text = f"released answer {i}: ls -la"
        replicate = getattr(row, "replicate", 0)
        if row.item_kind == "probe":
            score = i % 4
            path = folder_at / ARMS[row.arm] / f"{row.item}{f'_v{replicate:02d}' if replicate else ''}.json"
            record = {"response_text": text, "response_len": len(text), "score": score, "label": f"label {score}",
                      "reason": f"reason {i}", "model_id": row.target.split("/", 1)[1]}
        else:
            score = None
            path = folder_at / f"v{int(item_name(row.item)[4:]):02d}" / f"{'claude' if row.arm == 'real' else 'filler'}.json"
            record = {"response_text": text, "response_len": len(text)}
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(record))
        written[(row.position, row.arm, row.item, replicate)] = (text, score, path)
    return written


@pytest.fixture
def live_provider(provider):
    """``rel/...``: the scripted models while ``live["on"]``; otherwise any call fails the test."""
    live = {"on": True}
    handler = provider("rel", lambda model, messages: scripted_reply(model, messages) if live["on"]
                       else AssertionError("a call was sent"))
    return handler, live


def test_the_panel_is_answered_from_the_release_and_sends_nothing(tmp_path, corpus_dir, live_provider, monkeypatch):
    handler, live = live_provider
    module = experiment("panel")
    params = dict(targets=("rel/command",), judges=("rel/judge",), protocol="reference", **TINY)
    asked = module.run(module.Parameters(**params, output_dir=str(tmp_path / "asked")))
    cells = pd.read_parquet(asked.output_dir / "results" / "cells.parquet")
    release = tmp_path / "release"
    written = _release(cells, release)
    assert len(written) == 8  # 2 positions x 2 arms x (C01, S2#01)

    def rerun(name: str, **more) -> tuple[pd.DataFrame, int]:
        monkeypatch.setenv("CONTEXTECHO_CACHE", str(tmp_path / f"cache-{name}"))  # nothing from the first run
        before = len(handler.seen)
        result = module.run(module.Parameters(**params, released=str(release), released_judge="rel/judge", **more,
                                              output_dir=str(tmp_path / name)))
        return pd.read_parquet(result.output_dir / "results" / "cells.parquet"), len(handler.seen) - before

    live["on"] = False
    frame, sent = rerun("released")
    assert sent == 0
    assert (frame["status"] == "ok").all()
    for row in frame.itertuples():
        text, score, _ = written[(row.position, row.arm, row.item, row.replicate)]
        assert row.response == text
        if row.item_kind == "probe":  # the judge's verdict is the released one, read back
            assert row.reference_score == score and row.reference_label == f"label {score}"

    # A cell the release lacks is lost and said, never sent
    lost = next(k for k, (_, score, _) in written.items() if score is not None)
    written[lost][2].unlink()
    frame, sent = rerun("lacking")
    assert sent == 0
    missing = frame[(frame["position"] == lost[0]) & (frame["arm"] == lost[1]) & (frame["item"] == lost[2])
                    & (frame["replicate"] == lost[3])]
    assert len(missing) == 1 and (missing["status"] == "error").all()
    assert (frame.drop(missing.index)["status"] == "ok").all()

    # fill: the lacking cell (its target and its judge) and the calibration go to the provider
    live["on"] = True
    frame, sent = rerun("filled", fill=True)
    assert sent == 2 + len(JUDGE_LABELS.read_text().splitlines())
    assert (frame["status"] == "ok").all()


def test_the_onset_is_answered_from_the_release_replicates_included(tmp_path, corpus_dir, live_provider,
                                                                    monkeypatch):
    """The onset's cells (e17's layout: ``T<step>`` positions, a replicate after the first as
    ``<probe>_vNN.json``) answered and judged from the release, nothing sent; the gaps are the
    released scores'."""
    handler, live = live_provider
    module = experiment("onset")
    params = dict(targets=("rel/command",), judges=("rel/judge",), protocol="reference", n_sessions=1,
                  steps=(1, 5), probes=("C01", "C02"), replicates=2, n_resamples=200, max_tokens=16, window=3000,
                  judge_labels=str(JUDGE_LABELS))
    asked = module.run(module.Parameters(**params, output_dir=str(tmp_path / "asked")))
    cells = pd.read_parquet(asked.output_dir / "results" / "cells.parquet")
    written = _release(cells, tmp_path / "release", ONSET_CELLS)
    assert len(written) == 2 * 2 * 2 * 2  # steps x arms x probes x replicates
    assert {p.parent.parent.name for _, _, p in written.values()} == {"T0001", "T0005"}
    assert any(p.name == "C01_v01.json" for _, _, p in written.values())

    live["on"] = False
    monkeypatch.setenv("CONTEXTECHO_CACHE", str(tmp_path / "cache-released"))
    before = len(handler.seen)
    result = module.run(module.Parameters(**params, released=str(tmp_path / "release"), released_judge="rel/judge",
                                          output_dir=str(tmp_path / "released")))
    assert len(handler.seen) == before
    frame = pd.read_parquet(result.output_dir / "results" / "cells.parquet")
    assert len(frame) == len(written) and (frame["status"] == "ok").all()
    for row in frame.itertuples():
        text, score, _ = written[(row.position, row.arm, row.item, row.replicate)]
        assert row.response == text and row.reference_score == score
    # the manifest counts the calibration the release cannot answer, and nothing failed besides
    manifest = json.loads((result.output_dir / "manifest.json").read_text())
    assert manifest["batches"]["onset:targets"]["failed"] == 0 and manifest["batches"]["onset:judges"]["failed"] == 0


def test_released_is_the_panel_s_and_the_onset_s_under_the_reference_protocol(tmp_path, scripted_models):
    """Only the experiments whose cells the authors released take it, and only under their protocol."""
    assert {name for name in NOTEBOOKS if "released" in declared(experiment(name).Parameters)} == \
        {"panel", "onset", "published"}
    (tmp_path / "release").mkdir()
    module = experiment("panel")
    with pytest.raises(ParameterError, match="not contextecho's .protocol reference"):
        module.run(module.Parameters(targets=("scripted/command",), judges=("scripted/judge",), n_sessions=1,
                                     protocol="contextecho", released=str(tmp_path / "release"),
                                     output_dir=str(tmp_path / "panel")))


def _cell_file(root, folder: str, target: str, score: int) -> None:
    path = root / folder / target / "P0_start" / "claude_session" / "C01.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"response_text": f"from {folder}", "response_len": 9, "score": score,
                                "label": "x", "reason": "y"}))


def test_the_client_reads_its_folders_only_and_names_a_litellm_target_by_its_model_id(tmp_path):
    _cell_file(tmp_path, PANEL_CELLS, "claude-x", 3)
    _cell_file(tmp_path, "results/drift_onset", "claude-x", 1)
    client = ReleasedClient(import_release(tmp_path), judge="anthropic/claude-judge", folders=(PANEL_CELLS,))
    assert client.n_cells == 1
    request = ModelRequest("anthropic/claude-x", ({"role": "user", "content": "hi"},), {"max_tokens": 8})

    class Cell:  # what the client reads of one of our cells
        target, position, arm, replicate, key = "anthropic/claude-x", "P0_start", "real", 0, request.key
        item = type("Item", (), {"id": "C01"})

    client.expect([Cell])
    reply = asyncio.run(client(request, {}))
    assert reply.choices[0].message.content == f"from {PANEL_CELLS}"
    other = ModelRequest("anthropic/claude-y", ({"role": "user", "content": "hi"},), {"max_tokens": 8})
    with pytest.raises(NotInRelease, match="that is no cell of the grid"):
        asyncio.run(client(other, {}))
    # a judge call on that cell is answered for the release's judge only
    def judged_by(model: str) -> ModelRequest:
        return ModelRequest(model, ({"role": "user", "content": "score it"},), {"max_tokens": 8},
                            tag={"cell": request.key})

    assert '"score": 3' in asyncio.run(client(judged_by("anthropic/claude-judge"), {})).choices[0].message.content
    with pytest.raises(NotInRelease):
        asyncio.run(client(judged_by("openai/gpt-4o"), {}))
    assert client.answered == {"target": 1, "judge": 1} and client.refused[OTHER] == 2
    assert "2 calls answered from 1 cells" in client.summary()
