"""The structured record of one turn: what was called, what was verified, what the validator said.
The audit log is built on it; it never holds a secret."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from agent.analytics.labels import figure_text
from guardrails.validator import AnswerStatus

FALLBACK = "fallback"   # the status of a turn that ended with the safe fallback text


@dataclass
class ToolTrace:
    name: str
    arguments: Any
    status: str
    duration_ms: float
    evidence_ids: list[str] = field(default_factory=list)


@dataclass
class VerdictTrace:
    ok: bool
    codes: list[str]
    model: str
    draft: str = ""          # the answer submitted (a blocked draft is shown beside what was sent)
    detail: str = ""         # the validator's message for a blocked draft


@dataclass
class TurnTrace:
    model: str
    tool_calls: list[ToolTrace] = field(default_factory=list)
    verdicts: list[VerdictTrace] = field(default_factory=list)
    evidence_ids: list[str] = field(default_factory=list)
    evidence_figures: dict[str, list[str]] = field(default_factory=dict)   # id → "单价 ¥120.00（商品 001）", "折扣 9折"…

    def count_reply(self, reply: Any) -> None:
        """One model call: its tokens and retries."""
        self.model_calls += 1
        self.prompt_tokens += reply.prompt_tokens
        self.completion_tokens += reply.completion_tokens
        self.retries += reply.retries

    def file_ledger(self, ledger: Any) -> None:
        """The verified evidence of the turn and the figures each holds, for the audit, as an operator reads
        them (¥699.00, 09:00, 48小时)."""
        self.evidence_ids = list(ledger.entries)
        self.evidence_figures = {eid: [figure_text(str(f.role), str(f.kind), f.value, f.source)
                                       for f in entry.figures][:40]
                                 for eid, entry in ledger.entries.items()}
    citations: list[str] = field(default_factory=list)
    model_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    retries: int = 0
    degraded: bool = False
    degraded_reason: str | None = None
    fallback: bool = False
    status: str = ""
    latency_ms: float = 0.0
    model_ms: float = 0.0        # waiting for the model, summed over its calls
    validation_ms: float = 0.0   # the validator, summed over the drafts
    labels: list[str] = field(default_factory=list)   # what the router read the message to ask

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Signs:
    """A turn's signs of a misunderstanding (its own) and those its message gives about the answer before it
    (agent/analytics/signals.py)."""
    own: tuple[str, ...] = ()
    previous: tuple[str, ...] = ()


@dataclass
class TurnResult:
    answer: str
    status: str                      # an AnswerStatus, or FALLBACK
    citations: list[str] = field(default_factory=list)
    focus_product_ids: list[str] = field(default_factory=list)
    quantity: int | None = None
    trace: TurnTrace | None = None

    @property
    def helped(self) -> bool:
        """A grounded answer; an insufficient-evidence answer or the safe fallback did not help."""
        return self.status == AnswerStatus.GROUNDED
