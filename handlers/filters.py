"""Filters checked on the event loop. aiogram runs a filter that is not a coroutine — a magic filter
(`F.text`, `F.chat.id == …`) or a plain function — in a worker thread (`asyncio.to_thread`): a thread
hop, with its wake-ups and GIL hand-overs, per filter per update, for what is one attribute read."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aiogram.filters import Filter
from aiogram.types import TelegramObject
from aiogram.utils.magic_filter import MagicFilter


class Inline(Filter):
    """`Inline(F.chat.type == ChatType.PRIVATE)`: the same check, as a coroutine."""

    def __init__(self, check: MagicFilter | Callable[[Any], Any]):
        self.check = check
        self._resolve = check.resolve if isinstance(check, MagicFilter) else check

    async def __call__(self, event: TelegramObject) -> Any:
        return self._resolve(event)

    def __str__(self) -> str:
        return f"Inline({self.check!r})"
