"""Magic filters checked on the event loop. aiogram runs a filter that is not a coroutine — a magic filter
(`F.text`, `F.chat.id == …`) among them — in a worker thread (`asyncio.to_thread`): a thread hop, with its
wake-ups and GIL hand-overs, per filter per update, for what is one attribute read. (A filter of our own is
written as a coroutine instead.)"""

from __future__ import annotations

from typing import Any

import handlers.aiogram_import  # noqa: F401 - first: aiogram's schemas are then built where first used

# isort: split
from aiogram.filters import Filter
from aiogram.types import TelegramObject
from aiogram.utils.magic_filter import MagicFilter


class Inline(Filter):
    """`Inline(F.chat.type == ChatType.PRIVATE)`: the same check, as a coroutine."""

    def __init__(self, magic: MagicFilter):
        self.magic = magic

    async def __call__(self, event: TelegramObject) -> Any:
        return self.magic.resolve(event)
