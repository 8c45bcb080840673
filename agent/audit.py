"""The audit log: one JSON record per turn (built from the turn trace) and per handoff, relay and
feedback event, each with a `kind`, appended to a rotated JSON Lines file off the event loop and
summarized in one log line. It never holds a token or an API key."""

from __future__ import annotations

import json
import logging
import logging.handlers
import queue
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agent.trace import TurnResult
from db.audit_store import AuditFilter, AuditReader, AuditStore  # noqa: F401 - channels read the store through agent/

log = logging.getLogger("kefu.audit")


TURN = "turn"
EVENT_KINDS = ("handoff_start", "handoff_claim", "handoff_end", "relay", "feedback", "unanswered")


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def build_record(*, chat_id: str, user_id: str, message: str, result: TurnResult,
                 update_id: int | None = None, delivered: bool = True) -> dict[str, Any]:
    trace = result.trace.as_dict() if result.trace else {}
    return {
        "time": _now(), "kind": TURN,
        "chat_id": str(chat_id), "user_id": str(user_id), "update_id": update_id, "delivered": delivered,
        "message": message, "answer": result.answer, "status": result.status,
        "citations": result.citations,
        "blocked": any(not v["ok"] for v in trace.get("verdicts", [])),
        **{k: trace.get(k) for k in ("model", "model_calls", "prompt_tokens", "completion_tokens", "retries",
                                     "degraded", "degraded_reason", "fallback", "latency_ms", "evidence_ids", "evidence_figures",
                                     "tool_calls", "verdicts")},
    }


class JsonLines:
    """The optional JSON Lines copy (for log shippers): a RotatingFileHandler in its own thread."""

    def __init__(self, path: Path, max_bytes: int = 20 * 1024 * 1024, backups: int = 5):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        handler = logging.handlers.RotatingFileHandler(path, maxBytes=max_bytes, backupCount=backups,
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
    """Every record goes to the audit store (SQLite, written off the event loop) and, when configured,
    to a JSON Lines file; one summary line goes to the log."""

    def __init__(self, store: AuditStore | None = None, jsonl: Path | None = None,
                 jsonl_max_bytes: int = 20 * 1024 * 1024, jsonl_backups: int = 5):
        self.store = store
        self.jsonl = JsonLines(jsonl, jsonl_max_bytes, jsonl_backups) if jsonl is not None else None

    def since(self, moment: datetime) -> list[dict[str, Any]]:
        """Every record from `moment` on, oldest first (blocking: call it in a thread)."""
        if self.store is not None:
            return list(self.store.iterate(AuditFilter(since=moment)))
        return read_since(self.jsonl.path, moment) if self.jsonl is not None else []

    def of_chat(self, chat_id: str, count: int) -> list[dict[str, Any]]:
        """A chat's latest `count` records, oldest first (blocking: call it in a thread)."""
        if self.store is not None:
            return self.store.query(AuditFilter(chat_id=str(chat_id)), limit=count)[::-1]
        return tail(self.jsonl.path, count, str(chat_id)) if self.jsonl is not None else []

    @property
    def path(self) -> Path | None:
        return self.jsonl.path if self.jsonl is not None else None

    def _write(self, record: dict[str, Any]) -> None:
        if self.store is not None:
            self.store.add(record)
        if self.jsonl is not None:
            self.jsonl.write(record)

    def record(self, **fields: Any) -> dict[str, Any]:
        record = build_record(**fields)
        self._write(record)
        log.info("turn chat=%s status=%s calls=%s degraded=%s fallback=%s blocked=%s latency_ms=%s",
                 record["chat_id"], record["status"], record["model_calls"], record["degraded"], record["fallback"],
                 record["blocked"], record["latency_ms"])
        return record

    def event(self, kind: str, chat_id: str, **fields: Any) -> dict[str, Any]:
        """A handoff, relay or feedback event, in the same log as the turns."""
        assert kind in EVENT_KINDS, kind
        record = {"time": _now(), "kind": kind, "chat_id": str(chat_id), **fields}
        self._write(record)
        log.info("%s chat=%s %s", kind, chat_id, " ".join(f"{k}={v}" for k, v in fields.items()
                                                          if k not in ("text", "message")))
        return record

    def close(self) -> None:
        if self.store is not None:
            self.store.close()
        if self.jsonl is not None:
            self.jsonl.close()


def _matches(record: dict[str, Any], chat: str | None, blocked: bool) -> bool:
    if chat is not None and record.get("chat_id") != chat:
        return False
    return not blocked or bool(record.get("blocked") or record.get("degraded") or record.get("fallback"))


def _parse(line: str) -> dict[str, Any] | None:
    try:
        record = json.loads(line)
    except json.JSONDecodeError:
        return None
    return record if isinstance(record, dict) else None


def kind_of(record: dict[str, Any]) -> str:
    return record.get("kind") or TURN   # records written before kinds existed are turns


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


def summary_line(record: dict[str, Any]) -> str:
    kind = kind_of(record)
    if kind != TURN:
        details = " ".join(f"{k}={v}" for k, v in record.items() if k not in ("time", "kind", "chat_id", "text"))
        text = f"\n  {record['text']}" if record.get("text") else ""
        return f"{record.get('time')} chat={record.get('chat_id')} {kind} {details}{text}"
    flags = [name for name in ("blocked", "degraded", "fallback") if record.get(name)]
    codes = sorted({c for v in record.get("verdicts") or [] for c in v.get("codes", [])})
    return (f"{record.get('time')} chat={record.get('chat_id')} {record.get('status')} "
            f"calls={record.get('model_calls')} {','.join(flags) or 'ok'}{' ' + ','.join(codes) if codes else ''}\n"
            f"  Q: {record.get('message')}\n  A: {record.get('answer')}")
