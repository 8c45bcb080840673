"""The chat-model interface and the scripted model for tests.

A model sees the messages and the tool schemas and replies with text and/or tool calls, in the OpenAI
chat format, whatever is behind it (a remote endpoint, the offline rules, a test script)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

Message = dict[str, Any]


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: str   # raw JSON text, exactly as the model wrote it


@dataclass
class ModelReply:
    content: str | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    retries: int = 0

    def as_message(self) -> Message:
        message: Message = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            message["tool_calls"] = [{"id": c.id, "type": "function",
                                      "function": {"name": c.name, "arguments": c.arguments}}
                                     for c in self.tool_calls]
        return message


class ModelError(Exception):
    """The model could not answer (network, HTTP status, timeout, malformed reply). Never holds a secret."""


class ChatModel(Protocol):
    """`context` is the turn's typed dependency (agent.context.TurnContext); remote models ignore it."""

    name: str

    async def complete(self, messages: Sequence[Message], tools: Sequence[dict[str, Any]],
                       tool_choice: str = "auto", context: Any = None) -> ModelReply: ...


ScriptStep = ModelReply | Exception | Callable[[Sequence[Message]], ModelReply]


class ScriptedModel:
    """Replies from a script, one step per call (a reply, an exception to raise, or a function of the
    messages). When the script runs out it raises ModelError: a test sees a loop it did not expect."""

    name = "scripted"

    def __init__(self, steps: Sequence[ScriptStep]):
        self.steps = list(steps)
        self.calls: list[tuple[list[Message], str]] = []

    async def complete(self, messages, tools, tool_choice="auto", context=None) -> ModelReply:
        self.calls.append((list(messages), tool_choice))
        if not self.steps:
            raise ModelError("script exhausted")
        step = self.steps.pop(0)
        if isinstance(step, Exception):
            raise step
        return step(messages) if callable(step) else step


def call(name: str, arguments: str, call_id: str | None = None) -> ToolCall:
    return ToolCall(call_id or f"call_{name}", name, arguments)
