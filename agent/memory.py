"""Conversation memory: per chat, the last turns (customer message and released answer only) and the
focus of the last verified answer. The Redis implementation lives beside this contract."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import Protocol

log = logging.getLogger(__name__)

MAX_TURNS = 8


@dataclass(frozen=True)
class Turn:
    user: str
    assistant: str


@dataclass
class ChatMemory:
    turns: list[Turn] = field(default_factory=list)
    focus_product_ids: list[str] = field(default_factory=list)
    last_quantity: int | None = None


class MemoryStore(Protocol):
    async def load(self, chat_id: str) -> ChatMemory: ...

    async def append(self, chat_id: str, turn: Turn, focus_product_ids: list[str] | None,
                     last_quantity: int | None) -> None: ...

    async def reset(self, chat_id: str) -> None: ...


class InProcessMemory:
    """The same contract in this process only: nothing survives a restart."""

    def __init__(self, max_turns: int = MAX_TURNS, warn: bool = True):
        self._chats: dict[str, ChatMemory] = {}
        self._max_turns = max_turns
        self._lock = asyncio.Lock()
        if warn:
            log.warning("REDIS_URL is not set: conversation memory lives in this process and nothing persists")

    async def load(self, chat_id: str) -> ChatMemory:
        memory = self._chats.get(chat_id)
        if memory is None:
            return ChatMemory()
        return ChatMemory(list(memory.turns), list(memory.focus_product_ids), memory.last_quantity)

    async def append(self, chat_id, turn, focus_product_ids, last_quantity) -> None:
        async with self._lock:
            memory = self._chats.setdefault(chat_id, ChatMemory())
            memory.turns = (memory.turns + [turn])[-self._max_turns:]
            if focus_product_ids:
                memory.focus_product_ids = list(focus_product_ids)
                memory.last_quantity = last_quantity

    async def reset(self, chat_id: str) -> None:
        self._chats.pop(chat_id, None)
