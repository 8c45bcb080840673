"""What the shop says for a `Reply` (the texts in texts.py), the same in every channel: a list of
messages, each with the buttons it carries where a channel has buttons."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from agent.clock import now_shanghai
from agent.conversation import Answer, Handoff, Refusal, Reply, Silent
from agent.handoff import ServiceHours
from handlers import texts


@dataclass(frozen=True)
class Outgoing:
    text: str
    buttons: Literal["feedback", "ask_person"] | None = None


@dataclass(frozen=True)
class Voice:
    """`desk`: people answer handed-off chats here; `contact_text`: the store policy on reaching a person,
    told when they do not; `hours`: when people answer (the wait text says when they start)."""
    desk: bool = False
    contact_text: str = ""
    hours: ServiceHours = field(default_factory=lambda: ServiceHours.parse("09:00-21:00"))
    clock: Callable[[], float] = time.time

    def no_desk(self) -> str:
        return texts.NO_HANDOFF_POLICY.format(policy=self.contact_text) if self.contact_text else texts.NO_HANDOFF

    def wait(self) -> str:
        now = now_shanghai(self.clock)
        if self.hours.is_open(now):
            return texts.HANDOFF_WAIT
        opening = self.hours.next_opening(now)
        day = "今天" if opening.date() == now.date() else "明天"
        return texts.HANDOFF_AFTER_HOURS.format(hours=self.hours, opening=f"{day}{opening:%H:%M}")

    @staticmethod
    def greeting(examples: tuple[str, ...]) -> str:
        """The first message: who answers, and questions this shop's customers could ask."""
        return texts.START.format(examples="\n".join(f"• {example}" for example in examples))

    def render(self, reply: Reply) -> list[Outgoing]:
        match reply:
            case Answer(result=result, offer_person=offer):
                said = [Outgoing(result.answer, "feedback")]
                if offer:   # twice in a row without help: offer a person instead of going on
                    said.append(Outgoing(texts.HANDOFF_OFFER, "ask_person") if self.desk else Outgoing(self.no_desk()))
                return said
            case Handoff(status="no_desk"):
                return [Outgoing(self.no_desk())]
            case Handoff(status="started"):
                return [Outgoing(self.wait())]
            case Handoff(status="already"):
                return [Outgoing(texts.HANDOFF_ALREADY)]
            case Refusal(reason="too_long", limit=limit):
                return [Outgoing(texts.TOO_LONG.format(limit=limit))]
            case Refusal(reason="slow_down"):
                return [Outgoing(texts.SLOW_DOWN)]
            case Refusal():
                return [Outgoing(texts.SORRY)]
            case Silent():
                return []
        raise TypeError(f"not a reply: {reply!r}")
