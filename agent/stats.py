"""Figures for operators over a period of the audit log: turn outcomes, blocked drafts by reason code,
handoffs, feedback, latency; and the audit as a CSV file that Excel opens with Chinese intact."""

from __future__ import annotations

import csv
import io
import json
import statistics
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from agent.audit import TURN, kind_of
from agent.trace import FALLBACK
from guardrails.validator import AnswerStatus


@dataclass(frozen=True)
class Stats:
    turns: int = 0
    grounded: int = 0
    insufficient: int = 0
    fallback: int = 0
    degraded: int = 0
    muted: int = 0                      # answers not sent: the chat was handed to a person meanwhile
    blocked_by_code: dict[str, int] = field(default_factory=dict)
    handoffs: int = 0
    relayed: int = 0
    thumbs_up: int = 0
    thumbs_down: int = 0
    latency_p50_ms: float | None = None
    latency_p95_ms: float | None = None
    model_calls_per_turn: float | None = None

    def share(self, count: int) -> str:
        return f"{100 * count / self.turns:.0f}%" if self.turns else "—"


def compute(records: list[dict[str, Any]]) -> Stats:
    turns = [r for r in records if kind_of(r) == TURN]
    kinds = Counter(kind_of(r) for r in records)
    feedback = Counter(r.get("value") for r in records if kind_of(r) == "feedback")
    codes: Counter[str] = Counter()
    for turn in turns:
        for verdict in turn.get("verdicts") or []:
            if not verdict.get("ok"):
                codes.update(verdict.get("codes") or [])
    latencies = sorted(float(t["latency_ms"]) for t in turns if isinstance(t.get("latency_ms"), int | float))
    calls = [int(t["model_calls"]) for t in turns if isinstance(t.get("model_calls"), int)]
    p50 = p95 = None
    if latencies:
        p50 = statistics.median(latencies)
        p95 = latencies[0] if len(latencies) == 1 else statistics.quantiles(latencies, n=20, method="inclusive")[18]
    return Stats(
        turns=len(turns),
        grounded=sum(1 for t in turns if t.get("status") == AnswerStatus.GROUNDED and not t.get("fallback")),
        insufficient=sum(1 for t in turns if t.get("status") == AnswerStatus.INSUFFICIENT and not t.get("fallback")),
        fallback=sum(1 for t in turns if t.get("fallback") or t.get("status") == FALLBACK),
        degraded=sum(1 for t in turns if t.get("degraded")),
        muted=sum(1 for t in turns if t.get("delivered") is False),
        blocked_by_code=dict(codes.most_common()),
        handoffs=kinds["handoff_start"], relayed=kinds["relay"],
        thumbs_up=feedback["up"], thumbs_down=feedback["down"],
        latency_p50_ms=p50, latency_p95_ms=p95,
        model_calls_per_turn=sum(calls) / len(calls) if calls else None)


def from_counts(day: dict[str, Any]) -> Stats:
    """The same figures from the store's per-day counts (AuditReader.daily), without reading records."""
    latencies = sorted(day.get("latencies") or [])
    calls = day.get("model_calls") or []
    p50 = p95 = None
    if latencies:
        p50 = statistics.median(latencies)
        p95 = latencies[0] if len(latencies) == 1 else statistics.quantiles(latencies, n=20, method="inclusive")[18]
    n = lambda key: int(day.get(key) or 0)  # noqa: E731
    return Stats(turns=n("turns"), grounded=n("grounded"), insufficient=n("insufficient"), fallback=n("fallback"),
                 degraded=n("degraded"), muted=n("muted"), blocked_by_code=dict(day.get("codes") or {}),
                 handoffs=n("handoffs"), relayed=n("relayed"), thumbs_up=n("up"), thumbs_down=n("down"),
                 latency_p50_ms=p50, latency_p95_ms=p95,
                 model_calls_per_turn=sum(calls) / len(calls) if calls else None)


def combine(days: list[dict[str, Any]]) -> dict[str, Any]:
    """Several days' counts as one."""
    total: dict[str, Any] = {"latencies": [], "model_calls": [], "codes": {}}
    for day in days:
        for key, value in day.items():
            if key in ("latencies", "model_calls"):
                total[key] += value
            elif key == "codes":
                for code, n in value.items():
                    total["codes"][code] = total["codes"].get(code, 0) + n
            elif isinstance(value, int):
                total[key] = total.get(key, 0) + value
    return total


CSV_COLUMNS = ("time", "kind", "chat_id", "user_id", "update_id", "status", "message", "answer", "text",
               "delivered", "blocked", "reason_codes", "degraded", "fallback", "model_calls", "latency_ms",
               "citations", "operator_id", "direction", "value", "reason")


def to_csv(records: list[dict[str, Any]]) -> bytes:
    """UTF-8 with a byte-order mark, so Excel shows the Chinese; lists are JSON inside their cell."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=CSV_COLUMNS, extrasaction="ignore", lineterminator="\r\n")
    writer.writeheader()
    for record in records:
        row = {**record, "kind": kind_of(record)}
        row["reason_codes"] = " ".join(sorted({c for v in record.get("verdicts") or [] if not v.get("ok")
                                                for c in v.get("codes", [])}))
        row["citations"] = json.dumps(record.get("citations") or [], ensure_ascii=False) \
            if record.get("citations") else ""
        writer.writerow({k: _cell(row.get(k)) for k in CSV_COLUMNS})
    return ("\ufeff" + out.getvalue()).encode("utf-8")


def _cell(value: Any) -> str:
    """A spreadsheet must not run a customer's text as a formula (CSV injection)."""
    if value is None:
        return ""
    text = str(value)
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text
