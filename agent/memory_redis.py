"""Conversation memory in Redis: per chat, a list of the last turns and a hash with the focus.
Append-and-trim is one MULTI/EXEC transaction; both keys expire after the configured TTL."""

from __future__ import annotations

import json

from redis.asyncio import Redis

from agent.memory import MAX_TURNS, ChatMemory, Turn
from agent.piggyback import Piggyback, carry, deliver


class RedisMemory:
    def __init__(self, redis: Redis, ttl_seconds: int = 7 * 24 * 3600, max_turns: int = MAX_TURNS,
                 prefix: str = "kefu:"):
        self._redis, self._ttl, self._max_turns, self._prefix = redis, ttl_seconds, max_turns, prefix

    def _keys(self, chat_id: str) -> tuple[str, str]:
        base = f"{self._prefix}chat:{chat_id}"
        return f"{base}:turns", f"{base}:focus"

    def loading(self, chat_id: str) -> MemoryLoad:
        """The chat's memory as a piggyback on another store's round trip (`.memory` once carried)."""
        return MemoryLoad(*self._keys(chat_id))

    async def load(self, chat_id: str) -> ChatMemory:
        load = self.loading(chat_id)
        async with self._redis.pipeline(transaction=False) as pipe:
            load.queue(pipe)
            load.done(await pipe.execute())
        return load.memory

    async def append(self, chat_id: str, turn: Turn, focus_product_ids: list[str] | None,
                     last_quantity: int | None, also: Piggyback | None = None) -> None:
        """Append and trim in one transaction, with the caller's commands (`also`) in it when given."""
        turns_key, focus_key = self._keys(chat_id)
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.rpush(turns_key, json.dumps({"user": turn.user, "assistant": turn.assistant}, ensure_ascii=False))
            pipe.ltrim(turns_key, -self._max_turns, -1)
            pipe.expire(turns_key, self._ttl)
            if focus_product_ids:
                pipe.delete(focus_key)
                pipe.hset(focus_key, mapping={"product_ids": ",".join(focus_product_ids),
                                              "quantity": "" if last_quantity is None else str(last_quantity)})
            pipe.expire(focus_key, self._ttl)
            own = len(pipe.command_stack)
            carried = carry(pipe, [also])
            deliver(await pipe.execute(), own, carried)

    async def reset(self, chat_id: str) -> None:
        await self._redis.delete(*self._keys(chat_id))


class MemoryLoad:
    """Reading one chat's turns and focus: two commands, parsed when their replies arrive."""

    def __init__(self, turns_key: str, focus_key: str):
        self.turns_key, self.focus_key = turns_key, focus_key
        self.memory: ChatMemory | None = None

    def queue(self, pipe) -> None:
        pipe.lrange(self.turns_key, 0, -1)
        pipe.hgetall(self.focus_key)

    def done(self, replies: list) -> None:
        raw_turns, focus = replies
        turns = []
        for raw in raw_turns:
            try:
                item = json.loads(raw)
                turns.append(Turn(str(item["user"]), str(item["assistant"])))
            except (ValueError, KeyError, TypeError):
                continue   # a damaged entry is skipped, never fatal
        focus = {_text(k): _text(v) for k, v in (focus or {}).items()}
        ids = [x for x in focus.get("product_ids", "").split(",") if x]
        quantity = focus.get("quantity")
        self.memory = ChatMemory(turns, ids, int(quantity) if quantity and quantity.isdigit() else None)


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
