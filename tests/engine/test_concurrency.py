"""Several processes on one cache, with real processes: shared calls are paid once, a
killed writer loses only its calls in flight and leaves an incomplete manifest, adopting
dead journals is safe when several processes start at once, and ``cache`` only reads.

Provider calls are counted across processes through the fake provider's call log
(``CONTEXTECHO_FAKE_CALL_LOG``: one O_APPEND line per attempt)."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from contextecho.engine.cache import CacheWarning, CallCache
from contextecho.engine.calls import Transport, generate
from contextecho.engine.record import OK, CallRecord
from contextecho.engine.fake_model import CALL_LOG_ENV

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
from round_runner import CONCURRENCY, requests, spawn  # noqa: E402


def shard_keys(root: Path) -> list[str]:
    return [k for s in (root / "records").glob("*.parquet") for k in pq.read_table(s).column("key").to_pylist()]


def journal_lines(root: Path) -> int:
    """Lines in the journals now; a journal renamed between listing and reading (a writer
    starting or ending one) counts as empty this time round."""
    def lines(path: Path) -> int:
        try:
            return len(path.read_bytes().splitlines())
        except FileNotFoundError:
            return 0
    return sum(lines(p) for p in (root / "journal").glob("*.jsonl"))


def logged_calls(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


def runner(root: Path, start: int, stop: int, *extra: str):
    """A round runner in a process of its own (``round_runner.spawn``)."""
    return spawn(str(root), str(start), str(stop), *extra)


def finished(process, timeout: float) -> int | None:
    """``process``'s exit code once it has ended (negative: the signal that ended it)."""
    process.join(timeout)
    return process.exitcode


@pytest.fixture
def call_log(tmp_path, monkeypatch) -> Path:
    log = tmp_path / "calls.log"
    monkeypatch.setenv(CALL_LOG_ENV, str(log))  # the runner processes inherit it
    return log


def test_two_writers_with_200_shared_keys_pay_once_for_each(tmp_path, call_log):
    """400 keys each, 200 of them shared and asked first by both at the same moment:
    600 provider calls (each process reading the index only at start would make 800)."""
    root, go = tmp_path / "cache", tmp_path / "go"
    procs = [runner(root, 0, 400, "200", str(go)), runner(root, 200, 600, "200", str(go))]
    deadline = time.time() + 120
    while len(list(tmp_path.glob("go.*.ready"))) < 2 and time.time() < deadline:
        time.sleep(0.05)
    go.touch()  # both imported and waiting: start together
    assert [finished(p, 300) for p in procs] == [0, 0]
    calls = logged_calls(call_log)
    per_process = sorted(sum(1 for c in calls if c.startswith(f"{p.pid} ")) for p in procs)
    print(f"RESULT two writers, 400 keys each, 200 shared: {len(calls)} provider calls "
          f"(per process {per_process})")
    assert len(calls) == 600
    assert sorted(shard_keys(root)) == sorted({r.key for r in requests(0, 600)})  # each request once
    cache = CallCache(root)
    assert len(cache) == 600 and cache.n_errors == 0
    # Both worked on the shared keys: neither merely waited for the other to finish.
    assert min(per_process) > 200


@pytest.mark.parametrize("trial", range(10))
def test_a_killed_writer_loses_only_its_calls_in_flight_and_leaves_an_incomplete_manifest(
        tmp_path, call_log, trial):
    root, n = tmp_path / "cache", 40
    proc = runner(root, 0, n)
    want = 3 + 2 * trial  # kill at a different point of the round in each trial
    deadline = time.time() + 120
    while journal_lines(root) < want:
        assert time.time() < deadline and proc.is_alive(), "the runner never got going"
        time.sleep(0.01)
    os.kill(proc.pid, signal.SIGKILL)
    assert finished(proc, 60) == -signal.SIGKILL
    made = len(logged_calls(call_log))
    runs = Path(os.environ["CONTEXTECHO_RUNS"])
    manifest, = [json.loads(p.read_text()) for p in runs.glob("*-round-runner-*.json")]
    assert manifest["status"] == "incomplete" and manifest["finished"] is None
    assert manifest["n_requests"] == n and manifest["pid"] == proc.pid

    survived = CallCache(root)  # adopts the dead writer's journal
    kept = len(survived)
    assert survived.report.adopted_journals == 1 and kept >= want
    lost = made - kept
    assert 0 <= lost <= CONCURRENCY, f"{made} calls made, {kept} kept"  # only the calls in flight
    resumed = generate(requests(0, n), cache=survived, transport=Transport(concurrency=8), progress=False,
                       name="resume")
    survived.close()
    assert resumed.n_hits == kept and resumed.n_errors == 0
    assert len(logged_calls(call_log)) - made == n - kept  # the resume asks only what was missing
    assert resumed.manifest["status"] == "complete"
    keys = shard_keys(root)
    assert len(keys) == len(set(keys)) == n  # every request once: nothing lost, nothing twice
    print(f"RESULT kill trial {trial}: {made} calls before SIGKILL, {kept} kept, {lost} lost in flight, "
          f"{n - kept} asked on resume")


OPENER = """
import os, sys, time
from pathlib import Path
from contextecho.engine.cache import CacheWarning, CallCache
go = Path(sys.argv[2])
Path(f"{go}.{os.getpid()}.ready").touch()
while not go.exists():
    time.sleep(0.005)
cache = CallCache(sys.argv[1])
print(len(cache))
"""


def test_several_processes_adopting_the_same_dead_journals_at_once_do_not_crash(tmp_path):
    root = tmp_path / "cache"
    n_journals, per_journal = 120, 5
    (root / "journal").mkdir(parents=True)
    for j in range(n_journals):  # journals of writers that died (nobody holds their lock)
        (root / "journal" / f"{j}-dead.jsonl").write_text("".join(
            json.dumps(CallRecord(key=f"k{i:06d}", model="m", request_json="{}", status=OK,
                                  response_text=f"a{i}").to_row()) + "\n"
            for i in range(j * per_journal, (j + 1) * per_journal)))
    go = tmp_path / "go"
    procs = [subprocess.Popen([sys.executable, "-c", OPENER, str(root), str(go)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(6)]
    deadline = time.time() + 120
    while len(list(tmp_path.glob("go.*.ready"))) < len(procs) and time.time() < deadline:
        time.sleep(0.05)
    go.touch()  # all imported and waiting: start together
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0] * 6, [err for _, err in outs]
    # Each opener sees every cell, whichever process adopted which journal.
    assert [out.strip() for out, _ in outs] == [str(n_journals * per_journal)] * 6
    assert not list((root / "journal").glob("*.jsonl"))
    keys = shard_keys(root)
    assert len(keys) == len(set(keys)) == n_journals * per_journal  # each journal adopted once
    assert len(CallCache(root)) == n_journals * per_journal


def test_the_cache_command_only_reads(tmp_path):
    root = tmp_path / "cache"
    with CallCache(root) as cache:
        cache.put(CallRecord(key="in-shard", model="m", request_json="{}", status=OK, response_text="x"))
    journal = root / "journal"
    good = json.dumps(CallRecord(key="in-journal", model="m", request_json="{}", status=OK,
                                 response_text="y").to_row()) + "\n"
    (journal / "111-dead.jsonl").write_text(good)
    (journal / "222-dead.jsonl").write_text("{damaged\n{also damaged\n")
    before = {p.name: p.read_bytes() for p in root.rglob("*") if p.is_file()}
    out = subprocess.run([sys.executable, "-m", "contextecho", "cache", "--dir", str(root)],
                         capture_output=True, text=True, timeout=120)
    assert {p.name: p.read_bytes() for p in root.rglob("*") if p.is_file()} == before  # nothing written
    assert "records 2 ok" in out.stdout and "222-dead.jsonl:1" in out.stdout, out.stdout + out.stderr
    assert "not adopted" in out.stdout


def test_a_journal_whose_lines_are_all_damaged_is_kept_not_deleted(tmp_path):
    journal = tmp_path / "journal"
    journal.mkdir(parents=True)
    (journal / "333-dead.jsonl").write_text("{damaged\n{also damaged\n")
    with pytest.warns(CacheWarning) as caught:
        cache = CallCache(tmp_path)
    assert sorted(str(w.message).split(": ")[0].rsplit(":", 1)[1] for w in caught) == ["1", "2"]
    assert cache.report.bad_journal_lines == 2 and len(cache) == 0
    assert (journal / "333-dead.jsonl.damaged").read_text() == "{damaged\n{also damaged\n"
    assert not list(journal.glob("*.jsonl"))  # not adopted again by the next writer


def test_a_reader_sees_what_another_writer_added_after_it_opened(tmp_path):
    reader = CallCache(tmp_path)
    writer = CallCache(tmp_path)
    writer.put(CallRecord(key="a", model="m", request_json="{}", status=OK, response_text="x"))
    assert reader.lookup("a") is None and reader.refresh() == 1 and reader.lookup("a").ok
    writer.put(CallRecord(key="b", model="m", request_json="{}", status=OK, response_text="y"))
    writer.flush()  # journal -> shard: b is read from whichever the reader finds
    assert reader.refresh() >= 1 and reader.lookup("b").response_text == "y"
    assert reader.refresh() == 0


def test_a_claimed_key_cannot_be_claimed_twice_until_released(tmp_path):
    one, two = CallCache(tmp_path), CallCache(tmp_path)
    claim = one.try_claim("k")
    assert claim is not None and two.try_claim("k") is None and two.is_claimed("k")
    claim.release()
    assert not two.is_claimed("k") and not (tmp_path / "claims" / "k").exists()
    again = two.try_claim("k")
    assert again is not None
    again.release()
