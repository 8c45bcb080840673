"""The chat model behind any OpenAI-compatible endpoint (DashScope qwen-plus, OpenAI, Ollama, vLLM).

The SDK does the bounded retries with exponential backoff on 429, 5xx and timeouts; we set the
per-request timeouts (a short one to connect), low temperature, and one tool call at a time. A circuit
breaker skips an endpoint that stopped answering: the turn then degrades to the offline model at once
(its reason says "circuit open") instead of waiting out its budget turn after turn."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any

import openai
from openai import AsyncOpenAI

from agent.breaker import Breaker
from agent.models import Message, ModelError, ModelReply, ToolCall

log = logging.getLogger(__name__)

# What says the endpoint was not reached: a timeout (an APIConnectionError too), a refused or dropped
# connection, or the turn's budget running out while the call still waited.
UNREACHABLE = (openai.APIConnectionError, asyncio.CancelledError)


class OpenAIChatModel:
    def __init__(self, client: AsyncOpenAI, model: str, temperature: float = 0.1, breaker: Breaker | None = None):
        self._client = client
        self._model = model
        self._temperature = temperature
        self.name = f"openai:{model}"
        self.breaker = breaker or Breaker("chat")
        self._required_ok = True   # some compatible servers reject tool_choice="required"; then "auto"

    @classmethod
    def from_settings(cls, api_key: str, base_url: str | None, model: str, timeout: float, max_retries: int,
                      connect_timeout: float = 3.0, breaker: Breaker | None = None) -> OpenAIChatModel:
        client = AsyncOpenAI(api_key=api_key, base_url=base_url, max_retries=max_retries,
                             timeout=openai.Timeout(timeout, connect=min(connect_timeout, timeout)))
        return cls(client, model, breaker=breaker)

    async def complete(self, messages: Sequence[Message], tools: Sequence[dict[str, Any]],
                       tool_choice: str = "auto", context: Any = None) -> ModelReply:
        if not self.breaker.allow():
            raise ModelError(self.breaker.why_skipped())
        # the probe after a cooling period is one attempt: a still-hung endpoint costs one timeout, not three
        client = self._client.with_options(max_retries=0) if self.breaker.probing else self._client
        if tool_choice == "required" and not self._required_ok:
            tool_choice = "auto"
        try:
            return await self._complete(client, messages, tools, tool_choice)
        except ModelError as exc:
            if tool_choice == "required" and "HTTP 400" in str(exc):
                log.warning("the endpoint refused tool_choice=required; using auto from now on")
                self._required_ok = False
                return await self._complete(client, messages, tools, "auto")
            raise

    async def _complete(self, client: AsyncOpenAI, messages: Sequence[Message], tools: Sequence[dict[str, Any]],
                        tool_choice: str) -> ModelReply:
        try:
            with self.breaker.watch(UNREACHABLE):
                raw = await client.chat.completions.with_raw_response.create(
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
