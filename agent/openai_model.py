"""The chat model behind any OpenAI-compatible endpoint (DashScope qwen-plus, OpenAI, Ollama, vLLM).

The SDK does the bounded retries with exponential backoff on 429, 5xx and timeouts; we set the
per-request timeout, low temperature, and one tool call at a time."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import openai
from openai import AsyncOpenAI

from agent.models import Message, ModelError, ModelReply, ToolCall

log = logging.getLogger(__name__)


class OpenAIChatModel:
    def __init__(self, client: AsyncOpenAI, model: str, temperature: float = 0.1):
        self._client = client
        self._model = model
        self._temperature = temperature
        self.name = f"openai:{model}"
        self._required_ok = True   # some compatible servers reject tool_choice="required"; then "auto"

    @classmethod
    def from_settings(cls, api_key: str, base_url: str | None, model: str, timeout: float,
                      max_retries: int) -> OpenAIChatModel:
        client = AsyncOpenAI(api_key=api_key, base_url=base_url, timeout=timeout, max_retries=max_retries)
        return cls(client, model)

    async def complete(self, messages: Sequence[Message], tools: Sequence[dict[str, Any]],
                       tool_choice: str = "auto", context: Any = None) -> ModelReply:
        if tool_choice == "required" and not self._required_ok:
            tool_choice = "auto"
        try:
            return await self._complete(messages, tools, tool_choice)
        except ModelError as exc:
            if tool_choice == "required" and "HTTP 400" in str(exc):
                log.warning("the endpoint refused tool_choice=required; using auto from now on")
                self._required_ok = False
                return await self._complete(messages, tools, "auto")
            raise

    async def _complete(self, messages: Sequence[Message], tools: Sequence[dict[str, Any]],
                        tool_choice: str) -> ModelReply:
        try:
            raw = await self._client.chat.completions.with_raw_response.create(
                model=self._model, messages=list(messages), tools=list(tools), tool_choice=tool_choice,
                parallel_tool_calls=False, temperature=self._temperature)
            response = raw.parse()
        except openai.APITimeoutError:
            raise ModelError("the chat model timed out") from None
        except openai.APIStatusError as exc:
            raise ModelError(f"the chat model answered HTTP {exc.status_code}") from None
        except openai.APIError as exc:
            raise ModelError(f"the chat model failed: {type(exc).__name__}") from None
        if not response.choices:
            raise ModelError("the chat model returned no choices")
        message = response.choices[0].message
        calls = [ToolCall(c.id, c.function.name, c.function.arguments or "")
                 for c in (message.tool_calls or []) if getattr(c, "function", None) is not None]
        usage = response.usage
        retries = int(raw.retries_taken) if hasattr(raw, "retries_taken") else 0
        return ModelReply(message.content, calls, usage.prompt_tokens if usage else 0,
                          usage.completion_tokens if usage else 0, retries)

    async def close(self) -> None:
        await self._client.close()
