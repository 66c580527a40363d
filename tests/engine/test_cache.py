import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from contextecho.engine.cache import CacheWarning, CallCache, holds_records
from contextecho.engine.record import ERROR, OK, CallRecord
from contextecho.engine.model_request import ModelRequest

HERE = Path(__file__).parent


def ok(key: str, text: str = "fine") -> CallRecord:
    return CallRecord(key=key, model="fake/echo", request_json="{}", status=OK, response_text=text,
                      prompt_tokens=3, completion_tokens=1)


def err(key: str) -> CallRecord:
    return CallRecord(key=key, model="fake/echo", request_json="{}", status=ERROR,
                      error_type="RateLimitError", error_message="429")


def all_shard_keys(root: Path) -> list[str]:
    return [k for shard in sorted((root / "records").glob("*.parquet"))
            for k in pq.read_table(shard, columns=["key"]).column("key").to_pylist()]


def test_a_stored_success_is_a_hit_then_and_after_reopening(tmp_path):
    # How ``agenerate`` uses the cache: look up, compute and put on a miss, look up again.
    request = ModelRequest("fake/echo", [{"role": "user", "content": "hi"}])
    with CallCache(tmp_path) as cache:
        assert cache.lookup(request.key) is None and request.key not in cache
        first = ok(request.key, "computed")
        cache.put(first)
        assert cache.lookup(request.key) == first and request.key in cache
    reopened = CallCache(tmp_path)
    assert reopened.lookup(request.key) == first and len(reopened) == 1


def test_flush_writes_one_immutable_shard_and_removes_the_journal(tmp_path):
    cache = CallCache(tmp_path)
    cache.put_many(ok(f"k{i}") for i in range(10))
    shard = cache.flush()
    assert shard.exists() and not list((tmp_path / "journal").glob("*.jsonl"))
    assert pq.read_table(shard).num_rows == 10
    assert not list((tmp_path / "records").glob(".*tmp"))


def test_a_cache_written_before_the_rename_is_read_from_cells_and_grows_in_records(tmp_path):
    with CallCache(tmp_path) as cache:
        cache.put_many([ok("old1"), ok("old2", "kept")])
    (tmp_path / "records").rename(tmp_path / "cells")  # the layout of caches written before
    with CallCache(tmp_path) as cache:
        assert cache.lookup("old2").response_text == "kept" and len(cache) == 2
        cache.put(ok("new"))
    assert [p.name for p in (tmp_path / "cells").glob("*.parquet")] != [] and all_shard_keys(tmp_path) == ["new"]
    assert len(CallCache(tmp_path, read_only=True)) == 3


def test_whether_a_cache_holds_records_is_read_from_its_listing(tmp_path):
    assert not holds_records(tmp_path / "none") and not holds_records(tmp_path)
    CallCache(tmp_path).close()  # the folders, empty
    assert not holds_records(tmp_path) and sorted(p.name for p in tmp_path.iterdir()) == ["claims", "journal", "records"]
    writer = CallCache(tmp_path)
    writer.put(ok("journaled"))  # a live writer's journal holds it
    assert holds_records(tmp_path)
    writer.close()  # now a shard
    assert holds_records(tmp_path) and not list((tmp_path / "journal").iterdir())
    (tmp_path / "records").rename(tmp_path / "cells")  # a cache written before the rename
    assert holds_records(tmp_path)


def test_errors_are_stored_but_are_not_hits(tmp_path):
    with CallCache(tmp_path) as cache:
        cache.put(err("a"))
    cache = CallCache(tmp_path)
    assert cache.lookup("a") is None and cache.last_error("a").error_type == "RateLimitError"
    cache.put(ok("a"))
    assert cache.lookup("a").ok and cache.last_error("a") is None
    cache.close()
    assert CallCache(tmp_path).lookup("a").ok


def test_a_killed_writer_loses_nothing_it_finished(tmp_path):
    # The writer appends to its journal and is killed before it can flush.
    script = ("import os, sys; from contextecho.engine.cache import CallCache; from contextecho.engine.record import CallRecord;"
              "c = CallCache(sys.argv[1]);"
              "[c.put(CallRecord(key=f'k{i}', model='m', request_json='{}', status='ok', response_text='x')) for i in range(7)];"
              "os._exit(9)")
    proc = subprocess.run([sys.executable, "-c", script, str(tmp_path)])
    assert proc.returncode == 9
    assert len(list((tmp_path / "journal").glob("*.jsonl"))) == 1
    cache = CallCache(tmp_path)  # adopts the dead writer's journal
    assert cache.report.adopted_journals == 1 and len(cache) == 7
    assert not list((tmp_path / "journal").glob("*.jsonl"))
    assert sorted(all_shard_keys(tmp_path)) == sorted(f"k{i}" for i in range(7))


def test_a_live_writers_journal_is_read_not_adopted(tmp_path):
    writer = CallCache(tmp_path)
    writer.put(ok("live"))
    reader = CallCache(tmp_path)
    assert reader.lookup("live").ok and reader.report.adopted_journals == 0
    assert len(list((tmp_path / "journal").glob("*.jsonl"))) == 1
    writer.close()


def test_a_cut_last_journal_line_is_dropped_silently_but_damage_inside_is_reported(tmp_path):
    journal = tmp_path / "journal"
    journal.mkdir(parents=True)
    good = ok("g").to_row()
    import json
    (journal / "999-dead.jsonl").write_text(
        json.dumps(good) + "\n" + "{not json\n" + json.dumps(ok("h").to_row()) + "\n" + '{"key": "cut')
    with pytest.warns(CacheWarning, match=r"999-dead.jsonl:2"):
        cache = CallCache(tmp_path)
    assert cache.lookup("g") and cache.lookup("h") and cache.report.bad_journal_lines == 1


def test_two_writers_at_once_lose_nothing(tmp_path):
    # Overlapping key ranges, several shards each, running at the same time.
    procs = [subprocess.Popen([sys.executable, str(HERE / "cache_writer.py"), str(tmp_path), str(a), str(b), "7"])
             for a, b in ((0, 600), (300, 900))]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    cache = CallCache(tmp_path)
    assert cache.report.bad_shards == []
    assert len(cache) == 900
    assert all(cache.lookup(f"k{i:06d}").response_text == f"answer {i}" for i in range(900))
    assert cache.report.duplicate_records == 300  # both wrote the overlap; read once


def test_corrupt_shards_are_reported_skipped_and_kept(tmp_path):
    with CallCache(tmp_path) as cache:
        cache.put_many([ok("a"), ok("b")])
    with CallCache(tmp_path) as cache:
        cache.put(ok("c"))
    truncated, = [s for s in (tmp_path / "records").glob("*.parquet")
                  if pq.read_table(s).column("key").to_pylist() == ["c"]]
    truncated.write_bytes(truncated.read_bytes()[:40])
    not_parquet = tmp_path / "records" / "zzz-not-parquet.parquet"
    not_parquet.write_text("hello, I am not Parquet")
    with pytest.warns(CacheWarning) as caught:
        cache = CallCache(tmp_path)
    messages = " ".join(str(w.message) for w in caught)
    assert truncated.name in messages and not_parquet.name in messages
    assert set(cache.report.bad_shards) == {str(truncated), str(not_parquet)}
    assert truncated.exists() and not_parquet.exists()  # never silently deleted
    assert cache.lookup("a") and cache.lookup("b") and cache.lookup("c") is None


def test_to_table_lists_each_success_once(tmp_path):
    with CallCache(tmp_path) as cache:
        cache.put_many([ok("a"), ok("b"), err("c")])
    table = CallCache(tmp_path).to_table()
    assert sorted(table.column("key").to_pylist()) == ["a", "b"]
    assert CallCache(tmp_path).to_table(include_errors=True).num_rows == 3
