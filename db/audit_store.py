"""The audit store: a SQLite file in WAL mode, apart from the catalog, the only thing the bot writes (or, for
workers on several hosts, PostgreSQL: db/audit_postgres.py, chosen by `open_store` on AUDIT_DB's scheme).
One row per turn and per handoff, relay, feedback or unanswered event, indexed by time, chat, user,
status and reason code; the whole record kept as JSON beside the indexed columns. What is written is an
`AuditEntry`: the indexed columns typed, and the record as an opaque JSON document (its shape is the
agent's, `agent/audit_record.py`, which builds the entries; the store never reads inside it). Records are
written by one thread in batches from a bounded queue (`QueuedWriter`, shared by both stores), so a slow
disk or database never slows a reply; a full queue is counted and logged. Several bot processes on one host
may share the file (WAL, busy timeout). Reading gives each stored document back with its row `id`; a row
whose document is not a JSON object (a damaged or foreign row) reads as its row id alone, and a non-numeric
latency or model-call count is left out of the daily figures, so one odd row never breaks a page or /stats.
Nothing stops the writer: an integer column SQLite cannot hold (an update id of 2^63 or more) is stored
empty (the record keeps it), a batch that fails is written again record by record, and a record that still
fails is logged with its ids, counted and skipped; a database out of reach keeps its batch and is tried
again after a pause. A dead, stuck or cut-off writer shows in `writer_problems()` (/healthz and /metrics
read it), and `close()` gives up after `CLOSE_SECONDS`, logging how many records it could not write."""

from __future__ import annotations

import json
import logging
import os
import queue
import sqlite3
import threading
import time
import weakref
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

SCHEMA = """
PRAGMA journal_mode = WAL;
CREATE TABLE IF NOT EXISTS audit (
    id           INTEGER PRIMARY KEY,
    time         TEXT NOT NULL,          -- ISO 8601 UTC, milliseconds
    kind         TEXT NOT NULL,          -- turn, handoff_start, relay, feedback, ...
    chat_id      TEXT NOT NULL,
    user_id      TEXT,
    update_id    INTEGER,
    status       TEXT,
    blocked      INTEGER NOT NULL DEFAULT 0,
    degraded     INTEGER NOT NULL DEFAULT 0,
    fallback     INTEGER NOT NULL DEFAULT 0,
    latency_ms   REAL,
    model_calls  INTEGER,
    message      TEXT,
    answer       TEXT,
    record       TEXT NOT NULL,          -- the whole record as JSON (tool trace, evidence ids, verdicts)
    misunderstood INTEGER NOT NULL DEFAULT 0   -- 1: an audit_flags row names this turn (the filter's index)
);
CREATE INDEX IF NOT EXISTS audit_by_time ON audit(time);
CREATE INDEX IF NOT EXISTS audit_by_chat ON audit(chat_id, time);
CREATE INDEX IF NOT EXISTS audit_by_user ON audit(user_id, time);
CREATE INDEX IF NOT EXISTS audit_by_status ON audit(status, time);
CREATE INDEX IF NOT EXISTS audit_by_update ON audit(update_id) WHERE update_id IS NOT NULL;
CREATE TABLE IF NOT EXISTS audit_codes (
    audit_id  INTEGER NOT NULL REFERENCES audit(id) ON DELETE CASCADE,
    code      TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS audit_codes_by_code ON audit_codes(code, audit_id);
CREATE INDEX IF NOT EXISTS audit_codes_by_record ON audit_codes(audit_id);
CREATE TABLE IF NOT EXISTS audit_flags (   -- signs a turn was misunderstood, some attached after it
    audit_id  INTEGER NOT NULL REFERENCES audit(id) ON DELETE CASCADE,
    flag      TEXT NOT NULL,
    UNIQUE (audit_id, flag)
);
CREATE INDEX IF NOT EXISTS audit_flags_by_flag ON audit_flags(flag, audit_id);
"""
FLAG_WINDOW = timedelta(minutes=30)   # a sign about "the answer before" counts within this time of it
BUSY_MS = 5000
QUEUE_SIZE = 10_000
BATCH = 200
PURGE_EVERY_SECONDS = 6 * 3600
CLOSE_SECONDS = 10.0        # close() waits at most about this long for the writer, then drops what is left
STUCK_SECONDS = 60.0        # a batch taking longer than this marks the writer stuck (/healthz not ok)
PAUSES = (0.5, 2.0, 5.0, 15.0, 30.0, 60.0)   # a database out of reach: wait this long before each retry
INT64 = (-(2 ** 63), 2 ** 63 - 1)


@dataclass(frozen=True)
class AuditEntry:
    """One row as the store writes it: the columns it indexes and filters by, the reason codes of the drafts
    the validator blocked (the `audit_codes` rows), and the whole record, kept as JSON and given back by
    the queries. The record's shape belongs to the agent (`TurnRecord.entry()` builds this)."""
    time: str                        # ISO 8601 UTC, milliseconds
    kind: str                        # turn, handoff_start, relay, feedback, ...
    chat_id: str
    record: Mapping[str, Any]
    user_id: str | None = None
    update_id: int | None = None
    status: str | None = None
    blocked: bool = False            # a draft of this turn was blocked
    degraded: bool = False
    fallback: bool = False
    latency_ms: float | None = None
    model_calls: int | None = None
    message: str | None = None       # the customer's message and the answer, for the text filter
    answer: str | None = None
    codes: tuple[str, ...] = ()
    flags: tuple[str, ...] = ()                    # this record's own signs of a misunderstanding
    flags_on_previous_turn: tuple[str, ...] = ()   # signs about the chat's latest turn before this record
    flags_on_answered_turn: tuple[str, ...] = ()   # signs about the turn that answered `update_id` (a 👎)

    def columns(self) -> tuple:
        return (self.time, self.kind, self.chat_id, self.user_id, _int64(self.update_id), self.status,
                int(bool(self.blocked or self.codes)), int(self.degraded), int(self.fallback), self.latency_ms,
                _int64(self.model_calls), self.message, self.answer,
                json.dumps(dict(self.record), ensure_ascii=False, default=str))


def _int64(value: Any) -> Any:
    """An integer column's value, or None when SQLite could not hold it (the record keeps the value)."""
    if isinstance(value, int) and not INT64[0] <= value <= INT64[1]:
        return None
    return value


def _connect(path: Path, readonly: bool = False) -> sqlite3.Connection:
    if readonly:
        conn = sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True, timeout=BUSY_MS / 1000,
                               check_same_thread=False)
    else:
        conn = sqlite3.connect(path, timeout=BUSY_MS / 1000, check_same_thread=False)
        conn.executescript(SCHEMA)
        if "misunderstood" not in {r[1] for r in conn.execute("PRAGMA table_info(audit)")}:   # a store written
            conn.execute("ALTER TABLE audit ADD COLUMN misunderstood INTEGER NOT NULL DEFAULT 0")   # before flags
        conn.execute("CREATE INDEX IF NOT EXISTS audit_misunderstood ON audit(time) WHERE misunderstood = 1")
        # WAL with NORMAL: a commit is not flushed to disk by itself (only at checkpoints); a crash of the bot
        # loses nothing committed, a power cut may lose the last commits, as it loses the records still queued
        conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute(f"PRAGMA busy_timeout = {BUSY_MS}")
    conn.row_factory = sqlite3.Row
    return conn


@dataclass(frozen=True)
class AuditFilter:
    since: datetime | None = None
    until: datetime | None = None
    chat_id: str | None = None
    user_id: str | None = None
    status: str | None = None
    kind: str | None = None
    code: str | None = None
    blocked_only: bool = False      # a blocked draft, a degraded turn or the fallback
    text: str | None = None         # in the customer's message or the answer
    flag: str | None = None         # turns with this sign of a misunderstanding
    misunderstood: bool = False     # turns with any such sign

    def where(self, postgres: bool = False) -> tuple[str, list[Any]]:
        """The WHERE clause and its arguments, with `?` placeholders (PostgreSQL: `%s`, and `strpos`)."""
        clauses, args = [], []
        for column, value in (("chat_id", self.chat_id), ("user_id", self.user_id), ("status", self.status),
                              ("kind", self.kind)):
            if value is not None:
                clauses.append(f"{column} = ?")
                args.append(str(value))
        if self.since is not None:
            clauses.append("time >= ?")
            args.append(_iso(self.since))
        if self.until is not None:
            clauses.append("time < ?")
            args.append(_iso(self.until))
        if self.code is not None:
            clauses.append("id IN (SELECT audit_id FROM audit_codes WHERE code = ?)")
            args.append(self.code)
        if self.blocked_only:
            clauses.append("(blocked = 1 OR degraded = 1 OR fallback = 1)")
        if self.flag is not None:
            clauses.append("id IN (SELECT audit_id FROM audit_flags WHERE flag = ?)")
            args.append(self.flag)
        if self.misunderstood:
            clauses.append("misunderstood = 1")
        if self.text:
            find = "strpos" if postgres else "instr"
            clauses.append(f"({find}(message, ?) > 0 OR {find}(answer, ?) > 0)")
            args += [self.text, self.text]
        sql = (" WHERE " + " AND ".join(clauses)) if clauses else ""
        if postgres:   # PostgreSQL text holds no NUL: the store keeps U+FFFD in its place, and so is asked
            return sql.replace("?", "%s"), [a.replace("\x00", "\ufffd") if isinstance(a, str) else a for a in args]
        return sql, args


def _is_time(text: str) -> bool:
    try:
        return datetime.fromisoformat(text).tzinfo is not None
    except ValueError:
        return False


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="milliseconds")


def _stored(row: sqlite3.Row) -> dict[str, Any]:
    """A stored document with its row id; a document that is not a JSON object reads as the id alone."""
    try:
        record = json.loads(row["record"])
    except (TypeError, ValueError):
        record = None
    if not isinstance(record, dict):
        log.warning("audit row %s does not hold a JSON object; read as its id alone", row["id"])
        record = {}
    return {**record, "id": row["id"]}


def _field(name: str) -> str:
    """A field of the stored document in SQL; NULL where the document is not valid JSON."""
    return f"json_extract(CASE WHEN json_valid(record) THEN record END, '$.{name}')"


def _numeric(column: str) -> str:
    """The column where it holds a number, else NULL (a row written by an older or foreign writer)."""
    return f"CASE WHEN typeof({column}) IN ('integer', 'real') THEN {column} END AS {column}"


class Paged:
    """What every store's reader derives from its `query`: all matching records, in chunks."""

    def iterate(self, where: AuditFilter = AuditFilter(), chunk: int = 1000) -> Iterator[dict[str, Any]]:  # noqa: B008
        """Every matching record, oldest first, read in chunks (exports, statistics)."""
        offset = 0
        while True:
            page = self.query(where, chunk, offset, newest_first=False)
            yield from page
            if len(page) < chunk:
                return
            offset += chunk


class AuditReader(Paged):
    """Queries over the store through a read-only connection (the command line, the operators' commands)."""

    def __init__(self, path: Path):
        self.path = path
        self._reader = _connect(path, readonly=True)
        self._read_lock = threading.Lock()

    def query(self, where: AuditFilter = AuditFilter(), limit: int = 50, offset: int = 0,  # noqa: B008
              newest_first: bool = True, after_id: int = 0) -> list[dict[str, Any]]:
        """Matching records (each with its row `id`), newest first unless asked otherwise."""
        sql, args = where.where()
        if after_id:
            sql += (" AND" if sql else " WHERE") + " id > ?"
            args.append(after_id)
        order = "DESC" if newest_first else "ASC"
        # after an id (the live feed, `audit tail -f`): in id order, the order rows became visible in — by
        # the primary key, not the whole time index
        sort = f"id {order}" if after_id else f"time {order}, id {order}"
        with self._read_lock:
            # the page's ids first (sorted on the row's leading columns), then only their documents: a filter
            # by flag or code reads its matches by id and must not carry every match's JSON through the sort
            rows = self._reader.execute(f"SELECT id, record FROM audit WHERE id IN (SELECT id FROM audit{sql} "
                                        f"ORDER BY {sort} LIMIT ? OFFSET ?) "
                                        f"ORDER BY {sort}", [*args, limit, offset]).fetchall()
        return [_stored(r) for r in rows]

    def get(self, record_id: int) -> dict[str, Any] | None:
        with self._read_lock:
            row = self._reader.execute("SELECT id, record FROM audit WHERE id = ?", (record_id,)).fetchone()
        return _stored(row) if row else None

    def count(self, where: AuditFilter = AuditFilter()) -> int:  # noqa: B008
        sql, args = where.where()
        with self._read_lock:
            return int(self._reader.execute(f"SELECT count(*) FROM audit{sql}", args).fetchone()[0])

    def feedback_for(self, update_ids: list[int]) -> dict[int, str]:
        """The 👍/👎 recorded for the turns answering these updates."""
        ids = [int(i) for i in update_ids if i is not None]
        if not ids:
            return {}
        marks = ", ".join("?" for _ in ids)
        with self._read_lock:
            rows = self._reader.execute(f"SELECT update_id, {_field('value')} FROM audit "
                                        f"WHERE kind = 'feedback' AND update_id IN ({marks})", ids).fetchall()
        return {int(r[0]): str(r[1]) for r in rows if r[1] is not None}

    def daily(self, since: datetime, utc_offset_hours: int = 8) -> list[dict[str, Any]]:
        """Per local day from `since`: the counts of /stats by SQL over the indexed columns (no JSON parsed),
        the latencies and model calls of its turns, and its blocked drafts by reason code."""
        day = f"date(time, '{utc_offset_hours:+d} hours')"
        start = _iso(since)
        with self._read_lock:
            counts = self._reader.execute(
                f"SELECT {day} AS day, "
                "sum(kind = 'turn') AS turns, "
                "sum(kind = 'turn' AND status = 'grounded' AND fallback = 0) AS grounded, "
                "sum(kind = 'turn' AND status = 'insufficient_evidence' AND fallback = 0) AS insufficient, "
                "sum(kind = 'turn' AND (fallback = 1 OR status = 'fallback')) AS fallback, "
                "sum(kind = 'turn' AND degraded = 1) AS degraded, sum(kind = 'turn' AND blocked = 1) AS blocked, "
                "sum(kind = 'handoff_start') AS handoffs, sum(kind = 'relay') AS relayed, "
                f"sum(kind = 'feedback' AND {_field('value')} = 'up') AS up, "
                f"sum(kind = 'feedback' AND {_field('value')} = 'down') AS down, "
                f"sum(kind = 'turn' AND {_field('delivered')} = 0) AS muted "
                f"FROM audit WHERE time >= ? GROUP BY day ORDER BY day", (start,)).fetchall()
            samples = self._reader.execute(
                f"SELECT {day} AS day, {_numeric('latency_ms')}, {_numeric('model_calls')} "
                "FROM audit WHERE time >= ? AND kind = 'turn'", (start,)).fetchall()
            codes = self._reader.execute(
                f"SELECT {day} AS day, c.code, count(*) FROM audit a JOIN audit_codes c ON c.audit_id = a.id "
                "WHERE a.time >= ? GROUP BY day, c.code ORDER BY count(*) DESC", (start,)).fetchall()
            flags, misunderstood = [], []
            if self._reader.execute("SELECT 1 FROM sqlite_master WHERE name = 'audit_flags'").fetchone():
                # (a file no writer of this version has opened yet has no flags)
                flags = self._reader.execute(
                    f"SELECT {day} AS day, f.flag, count(*) FROM audit a JOIN audit_flags f ON f.audit_id = a.id "
                    "WHERE a.time >= ? GROUP BY day, f.flag ORDER BY count(*) DESC", (start,)).fetchall()
                misunderstood = self._reader.execute(
                    f"SELECT {day} AS day, count(*) FROM audit WHERE time >= ? AND misunderstood = 1 "
                    "AND kind = 'turn' GROUP BY day", (start,)).fetchall()
        out = {r["day"]: {**dict(r), "latencies": [], "model_calls": [], "codes": {}, "flags": {}, "misunderstood": 0}
               for r in counts}
        for d, flag, n in flags:
            if d in out:
                out[d]["flags"][flag] = n
        for d, n in misunderstood:
            if d in out:
                out[d]["misunderstood"] = n
        for r in samples:
            if r["day"] in out:
                if r["latency_ms"] is not None:
                    out[r["day"]]["latencies"].append(float(r["latency_ms"]))
                if r["model_calls"] is not None:
                    out[r["day"]]["model_calls"].append(int(r["model_calls"]))
        for d, code, n in codes:
            if d in out:
                out[d]["codes"][code] = n
        return list(out.values())

    def latest_id(self) -> int:
        with self._read_lock:
            return int(self._reader.execute("SELECT coalesce(max(id), 0) FROM audit").fetchone()[0])

    def close(self) -> None:
        self._reader.close()


_OPEN_STORES: weakref.WeakSet[QueuedWriter] = weakref.WeakSet()


def writer_problems() -> list[str]:
    """What is wrong with the writer of each open store in this process: dead, stuck or cut off from its
    database (empty: all well)."""
    return [problem for store in list(_OPEN_STORES) if (problem := store.problem()) is not None]


def writer_counts() -> dict[str, int]:
    """Records written, skipped (failed alone) and dropped (queue full, or left at close) by the open stores."""
    stores = list(_OPEN_STORES)
    return {"written": sum(s.written for s in stores), "skipped": sum(s.failed for s in stores),
            "dropped": sum(s.dropped for s in stores)}


def _describe(entry: Any) -> str:
    """An entry's ids for a log line (never its text)."""
    if not isinstance(entry, AuditEntry):
        return f"a {type(entry).__name__}"
    return f"kind={entry.kind!r} chat={entry.chat_id!r} update_id={entry.update_id!r} time={entry.time!r}"


class StoreError(Exception):
    """A store that could not be opened; the message names the host and database, never a URL's password."""


class StoreUnavailable(Exception):
    """The database cannot be reached: the records not yet written are kept and tried again after a pause
    (`remaining`: those records, when only some of a batch were written)."""

    def __init__(self, reason: str, remaining: list[AuditEntry] | None = None):
        super().__init__(reason)
        self.remaining = remaining


class QueuedWriter(ABC):
    """The writing half of a store: a bounded queue and one thread writing it in batches. A subclass writes
    a batch in one transaction (`_write`), deletes old records (`purge`), says which errors mean the
    database is out of reach (`_unreachable`: the batch is kept, tried again after PAUSES, and the queue,
    full meanwhile, drops and counts what comes) and closes its connection (`_close_writer`)."""

    def _start_writer(self, queue_size: int) -> None:
        self._queue: queue.Queue[AuditEntry | None] = queue.Queue(maxsize=queue_size)
        self.dropped = 0
        self.written = 0
        self.failed = 0                       # records that could not be written alone: logged and skipped
        self._busy_since: float | None = None  # monotonic start of the batch being written
        self._unreachable_since: float | None = None   # monotonic: the database out of reach since
        self._closing = threading.Event()
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="audit-writer", daemon=True)
        self._thread.start()
        _OPEN_STORES.add(self)

    def _unreachable(self, exc: Exception) -> bool:
        """The error says the database is out of reach (not that this record is bad)."""
        return False

    def _close_writer(self) -> None:  # noqa: B027 - an optional hook: a store with nothing to close keeps it
        """Close the writer's connection (the writer thread is gone)."""

    @abstractmethod
    def purge(self, now: datetime | None = None) -> int:
        """Delete what is older than the retention; how many records went."""

    @abstractmethod
    def _write(self, entries: list[AuditEntry]) -> None:
        """Write one batch in one transaction (the writer thread)."""

    def add(self, entry: AuditEntry) -> bool:
        """Queue an entry; False (counted and logged) when the queue is full."""
        try:
            self._queue.put_nowait(entry)
            return True
        except queue.Full:
            self.dropped += 1
            if self.dropped == 1 or self.dropped % 1000 == 0:   # counted every time, logged without flooding
                log.error("audit queue full (%d records waiting): %d record(s) dropped so far", self._queue.qsize(),
                          self.dropped)
            return False

    def problem(self) -> str | None:
        """None while the writer runs; otherwise what is wrong (for /healthz and the log)."""
        if self._closed:
            return None
        if not self._thread.is_alive():
            return f"audit writer stopped ({self._queue.qsize()} record(s) waiting)"
        since = self._unreachable_since
        if since is not None:
            return (f"audit store unreachable for {time.monotonic() - since:.0f} s "
                    f"({self._queue.qsize()} record(s) waiting)")
        busy_since = self._busy_since
        if busy_since is not None and time.monotonic() - busy_since > STUCK_SECONDS:
            return (f"audit writer stuck for {time.monotonic() - busy_since:.0f} s "
                    f"({self._queue.qsize()} record(s) waiting)")
        return None

    def _run(self) -> None:
        stop, purged = False, time.monotonic()
        while not stop:
            if time.monotonic() - purged > PURGE_EVERY_SECONDS:   # a long-running bot keeps its retention too
                purged = time.monotonic()
                try:
                    self.purge()
                except Exception as exc:
                    log.error("could not purge old audit records (%s)", type(exc).__name__)
            batch = [self._queue.get()]
            while len(batch) < BATCH:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            stop = None in batch
            entries = [e for e in batch if e is not None]
            self._busy_since = time.monotonic()
            try:
                if entries:
                    self._deliver(entries)
            except Exception:   # never expected (each record is guarded); the thread must go on regardless
                log.exception("audit writer: %d record(s) lost", len(entries))
            finally:
                self._busy_since = None
                for _ in batch:
                    self._queue.task_done()

    def _deliver(self, entries: list[AuditEntry]) -> None:
        """Write the batch; while the database is out of reach, keep it and try again after each of PAUSES
        (the last one repeating): bounded retries, then the database is left alone for a while. Closing
        meanwhile drops what is kept, counted and logged."""
        attempt = 0
        while True:
            if self._closing.is_set() and self._unreachable_since is not None:   # closing, the database away
                self.dropped += len(entries)
                log.error("audit store unreachable at close: %d record(s) dropped", len(entries))
                return
            try:
                self._write_batch(entries)
            except StoreUnavailable as exc:
                entries = exc.remaining if exc.remaining is not None else entries
                pause = PAUSES[min(attempt, len(PAUSES) - 1)]
                attempt += 1
                if self._unreachable_since is None:
                    self._unreachable_since = time.monotonic()
                if attempt == 1 or attempt % 10 == 0:
                    log.error("audit store unreachable (%s): %d record(s) kept, %d waiting; trying again in %.1f s",
                              exc, len(entries), self._queue.qsize(), pause)
                self._busy_since = None      # waiting, not stuck
                self._closing.wait(pause)
                self._busy_since = time.monotonic()
                continue
            if self._unreachable_since is not None:
                log.warning("audit store reachable again after %.0f s", time.monotonic() - self._unreachable_since)
                self._unreachable_since = None
            return

    def _write_batch(self, entries: list[AuditEntry]) -> None:
        """The batch in one transaction; if that fails, each record alone, skipping (logged, counted) any
        record that fails by itself, so one bad record never costs the others. A database out of reach
        raises StoreUnavailable with the records not yet written."""
        try:
            self._write(entries)
            return
        except Exception as exc:
            if self._unreachable(exc):
                raise StoreUnavailable(type(exc).__name__, entries) from None
            if len(entries) == 1:
                self._skip(entries[0], exc)
                return
            log.warning("could not write a batch of %d audit records (%s: %s); writing them one by one",
                        len(entries), type(exc).__name__, exc)
        for n, entry in enumerate(entries):
            try:
                self._write([entry])
            except Exception as exc:
                if self._unreachable(exc):
                    raise StoreUnavailable(type(exc).__name__, entries[n:]) from None
                self._skip(entry, exc)

    def _skip(self, entry: AuditEntry, exc: Exception) -> None:
        self.failed += 1
        log.error("audit record skipped (%s: %s): %s; %d skipped so far", type(exc).__name__, exc, _describe(entry),
                  self.failed)

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every queued record is written (tests, shutdown); False if `timeout` passed first or
        the writer is gone with records waiting."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._queue.all_tasks_done:
            while self._queue.unfinished_tasks:
                if not self._thread.is_alive():
                    return False
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._queue.all_tasks_done.wait(0.5 if left is None else min(left, 0.5))
        return True

    def _stop_writer(self, timeout: float | None = None) -> None:
        """Stop the writer after what is queued; never waits much longer than `timeout` (CLOSE_SECONDS): a
        dead, stuck or cut-off writer's records are dropped, and how many is logged."""
        timeout = CLOSE_SECONDS if timeout is None else timeout
        deadline = time.monotonic() + timeout
        try:
            if self._thread.is_alive():
                self._queue.put(None, timeout=max(0.0, deadline - time.monotonic()))
        except queue.Full:
            pass
        if self._unreachable_since is not None:
            self._closing.set()               # the database is away: do not wait for it
        self._thread.join(timeout=max(0.0, deadline - time.monotonic()))
        self._closing.set()
        self._closed = True
        _OPEN_STORES.discard(self)
        left = sum(1 for e in list(self._queue.queue) if e is not None)
        if self._thread.is_alive():
            self.dropped += left
            log.error("audit writer did not finish within %.0f s (%s): about %d queued record(s) dropped at close",
                      timeout, "stuck on a batch" if self._busy_since is not None else "still writing", left)
        else:
            if left:
                self.dropped += left
                log.error("audit writer had stopped: %d queued record(s) dropped at close", left)
            self._close_writer()   # the writer thread is gone: closing its connection is safe


class AuditStore(AuditReader, QueuedWriter):
    """The SQLite store: writes through a bounded queue and one thread, in batches; reads like an AuditReader."""

    def __init__(self, path: Path, retention_days: int = 90, queue_size: int = QUEUE_SIZE):
        path.parent.mkdir(parents=True, exist_ok=True)
        # customers' messages: a new store is the owner's alone (SQLite gives its -wal and -shm files the
        # database file's mode); created 0600 here, before SQLite opens it, so it is never readable to others
        os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o600))
        self.retention_days = retention_days
        self._writer = _connect(path)
        super().__init__(path)
        self.purge()
        self._start_writer(queue_size)

    def _write(self, entries: list[AuditEntry]) -> None:
        with self._writer:
            for entry in entries:
                cursor = self._writer.execute(
                    "INSERT INTO audit (time, kind, chat_id, user_id, update_id, status, blocked, degraded, fallback, "
                    "latency_ms, model_calls, message, answer, record) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    entry.columns())
                if entry.codes:
                    self._writer.executemany("INSERT INTO audit_codes VALUES (?, ?)",
                                             [(cursor.lastrowid, c) for c in entry.codes])
                self._flag(entry, cursor.lastrowid)
        self.written += len(entries)

    def _flag(self, entry: AuditEntry, own_id: int) -> None:
        """Signs of a misunderstanding: the record's own, and those about an earlier turn of the chat (the
        latest one within FLAG_WINDOW, or the one that answered the 👎'd update), added to that turn's
        `audit_flags` rows and to the `flags` of its stored record."""
        if entry.flags:
            self._add_flags(own_id, entry.flags)
        if entry.flags_on_previous_turn:
            row = self._writer.execute("SELECT id FROM audit WHERE chat_id = ? AND kind = 'turn' AND id < ? "
                                       "AND time >= ? ORDER BY id DESC LIMIT 1",
                                       (entry.chat_id, own_id, flag_window_start(entry))).fetchone()
            if row is not None:
                self._add_flags(row[0], entry.flags_on_previous_turn)
        if entry.flags_on_answered_turn and entry.update_id is not None:
            row = self._writer.execute("SELECT id FROM audit WHERE update_id = ? AND chat_id = ? AND kind = 'turn' "
                                       "ORDER BY id DESC LIMIT 1", (_int64(entry.update_id), entry.chat_id)).fetchone()
            if row is not None:
                self._add_flags(row[0], entry.flags_on_answered_turn)

    def _add_flags(self, audit_id: int, flags: tuple[str, ...]) -> None:
        self._writer.executemany("INSERT OR IGNORE INTO audit_flags VALUES (?, ?)", [(audit_id, f) for f in flags])
        have = [r[0] for r in self._writer.execute("SELECT flag FROM audit_flags WHERE audit_id = ? ORDER BY rowid",
                                                   (audit_id,))]
        self._writer.execute("UPDATE audit SET misunderstood = 1, record = CASE WHEN json_valid(record) "
                             "THEN json_set(record, '$.flags', json(?)) ELSE record END WHERE id = ?",
                             (json.dumps(have), audit_id))

    def purge(self, now: datetime | None = None) -> int:
        """Delete records older than the retention; how many were."""
        cutoff = _iso((now or datetime.now(UTC)) - timedelta(days=self.retention_days))
        with self._writer:
            self._writer.execute("DELETE FROM audit_codes WHERE audit_id IN (SELECT id FROM audit WHERE time < ?)",
                                 (cutoff,))
            self._writer.execute("DELETE FROM audit_flags WHERE audit_id IN (SELECT id FROM audit WHERE time < ?)",
                                 (cutoff,))
            deleted = self._writer.execute("DELETE FROM audit WHERE time < ?", (cutoff,)).rowcount
        return deleted

    def _close_writer(self) -> None:  # noqa: B027 - an optional hook: a store with nothing to close keeps it
        self._writer.close()

    def close(self, timeout: float | None = None) -> None:
        """Stop the writer (see QueuedWriter._stop_writer), then the reader."""
        self._stop_writer(timeout)
        super().close()


def flag_window_start(entry: AuditEntry) -> str:
    """The earliest time of the turn a sign "about the answer before" may name ("" when the entry's own
    time cannot be read: any earlier turn)."""
    if not _is_time(entry.time):
        return ""
    return (datetime.fromisoformat(entry.time) - FLAG_WINDOW).astimezone(UTC).isoformat(timespec="milliseconds")


class DatabaseUrl:
    """AUDIT_DB as a database URL (`postgresql://…`): the URL, which may hold a password, is kept inside
    and shown nowhere — `str()` and `repr()` give the scheme, host, port and database only."""

    def __init__(self, url: str):
        self._url = url

    def secret(self) -> str:
        return self._url

    @property
    def scheme(self) -> str:
        return self._url.split(":", 1)[0].lower()

    def __str__(self) -> str:
        from urllib.parse import urlsplit

        try:
            parts = urlsplit(self._url)
            where = f"{parts.hostname or 'localhost'}{f':{parts.port}' if parts.port else ''}"
        except ValueError:
            return f"{self.scheme}://…"
        return f"{self.scheme}://{where}{parts.path or ''}"

    __repr__ = __str__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DatabaseUrl) and other._url == self._url

    def __hash__(self) -> int:
        return hash(self._url)


def is_postgres(target: Path | DatabaseUrl) -> bool:
    return isinstance(target, DatabaseUrl) and target.scheme in ("postgres", "postgresql")


def open_store(target: Path | DatabaseUrl, retention_days: int = 90, queue_size: int = QUEUE_SIZE):
    """The audit store for AUDIT_DB, chosen here and only here: a SQLite file, or PostgreSQL for a
    `postgresql://` URL. Callers see the same methods either way."""
    if is_postgres(target):
        from db.audit_postgres import PostgresStore

        return PostgresStore(target, retention_days, queue_size)
    return AuditStore(Path(target), retention_days, queue_size)


def open_reader(target: Path | DatabaseUrl):
    """A reader of the store for AUDIT_DB (the command line): read-only SQLite, or a PostgreSQL pool."""
    if is_postgres(target):
        from db.audit_postgres import PostgresReader

        return PostgresReader(target)
    return AuditReader(Path(target))
