"""The call cache: content-addressed, append-only Parquet, safe for several writers.

Layout under the cache root::

    records/<utc>-<pid>-<rand>.parquet immutable shards, written to a temp file and renamed
    journal/<pid>-<rand>.jsonl         one per live writer, one JSON line per finished call
    claims/<key>                       a key being computed right now (held by ``flock``)

Every finished call is appended to the writer's own journal at once, so a process
killed mid-round loses only the calls still in flight. ``flush()`` turns the journal
into a shard (temp file + rename, then the journal is removed). A writer holds an
exclusive ``flock`` on its journal while it lives; a journal nobody holds belongs to
a dead process and is adopted (turned into a shard) by the next writer that opens.
Adopting is safe when two processes try at once: the one that gets the lock checks
that the file is still there (the other may have adopted and removed it already).
A journal with damaged lines is adopted too, and kept beside as ``*.damaged``.

Several writers (two notebooks on one cache) never pay twice for a call: before a
writer computes a missing key it claims it (an ``flock`` on ``claims/<key>``), then
``refresh()``es what the others added (new shards, new journal lines) and looks again.
A writer that finds a key claimed waits for the claim and takes the other's answer.
No two processes ever write the same file, so concurrent writers cannot corrupt each
other. A key stored twice (two processes raced, or a crash between shard and journal
removal) is read once: successes win over errors, the first success wins.

Caches written before the call records had their own name keep their shards in ``cells/``;
those are read as they are, and new shards go to ``records/``.

Error records are kept as data but are not hits; the caller decides which it retries.
A success with a blank answer (older caches stored them) is read as the error it is; an
answer of tool calls without text is no blank answer. Shards written before a column of
the record existed (``logprobs``, ``tool_calls``, ``servers``, ``reasoning``) read it as ``None``.
A cache opened ``read_only`` never writes, adopts, claims or deletes anything.
"""
from __future__ import annotations

import asyncio
import atexit
import fcntl
import json
import os
import secrets
import warnings
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from .record import ERROR, OK, SCHEMA, CallRecord, utc_stamp
from .paths import cache_dir


# Caches still holding a journal are flushed when the interpreter exits normally; a
# killed process leaves its journal to be adopted by the next cache that opens.
_open_caches: "weakref.WeakSet[CallCache]" = weakref.WeakSet()
atexit.register(lambda: [cache.close() for cache in list(_open_caches)])


class CacheWarning(UserWarning):
    """A shard or journal line that could not be read; it is reported and left in place."""


@dataclass
class LoadReport:
    shards: int = 0
    journals: int = 0
    adopted_journals: int = 0
    records: int = 0
    duplicate_records: int = 0
    bad_shards: list[str] = field(default_factory=list)
    bad_journal_lines: int = 0


LEGACY_RECORDS = "cells"  # where caches written before the rename keep their shards (read only)


class CallCache:
    """Call records by request key (``lookup``, ``last_error``; ``put``) over a folder of Parquet shards."""

    CLAIM_POLL_S = 0.05  # how often a writer waiting for another's claim looks again

    def __init__(self, root: str | os.PathLike | None = None, *, read_only: bool = False) -> None:
        self.root = Path(root) if root is not None else cache_dir()
        self.read_only = read_only
        self.records_dir = self.root / "records"
        self.legacy_records_dir = self.root / LEGACY_RECORDS
        self.journal_dir = self.root / "journal"
        self.claims_dir = self.root / "claims"
        if not read_only:
            for folder in (self.records_dir, self.journal_dir, self.claims_dir):
                folder.mkdir(parents=True, exist_ok=True)
        self._ok: dict[str, tuple[str, int] | CallRecord] = {}
        self._errors: dict[str, CallRecord] = {}
        self._shard_records: dict[str, list[CallRecord]] = {}
        self._seen_shards: set[str] = set()
        self._journal_offsets: dict[str, int] = {}  # foreign journal -> bytes indexed so far
        self._journal_lines: dict[str, int] = {}  # foreign journal -> lines indexed so far
        self._journal_file = None
        self._journal_path: Path | None = None
        self._pending: list[CallRecord] = []
        self.report = LoadReport()
        self._load()
        _open_caches.add(self)

    # ------------------------------------------------------------------ loading
    def _load(self) -> None:
        if not self.read_only:
            for journal in _listing(self.journal_dir, ".jsonl"):
                self._adopt_if_dead(journal)
        self.refresh()
        self.report.journals = len(self._journal_offsets)

    def refresh(self) -> int:
        """Index what other writers added since the last look: new shards, new journal
        lines. Returns how many records were read."""
        before = self.report.records
        # Journals before shards: a writer flushing meanwhile writes its shard before it
        # removes its journal, so each of its records is seen in one or the other.
        for journal in _listing(self.journal_dir, ".jsonl"):
            if journal != self._journal_path:
                self._index_journal(journal)
        for shard in _listing(self.legacy_records_dir, ".parquet") + _listing(self.records_dir, ".parquet"):
            if str(shard) not in self._seen_shards:
                self._index_shard(shard)
        return self.report.records - before

    def _index_shard(self, shard: Path) -> None:
        self._seen_shards.add(str(shard))
        try:
            with pq.ParquetFile(shard) as parquet:
                # Shards written before tool calls were stored have no such column.
                calls = ["tool_calls"] if "tool_calls" in parquet.schema_arrow.names else []
                table = parquet.read(columns=["key", "status", "response_text", *calls])
        except FileNotFoundError:
            return  # listed, then gone: never happens to a shard, but a listing is not a lock
        except Exception as exc:  # pyarrow raises several types for a damaged file
            self.report.bad_shards.append(str(shard))
            warnings.warn(f"cache shard {shard} is unreadable and was skipped "
                          f"(left in place, not deleted): {exc}", CacheWarning, stacklevel=3)
            return
        self.report.shards += 1
        keys = table.column("key").to_pylist()
        statuses = table.column("status").to_pylist()
        texts = table.column("response_text")
        blank = pc.fill_null(pc.equal(pc.utf8_length(pc.utf8_trim_whitespace(texts)), 0), True)
        if calls:  # tool calls without text are an answer, not a blank one
            blank = pc.and_(blank, pc.is_null(table.column("tool_calls")))
        name = str(shard)
        for row, (key, status, empty) in enumerate(zip(keys, statuses, blank.to_pylist())):
            where = (name, row)
            if status == OK and empty:
                where = self._read_row(name, row)  # rare: read it whole, to turn it into an error
            self._index(key, status, where)

    def _index(self, key: str, status: str, where: tuple[str, int] | CallRecord) -> None:
        self.report.records += 1
        if isinstance(where, CallRecord) and where.blank:
            where, status = where.as_empty_response(), ERROR
        if key in self._ok:
            self.report.duplicate_records += 1
        elif status == OK:
            self._ok[key] = where
            self._errors.pop(key, None)
        else:
            self._errors[key] = where if isinstance(where, CallRecord) else self._read_row(*where)

    def _index_journal(self, journal: Path) -> None:
        """Index the complete lines another writer appended since the last look."""
        offset = self._journal_offsets.get(str(journal), 0)
        try:
            with open(journal, "rb") as handle:
                handle.seek(offset)
                data = handle.read()
        except FileNotFoundError:  # flushed into a shard (or adopted) meanwhile
            self._journal_offsets.pop(str(journal), None)
            return
        complete = data.rfind(b"\n") + 1  # a last line without its newline is still being written
        self._journal_offsets[str(journal)] = offset + complete
        for record in self._parse_lines(journal, data[:complete], cut_tail=False):
            self._index(record.key, record.status, record)

    def _adopt_if_dead(self, journal: Path) -> None:
        """Turn the journal of a dead writer into a shard; leave a live writer's alone."""
        try:
            handle = open(journal, "rb")
        except FileNotFoundError:  # adopted by another process meanwhile
            return
        with handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return  # a live writer (or another adopter) holds it; refresh() reads it
            try:
                if not _still_names(journal, handle):
                    return  # another process adopted and removed it between our open and lock
                damaged_before = self.report.bad_journal_lines
                records = self._parse_lines(journal, handle.read(), cut_tail=True)
                if records:
                    shard = self._write_shard(records)
                    self._seen_shards.add(str(shard))
                    for record in records:
                        self._index(record.key, record.status, record)
                if self.report.bad_journal_lines > damaged_before:
                    # Kept for a person to look at; the name no longer matches *.jsonl.
                    os.replace(journal, journal.with_name(journal.name + ".damaged"))
                else:
                    journal.unlink()
                self.report.adopted_journals += 1
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def _parse_lines(self, journal: Path, data: bytes, *, cut_tail: bool) -> list[CallRecord]:
        """Journal lines as records. With ``cut_tail`` (a dead writer's whole file) an
        unreadable last line is the call it was killed writing, dropped silently; any
        other unreadable line is damage, reported with its line number."""
        records = []
        lines = data.split(b"\n")
        first_line = 1 + (0 if cut_tail else self._journal_lines.get(str(journal), 0))
        if not cut_tail:
            self._journal_lines[str(journal)] = first_line - 1 + data.count(b"\n")
        for number, line in enumerate(lines, start=first_line):
            if not line.strip():
                continue
            try:
                records.append(CallRecord.from_row(json.loads(line)))
            except (ValueError, TypeError) as exc:
                if cut_tail and number == first_line + len(lines) - 1:
                    continue
                self.report.bad_journal_lines += 1
                warnings.warn(f"{journal}:{number}: unreadable journal line skipped: {exc}",
                              CacheWarning, stacklevel=4)
        return records

    def _read_row(self, shard: str, row: int) -> CallRecord:
        records = self._shard_records.get(shard)
        if records is None:  # a shard is read whole, once, on its first hit
            records = self._shard_records[shard] = [
                CallRecord.from_row(r) for r in pq.read_table(shard).to_pylist()]
        return records[row]

    # ------------------------------------------------------------------ lookups
    def __len__(self) -> int:
        return len(self._ok)

    def __contains__(self, key: str) -> bool:
        return key in self._ok

    def lookup(self, key: str) -> CallRecord | None:
        """The stored success for ``key``, or None (errors are not hits)."""
        where = self._ok.get(key)
        if where is None or isinstance(where, CallRecord):
            return where
        return self._read_row(*where)

    def last_error(self, key: str) -> CallRecord | None:
        return self._errors.get(key)

    @property
    def n_errors(self) -> int:
        return len(self._errors)

    # ------------------------------------------------------------------ writing
    def put(self, record: CallRecord) -> None:
        """Append a finished call to this process's journal, at once."""
        self.put_many([record])

    def put_many(self, records: Iterable[CallRecord]) -> None:
        records = list(records)
        if not records:
            return
        handle = self._own_journal()
        payload = b"".join(json.dumps(r.to_row(), ensure_ascii=False).encode("utf-8") + b"\n"
                           for r in records)
        handle.write(payload)
        handle.flush()  # in the OS now: survives the process being killed
        for record in records:
            self._pending.append(record)
            self._index(record.key, record.status, record)

    def _own_journal(self):
        if self.read_only:
            raise PermissionError(f"cache {self.root} was opened read-only")
        if self._journal_file is None:
            # Locked under a hidden name, then renamed: no other process ever sees it unlocked
            # (it would take it for a dead writer's and adopt it).
            name = f"{os.getpid()}-{secrets.token_hex(4)}.jsonl"
            hidden = self.journal_dir / f".{name}"
            self._journal_file = open(hidden, "ab")
            fcntl.flock(self._journal_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
            self._journal_path = self.journal_dir / name
            os.replace(hidden, self._journal_path)
        return self._journal_file

    def flush(self, min_records: int = 1) -> Path | None:
        """Move this process's journal into an immutable shard; returns the shard path.

        With ``min_records`` above 1 a small journal is left as it is (it is already
        durable): many small rounds then make one shard, not one shard each.
        """
        if self._journal_file is None or len(self._pending) < min_records:
            return None
        shard = self._write_shard(self._pending) if self._pending else None
        if shard is not None:
            self._seen_shards.add(str(shard))  # already indexed, from the journal
        self._journal_path.unlink()
        fcntl.flock(self._journal_file, fcntl.LOCK_UN)
        self._journal_file.close()
        self._journal_file, self._journal_path, self._pending = None, None, []
        return shard

    def _write_shard(self, records: list[CallRecord]) -> Path:
        name = f"{utc_stamp()}-{os.getpid()}-{secrets.token_hex(4)}.parquet"
        final = self.records_dir / name
        temp = self.records_dir / f".{name}.tmp"
        table = pa.Table.from_pylist([r.to_row() for r in records], schema=SCHEMA)
        pq.write_table(table, temp)
        os.replace(temp, final)  # atomic: readers see the whole shard or none
        return final

    def close(self) -> None:
        self.flush()

    def __enter__(self) -> "CallCache":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------------ claims
    def try_claim(self, key: str) -> "Claim | None":
        """Claim ``key`` for computing it, or None when another writer holds it now."""
        if self.read_only:
            raise PermissionError(f"cache {self.root} was opened read-only")
        path = self.claims_dir / key
        while True:
            handle = open(path, "ab")
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                handle.close()
                return None
            if _still_names(path, handle):
                return Claim(path, handle)
            handle.close()  # its holder released and removed it as we opened it: again

    def is_claimed(self, key: str) -> bool:
        """Whether a live writer holds the claim on ``key`` right now."""
        try:
            handle = open(self.claims_dir / key, "rb")
        except FileNotFoundError:
            return False
        with handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
            fcntl.flock(handle, fcntl.LOCK_UN)
            return False

    async def claim_released(self, key: str) -> None:
        """Wait while another writer holds the claim on ``key`` (it is computing it)."""
        while self.is_claimed(key):
            await asyncio.sleep(self.CLAIM_POLL_S)

    # ------------------------------------------------------------------ reading it all
    def usage(self) -> list[dict[str, Any]]:
        """``{model, completion_tokens, latency_s}`` of every stored success, read from the
        shards' own columns (no request or answer text is loaded): what a plan estimates
        completion tokens and wall time from (:mod:`contextecho.engine.plan`)."""
        columns = ["key", "model", "status", "completion_tokens", "latency_s"]
        rows: list[dict[str, Any]] = []
        for shard in sorted(self._seen_shards):
            try:
                table = pq.read_table(shard, columns=columns)
            except Exception:  # gone or damaged: the index warned when it was read
                continue
            for row in table.to_pylist():
                where = self._ok.get(row["key"])
                if row["status"] == OK and isinstance(where, tuple) and where[0] == shard:
                    rows.append(row)
        rows += [{"model": r.model, "completion_tokens": r.completion_tokens, "latency_s": r.latency_s}
                 for r in self._ok.values() if isinstance(r, CallRecord)]
        return rows

    def to_table(self, include_errors: bool = False) -> pa.Table:
        """Every stored success (and optionally the latest error per key) as one table."""
        records = [self.lookup(key) for key in self._ok]
        if include_errors:
            records += list(self._errors.values())
        return pa.Table.from_pylist([r.to_row() for r in records], schema=SCHEMA)


class Claim:
    """An exclusive claim on one key, held until ``release()`` (or the process dies)."""

    def __init__(self, path: Path, handle) -> None:
        self.path, self._handle = path, handle

    def release(self) -> None:
        if self._handle is None:
            return
        self.path.unlink(missing_ok=True)  # removed while still locked: see try_claim
        fcntl.flock(self._handle, fcntl.LOCK_UN)
        self._handle.close()
        self._handle = None

    def __enter__(self) -> "Claim":
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def _still_names(path: Path, handle) -> bool:
    """Whether ``path`` still names the file open as ``handle`` (not removed or replaced)."""
    try:
        return os.stat(path).st_ino == os.fstat(handle.fileno()).st_ino
    except FileNotFoundError:
        return False


def holds_records(root: str | os.PathLike | None = None) -> bool:
    """Whether the cache at ``root`` (default :func:`~contextecho.engine.paths.cache_dir`) holds
    any record, a shard or a journal, by its folders' listings alone (nothing is read or made)."""
    root = Path(root) if root is not None else cache_dir()
    return any(_listing(root / folder, suffix) for folder, suffix in
               (("records", ".parquet"), (LEGACY_RECORDS, ".parquet"), ("journal", ".jsonl")))


def _listing(folder: Path, suffix: str) -> list[Path]:
    """The files of ``folder`` ending in ``suffix``, by name; temp files (``.name``) left out."""
    try:
        names = sorted(e.name for e in os.scandir(folder)
                       if e.name.endswith(suffix) and not e.name.startswith("."))
    except FileNotFoundError:
        return []
    return [folder / name for name in names]
