"""Per-chat locks, duplicate-update detection and per-user rate limits: in Redis when it is configured
(shared by every bot process), in this process otherwise."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Literal

from redis.asyncio import Redis

log = logging.getLogger(__name__)

Rate = Literal["ok", "notify", "drop"]


class LocalGuards:
    """The same contract for a single process without Redis."""

    def __init__(self, rate_limit: int = 20, window_seconds: int = 60, dedup_seconds: int = 24 * 3600,
                 clock: Callable[[], float] = time.time):
        self.rate_limit, self.window_seconds, self.dedup_seconds = rate_limit, window_seconds, dedup_seconds
        self.clock = clock   # rate windows are read from it: tests fix it, so no window boundary can fall mid-test
        self._claimed: dict[str, float] = {}   # key → when the claim expires (monotonic)
        self._windows: dict[str, tuple[int, int]] = {}
        self.counters: dict[str, int] = {}

    def _claim(self, key: str, seconds: float) -> bool:
        """SET NX EX in this process: True for the first caller while the claim lasts; expired claims go."""
        now = time.monotonic()
        if len(self._claimed) > 100_000:
            self._claimed = {k: until for k, until in self._claimed.items() if until > now}
        if self._claimed.get(key, 0.0) > now:
            return False
        self._claimed[key] = now + seconds
        return True

    async def first_time(self, update_id: int) -> bool:
        return self._claim(f"update:{update_id}", self.dedup_seconds)

    async def rate(self, user_id: str) -> Rate:
        window = int(self.clock() // self.window_seconds)
        start, count = self._windows.get(user_id, (window, 0))
        count = count + 1 if start == window else 1
        self._windows[user_id] = (window, count)
        return _verdict(count, self.rate_limit)

    @asynccontextmanager
    async def chat_lock(self, chat_id: str) -> AsyncIterator[None]:
        yield   # one process: the in-process FIFO lock in the middleware already orders the chat

    async def claim_once(self, name: str, seconds: int) -> bool:
        return self._claim(f"once:{name}", seconds)

    async def count(self, name: str) -> None:
        self.counters[name] = self.counters.get(name, 0) + 1

    async def close(self) -> None:
        return None


class RedisGuards:
    """Redis-backed guards: SET NX for duplicates and one-time jobs, INCR windows, expiring locks."""

    def __init__(self, redis: Redis, prefix: str = "kefu:", rate_limit: int = 20, window_seconds: int = 60,
                 dedup_seconds: int = 24 * 3600, lock_seconds: float = 90.0, clock: Callable[[], float] = time.time,
                 rate_in_process: bool = False):
        """`rate_in_process`: count rate windows here, not in Redis — right when every message of a chat
        reaches this process (the inbox gives a chat's partition to one worker); a window starts afresh
        when a partition moves to another worker."""
        self.redis, self.prefix, self.clock = redis, prefix, clock
        self.rate_limit, self.window_seconds = rate_limit, window_seconds
        self.dedup_seconds, self.lock_seconds = dedup_seconds, lock_seconds
        self._local_rate = LocalGuards(rate_limit, window_seconds, clock=clock) if rate_in_process else None

    async def first_time(self, update_id: int) -> bool:
        return bool(await self.redis.set(f"{self.prefix}update:{update_id}", 1, nx=True, ex=self.dedup_seconds))

    async def rate(self, user_id: str) -> Rate:
        if self._local_rate is not None:
            return await self._local_rate.rate(user_id)
        window = int(self.clock() // self.window_seconds)
        key = f"{self.prefix}rate:{user_id}:{window}"
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.incr(key)
            pipe.expire(key, self.window_seconds * 2)
            count, _ = await pipe.execute()
        return _verdict(int(count), self.rate_limit)

    @asynccontextmanager
    async def chat_lock(self, chat_id: str) -> AsyncIterator[None]:
        """Across bot processes: one turn of a chat at a time; the lock expires if a process dies."""
        lock = self.redis.lock(f"{self.prefix}lock:chat:{chat_id}", timeout=self.lock_seconds,
                               blocking_timeout=self.lock_seconds, sleep=0.05)
        acquired = await lock.acquire()
        if not acquired:
            log.warning("chat %s: another process held the chat lock for %.0f s; answering anyway",
                        chat_id, self.lock_seconds)
        try:
            yield
        finally:
            if acquired:
                try:
                    await lock.release()
                except Exception:   # noqa: BLE001 - expired meanwhile: nothing to release
                    pass

    async def claim_once(self, name: str, seconds: int) -> bool:
        """True for exactly one caller per `seconds` (e.g. one replica sets the webhook)."""
        return bool(await self.redis.set(f"{self.prefix}once:{name}", 1, nx=True, ex=seconds))

    async def count(self, name: str) -> None:
        """A counter per day (UTC) for the metrics: `<prefix>counters:<date>` hash, kept 90 days."""
        key = f"{self.prefix}counters:{time.strftime('%Y-%m-%d', time.gmtime(self.clock()))}"
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.hincrby(key, name, 1)
            pipe.expire(key, 90 * 24 * 3600)
            await pipe.execute()

    async def close(self) -> None:
        return None


def _verdict(count: int, limit: int) -> Rate:
    if count <= limit:
        return "ok"
    return "notify" if count == limit + 1 else "drop"


class ChatSequencer:
    """In-process FIFO lock per chat (asyncio.Lock wakes waiters in order) plus in-flight tracking,
    so a chat's messages are answered one at a time, in order, and shutdown can wait for them."""

    def __init__(self) -> None:
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}
        self._in_flight = 0
        self._idle = asyncio.Event()
        self._idle.set()

    @asynccontextmanager
    async def turn(self, chat_id: str) -> AsyncIterator[None]:
        lock, users = self._locks.get(chat_id, (asyncio.Lock(), 0))
        self._locks[chat_id] = (lock, users + 1)
        self._in_flight += 1
        self._idle.clear()
        try:
            async with lock:
                yield
        finally:
            lock, users = self._locks[chat_id]
            if users <= 1:
                del self._locks[chat_id]
            else:
                self._locks[chat_id] = (lock, users - 1)
            self._in_flight -= 1
            if self._in_flight == 0:
                self._idle.set()

    @property
    def in_flight(self) -> int:
        return self._in_flight

    async def drain(self, seconds: float) -> bool:
        """Wait until no turn is running; False if `seconds` passed first."""
        try:
            await asyncio.wait_for(self._idle.wait(), seconds)
            return True
        except TimeoutError:
            return False
