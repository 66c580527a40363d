"""Counts beyond what the data holds are refused, never silently capped: more sessions than
the corpus has (``n_sessions``), more positions than any chosen session offers
(``n_positions``); each a RangeError naming the parameter and its valid range, raised
where the run reads the data (sessions at the run's start, positions when its cells are
built), before any target call; ``contextecho notebook`` exits 2 on it, as on any other
parameter error."""
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from contextecho.engine.calls import ModelConfigError
from contextecho.echo.protocol import Positions
from contextecho.echo.protocols import protocol as get
from contextecho.engine.paths import REPO_ROOT
from contextecho.experiments import panel, selection
from contextecho.experiments.parameters import ParameterError, RangeError
from contextecho.notebooks import notebook_path
from contextecho.notebooks.runner import _configuration_error

HUGE = 100_000_000
PROBES = ["C01"]


def highest(message: str) -> int:
    """The upper bound a range message gives: ``... <= <what> (<n>)``."""
    return int(re.search(r"<= [^;]*?\((\d+)\)(, or 0 for all)?$", message.splitlines()[-1]).group(1))


@pytest.mark.parametrize("protocol", ["reference", "contextecho"])
def test_more_sessions_than_the_corpus_has_is_refused(corpus_dir, protocol):
    with pytest.raises(RangeError) as caught:
        selection.select_sessions(HUGE, protocol=get(protocol))
    message = str(caught.value)
    assert f"parameter 'n_sessions': {HUGE} is out of range; valid: an integer >= 1 and <= the usable " \
           f"sessions of the corpus for this selection (protocol {protocol})" in message
    assert message.endswith(", or 0 for all")
    most = highest(message)
    with pytest.raises(RangeError):
        selection.select_sessions(most + 1, protocol=get(protocol))  # the bound is exact: one more fails ...
    assert len(selection.select_sessions(0, protocol=get(protocol))) == most  # ... and "all" is that many


def _params(protocol: str, n_positions: int) -> panel.Parameters:
    return panel.Parameters(targets=("fake/echo",), judges=("fake/echo",), protocol=protocol, n_positions=n_positions,
                            probes=tuple(PROBES), stressors=(), window=2000)


def _build(p: panel.Parameters, sessions):
    # the panel's own call (panel.grid)
    return selection.build(get(p.protocol), p, "panel", sessions, PROBES, positions=Positions("panel", n=p.n_positions))


def test_more_reference_positions_than_a_session_offers_is_refused(corpus_dir):
    sessions = selection.select_sessions(2, protocol=get("reference"))
    with pytest.raises(RangeError) as caught:
        _build(_params("reference", HUGE), sessions)
    message = str(caught.value)
    assert f"parameter 'n_positions': {HUGE} is out of range; valid: an integer >= 1 and <= the most panel " \
           "positions a chosen session offers (S1 " in message
    most = highest(message)
    per_session = [int(n) for n in re.findall(r"S\d (\d+)", message)]
    assert len(per_session) == 2 and most == max(per_session)
    cells = _build(_params("reference", most), sessions)  # the bound itself is fine: each session gives
    by_session = {}                                        # its first `most` positions, or all it has
    for cell in cells:
        by_session.setdefault(cell.session, set()).add(cell.position)
    assert sorted(len(v) for v in by_session.values()) == sorted(min(n, most) for n in per_session)
    with pytest.raises(RangeError):
        _build(_params("reference", most + 1), sessions)


def test_more_uniform_positions_than_agent_steps_is_refused_at_once(corpus_dir):
    session, = selection.select_sessions(1, protocol=get("contextecho"))
    start = time.perf_counter()
    with pytest.raises(RangeError) as caught:
        _build(_params("contextecho", HUGE), [session])
    assert time.perf_counter() - start < 5  # refused before a hundred million positions are computed
    assert f"parameter 'n_positions': {HUGE} is out of range; valid: an integer >= 1 and <= the most agent " \
           f"steps a chosen session offers (S1 {session.n_agent_steps}) ({session.n_agent_steps})" in str(caught.value)
    with pytest.raises(RangeError):
        _build(_params("contextecho", session.n_agent_steps + 1), [session])
    assert {c.position for c in _build(_params("contextecho", 3), [session])} == {"u01", "u02", "u03"}


def test_the_runner_maps_a_kernels_configuration_errors_to_its_own():
    assert _configuration_error("RangeError") is ParameterError
    assert _configuration_error("ParameterError") is ParameterError
    assert _configuration_error("ModelConfigError") is ModelConfigError
    assert _configuration_error("ValueError") is None and _configuration_error("KeyError") is None
    # any other error the user fixes (cape without a reviewed paraphrase file): one message, exit 2
    from contextecho.cape.factors import MissingParaphrases  # noqa: F401 (its class is looked up by name)
    from contextecho.engine.usage import UsageError

    assert _configuration_error("MissingParaphrases") is UsageError


@pytest.mark.corpus
@pytest.mark.timeout(600)
def test_contextecho_notebook_exits_2_and_plain_papermill_stops_before_any_call(corpus_dir, tmp_path):
    """A real kernel: the grid cell refuses ``n_positions 100000000`` before any target call."""
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT / "lib") + os.pathsep + os.environ.get("PYTHONPATH", "")}
    args = ["-p", "targets", "fake/echo", "-p", "judges", "fake/echo", "-p", "n_sessions", "1",
            "-p", "n_positions", str(HUGE)]
    ours = subprocess.run([sys.executable, "-m", "contextecho", "notebook", "panel", *args,
                           "--output-dir", str(tmp_path / "ours")], capture_output=True, text=True, env=env,
                          cwd=REPO_ROOT, timeout=300)
    assert ours.returncode == 2, ours.stderr[-3000:]
    assert f"contextecho notebook: notebook panel.ipynb: out-of-range parameter(s) for panel:\n  " \
           f"parameter 'n_positions': {HUGE} is out of range" in ours.stderr
    assert "Traceback" not in ours.stderr
    plain = subprocess.run([sys.executable, "-m", "papermill", str(notebook_path("panel")),
                            str(tmp_path / "plain.ipynb"), *args, "-p", "output_dir", str(tmp_path / "plain"),
                            "--no-progress-bar"],
                           capture_output=True, text=True, env=env, cwd=REPO_ROOT, timeout=300)
    assert plain.returncode == 1  # papermill's own status for any failed cell (README)
    assert f"parameter 'n_positions': {HUGE} is out of range" in plain.stdout + plain.stderr
    # No target was asked, no cell judged (only a judges' calibration may run before the grid).
    batches = [p.name for p in Path(os.environ["CONTEXTECHO_RUNS"]).glob("*.json")]
    assert all("panel:calibration" in name for name in batches), batches
