"""One audit record, typed: a turn (built once from the finished turn when it is recorded) or a handoff,
relay, feedback or unanswered event in the same log. The store keeps records as JSON; `from_row` reads one
back (records older than a field read with that field empty, a field of an odd type read as empty),
`as_row` is the JSON that is stored and `entry` the row the store writes (its indexed columns typed)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from functools import cached_property
from typing import Any

from agent.trace import FALLBACK, TurnResult
from db.audit_store import AuditEntry

TURN = "turn"


def kind_of(row: Mapping[str, Any]) -> str:
    return row.get("kind") or TURN   # records written before kinds existed are turns


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: Any
    status: str
    duration_ms: float | None = None
    evidence_ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class Verdict:
    ok: bool
    codes: tuple[str, ...] = ()
    model: str = ""
    draft: str = ""          # the answer submitted (a blocked draft is shown beside what was sent)
    detail: str = ""         # the validator's message for a blocked draft


# the turn fields, in the order a turn's JSON has always had them
_TURN_FIELDS = ("time", "kind", "chat_id", "user_id", "update_id", "delivered", "message", "answer", "status",
                "citations", "blocked", "model", "model_calls", "prompt_tokens", "completion_tokens", "retries",
                "degraded", "degraded_reason", "fallback", "latency_ms", "evidence_ids", "evidence_figures",
                "tool_calls", "verdicts", "flags")
_EVENT_FIELDS = ("user_id", "update_id", "operator_id", "direction", "message_id", "delivered", "value", "reason",
                 "text")


@dataclass(frozen=True)
class TurnRecord:
    """Every field an audit record may have; a field the record lacks is None (or empty)."""
    time: str
    kind: str = TURN
    chat_id: str = ""
    user_id: str | None = None
    update_id: int | None = None
    delivered: bool | None = None          # False: the answer was not sent (a person took the chat meanwhile)
    message: str | None = None
    answer: str | None = None
    status: str | None = None              # an AnswerStatus, or FALLBACK
    citations: tuple[str, ...] = ()
    blocked: bool | None = None            # the validator blocked a draft of this turn
    model: str | None = None
    model_calls: int | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    retries: int | None = None
    degraded: bool | None = None
    degraded_reason: str | None = None
    fallback: bool | None = None
    latency_ms: float | None = None
    evidence_ids: tuple[str, ...] = ()
    evidence_figures: Mapping[str, tuple[str, ...]] = field(default_factory=dict)   # id → "price 120", …
    tool_calls: tuple[ToolCall, ...] = ()
    verdicts: tuple[Verdict, ...] = ()
    flags: tuple[str, ...] = ()            # signs the bot misunderstood (agent/analytics/signals.py)
    previous_flags: tuple[str, ...] = ()   # signs about the chat's turn before this one (not stored here:
    #                                        the store attaches them to that turn)
    # events
    text: str | None = None                # what a relayed or unanswered message said
    operator_id: int | str | None = None
    direction: str | None = None           # a relay: to_operators, to_customer
    message_id: int | None = None
    value: str | None = None               # feedback: up, down
    reason: str | None = None              # why a handoff started or ended
    id: int | None = None                  # the store's row id, once read back
    extra: Mapping[str, Any] = field(default_factory=dict)   # fields this class does not know (newer records)

    @classmethod
    def from_turn(cls, *, chat_id: str, user_id: str, message: str, result: TurnResult,
                  update_id: int | None = None, delivered: bool = True, time: str | None = None,
                  flags: tuple[str, ...] = (), previous_flags: tuple[str, ...] = ()) -> TurnRecord:
        trace = result.trace
        own = tuple(dict.fromkeys([*flags, *(["fallback"] if trace is not None and trace.fallback or
                                              result.status == FALLBACK else [])]))
        common = dict(time=time or now_iso(), chat_id=str(chat_id), user_id=str(user_id), update_id=update_id,
                      delivered=delivered, message=message, answer=result.answer, status=result.status,
                      citations=tuple(result.citations), flags=own, previous_flags=tuple(previous_flags))
        if trace is None:
            return cls(**common, blocked=False)
        return cls(
            **common, blocked=any(not v.ok for v in trace.verdicts), model=trace.model,
            model_calls=trace.model_calls, prompt_tokens=trace.prompt_tokens,
            completion_tokens=trace.completion_tokens, retries=trace.retries, degraded=trace.degraded,
            degraded_reason=trace.degraded_reason, fallback=trace.fallback, latency_ms=trace.latency_ms,
            evidence_ids=tuple(trace.evidence_ids),
            evidence_figures={k: tuple(v) for k, v in trace.evidence_figures.items()},
            tool_calls=tuple(ToolCall(t.name, t.arguments, t.status, t.duration_ms, tuple(t.evidence_ids))
                             for t in trace.tool_calls),
            verdicts=tuple(Verdict(v.ok, tuple(v.codes), v.model, v.draft, v.detail) for v in trace.verdicts))

    @classmethod
    def from_event(cls, kind: str, chat_id: str, *, time: str | None = None, **fields: Any) -> TurnRecord:
        """A handoff, relay, feedback or unanswered event with the fields it was given (a field this class
        does not know is kept as it is, in `extra`)."""
        return cls(time=time or now_iso(), kind=kind, chat_id=str(chat_id),
                   **{k: v for k, v in fields.items() if k in _EVENT_FIELDS},
                   extra={k: v for k, v in fields.items() if k not in _EVENT_FIELDS})

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> TurnRecord:
        """A record as the store or the JSON Lines file gives it back (the store adds its row `id`)."""
        verdicts = tuple(Verdict(bool(v.get("ok")), tuple(map(str, _list(v.get("codes")))), str(v.get("model") or ""),
                                 str(v.get("draft") or ""), str(v.get("detail") or ""))
                         for v in _list(row.get("verdicts")) if isinstance(v, Mapping))
        tools = tuple(ToolCall(str(t.get("name", "")), t.get("arguments"), str(t.get("status", "")),
                               _number(t.get("duration_ms")), tuple(map(str, _list(t.get("evidence_ids")))))
                      for t in _list(row.get("tool_calls")) if isinstance(t, Mapping))
        figures = row.get("evidence_figures")
        return cls(
            time=str(row.get("time") or ""), kind=kind_of(row), chat_id=str(row.get("chat_id") or ""),
            user_id=_text(row.get("user_id")), update_id=_int(row.get("update_id")),
            delivered=_flag(row.get("delivered")), message=_text(row.get("message")),
            answer=_text(row.get("answer")), status=_text(row.get("status")),
            citations=tuple(map(str, _list(row.get("citations")))), blocked=_flag(row.get("blocked")),
            model=_text(row.get("model")), model_calls=_int(row.get("model_calls")),
            prompt_tokens=_int(row.get("prompt_tokens")), completion_tokens=_int(row.get("completion_tokens")),
            retries=_int(row.get("retries")), degraded=_flag(row.get("degraded")),
            degraded_reason=_text(row.get("degraded_reason")), fallback=_flag(row.get("fallback")),
            latency_ms=_number(row.get("latency_ms")), evidence_ids=tuple(map(str, _list(row.get("evidence_ids")))),
            evidence_figures={str(k): tuple(map(str, _list(v))) for k, v in figures.items()}
            if isinstance(figures, Mapping) else {},
            tool_calls=tools, verdicts=verdicts, flags=tuple(map(str, _list(row.get("flags")))),
            text=_text(row.get("text")), operator_id=row.get("operator_id"),
            direction=_text(row.get("direction")), message_id=_int(row.get("message_id")),
            value=_text(row.get("value")), reason=_text(row.get("reason")), id=_int(row.get("id")),
            extra={k: v for k, v in row.items() if k not in _KNOWN})

    @classmethod
    def of(cls, record: TurnRecord | Mapping[str, Any]) -> TurnRecord:
        """The record itself, or the record a stored row holds."""
        return record if isinstance(record, TurnRecord) else cls.from_row(record)

    def as_row(self) -> dict[str, Any]:
        """The JSON stored for this record (without the row id)."""
        if self.is_turn:
            row = {name: getattr(self, name) for name in _TURN_FIELDS}
            row.update(citations=list(self.citations), evidence_ids=list(self.evidence_ids),
                       evidence_figures={k: list(v) for k, v in self.evidence_figures.items()},
                       tool_calls=[{"name": t.name, "arguments": t.arguments, "status": t.status,
                                    "duration_ms": t.duration_ms, "evidence_ids": list(t.evidence_ids)}
                                   for t in self.tool_calls],
                       verdicts=[{"ok": v.ok, "codes": list(v.codes), "model": v.model, "draft": v.draft,
                                  "detail": v.detail} for v in self.verdicts], flags=list(self.flags))
            return {**row, **self.extra}
        return {"time": self.time, "kind": self.kind, "chat_id": self.chat_id, **self.event_fields()}

    def entry(self) -> AuditEntry:
        """The row the audit store writes: the columns it indexes, the blocked drafts' reason codes and this
        record's JSON."""
        return AuditEntry(time=self.time, kind=self.kind, chat_id=self.chat_id, record=self.as_row(),
                          user_id=self.user_id, update_id=self.update_id, status=self.status,
                          blocked=bool(self.blocked or self.blocked_codes), degraded=bool(self.degraded),
                          fallback=bool(self.fallback), latency_ms=self.latency_ms, model_calls=self.model_calls,
                          message=self.message, answer=self.answer, codes=self.blocked_codes, flags=self.flags,
                          flags_on_previous_turn=self.previous_flags or (
                              ("human_after_answer",) if self.kind == "handoff_start" else ()),
                          flags_on_answered_turn=("thumbs_down",) if self.kind == "feedback" and self.value == "down"
                          else ())

    def event_fields(self) -> dict[str, Any]:
        """What an event says beyond its time, kind and chat: the fields it has."""
        present = {name: getattr(self, name) for name in _EVENT_FIELDS}
        return {**{k: v for k, v in present.items() if v is not None}, **self.extra}

    @property
    def is_turn(self) -> bool:
        return self.kind == TURN

    @cached_property
    def blocked_codes(self) -> tuple[str, ...]:
        """The reason codes of the drafts the validator blocked in this turn."""
        return tuple(sorted({c for v in self.verdicts if not v.ok for c in v.codes}))

    @property
    def outcome(self) -> str | None:
        """The status, except that a turn which ended with the safe fallback is FALLBACK whatever it says."""
        return FALLBACK if self.fallback or self.status == FALLBACK else self.status

    @property
    def muted(self) -> bool:
        """An answer not sent: the chat was handed to a person meanwhile."""
        return self.delivered is False

    @property
    def flagged(self) -> bool:
        """A blocked draft, a degraded turn or the fallback (what `--blocked` and the console's filter pick)."""
        return bool(self.blocked or self.degraded or self.fallback)

    @property
    def marks(self) -> tuple[str, ...]:
        """What an operator should notice about the record, in the console's order."""
        return tuple(name for name, on in (("degraded", self.degraded), ("fallback", self.fallback),
                                           ("blocked", self.blocked_codes), ("not sent", self.muted)) if on)


_KNOWN = frozenset(f.name for f in fields(TurnRecord)) - {"extra", "previous_flags"}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list | tuple) else []


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def _flag(value: Any) -> bool | None:
    return None if value is None else bool(value)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _number(value: Any) -> float | None:
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None
