"""The audit log: one record per turn (a `TurnRecord`, built once from the finished turn) and per handoff,
relay, feedback or unanswered event, each with a `kind`, written to the audit store (and, when configured,
a rotated JSON Lines copy) off the event loop and summarized in one log line; read back as `TurnRecord`s.
It never holds a token or an API key."""

from __future__ import annotations

import json
import logging
import logging.handlers
import os
import queue
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agent.analytics.labels import flag_label, kind_label, reason, status_label
from agent.audit_record import TurnRecord
from agent.clock import shop_iso
from db.audit_store import (  # noqa: F401 - channels read the store through agent/
    AuditFilter,
    AuditReader,
    AuditStore,
    writer_counts,
    writer_problems,
)

log = logging.getLogger("kefu.audit")


EVENT_KINDS = ("handoff_start", "handoff_claim", "handoff_end", "relay", "feedback", "unanswered")


class _PrivateRotatingFile(logging.handlers.RotatingFileHandler):
    """A rotating file whose every new file (the first, and each after a rollover) is created 0600."""

    def _open(self):
        fd = os.open(self.baseFilename, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        return open(fd, self.mode, encoding=self.encoding, errors=self.errors)  # noqa: SIM115 - the handler closes it


class JsonLines:
    """The optional JSON Lines copy (for log shippers): a RotatingFileHandler in its own thread."""

    def __init__(self, path: Path, max_bytes: int = 20 * 1024 * 1024, backups: int = 5):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        handler = _PrivateRotatingFile(path, maxBytes=max_bytes, backupCount=backups,
                                                       encoding="utf-8")
        handler.setFormatter(logging.Formatter("%(message)s"))
        self._queue: queue.SimpleQueue[logging.LogRecord] = queue.SimpleQueue()
        self._listener = logging.handlers.QueueListener(self._queue, handler)
        self._file_logger = logging.Logger(f"kefu.audit.file.{id(self)}")
        self._file_logger.addHandler(logging.handlers.QueueHandler(self._queue))
        self._file_logger.propagate = False
        self._listener.start()

    def write(self, record: dict[str, Any]) -> None:
        self._file_logger.info(json.dumps(record, ensure_ascii=False, default=str))

    def close(self) -> None:
        self._listener.stop()
        for handler in self._listener.handlers:
            handler.close()


class AuditLog:
    """Every record goes to the audit store (SQLite or PostgreSQL, written off the event loop) and, when
    configured, to a JSON Lines file; one summary line goes to the log."""

    def __init__(self, store: AuditStore | None = None, jsonl: Path | None = None,
                 jsonl_max_bytes: int = 20 * 1024 * 1024, jsonl_backups: int = 5):
        self.store = store
        self.jsonl = JsonLines(jsonl, jsonl_max_bytes, jsonl_backups) if jsonl is not None else None

    def since(self, moment: datetime) -> list[TurnRecord]:
        """Every record from `moment` on, oldest first (blocking: call it in a thread)."""
        if self.store is not None:
            rows = self.store.iterate(AuditFilter(since=moment))
        else:
            rows = read_since(self.jsonl.path, moment) if self.jsonl is not None else []
        return [TurnRecord.from_row(row) for row in rows]

    def of_chat(self, chat_id: str, count: int) -> list[TurnRecord]:
        """A chat's latest `count` records, oldest first (blocking: call it in a thread)."""
        if self.store is not None:
            rows = self.store.query(AuditFilter(chat_id=str(chat_id)), limit=count)[::-1]
        else:
            rows = tail(self.jsonl.path, count, str(chat_id)) if self.jsonl is not None else []
        return [TurnRecord.from_row(row) for row in rows]

    @property
    def path(self) -> Path | None:
        return self.jsonl.path if self.jsonl is not None else None

    def _write(self, record: TurnRecord) -> None:
        entry = record.entry()
        if self.store is not None:
            self.store.add(entry)
        if self.jsonl is not None:
            self.jsonl.write(dict(entry.record))

    def record(self, **fields: Any) -> TurnRecord:
        """A finished turn (`TurnRecord.from_turn`'s arguments), typed once and written."""
        record = TurnRecord.from_turn(**fields)
        self._write(record)
        log.info("turn chat=%s status=%s calls=%s degraded=%s fallback=%s blocked=%s latency_ms=%s",
                 record.chat_id, record.status, record.model_calls, record.degraded, record.fallback,
                 record.blocked, record.latency_ms)
        return record

    def event(self, kind: str, chat_id: str, **fields: Any) -> TurnRecord:
        """A handoff, relay or feedback event, in the same log as the turns."""
        assert kind in EVENT_KINDS, kind
        record = TurnRecord.from_event(kind, chat_id, **fields)
        self._write(record)
        log.info("%s chat=%s %s", kind, chat_id, " ".join(f"{k}={v}" for k, v in fields.items()
                                                          if k not in ("text", "message")))
        return record

    def close(self) -> None:
        if self.store is not None:
            self.store.close()
        if self.jsonl is not None:
            self.jsonl.close()


def _matches(row: dict[str, Any], chat: str | None, blocked: bool) -> bool:
    record = TurnRecord.from_row(row)
    return (chat is None or record.chat_id == chat) and (not blocked or record.flagged)


def _parse(line: str) -> dict[str, Any] | None:
    try:
        record = json.loads(line)
    except json.JSONDecodeError:
        return None
    return record if isinstance(record, dict) else None


def read_since(path: Path, since: datetime | None = None) -> list[dict[str, Any]]:
    """Every record at or after `since`, oldest first, from the rotated backups and the current file."""
    files = [path.with_name(f"{path.name}.{n}") for n in range(9, 0, -1)] + [path]
    cutoff = since.astimezone(UTC).isoformat(timespec="milliseconds") if since else ""
    out: list[dict[str, Any]] = []
    for file in files:
        if not file.exists():
            continue
        with file.open(encoding="utf-8", errors="replace") as handle:
            out.extend(r for r in map(_parse, handle) if r is not None and str(r.get("time", "")) >= cutoff)
    return out


def tail(path: Path, count: int = 20, chat: str | None = None, blocked: bool = False) -> list[dict[str, Any]]:
    """The last `count` matching records of the current file."""
    if not path.exists():
        return []
    with path.open(encoding="utf-8", errors="replace") as handle:
        records = [r for r in map(_parse, handle) if r is not None and _matches(r, chat, blocked)]
    return records[-count:]


def summary_line(record: TurnRecord | Mapping[str, Any]) -> str:
    """A record in a few lines for a terminal (`bot.py audit tail`)."""
    r = TurnRecord.of(record)
    if not r.is_turn:
        details = {**r.event_fields(), **({"id": r.id} if r.id is not None else {})}
        details.pop("text", None)
        text = f"\n  {r.text}" if r.text else ""
        return (f"{shop_iso(r.time)} 会话={r.chat_id} {kind_label(r.kind)}（{r.kind}） "
                f"{' '.join(f'{k}={v}' for k, v in details.items())}{text}")
    flags = [name for name, on in (("有拦截", r.blocked), ("降级", r.degraded), ("兜底", r.fallback)) if on]
    codes = "".join(f"\n  拦截原因：{reason(code)}" for code in r.blocked_codes)
    if r.flags:
        codes += "\n  疑似没听懂：" + "、".join(f"{flag_label(f)}（{f}）" for f in r.flags)
    return (f"{shop_iso(r.time)} 会话={r.chat_id} {status_label(r.status)}（{r.status or '—'}） 模型调用={r.model_calls} "
            f"{'、'.join(flags) or '正常'}{codes}\n  问：{r.message}\n  答：{r.answer}")
