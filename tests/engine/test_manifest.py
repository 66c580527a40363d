"""The run log: one record per run holding the counts of its rounds by name, written as it goes."""
import json
from dataclasses import dataclass

from contextecho.engine.counts import Counts
from contextecho.engine.manifest import RunLog, write_record


@dataclass(frozen=True)
class Params:
    target: str = "fake/echo"
    endpoints: tuple[str, ...] = ("hosted_vllm/*=http://user:secret@host/v1",)


def test_a_run_log_holds_every_name_and_says_how_the_run_ended(tmp_path):
    log = RunLog(tmp_path / "manifest.json", "demo", Params(), {"fake/echo"}, {"protocol": {"protocol": "reference"}})
    log.write()
    record = json.loads((tmp_path / "manifest.json").read_text())
    assert record["status"] == "incomplete" and record["finished"] is None and record["batches"] == {}
    log.add("demo:targets", Counts(calls=2, computed=2, attempts=4, http_requests=4))
    log.add("demo:targets", Counts(calls=1, cached=1, failed=1))  # rounds under one name add up
    log.add("demo:judges", Counts(calls=3, computed=3, invalid=2, attempts=3))
    log.write("complete")
    record = json.loads((tmp_path / "manifest.json").read_text())
    assert record["name"] == "demo" and record["status"] == "complete" and record["finished"]
    assert record["batches"] == {"demo:targets": Counts(calls=3, cached=1, computed=2, failed=1).as_dict(),
                                 "demo:judges": Counts(calls=3, computed=3, invalid=2).as_dict()}
    # beside them, what the calls cost in transport: attempts made, HTTP requests sent
    assert record["traffic"] == {"demo:targets": {"attempts": 4, "http_requests": 4},
                                 "demo:judges": {"attempts": 3, "http_requests": 0}}
    assert record["models"] == ["fake/echo"] and record["protocol"] == {"protocol": "reference"}
    assert {"commit", "dirty"} <= set(record["git"]) and "litellm" in record["packages"]
    assert record["parameters"]["target"] == "fake/echo"
    assert record["parameters"]["endpoints"] == ["hosted_vllm/*=http://***@host/v1"]  # credentials masked
    assert isinstance(record["wall_s"], float)


def test_records_are_written_whole(tmp_path):
    path = tmp_path / "sub" / "r.json"
    write_record(path, {"a": 1, "path": str(path)})
    assert json.loads(path.read_text()) == {"a": 1} and not list(path.parent.glob(".*.tmp"))
