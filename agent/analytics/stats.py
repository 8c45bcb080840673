"""Figures for operators over a period of the audit log: turn outcomes, blocked drafts by reason code,
handoffs, feedback, latency (the one percentile helper); and the audit as a CSV file that Excel opens with
Chinese intact. Each reads typed `TurnRecord`s, and takes the rows the store gives back as well."""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agent.audit_record import TurnRecord
from agent.clock import shop_iso
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
    misunderstood: int = 0              # turns with a sign the bot misunderstood (agent/analytics/signals.py)
    flags: dict[str, int] = field(default_factory=dict)   # the turns of each sign
    handoffs: int = 0
    relayed: int = 0
    thumbs_up: int = 0
    thumbs_down: int = 0
    latency_p50_ms: float | None = None
    latency_p95_ms: float | None = None
    model_calls_per_turn: float | None = None

    def share(self, count: int) -> str:
        return f"{100 * count / self.turns:.0f}%" if self.turns else "—"


def percentile(values: Iterable[float], q: float) -> float | None:
    """The q-th percentile (0-100) by linear interpolation between closest ranks: numpy's default and
    `statistics.quantiles(method="inclusive")`; None when there is no value."""
    ordered = sorted(values)
    if not ordered:
        return None
    low, rest = divmod((len(ordered) - 1) * q, 100)   # kept in hundredths: 95 of 4 gaps is 3 and 80/100
    low = int(low)
    if not rest:
        return ordered[low]
    return (ordered[low] * (100 - rest) + ordered[low + 1] * rest) / 100


def _latency(latencies: Sequence[float], calls: Sequence[int]) -> dict[str, float | None]:
    return {"latency_p50_ms": percentile(latencies, 50), "latency_p95_ms": percentile(latencies, 95),
            "model_calls_per_turn": sum(calls) / len(calls) if calls else None}


def compute(records: Iterable[TurnRecord | Mapping[str, Any]]) -> Stats:
    """The figures over records (or the rows the store and the log give back)."""
    read = [TurnRecord.of(r) for r in records]
    turns = [r for r in read if r.is_turn]
    kinds = Counter(r.kind for r in read)
    feedback = Counter(r.value for r in read if r.kind == "feedback")
    codes = Counter(c for t in turns for v in t.verdicts if not v.ok for c in v.codes)
    outcomes = Counter(t.outcome for t in turns)
    return Stats(
        turns=len(turns), grounded=outcomes[AnswerStatus.GROUNDED], insufficient=outcomes[AnswerStatus.INSUFFICIENT],
        fallback=outcomes[FALLBACK], degraded=sum(1 for t in turns if t.degraded),
        muted=sum(1 for t in turns if t.muted), blocked_by_code=dict(codes.most_common()),
        misunderstood=sum(1 for t in turns if t.flags),
        flags=dict(Counter(f for t in turns for f in dict.fromkeys(t.flags)).most_common()),
        handoffs=kinds["handoff_start"], relayed=kinds["relay"],
        thumbs_up=feedback["up"], thumbs_down=feedback["down"],
        **_latency([float(t.latency_ms) for t in turns if t.latency_ms is not None],
                   [t.model_calls for t in turns if t.model_calls is not None]))


def from_counts(day: dict[str, Any]) -> Stats:
    """The same figures from the store's per-day counts (AuditReader.daily), without reading records."""
    n = lambda key: int(day.get(key) or 0)  # noqa: E731
    return Stats(turns=n("turns"), grounded=n("grounded"), insufficient=n("insufficient"), fallback=n("fallback"),
                 degraded=n("degraded"), muted=n("muted"), blocked_by_code=dict(day.get("codes") or {}),
                 misunderstood=n("misunderstood"), flags=dict(day.get("flags") or {}),
                 handoffs=n("handoffs"), relayed=n("relayed"), thumbs_up=n("up"), thumbs_down=n("down"),
                 **_latency(day.get("latencies") or [], day.get("model_calls") or []))


def combine(days: list[dict[str, Any]]) -> dict[str, Any]:
    """Several days' counts as one."""
    total: dict[str, Any] = {"latencies": [], "model_calls": [], "codes": {}, "flags": {}}
    for day in days:
        for key, value in day.items():
            if key in ("latencies", "model_calls"):
                total[key] += value
            elif key in ("codes", "flags"):
                for code, n in value.items():
                    total[key][code] = total[key].get(code, 0) + n
            elif isinstance(value, int):
                total[key] = total.get(key, 0) + value
    return total


CSV_COLUMNS = ("time", "kind", "chat_id", "user_id", "update_id", "status", "message", "answer", "text",
               "delivered", "blocked", "reason_codes", "degraded", "fallback", "model_calls", "latency_ms",
               "citations", "operator_id", "direction", "value", "reason")


def to_csv(records: Iterable[TurnRecord | Mapping[str, Any]]) -> bytes:
    """UTF-8 with a byte-order mark, so Excel shows the Chinese; lists are JSON inside their cell."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(CSV_COLUMNS)
    for record in records:
        writer.writerow([_cell(value) for value in csv_cells(TurnRecord.of(record))])
    return ("\ufeff" + out.getvalue()).encode("utf-8")


def csv_cells(r: TurnRecord) -> tuple[Any, ...]:
    """A record's values in the order of CSV_COLUMNS."""
    citations = json.dumps(list(r.citations), ensure_ascii=False) if r.citations else ""
    return (shop_iso(r.time), r.kind, r.chat_id, r.user_id, r.update_id, r.status, r.message, r.answer, r.text, r.delivered,
            r.blocked, " ".join(r.blocked_codes), r.degraded, r.fallback, r.model_calls, r.latency_ms, citations,
            r.operator_id, r.direction, r.value, r.reason)


def _cell(value: Any) -> str:
    """A spreadsheet must not run a customer's text as a formula (CSV injection)."""
    if value is None:
        return ""
    text = str(value)
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def format_stats(stats: Stats, label: str) -> str:
    """/stats and `bot.py stats`, in the operators' Chinese (reason codes kept beside their explanation)."""
    from agent.analytics.labels import flag_label, reason

    signs = "；".join(f"{flag_label(flag)} ×{n}" for flag, n in stats.flags.items())
    blocked = "；".join(f"{reason(code)} ×{n}" for code, n in stats.blocked_by_code.items()) or "无"
    latency = (f"p50 {stats.latency_p50_ms:.0f} 毫秒 · p95 {stats.latency_p95_ms:.0f} 毫秒"
               if stats.latency_p50_ms is not None else "无对话")
    calls = f"{stats.model_calls_per_turn:.2f}" if stats.model_calls_per_turn is not None else "—"
    return "\n".join([
        f"📊 客服统计：{label}",
        f"对话轮次：{stats.turns}",
        f"已核实 {stats.grounded}（{stats.share(stats.grounded)}）· 证据不足 {stats.insufficient}"
        f"（{stats.share(stats.insufficient)}）· 兜底回复 {stats.fallback}（{stats.share(stats.fallback)}）",
        f"疑似没听懂：{stats.misunderstood}（{stats.share(stats.misunderstood)}）{'：' + signs if signs else ''}",
        f"降级轮次：{stats.degraded} · 未发送（期间已转人工）：{stats.muted}",
        f"被拦截的草稿（按原因）：{blocked}",
        f"转人工：{stats.handoffs} · 转发消息：{stats.relayed}",
        f"反馈：👍 {stats.thumbs_up} · 👎 {stats.thumbs_down}",
        f"耗时：{latency} · 每轮模型调用：{calls}",
    ])
