"""The cell cache: content-addressed, append-only Parquet, safe for several writers.

Layout under the cache root::

    cells/<utc>-<pid>-<rand>.parquet   immutable shards, written to a temp file and renamed
    journal/<pid>-<rand>.jsonl         one per live writer, one JSON line per finished call

Every finished call is appended to the writer's own journal at once, so a process
killed mid-batch loses only the calls still in flight. ``flush()`` turns the journal
into a shard (temp file + rename, then the journal is removed). A writer holds an
exclusive ``flock`` on its journal while it lives; a journal nobody holds belongs to
a dead process and is adopted (turned into a shard) by the next cache that opens.
No two processes ever write the same file, so concurrent notebooks cannot corrupt
each other. A key stored twice (two processes raced, or a crash between shard and
journal removal) is read once: successes win over errors, the first success wins.

Error records are kept as data but are not hits: the next run retries them.
"""
from __future__ import annotations

import atexit
import fcntl
import json
import os
import secrets
import warnings
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Awaitable, Callable, Iterable

import pyarrow as pa
import pyarrow.parquet as pq

from .cell import OK, SCHEMA, CellRecord, utc_stamp
from .model_request import ModelRequest
from .paths import cache_dir


# Caches still holding a journal are flushed when the interpreter exits normally; a
# killed process leaves its journal to be adopted by the next cache that opens.
_open_caches: "weakref.WeakSet[CellCache]" = weakref.WeakSet()
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


class CellCache:
    """``get(request, compute) -> (record, cached)`` over a folder of Parquet shards."""

    def __init__(self, root: str | os.PathLike | None = None) -> None:
        self.root = Path(root) if root is not None else cache_dir()
        self.cells_dir = self.root / "cells"
        self.journal_dir = self.root / "journal"
        self.cells_dir.mkdir(parents=True, exist_ok=True)
        self.journal_dir.mkdir(parents=True, exist_ok=True)
        self._ok: dict[str, tuple[str, int] | CellRecord] = {}
        self._errors: dict[str, CellRecord] = {}
        self._shard_records: dict[str, list[CellRecord]] = {}
        self._journal_file = None
        self._journal_path: Path | None = None
        self._pending: list[CellRecord] = []
        self.report = LoadReport()
        self._load()
        _open_caches.add(self)

    # ------------------------------------------------------------------ loading
    def _load(self) -> None:
        for shard in sorted(self.cells_dir.glob("*.parquet")):
            self._index_shard(shard)
        for journal in sorted(self.journal_dir.glob("*.jsonl")):
            self._index_foreign_journal(journal)

    def _index_shard(self, shard: Path) -> None:
        try:
            table = pq.read_table(shard, columns=["key", "status"])
        except Exception as exc:  # pyarrow raises several types for a damaged file
            self.report.bad_shards.append(str(shard))
            warnings.warn(f"cache shard {shard} is unreadable and was skipped "
                          f"(left in place, not deleted): {exc}", CacheWarning, stacklevel=3)
            return
        self.report.shards += 1
        keys = table.column("key").to_pylist()
        statuses = table.column("status").to_pylist()
        name = str(shard)
        for row, (key, status) in enumerate(zip(keys, statuses)):
            self._index(key, status, (name, row))

    def _index(self, key: str, status: str, where: tuple[str, int] | CellRecord) -> None:
        self.report.records += 1
        if key in self._ok:
            self.report.duplicate_records += 1
        elif status == OK:
            self._ok[key] = where
            self._errors.pop(key, None)
        else:
            self._errors[key] = where if isinstance(where, CellRecord) else self._read_row(*where)

    def _index_foreign_journal(self, journal: Path) -> None:
        try:
            handle = open(journal, "rb")
        except FileNotFoundError:  # adopted by another process meanwhile
            return
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            # A live writer owns it: read what it has finished so far.
            handle.close()
            self.report.journals += 1
            for record in self._read_journal(journal):
                self._index(record.key, record.status, record)
            return
        try:  # nobody holds it: its writer died; turn it into a shard
            records = self._read_journal(journal)
            if records:
                self._write_shard(records)
                for record in records:
                    self._index(record.key, record.status, record)
            journal.unlink()
            self.report.adopted_journals += 1
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
            handle.close()

    def _read_journal(self, journal: Path) -> list[CellRecord]:
        records = []
        try:
            lines = journal.read_bytes().split(b"\n")
        except FileNotFoundError:
            return records
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                records.append(CellRecord.from_row(json.loads(line)))
            except (ValueError, TypeError) as exc:
                # The last line of a killed writer may be cut short; anything else is damage.
                if number < len(lines):
                    self.report.bad_journal_lines += 1
                    warnings.warn(f"{journal}:{number}: unreadable journal line skipped: {exc}",
                                  CacheWarning, stacklevel=4)
        return records

    def _read_row(self, shard: str, row: int) -> CellRecord:
        records = self._shard_records.get(shard)
        if records is None:  # a shard is read whole, once, on its first hit
            records = self._shard_records[shard] = [
                CellRecord.from_row(r) for r in pq.read_table(shard).to_pylist()]
        return records[row]

    # ------------------------------------------------------------------ lookups
    def __len__(self) -> int:
        return len(self._ok)

    def __contains__(self, key: str) -> bool:
        return key in self._ok

    def lookup(self, key: str) -> CellRecord | None:
        """The stored success for ``key``, or None (errors are not hits)."""
        where = self._ok.get(key)
        if where is None or isinstance(where, CellRecord):
            return where
        return self._read_row(*where)

    def last_error(self, key: str) -> CellRecord | None:
        return self._errors.get(key)

    @property
    def n_errors(self) -> int:
        return len(self._errors)

    # ------------------------------------------------------------------ writing
    def put(self, record: CellRecord) -> None:
        """Append a finished call to this process's journal, at once."""
        self.put_many([record])

    def put_many(self, records: Iterable[CellRecord]) -> None:
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
        if self._journal_file is None:
            self._journal_path = self.journal_dir / f"{os.getpid()}-{secrets.token_hex(4)}.jsonl"
            self._journal_file = open(self._journal_path, "ab")
            fcntl.flock(self._journal_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return self._journal_file

    def flush(self, min_records: int = 1) -> Path | None:
        """Move this process's journal into an immutable shard; returns the shard path.

        With ``min_records`` above 1 a small journal is left as it is (it is already
        durable): many small batches then make one shard, not one shard each.
        """
        if self._journal_file is None or len(self._pending) < min_records:
            return None
        shard = self._write_shard(self._pending) if self._pending else None
        self._journal_path.unlink()
        fcntl.flock(self._journal_file, fcntl.LOCK_UN)
        self._journal_file.close()
        self._journal_file, self._journal_path, self._pending = None, None, []
        return shard

    def _write_shard(self, records: list[CellRecord]) -> Path:
        name = f"{utc_stamp()}-{os.getpid()}-{secrets.token_hex(4)}.parquet"
        final = self.cells_dir / name
        temp = self.cells_dir / f".{name}.tmp"
        table = pa.Table.from_pylist([r.to_row() for r in records], schema=SCHEMA)
        pq.write_table(table, temp)
        os.replace(temp, final)  # atomic: readers see the whole shard or none
        return final

    def close(self) -> None:
        self.flush()

    def __enter__(self) -> "CellCache":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------------ the API
    def get(self, request: ModelRequest,
            compute: Callable[[ModelRequest], CellRecord]) -> tuple[CellRecord, bool]:
        """The cached success for ``request``, else ``compute(request)`` stored and returned."""
        hit = self.lookup(request.key)
        if hit is not None:
            return hit, True
        record = compute(request)
        self.put(record)
        return record, False

    async def aget(self, request: ModelRequest,
                   compute: Callable[[ModelRequest], Awaitable[CellRecord]]) -> tuple[CellRecord, bool]:
        hit = self.lookup(request.key)
        if hit is not None:
            return hit, True
        record = await compute(request)
        self.put(record)
        return record, False

    def to_table(self, include_errors: bool = False) -> pa.Table:
        """Every stored success (and optionally the latest error per key) as one table."""
        records = [self.lookup(key) for key in self._ok]
        if include_errors:
            records += list(self._errors.values())
        return pa.Table.from_pylist([r.to_row() for r in records], schema=SCHEMA)
