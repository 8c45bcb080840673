"""Who answers a chat: the bot, or a person. Per chat a small state (bot | waiting | human, the
operator, since, last activity, an epoch that grows at every change, the operators' topic), kept in
Redis so every bot process sees the same, or in this process without Redis. Also the deterministic
recognition of "I want a person" and the service hours when people answer."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from datetime import time as clock_time
from enum import StrEnum
from typing import Protocol

from redis.asyncio import Redis

from agent.clock import SHANGHAI
from agent.memory_redis import ChatKeys

STATE_TTL_SECONDS = 180 * 24 * 3600   # a chat's topic is remembered for half a year of silence

PERSON_WORDS = ("转人工", "人工客服", "人工服务", "找人工", "要人工", "接人工", "真人", "投诉", "/human")
_SPACE = re.compile(r"\s+")


def asks_for_person(text: str) -> bool:
    """The customer asks for a person: recognised by words, before any model call."""
    flat = _SPACE.sub("", text or "").lower()
    return any(word in flat for word in PERSON_WORDS)


class Mode(StrEnum):
    BOT = "bot"
    WAITING = "waiting"   # handed off, no operator has claimed it yet
    HUMAN = "human"


class Claim(StrEnum):
    CLAIMED = "claimed"            # this operator has it now
    YOURS = "yours"                # this operator already had it
    TAKEN = "taken"                # another operator has it
    NOT_HANDED_OFF = "not_handed_off"


@dataclass(frozen=True)
class HandoffState:
    mode: Mode = Mode.BOT
    epoch: int = 0
    since: float = 0.0            # when the current mode began (unix time)
    last_activity: float = 0.0
    operator_id: int | None = None   # who claimed it (kept after the end, for the record)
    topic_id: int | None = None
    user_id: str = ""
    name: str = ""

    @property
    def muted(self) -> bool:
        """The bot does not answer this chat now."""
        return self.mode is not Mode.BOT


class HandoffStore(Protocol):
    async def get(self, chat_id: str) -> HandoffState: ...
    async def begin(self, chat_id: str, user_id: str, name: str, now: float) -> bool: ...
    async def claim(self, chat_id: str, operator_id: int, now: float) -> Claim: ...
    async def touch(self, chat_id: str, now: float) -> None: ...
    async def end(self, chat_id: str, now: float, idle_before: float | None = None) -> bool: ...
    async def set_topic(self, chat_id: str, topic_id: int) -> None: ...
    async def chat_of_topic(self, topic_id: int) -> str | None: ...
    async def idle(self, before: float) -> list[str]: ...
    async def misses(self, chat_id: str, helped: bool) -> int: ...
    async def after_turn(self, chat_id: str, helped: bool) -> tuple[HandoffState, int]: ...
    def topic_lock(self, chat_id: str): ...


class LocalHandoffStore:
    """The same contract in this process only (no Redis): every method is atomic on the event loop."""

    def __init__(self) -> None:
        self._states: dict[str, HandoffState] = {}
        self._topics: dict[int, str] = {}
        self._misses: dict[str, int] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    async def get(self, chat_id: str) -> HandoffState:
        return self._states.get(chat_id, HandoffState())

    async def begin(self, chat_id, user_id, name, now) -> bool:
        state = await self.get(chat_id)
        if state.muted:
            return False
        self._states[chat_id] = replace(state, mode=Mode.WAITING, epoch=state.epoch + 1, since=now,
                                        last_activity=now, operator_id=None, user_id=user_id, name=name)
        return True

    async def claim(self, chat_id, operator_id, now) -> Claim:
        state = await self.get(chat_id)
        if state.mode is Mode.HUMAN:
            return Claim.YOURS if state.operator_id == operator_id else Claim.TAKEN
        if state.mode is not Mode.WAITING:
            return Claim.NOT_HANDED_OFF
        self._states[chat_id] = replace(state, mode=Mode.HUMAN, operator_id=operator_id, last_activity=now)
        return Claim.CLAIMED

    async def touch(self, chat_id, now) -> None:
        state = await self.get(chat_id)
        if state.muted:
            self._states[chat_id] = replace(state, last_activity=now)

    async def end(self, chat_id, now, idle_before=None) -> bool:
        state = await self.get(chat_id)
        if not state.muted or (idle_before is not None and state.last_activity >= idle_before):
            return False
        self._states[chat_id] = replace(state, mode=Mode.BOT, epoch=state.epoch + 1, since=now)
        return True

    async def set_topic(self, chat_id, topic_id) -> None:
        self._states[chat_id] = replace(await self.get(chat_id), topic_id=topic_id)
        self._topics[topic_id] = chat_id

    async def chat_of_topic(self, topic_id) -> str | None:
        return self._topics.get(topic_id)

    async def idle(self, before) -> list[str]:
        return [chat for chat, s in self._states.items() if s.muted and s.last_activity < before]

    async def misses(self, chat_id, helped) -> int:
        self._misses[chat_id] = 0 if helped else self._misses.get(chat_id, 0) + 1
        return self._misses[chat_id]

    async def after_turn(self, chat_id, helped) -> tuple[HandoffState, int]:
        return await self.get(chat_id), await self.misses(chat_id, helped)

    @asynccontextmanager
    async def topic_lock(self, chat_id: str) -> AsyncIterator[None]:
        async with self._locks.setdefault(chat_id, asyncio.Lock()):
            yield


# Each transition is one Lua script: read the mode and change it in one step, so two processes can
# never both begin, both claim, or un-mute a chat the other just muted.
_BEGIN = """
local mode = redis.call('HGET', KEYS[1], 'mode')
if mode == 'waiting' or mode == 'human' then return 0 end
redis.call('HINCRBY', KEYS[1], 'epoch', 1)
redis.call('HSET', KEYS[1], 'mode', 'waiting', 'since', ARGV[1], 'last', ARGV[1], 'operator', '',
           'user', ARGV[3], 'name', ARGV[4])
redis.call('EXPIRE', KEYS[1], ARGV[5])
redis.call('ZADD', KEYS[2], ARGV[1], ARGV[2])
return 1
"""
_CLAIM = """
local mode = redis.call('HGET', KEYS[1], 'mode')
if mode == 'human' then return redis.call('HGET', KEYS[1], 'operator') == ARGV[2] and 2 or 0 end
if mode ~= 'waiting' then return -1 end
redis.call('HSET', KEYS[1], 'mode', 'human', 'operator', ARGV[2], 'last', ARGV[1])
redis.call('ZADD', KEYS[2], ARGV[1], ARGV[3])
return 1
"""
_TOUCH = """
local mode = redis.call('HGET', KEYS[1], 'mode')
if mode ~= 'waiting' and mode ~= 'human' then return 0 end
redis.call('HSET', KEYS[1], 'last', ARGV[1])
redis.call('ZADD', KEYS[2], ARGV[1], ARGV[2])
return 1
"""
_END = """
local mode = redis.call('HGET', KEYS[1], 'mode')
if mode ~= 'waiting' and mode ~= 'human' then redis.call('ZREM', KEYS[2], ARGV[2]) return 0 end
if ARGV[3] ~= '' and tonumber(redis.call('HGET', KEYS[1], 'last') or '0') >= tonumber(ARGV[3]) then return 0 end
redis.call('HINCRBY', KEYS[1], 'epoch', 1)
redis.call('HSET', KEYS[1], 'mode', 'bot', 'since', ARGV[1])
redis.call('ZREM', KEYS[2], ARGV[2])
return 1
"""


class RedisHandoffStore:
    """Handoff state shared by every bot process: a hash per chat, a sorted set of muted chats by last
    activity (for the idle timeout), topic → chat keys, and a miss counter per chat. The chat's hash, its
    counter and the muted set its scripts update carry the chat's hash tag (`ChatKeys`): one muted set per
    tag, so each script touches one Redis Cluster slot."""

    def __init__(self, redis: Redis, prefix: str = "kefu:", lock_seconds: float = 30.0, keys: ChatKeys | None = None):
        self.redis, self.prefix, self.lock_seconds = redis, prefix, lock_seconds
        self.keys = keys or ChatKeys(prefix)
        self._begin, self._claim = redis.register_script(_BEGIN), redis.register_script(_CLAIM)
        self._touch, self._end = redis.register_script(_TOUCH), redis.register_script(_END)

    def _keys(self, chat_id: str) -> list[str]:
        return [self.keys.key(chat_id, f"handoff:{chat_id}"), self.keys.key(chat_id, "handoff:muted")]

    def _misses_key(self, chat_id: str) -> str:
        return self.keys.key(chat_id, f"misses:{chat_id}")

    async def get(self, chat_id: str) -> HandoffState:
        return self.state_of(await self.redis.hgetall(self._keys(chat_id)[0]))

    # --- commands for a caller's pipeline (the Redis sessions read and write a chat in few round trips) --

    def queue_get(self, pipe, chat_id: str) -> None:
        """One command; its reply is read by `state_of`."""
        pipe.hgetall(self._keys(chat_id)[0])

    def queue_misses(self, pipe, chat_id: str, helped: bool) -> int:
        """The miss counter's update; returns how many commands it queued (the first reply is the count)."""
        key = self._misses_key(chat_id)
        if helped:
            pipe.delete(key)
            return 1
        pipe.incr(key)
        pipe.expire(key, 24 * 3600)
        return 2

    @staticmethod
    def state_of(fields: dict) -> HandoffState:
        raw = {_text(k): _text(v) for k, v in fields.items()}
        if not raw:
            return HandoffState()
        return HandoffState(mode=Mode(raw.get("mode") or "bot"), epoch=int(raw.get("epoch") or 0),
                            since=float(raw.get("since") or 0), last_activity=float(raw.get("last") or 0),
                            operator_id=int(raw["operator"]) if raw.get("operator") else None,
                            topic_id=int(raw["topic"]) if raw.get("topic") else None,
                            user_id=raw.get("user", ""), name=raw.get("name", ""))

    async def begin(self, chat_id, user_id, name, now) -> bool:
        return bool(await self._begin(keys=self._keys(chat_id),
                                      args=[repr(now), chat_id, user_id, name, STATE_TTL_SECONDS]))

    async def claim(self, chat_id, operator_id, now) -> Claim:
        code = int(await self._claim(keys=self._keys(chat_id), args=[repr(now), str(operator_id), chat_id]))
        return {1: Claim.CLAIMED, 2: Claim.YOURS, 0: Claim.TAKEN}.get(code, Claim.NOT_HANDED_OFF)

    async def touch(self, chat_id, now) -> None:
        await self._touch(keys=self._keys(chat_id), args=[repr(now), chat_id])

    async def end(self, chat_id, now, idle_before=None) -> bool:
        return bool(await self._end(keys=self._keys(chat_id),
                                    args=[repr(now), chat_id, "" if idle_before is None else repr(idle_before)]))

    async def set_topic(self, chat_id, topic_id) -> None:
        """One round trip, not one transaction: the topic → chat key is found by the topic alone, so it
        cannot share the chat's slot. It is written first; alone (a crash between) it is harmless."""
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.set(f"{self.prefix}topic:{topic_id}", chat_id, ex=STATE_TTL_SECONDS)
            pipe.hset(self._keys(chat_id)[0], "topic", str(topic_id))
            pipe.expire(self._keys(chat_id)[0], STATE_TTL_SECONDS)
            await pipe.execute()

    async def chat_of_topic(self, topic_id) -> str | None:
        value = await self.redis.get(f"{self.prefix}topic:{topic_id}")
        return _text(value) if value is not None else None

    async def idle(self, before) -> list[str]:
        """The muted chats idle since before `before`, from every tag's muted set: one round trip (one per
        master on a cluster)."""
        async with self.redis.pipeline(transaction=False) as pipe:
            for key in self.keys.every("handoff:muted"):
                pipe.zrangebyscore(key, "-inf", f"({before!r}")
            found = await pipe.execute()
        return [_text(c) for chats in found for c in chats]

    async def misses(self, chat_id, helped) -> int:
        key = self._misses_key(chat_id)
        if helped:
            await self.redis.delete(key)
            return 0
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.incr(key)
            pipe.expire(key, 24 * 3600)
            count, _ = await pipe.execute()
        return int(count)

    async def after_turn(self, chat_id, helped) -> tuple[HandoffState, int]:
        """The chat's state (did a person take it during the turn?) and the count of unhelped turns in a
        row, updated by this one: one round trip."""
        async with self.redis.pipeline(transaction=False) as pipe:
            self.queue_get(pipe, chat_id)
            self.queue_misses(pipe, chat_id, helped)
            fields, *counted = await pipe.execute()
        return self.state_of(fields), 0 if helped else int(counted[0])

    @asynccontextmanager
    async def topic_lock(self, chat_id: str) -> AsyncIterator[None]:
        """Across processes: one topic creation per chat at a time (two quick messages, one topic)."""
        async with self.redis.lock(f"{self.prefix}lock:topic:{chat_id}", timeout=self.lock_seconds,
                                   blocking_timeout=self.lock_seconds, sleep=0.05):
            yield


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


@dataclass(frozen=True)
class ServiceHours:
    """When people answer, in Asia/Shanghai ("09:00-21:00"; "00:00-24:00" is all day)."""
    opens: clock_time
    closes: clock_time | None   # None: midnight at the end of the day

    @classmethod
    def parse(cls, text: str) -> ServiceHours:
        match = re.fullmatch(r"\s*(\d{1,2}):(\d{2})\s*[-–~至]\s*(\d{1,2}):(\d{2})\s*", text or "")
        if not match:
            raise ValueError("expected HH:MM-HH:MM, e.g. 09:00-21:00")
        h1, m1, h2, m2 = (int(g) for g in match.groups())
        if h1 > 23 or m1 > 59 or m2 > 59 or h2 > 24 or (h2 == 24 and m2):
            raise ValueError("expected HH:MM-HH:MM with real clock times")
        opens, closes = clock_time(h1, m1), None if h2 == 24 else clock_time(h2, m2)
        if closes is not None and closes <= opens:
            raise ValueError("the closing time must be after the opening time")
        return cls(opens, closes)

    @classmethod
    def from_policy(cls, text: str, default: str = "09:00-21:00") -> ServiceHours:
        """The hours a store policy states ("人工客服服务时间为每天9:00到21:00"), else `default`."""
        match = re.search(r"(\d{1,2}[:：]\d{2})\s*(?:到|至|-|–|~)\s*(\d{1,2}[:：]\d{2})", text or "")
        if match:
            try:
                return cls.parse(f"{match[1]}-{match[2]}".replace("：", ":"))
            except ValueError:
                pass
        return cls.parse(default)

    def __str__(self) -> str:
        return f"{self.opens:%H:%M}-{'24:00' if self.closes is None else format(self.closes, '%H:%M')}"

    def is_open(self, at: datetime) -> bool:
        local = at.astimezone(SHANGHAI).time()
        return self.opens <= local and (self.closes is None or local < self.closes)

    def next_opening(self, at: datetime) -> datetime:
        """The next time people answer, at or after `at` (Asia/Shanghai)."""
        local = at.astimezone(SHANGHAI)
        if self.is_open(local):
            return local
        today = local.replace(hour=self.opens.hour, minute=self.opens.minute, second=0, microsecond=0)
        return today if local < today else today + timedelta(days=1)
