"""What a model may know about the turn beyond the messages: the typed dependency the loop passes to
every model call (pydantic-ai's `deps`). The offline model reads its facts from here, never from JSON."""

from __future__ import annotations

from dataclasses import dataclass, field

from agent.intent import Intent, read


@dataclass
class TurnContext:
    question: str
    user_id: str
    focus_product_ids: list[str] = field(default_factory=list)
    quantity: int | None = None            # units asked about (this message, or carried by a follow-up)
    first_purchase: bool = False
    results: list[tuple[str, object]] = field(default_factory=list)   # (tool name, typed result), in order
    rejections: int = 0                    # submissions the validator sent back in this loop
    intent: Intent | None = None           # the message as the reader understood it

    def __post_init__(self) -> None:
        if self.intent is None:
            self.intent = read(self.question, has_focus=bool(self.focus_product_ids))

    @property
    def called(self) -> list[str]:
        return [name for name, _ in self.results]
