"""A durable inbox on Redis Streams. The receiver appends each Telegram update to a stream partition
chosen by its chat (duplicates dropped in the same Lua step) and only then asks Telegram for the next
ones (which confirms these). Workers read with a consumer group; each partition is held by one worker
at a time through an expiring lease, so a chat's messages stay in order; a worker taking a partition
over first re-runs what its predecessor left pending (XAUTOCLAIM). An entry is acknowledged after the
update was handled (reply sent, memory saved, audit queued); a done-marker per update id keeps a re-run
from answering twice."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import zlib
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from aiogram import Bot, Dispatcher
from aiogram.client.session.middlewares.base import BaseRequestMiddleware
from aiogram.exceptions import TelegramNetworkError, TelegramRetryAfter, TelegramServerError
from aiogram.types import Update
from redis.asyncio import Redis
from redis.exceptions import RedisError, ResponseError

from handlers import metrics

log = logging.getLogger(__name__)

GROUP = "workers"
SEEN_SECONDS = 24 * 3600
DONE_SECONDS = 24 * 3600
RETRY_SECONDS = (0.5, 1, 2, 4, 5)
# trouble that passes: Redis restarting or unreachable, the network, the Bot API's 5xx or flood control
TRANSIENT = (RedisError, OSError, TelegramNetworkError, TelegramServerError, TelegramRetryAfter)
TURN_RETRY_WAITS = (0.5, 1, 2, 4, 8, 10, 10, 10)   # ~45 s in all, inside the chat's turn: order is kept

_APPEND = """
if redis.call('SET', KEYS[1], '1', 'NX', 'EX', ARGV[2]) then
  return redis.call('XADD', KEYS[2], '*', 'update', ARGV[1])
end
return false
"""
_RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
"""


@dataclass
class Delivery:
    """Whether something reached the customer while one update was handled."""
    sent: bool = False


_delivery: ContextVar[Delivery | None] = ContextVar("kefu_delivery", default=None)


class DeliveryMarker(BaseRequestMiddleware):
    """A Bot API request middleware: a message sent, copied or forwarded on behalf of the update being
    handled marks its delivery, so that a retry after a later failure does not send it again."""

    async def __call__(self, make_request, bot, method):
        response = await make_request(bot, method)
        delivery = _delivery.get()
        name = type(method).__name__
        if delivery is not None and name.startswith(("Send", "Copy", "Forward")) and name != "SendChatAction":
            delivery.sent = True
        return response


@dataclass
class Entry:
    """An inbox entry being handled: where it is, whether this is its first delivery (nobody can have
    handled it before), and whether the gate has acknowledged it already."""
    stream: str
    id: Any
    first: bool
    acked: bool = False

    def finisher(self, done_key: str) -> Finish:
        return Finish(self, done_key)


@dataclass
class Finish:
    """The done-marker and the acknowledgement of an entry as a piggyback, carried by the memory's
    transaction after a reply: the turn's memory, its done-marker and its acknowledgement are written
    together, in one round trip."""
    entry: Entry
    done_key: str

    def queue(self, pipe) -> None:
        pipe.set(self.done_key, 1, ex=DONE_SECONDS)
        pipe.xack(self.entry.stream, GROUP, self.entry.id)

    def done(self, replies: list) -> None:
        self.entry.acked = True


def chat_of(update: Update) -> int | None:
    event = update.message or update.edited_message or update.channel_post or update.edited_channel_post
    if event is not None:
        return event.chat.id
    if update.callback_query is not None and update.callback_query.message is not None:
        return update.callback_query.message.chat.id
    return None


class Inbox:
    def __init__(self, redis: Redis, prefix: str = "kefu:", partitions: int = 4):
        self.redis, self.prefix, self.partitions = redis, prefix, partitions
        self._append = redis.register_script(_APPEND)
        self._renew = redis.register_script(_RENEW)

    def stream(self, partition: int) -> str:
        return f"{self.prefix}inbox:{partition}"

    def partition_of(self, update: Update) -> int:
        chat = chat_of(update)
        key = str(chat) if chat is not None else f"u{update.update_id}"
        return zlib.crc32(key.encode()) % self.partitions

    async def ensure_groups(self) -> None:
        for p in range(self.partitions):
            try:
                await self.redis.xgroup_create(self.stream(p), GROUP, id="0", mkstream=True)
            except ResponseError as exc:
                if "BUSYGROUP" not in str(exc):
                    raise

    def _append_args(self, update: Update) -> dict:
        return {"keys": [f"{self.prefix}seen:{update.update_id}", self.stream(self.partition_of(update))],
                "args": [update.model_dump_json(exclude_none=True), SEEN_SECONDS]}

    async def append(self, update: Update) -> bool:
        """Append once per update id; False for a duplicate."""
        return bool(await self._append(**self._append_args(update)))

    async def append_many(self, updates: list[Update]) -> None:
        """Append a batch from one getUpdates in one round trip, in order; duplicates are dropped."""
        if len(updates) == 1:
            await self.append(updates[0])
            return
        async with self.redis.pipeline(transaction=False) as pipe:
            for update in updates:
                await self._append(**self._append_args(update), client=pipe)
            await pipe.execute()

    # --- the done-marker: an update handled is never handled again ------------------------------------

    async def is_done(self, update_id: int) -> bool:
        return bool(await self.redis.exists(f"{self.prefix}done:{update_id}"))

    async def mark_done(self, update_id: int) -> None:
        await self.redis.set(f"{self.prefix}done:{update_id}", 1, ex=DONE_SECONDS)

    def finisher(self, update_id: int, entry: Entry | None) -> Finish | None:
        """What marks the update done and acknowledges its entry, for a store to carry (None without an entry)."""
        return entry.finisher(f"{self.prefix}done:{update_id}") if entry is not None else None

    async def finish(self, update_id: int, entry: Entry | None) -> None:
        """Mark the update done and, with its entry, acknowledge it: one round trip (none if the turn's
        memory write carried it already)."""
        if entry is None:
            await self.mark_done(update_id)
        elif not entry.acked:
            async with self.redis.pipeline(transaction=True) as pipe:
                finish = self.finisher(update_id, entry)
                finish.queue(pipe)
                finish.done(await pipe.execute())

    async def handle_once(self, update_id: int, run: Callable[[], Awaitable[Any]], entry: Entry | None = None) -> Any:
        """Run the turn of an update that was not handled before. Transient trouble is retried here,
        holding the chat's turn (order kept), with bounded backoff; once anything reached the customer
        the turn is not run again (a failure after the reply costs that turn's memory, never a second
        answer). Raises when the budget is spent: the entry stays pending and is re-run later."""
        delivery, result = Delivery(), None
        for wait in (*TURN_RETRY_WAITS, None):
            try:
                if not delivery.sent:
                    # a first delivery cannot have been handled before: only a re-run asks
                    if not (entry and entry.first) and await self.is_done(update_id):
                        log.info("update %s was handled before a restart: not answered twice", update_id)
                        return None
                    token = _delivery.set(delivery)
                    try:
                        result = await run()
                    finally:
                        _delivery.reset(token)
                await self.finish(update_id, entry)
                return result
            except TRANSIENT as exc:
                if wait is None:
                    raise
                log.warning("update %s: %s; %s in %.1f s", update_id, type(exc).__name__,
                            "marking it answered" if delivery.sent else "running it again", wait)
                await asyncio.sleep(wait)
        return None

    # --- leases --------------------------------------------------------------------------------------

    async def take(self, partition: int, owner: str, lease_ms: int) -> bool:
        return bool(await self.redis.set(f"{self.prefix}lease:{partition}", owner, nx=True, px=lease_ms))

    async def renew(self, partition: int, owner: str, lease_ms: int) -> bool:
        return bool(await self._renew(keys=[f"{self.prefix}lease:{partition}"], args=[owner, lease_ms]))

    async def release(self, partition: int, owner: str) -> None:
        if (await self.redis.get(f"{self.prefix}lease:{partition}") or b"").decode() == owner:
            await self.redis.delete(f"{self.prefix}lease:{partition}")


async def receive(bot: Bot, inbox: Inbox, stop: asyncio.Event, allowed_updates: list[str] | None = None,
                  poll_seconds: int = 20) -> None:
    """Long-poll Telegram; append every update; only then move the offset (which confirms them)."""
    await inbox.ensure_groups()
    offset: int | None = None
    failures = 0
    while not stop.is_set():
        try:
            updates = await bot.get_updates(offset=offset, timeout=poll_seconds, allowed_updates=allowed_updates,
                                            request_timeout=poll_seconds + 10)
            if updates:
                await inbox.append_many(updates)
                offset = updates[-1].update_id + 1   # appended: safe to confirm
            failures = 0
        except Exception as exc:   # noqa: BLE001 - Telegram, the network or Redis: nothing was confirmed
            wait = RETRY_SECONDS[min(failures, len(RETRY_SECONDS) - 1)]
            failures += 1
            log.warning("receiving updates failed (%s); retrying in %.1f s", type(exc).__name__, wait)
            try:
                await asyncio.wait_for(stop.wait(), wait)
            except TimeoutError:
                pass


@dataclass
class Worker:
    """Serves the partitions it can lease; different chats run concurrently, one chat in order."""

    inbox: Inbox
    dispatcher: Dispatcher
    bot: Bot
    name: str
    lease_ms: int = 15_000
    concurrency: int = 32   # turns in flight at most; the rest waits in the stream (visible as lag)
    held: set[int] = field(default_factory=set)
    _tasks: set[asyncio.Task] = field(default_factory=set)
    _in_flight: set[tuple[int, Any]] = field(default_factory=set)
    _rerun: set[int] = field(default_factory=set)   # partitions with entries of ours left pending
    _room: asyncio.Event = field(default_factory=asyncio.Event)   # set when a turn finishes
    _draining: set[int] = field(default_factory=set)   # held beyond the fair share: read no more, then release

    async def _handle(self, partition: int, entry_id: Any, fields: dict, first: bool) -> None:
        raw = fields.get(b"update") or fields.get("update")
        entry = Entry(self.inbox.stream(partition), entry_id, first)
        appended = int((entry_id.decode() if isinstance(entry_id, bytes) else entry_id).split("-")[0]) / 1000
        metrics.STAGE.labels(stage="inbox").observe(max(time.time() - appended, 0.0))   # ids are append times
        try:
            try:   # the first await is the dispatcher's per-chat FIFO: entries keep their order
                await self.dispatcher.feed_update(self.bot, Update.model_validate_json(raw), inbox_entry=entry)
            except TRANSIENT as exc:
                log.warning("inbox entry %s left pending after retries (%s): it runs again later", entry_id,
                            type(exc).__name__)
                self._rerun.add(partition)
                return
            except Exception:   # noqa: BLE001 - a poisoned entry is logged and acknowledged, never retried forever
                log.exception("inbox entry %s could not be handled", entry_id)
            for wait in (*RETRY_SECONDS, None):
                if entry.acked:   # with the done-marker, by the gate
                    return
                try:
                    await self.inbox.redis.xack(self.inbox.stream(partition), GROUP, entry_id)
                    return
                except RedisError:
                    if wait is None:   # handled and marked done: a re-run only acknowledges it
                        self._rerun.add(partition)
                        return
                    await asyncio.sleep(wait)
        finally:
            self._in_flight.discard((partition, entry_id))
            self._room.set()

    def _start(self, partition: int, entries: list, first: bool = False) -> None:
        for entry_id, fields in entries:   # tasks start in order: the chat's FIFO lock keeps them in order
            # running here already (ids are per stream: two partitions can share one), or deleted meanwhile
            if (partition, entry_id) in self._in_flight or not fields:
                continue
            self._in_flight.add((partition, entry_id))
            task = asyncio.create_task(self._handle(partition, entry_id, fields, first))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _run_again(self) -> None:
        """Entries of ours left pending by trouble that lasted too long: run them again, oldest first."""
        for p in sorted(self._rerun & self.held):
            found = await self.inbox.redis.xreadgroup(GROUP, self.name, {self.inbox.stream(p): "0"}, count=1000)
            self._rerun.discard(p)
            for _, entries in found or []:
                self._start(p, entries)

    async def _gauges(self) -> None:
        """Pending and unread entries of the partitions this worker holds (Prometheus gauges)."""
        for p in sorted(self.held):
            for group in await self.inbox.redis.xinfo_groups(self.inbox.stream(p)):
                name = group["name"].decode() if isinstance(group["name"], bytes) else group["name"]
                if name == GROUP:
                    metrics.INBOX_PENDING.labels(partition=str(p)).set(group["pending"])
                    metrics.INBOX_LAG.labels(partition=str(p)).set(group.get("lag") or 0)

    async def _fair_share(self) -> int:
        """Partitions this worker should hold: an even share among the workers seen alive (each one
        announces itself at every lease cycle), so a worker that joins gets partitions to serve."""
        key, now = f"{self.inbox.prefix}workers", time.time()
        async with self.inbox.redis.pipeline(transaction=False) as pipe:
            pipe.zadd(key, {self.name: now})
            pipe.zremrangebyscore(key, "-inf", now - self.lease_ms / 1000)   # three missed cycles: gone
            pipe.zcard(key)
            _, _, alive = await pipe.execute()
        return -(-self.inbox.partitions // max(int(alive), 1))

    async def _leases(self) -> bool:
        """Renew, hand over what is beyond the fair share (once its turns in flight are done), take free
        partitions up to it. True when this worker holds its share."""
        share = await self._fair_share()
        for p in sorted(self.held):
            if not await self.inbox.renew(p, self.name, self.lease_ms):
                log.warning("worker %s lost partition %d", self.name, p)
                self.held.discard(p)
                self._draining.discard(p)
        beyond = len(self.held) - share
        for p in sorted(self.held, reverse=True)[:max(beyond, 0)]:
            self._draining.add(p)   # read no more from it ...
        for p in sorted(self._draining):
            if not any(q == p for q, _ in self._in_flight):   # ... and release it once its turns are done
                await self.inbox.release(p, self.name)
                self.held.discard(p)
                self._draining.discard(p)
                log.info("worker %s handed partition %d over (fair share %d)", self.name, p, share)
        for p in range(self.inbox.partitions):
            if len(self.held) >= share:
                break
            if p not in self.held and await self.inbox.take(p, self.name, self.lease_ms):
                self.held.add(p)
                log.info("worker %s took partition %d", self.name, p)
                # what a predecessor read and never acknowledged: run it again first
                _, claimed, _ = await self.inbox.redis.xautoclaim(self.inbox.stream(p), GROUP, self.name, 0,
                                                                   "0-0", count=1000)
                if claimed:
                    log.info("worker %s re-runs %d pending entries of partition %d", self.name, len(claimed), p)
                    self._start(p, claimed)
        return len(self.held) == share and not self._draining

    async def run(self, stop: asyncio.Event) -> None:
        await self.inbox.ensure_groups()
        renew_every = self.lease_ms / 3000
        cycle, last = renew_every, -renew_every
        loop = asyncio.get_running_loop()
        try:
            while not stop.is_set():
                try:
                    if loop.time() - last >= cycle:
                        balanced = await self._leases()
                        await self._run_again()
                        await self._gauges()
                        last = loop.time()
                        cycle = renew_every if balanced else min(renew_every, 0.5)   # settle shares quickly
                    serving = self.held - self._draining
                    if not serving:
                        await asyncio.sleep(min(cycle, 0.5))
                        continue
                    room = self.concurrency - len(self._in_flight)
                    if room <= 0:   # back-pressure: read more only as turns finish
                        self._room.clear()
                        with contextlib.suppress(TimeoutError):
                            await asyncio.wait_for(self._room.wait(), cycle)
                        continue
                    streams = {self.inbox.stream(p): ">" for p in sorted(serving)}
                    found = await self.inbox.redis.xreadgroup(GROUP, self.name, streams,
                                                              count=max(room // len(streams), 1), block=500)
                    for stream, entries in found or []:
                        name = stream.decode() if isinstance(stream, bytes) else stream
                        self._start(int(name.rsplit(":", 1)[1]), entries, first=True)
                except (RedisError, OSError) as exc:
                    log.warning("worker %s: Redis trouble (%s); retrying", self.name, type(exc).__name__)
                    await asyncio.sleep(1.0)
        finally:
            if self._tasks:   # drain: finish what was started (SIGTERM), the rest stays pending for others
                await asyncio.gather(*self._tasks, return_exceptions=True)
            try:
                for p in list(self.held):
                    await self.inbox.release(p, self.name)
                await self.inbox.redis.zrem(f"{self.inbox.prefix}workers", self.name)
            except RedisError:
                pass   # the leases expire by themselves

