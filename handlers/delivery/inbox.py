"""A durable inbox on Redis Streams. The receiver appends each Telegram update to a stream partition
chosen by its chat (duplicates dropped in the same Lua step) and only then asks Telegram for the next
ones (which confirms these). Workers read with a consumer group; each partition is held by one worker
at a time through an expiring lease, so a chat's messages stay in order; a worker taking a partition
over first re-runs what its predecessor left pending (XAUTOCLAIM; the workers are in workers.py beside it).
An entry is acknowledged after the update was handled (reply sent, memory saved, audit queued); a
done-marker per update id and a delivery marker keep a re-run or a retry from answering twice."""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import handlers.aiogram_import  # noqa: F401 - first: aiogram's schemas are then built where first used

# isort: split
from aiogram import Bot
from aiogram.client.session.middlewares.base import BaseRequestMiddleware
from aiogram.exceptions import TelegramNetworkError, TelegramRetryAfter, TelegramServerError
from aiogram.types import Update
from redis.asyncio import Redis, RedisCluster
from redis.exceptions import RedisError, ResponseError

from handlers.delivery.partitions import Partitions
from handlers.delivery.receipt import DONE_SECONDS, GROUP, Entry, Receipt
from handlers.delivery.replicas import ReplicaWait

log = logging.getLogger(__name__)

SEEN_SECONDS = 24 * 3600
RETRY_SECONDS = (0.5, 1, 2, 4, 5)
# trouble that passes: Redis restarting or unreachable, the network, the Bot API's 5xx or flood control
TRANSIENT = (RedisError, OSError, TelegramNetworkError, TelegramServerError, TelegramRetryAfter)
TURN_RETRY_WAITS = (0.5, 1, 2, 4, 8, 10, 10, 10)   # ~45 s in all, inside the chat's turn: order is kept

_APPEND = """
if redis.call('SET', KEYS[1], '1', 'NX', 'EX', ARGV[2]) then
  return redis.call('XADD', KEYS[2], '*', 'update', ARGV[1])
end
if ARGV[3] == '1' then redis.call('EXPIRE', KEYS[1], ARGV[2]) end
return false
"""
# ARGV[3] = '1' when a WAIT follows: a duplicate then writes too (its seen-marker's lifetime), so that the WAIT
# after it covers the first append of the update, which the master's replication stream holds before it
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


def _str(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _without_surrogates(value):
    """A parked update made storable: lone surrogates (never valid UTF-8) become U+FFFD."""
    if isinstance(value, str):
        return re.sub("[\ud800-\udfff]", "\ufffd", value)
    if isinstance(value, list):
        return [_without_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {k: _without_surrogates(v) for k, v in value.items()}
    return value


def chat_of(update: Update) -> int | None:
    event = update.message or update.edited_message or update.channel_post or update.edited_channel_post
    if event is not None:
        return event.chat.id
    if update.callback_query is not None and update.callback_query.message is not None:
        return update.callback_query.message.chat.id
    return None


class Inbox:
    """The inbox's keys (handlers/delivery/partitions.py has the layout): per partition, under its hash
    tag T, the stream `<prefix>inbox:{T}` and the markers `<prefix>{T}:seen:<update>` and
    `<prefix>{T}:done:<update>`; the leases and the workers' registry share the tag `{workers}`.
    `replicas` (by default the client's own, REDIS_WAIT_REPLICAS > 0): appends, reads and acknowledgements
    wait for a replica (handlers/delivery/replicas.py)."""

    def __init__(self, redis: Redis | RedisCluster, prefix: str = "kefu:", partitions: int = 4,
                 replicas: ReplicaWait | None = None):
        self.redis, self.prefix, self.partitions = redis, prefix, partitions
        self.replicas = replicas or ReplicaWait.of(redis)
        self.layout = Partitions(prefix, partitions)
        self.cluster = isinstance(redis, RedisCluster)
        self._streams = {self.stream(p): p for p in range(partitions)}
        self._append = redis.register_script(_APPEND)
        self._renew = redis.register_script(_RENEW)

    def stream(self, partition: int) -> str:
        return f"{self.prefix}inbox:{{{self.layout.tags[partition]}}}"

    def partition_of_stream(self, stream: bytes | str) -> int:
        return self._streams[_str(stream)]

    def marker(self, partition: int, name: str, update_id: int) -> str:
        return f"{self.prefix}{{{self.layout.tags[partition]}}}:{name}:{update_id}"

    def partition_of(self, update: Update) -> int:
        chat = chat_of(update)
        return self.layout.of_chat(chat if chat is not None else f"u{update.update_id}")

    async def ensure_groups(self) -> None:
        for p in range(self.partitions):
            try:
                await self.redis.xgroup_create(self.stream(p), GROUP, id="0", mkstream=True)
            except ResponseError as exc:
                if "BUSYGROUP" not in str(exc):
                    raise

    def _append_args(self, update: Update, payload: str) -> dict:
        partition = self.partition_of(update)
        return {"keys": [self.marker(partition, "seen", update.update_id), self.stream(partition)],
                "args": [payload, SEEN_SECONDS, "1" if self.replicas else "0"]}

    @property
    def dead_letters(self) -> str:
        return f"{self.prefix}dead-letters"   # not inbox:*: no workers read it

    def _sorted(self, updates: list[Update]) -> tuple[list[tuple[Update, str]], list[tuple[Update, str]]]:
        """The updates that can be stored, with their JSON, and those that cannot (a lone surrogate in a
        text, which no UTF-8 store holds), with the reason: those are parked, never retried for ever."""
        good, dead = [], []
        for update in updates:
            try:
                good.append((update, update.model_dump_json(exclude_none=True)))
            except (ValueError, UnicodeError) as exc:   # pydantic's serialization error is a ValueError
                dead.append((update, f"{type(exc).__name__}: {str(exc)[:200]}"))
        return good, dead

    async def append(self, update: Update) -> bool:
        """Append once per update id; False for a duplicate (or an update parked as a dead letter)."""
        good, dead = self._sorted([update])
        if dead:
            await self._park(dead)
            return False
        if self.replicas:
            (added,) = await self._append_replicated(good)
            return bool(added)
        return bool(await self._append(**self._append_args(*good[0])))

    async def append_many(self, updates: list[Update]) -> None:
        """Append a batch from one getUpdates in one round trip, in order; duplicates are dropped; an update
        that cannot be stored goes to the dead letters (`bot.py inbox dead-letters`)."""
        good, dead = self._sorted(updates)
        if dead:
            await self._park(dead)
        if self.replicas and good:
            await self._append_replicated(good)
            return
        if len(good) == 1:
            await self._append(**self._append_args(*good[0]))
            return
        if not good:
            return
        async with self.redis.pipeline(transaction=False) as pipe:
            for update, payload in good:   # EVAL, not a script object: no SCRIPT EXISTS round trip first
                args = self._append_args(update, payload)
                pipe.eval(_APPEND, 2, *args["keys"], *args["args"])
            await pipe.execute()

    async def _append_replicated(self, good: list[tuple[Update, str]]) -> list:
        """The appends, then WAIT on each master written to, in one round trip per master: raises NotReplicated
        (a RedisError) when a replica did not confirm them, so nothing is confirmed to Telegram."""
        def queue(pipe) -> list[str]:
            keys = []
            for update, payload in good:
                args = self._append_args(update, payload)
                pipe.eval(_APPEND, 2, *args["keys"], *args["args"])
                keys.append(args["keys"][1])
            return keys

        return await self.replicas.write(queue)

    async def _park(self, dead: list[tuple[Update, str]]) -> None:
        for update, reason in dead:
            raw = json.dumps(update.model_dump(exclude_none=True, mode="python"), ensure_ascii=True, default=str)
            await self.redis.xadd(self.dead_letters, {"update_id": str(update.update_id), "reason": reason,
                                                      "update": raw}, maxlen=10_000, approximate=True)
            log.warning("update %s parked as a dead letter (%s)", update.update_id, reason)

    async def list_dead(self, count: int = 100) -> list[tuple[str, dict[str, str]]]:
        """The parked updates, oldest first: (id, {update_id, reason, update})."""
        entries = await self.redis.xrange(self.dead_letters, count=count)
        return [(_str(entry_id), {_str(k): _str(v) for k, v in fields.items()}) for entry_id, fields in entries]

    async def replay(self, entry_id: str) -> bool:
        """Append a parked update again, with what could not be stored replaced (U+FFFD); False if unknown."""
        found = await self.redis.xrange(self.dead_letters, entry_id, entry_id)
        if not found:
            return False
        fields = {_str(k): _str(v) for k, v in found[0][1].items()}
        update = Update.model_validate(_without_surrogates(json.loads(fields["update"])))
        await self.redis.delete(self.marker(self.partition_of(update), "seen", update.update_id))
        appended = await self.append(update)
        await self.redis.xdel(self.dead_letters, entry_id)
        return appended

    # --- the done-marker: an update handled is never handled again ------------------------------------

    def _done_key(self, update_id: int, stream: str | None) -> str:
        """Beside its entry's stream (one slot for the marker and the XACK); an update from no stream has
        the first partition's."""
        return self.marker(self.partition_of_stream(stream) if stream is not None else 0, "done", update_id)

    async def is_done(self, update_id: int, stream: str | None = None) -> bool:
        return bool(await self.redis.exists(self._done_key(update_id, stream)))

    async def mark_done(self, update_id: int, stream: str | None = None) -> None:
        await self.redis.set(self._done_key(update_id, stream), 1, ex=DONE_SECONDS)

    def receipt(self, update_id: int, entry: Entry) -> Receipt:
        """What marks the update done and acknowledges its entry, for the chat's session to settle."""
        return Receipt(self._done_key(update_id, entry.stream), entry)

    async def finish(self, update_id: int, entry: Entry | None) -> None:
        """Mark the update done and, with its entry, acknowledge it: one round trip (none if the chat's
        session settled it already)."""
        if entry is None:
            await self.mark_done(update_id)
        elif not entry.acked and self.replicas:   # on a replica too before it counts (NotReplicated: retried)
            receipt = self.receipt(update_id, entry)

            def queue(pipe) -> list[str]:
                receipt.queue(pipe)
                return [receipt.done_key]

            await self.replicas.write(queue)
            entry.acked = True
        elif not entry.acked:
            async with self.redis.pipeline(transaction=True) as pipe:
                self.receipt(update_id, entry).queue(pipe)
                await pipe.execute()
            entry.acked = True

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
                    if not (entry and entry.first) and await self.is_done(update_id, entry and entry.stream):
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

    # --- leases --------------------------------------------------------------------------------------

    def lease(self, partition: int) -> str:
        return f"{self.prefix}{{workers}}:lease:{partition}"

    @property
    def registry(self) -> str:
        """The workers alive (a sorted set by last lease cycle), beside the leases."""
        return f"{self.prefix}{{workers}}:registry"

    async def take(self, partition: int, owner: str, lease_ms: int) -> bool:
        return bool(await self.redis.set(self.lease(partition), owner, nx=True, px=lease_ms))

    async def renew(self, partition: int, owner: str, lease_ms: int) -> bool:
        return bool(await self._renew(keys=[self.lease(partition)], args=[owner, lease_ms]))

    async def release(self, partition: int, owner: str) -> None:
        if (await self.redis.get(self.lease(partition)) or b"").decode() == owner:
            await self.redis.delete(self.lease(partition))

    # --- reading: one XREADGROUP over the partitions on one node; one per partition on a cluster ----------

    def queue_read(self, pipe, consumer: str, streams: dict[str, str], count: int, block: int | None) -> int:
        """Queue the read of `streams` ({stream: id}); returns how many replies `entries_of` takes. A
        cluster cannot read streams of different slots in one command, and one blocking read per slot in
        a pipeline would hold the others back: there each stream is read without blocking (the worker
        waits a moment when nothing came)."""
        if not self.cluster:
            pipe.xreadgroup(GROUP, consumer, streams, count=count, block=block)
            return 1
        for stream, start in streams.items():
            pipe.xreadgroup(GROUP, consumer, {stream: start}, count=count)
        return len(streams)

    @staticmethod
    def entries_of(replies: list) -> list:
        """[(stream, entries)] from the replies of `queue_read`."""
        return [item for reply in replies for item in (reply or [])]


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
