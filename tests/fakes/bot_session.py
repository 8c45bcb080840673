"""A recording aiogram session: every Bot API method the handlers call is kept, answered with a
plausible result, or failed with a scripted Telegram exception."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, Callable
from typing import Any

from aiogram import Bot
from aiogram.client.session.base import BaseSession
from aiogram.methods import GetMe, SendChatAction, SendMessage, TelegramMethod
from aiogram.types import Chat, Message, User

BOT_USER = User(id=4242, is_bot=True, first_name="kefu", username="kefu_test_bot")


class RecordingSession(BaseSession):
    def __init__(self) -> None:
        super().__init__()
        self.requests: list[TelegramMethod[Any]] = []
        self.failures: list[Callable[[TelegramMethod[Any]], Exception]] = []   # for SendMessage, in order
        self._tick = asyncio.Event()   # set (and replaced) at every request

    async def until(self, condition: Callable[[], Any], within: float) -> bool:
        """Check `condition()` at every request the bot makes (and every 50 ms, for what changes
        elsewhere) until it holds or `within` seconds have passed; whether it held."""
        deadline = time.monotonic() + within
        while not condition():
            if time.monotonic() >= deadline:
                return False
            try:
                await asyncio.wait_for(self._tick.wait(), min(0.05, max(deadline - time.monotonic(), 0)))
            except TimeoutError:
                pass
        return True

    @property
    def messages(self) -> list[SendMessage]:
        return [r for r in self.requests if isinstance(r, SendMessage)]

    def texts(self, chat_id: int | None = None) -> list[str]:
        return [m.text for m in self.messages if chat_id is None or m.chat_id == chat_id]

    async def make_request(self, bot: Bot, method: TelegramMethod[Any], timeout: int | None = None) -> Any:  # noqa: ASYNC109
        self._tick.set()
        self._tick = asyncio.Event()
        if isinstance(method, SendMessage) and self.failures:
            raise self.failures.pop(0)(method)
        self.requests.append(method)
        if isinstance(method, SendMessage):
            return Message(message_id=len(self.requests), date=int(time.time()),
                           chat=Chat(id=int(method.chat_id), type="private"), from_user=BOT_USER, text=method.text)
        if isinstance(method, GetMe):   # a command addressed to a bot (/start@name) asks who the bot is
            return BOT_USER
        if isinstance(method, SendChatAction):
            return True
        return True

    async def stream_content(self, url: str, headers: dict[str, Any] | None = None, timeout: int = 30,  # noqa: ASYNC109
                             chunk_size: int = 65536, raise_for_status: bool = True) -> AsyncGenerator[bytes, None]:
        yield b""

    async def close(self) -> None:
        return None
