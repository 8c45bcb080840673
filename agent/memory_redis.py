"""Conversation memory in Redis: per chat, a list of the last turns and a hash with the focus.
Append-and-trim is one MULTI/EXEC transaction; both keys expire after the configured TTL."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

from redis.asyncio import Redis

from agent.memory import MAX_TURNS, ChatMemory, Turn


class ChatKeys:
    """The names of a chat's keys: `<prefix>{<tag>}:<name>`. Everything of one chat carries one Redis
    Cluster hash tag, so what one transaction or script writes for it lives in one slot; the composition
    root gives the inbox partition's tag (handlers/delivery/partitions.py), which the turn's transaction
    shares with the partition's stream. The default, one tag for every chat, is right on one node."""

    def __init__(self, prefix: str = "kefu:", tag_of: Callable[[str], str] = lambda chat_id: "chats",
                 tags: Sequence[str] = ("chats",)):
        self.prefix, self._tag_of, self.tags = prefix, tag_of, tags

    def key(self, chat_id: str, name: str) -> str:
        return f"{self.prefix}{{{self._tag_of(chat_id)}}}:{name}"

    def every(self, name: str) -> list[str]:
        """A key that exists once per tag (e.g. the muted chats of each partition)."""
        return [f"{self.prefix}{{{tag}}}:{name}" for tag in self.tags]


class RedisMemory:
    def __init__(self, redis: Redis, ttl_seconds: int = 7 * 24 * 3600, max_turns: int = MAX_TURNS,
                 prefix: str = "kefu:", keys: ChatKeys | None = None):
        self._redis, self._ttl, self._max_turns = redis, ttl_seconds, max_turns
        self.keys = keys or ChatKeys(prefix)

    def _keys(self, chat_id: str) -> tuple[str, str]:
        return self.keys.key(chat_id, f"chat:{chat_id}:turns"), self.keys.key(chat_id, f"chat:{chat_id}:focus")

    async def load(self, chat_id: str) -> ChatMemory:
        async with self._redis.pipeline(transaction=False) as pipe:
            self.queue_load(pipe, chat_id)
            return self.memory_of(await pipe.execute())

    async def append(self, chat_id: str, turn: Turn, focus_product_ids: list[str] | None,
                     last_quantity: int | None) -> None:
        """Append and trim in one transaction."""
        async with self._redis.pipeline(transaction=True) as pipe:
            self.queue_append(pipe, chat_id, turn, focus_product_ids, last_quantity)
            await pipe.execute()

    async def reset(self, chat_id: str) -> None:
        await self._redis.delete(*self._keys(chat_id))

    # --- commands for a caller's pipeline (the Redis sessions read and write a chat in few round trips) --

    def queue_load(self, pipe, chat_id: str) -> None:
        """Two commands; their replies are read by `memory_of`."""
        turns_key, focus_key = self._keys(chat_id)
        pipe.lrange(turns_key, 0, -1)
        pipe.hgetall(focus_key)

    def queue_append(self, pipe, chat_id: str, turn: Turn, focus_product_ids: list[str] | None,
                     last_quantity: int | None) -> None:
        turns_key, focus_key = self._keys(chat_id)
        pipe.rpush(turns_key, json.dumps({"user": turn.user, "assistant": turn.assistant}, ensure_ascii=False))
        pipe.ltrim(turns_key, -self._max_turns, -1)
        pipe.expire(turns_key, self._ttl)
        if focus_product_ids:
            pipe.delete(focus_key)
            pipe.hset(focus_key, mapping={"product_ids": ",".join(focus_product_ids),
                                          "quantity": "" if last_quantity is None else str(last_quantity)})
        pipe.expire(focus_key, self._ttl)

    @staticmethod
    def memory_of(replies: list) -> ChatMemory:
        """The memory from the replies of `queue_load`'s two commands."""
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
        return ChatMemory(turns, ids, int(quantity) if quantity and quantity.isdigit() else None)


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
