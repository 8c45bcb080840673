"""Workers of the durable inbox: each serves the stream partitions it leases (an even share among the
workers alive), runs different chats concurrently and one chat in order, re-runs what a predecessor or
passing trouble left pending, and reads more only as its turns finish."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass, field
from typing import Any

import handlers.aiogram_import  # noqa: F401 - first: aiogram's schemas are then built where first used

# isort: split
from aiogram import Bot, Dispatcher
from aiogram.types import Update
from redis.exceptions import RedisError

from handlers.delivery import metrics
from handlers.delivery.inbox import GROUP, RETRY_SECONDS, TRANSIENT, Entry, Inbox

log = logging.getLogger(__name__)

# on a cluster the reads do not block (Inbox.queue_read): the pause when nothing came, doubled while nothing comes
# (each read is a round trip per master) up to the longest, back to the first as soon as something came
CLUSTER_POLL_SECONDS = 0.02
CLUSTER_POLL_MAX_SECONDS = 0.1


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
    _claim: set[int] = field(default_factory=set)   # taken over, a predecessor's pending entries not claimed yet
    _foreign: set[int] = field(default_factory=set)   # held, with entries pending on another consumer: paused
    _room: asyncio.Event = field(default_factory=asyncio.Event)   # set when a turn finishes
    _draining: set[int] = field(default_factory=set)   # held beyond the fair share: read no more, then release
    _pause: float = CLUSTER_POLL_SECONDS   # the next pause after a cluster read that found nothing

    async def _handle(self, partition: int, entry_id: Any, fields: dict, first: bool) -> None:
        raw = fields.get(b"update") or fields.get("update")
        entry = Entry(self.inbox.stream(partition), entry_id, first)
        appended = int((entry_id.decode() if isinstance(entry_id, bytes) else entry_id).split("-")[0]) / 1000
        metrics.STAGE.labels(stage="inbox").observe(max(time.time() - appended, 0.0))   # ids are append times
        try:
            try:   # the first await is the dispatcher's per-chat FIFO: entries keep their order
                # parsed with the bot in its context: aiogram re-parses an update of no bot (a dump and a
                # second validation of every nested object) to mount it
                update = Update.model_validate_json(raw, context={"bot": self.bot})
                await self.dispatcher.feed_update(self.bot, update, inbox_entry=entry)
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

    def _start(self, partition: int, entries: list, first: bool = False, skip: frozenset = frozenset()) -> None:
        for entry_id, fields in entries:   # tasks start in order: the chat's FIFO lock keeps them in order
            # running here already (ids are per stream: two partitions can share one), or deleted meanwhile
            if (partition, entry_id) in self._in_flight or (partition, entry_id) in skip or not fields:
                continue
            self._in_flight.add((partition, entry_id))
            task = asyncio.create_task(self._handle(partition, entry_id, fields, first))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    def recheck_pending(self) -> None:
        """Read this worker's own pending entries of every partition it holds again, before anything new:
        a read whose reply was lost (a timeout while Redis was unreachable, executed once it answered again,
        or one that reached Redis late without any error here) left them pending where no new read returns
        them. Asked after Redis trouble and at every lease cycle."""
        self._rerun |= self.held

    async def _run_again(self) -> None:
        """Entries of ours left pending (trouble that lasted too long, or a read whose reply was lost): run
        them again, oldest first, before anything new is read from their partitions. One round trip."""
        parts = sorted(self._rerun & self.held - self._foreign)   # another consumer's older entries come first
        if not parts:
            return
        # in flight when asked: still pending at Redis, answered by their own task (a re-run would only
        # find them done); a failed acknowledgement marks its partition for the next re-read anyway
        asked = frozenset(self._in_flight)
        async with self.inbox.redis.pipeline(transaction=False) as pipe:
            self.inbox.queue_read(pipe, self.name, {self.inbox.stream(p): "0" for p in parts}, 1000, None)
            found = self.inbox.entries_of(await pipe.execute())
        self._rerun -= set(parts)
        for stream, entries in found:
            self._start(self.inbox.partition_of_stream(stream), entries, skip=asked)

    async def _take_over(self) -> None:
        """What predecessors read and never acknowledged in the partitions this worker took: claim it and
        run it first. A claim whose reply was lost (Redis trouble) is made again, and its partition is read
        no further until it went through, so a chat's older entries run before its newer ones."""
        self._claim &= self.held
        for p in sorted(self._claim):
            cursor, claimed = "0-0", []
            while True:
                cursor, batch, *_ = await self.inbox.redis.xautoclaim(self.inbox.stream(p), GROUP, self.name, 0,
                                                                      cursor, count=1000)
                claimed += batch
                if cursor in (b"0-0", "0-0"):
                    break
            self._claim.discard(p)
            if claimed:
                log.info("worker %s re-runs %d pending entries of partition %d", self.name, len(claimed), p)
                self._start(p, claimed)

    async def _adopt(self) -> None:
        """Entries pending on another consumer in partitions this worker holds — a worker that lost its lease
        and whose read reached Redis after the takeover's claim, or that was still in a turn — are claimed
        once idle longer than a lease (XAUTOCLAIM min-idle) and run with this worker's own pending entries,
        oldest first; until none is left the partition is read no further, so a chat's order is kept. One
        round trip for every partition held, at each lease cycle."""
        parts = sorted(self.held - self._claim - self._draining)
        if not parts:
            return
        async with self.inbox.redis.pipeline(transaction=False) as pipe:
            for p in parts:
                pipe.xautoclaim(self.inbox.stream(p), GROUP, self.name, self.lease_ms, "0-0", count=1000)
                pipe.xpending(self.inbox.stream(p), GROUP)
            replies = await pipe.execute()
        for p, (cursor, claimed, *_), summary in zip(parts, replies[::2], replies[1::2], strict=True):
            adopted = [entry_id for entry_id, fields in claimed if (p, entry_id) not in self._in_flight and fields]
            if adopted:
                log.warning("worker %s claimed %d entries of partition %d left pending by another consumer",
                            self.name, len(adopted), p)
            if _others_pending(summary, self.name) or cursor not in (b"0-0", "0-0"):
                self._foreign.add(p)   # not idle long enough yet (or more to claim): the next cycle looks again
            else:
                self._foreign.discard(p)
            self._rerun.add(p)   # what was claimed is this worker's now: read again in order with its own

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
        key, now = self.inbox.registry, time.time()
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
                self._claim.add(p)   # what a predecessor read and never acknowledged: claimed and run first
                log.info("worker %s took partition %d", self.name, p)
        await self._take_over()
        self._foreign &= self.held
        await self._adopt()
        return len(self.held) == share and not self._draining and not self._foreign

    async def run(self, stop: asyncio.Event) -> None:
        renew_every = self.lease_ms / 3000
        cycle, last = renew_every, -renew_every
        loop = asyncio.get_running_loop()
        grouped = False
        try:
            while not stop.is_set():
                try:
                    if not grouped:   # in the loop: Redis away as the worker starts is trouble like any other
                        await self.inbox.ensure_groups()
                        grouped = True
                    if loop.time() - last >= cycle:
                        balanced = await self._leases()
                        self.recheck_pending()
                        await self._gauges()
                        last = loop.time()
                        cycle = renew_every if balanced else min(renew_every, 0.5)   # settle shares quickly
                    await self._take_over()   # both nothing to do, without a round trip, most of the time
                    await self._run_again()   # pending entries are older than new ones: started first
                    serving = self.held - self._draining - self._claim - self._foreign
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
                    replicas = self.inbox.replicas
                    async with (replicas or self.inbox).redis.pipeline(transaction=False) as pipe:   # one round trip (per node)
                        reads = self.inbox.queue_read(pipe, self.name, streams, max(room // len(streams), 1), 500)
                        for stream in streams:   # after the read: an older entry read by another consumer shows
                            pipe.xpending(stream, GROUP)
                        waits = replicas.queue(pipe, streams) if replicas else []
                        replies = await (replicas.execute(pipe) if replicas else pipe.execute())
                    # a read on a replica too: a failover keeps it (the entries stay pending, never read as new
                    # again), so its entries are first deliveries; a read not confirmed is treated as a re-run
                    # (each checks its done-marker first)
                    first = replicas.confirmed(waits, replies[-2 * len(waits):]) if replicas else True
                    replies = replies[:len(replies) - 2 * len(waits)]
                    found, summaries = self.inbox.entries_of(replies[:reads]), replies[reads:]
                    behind = {p for p, summary in zip(sorted(serving), summaries, strict=True)
                              if _others_pending(summary, self.name)}
                    if behind:   # what was just read waits, pending here, until the older entries were claimed
                        self._foreign |= behind
                        self._rerun |= behind
                    for stream, entries in found:
                        if self.inbox.partition_of_stream(stream) not in behind:
                            self._start(self.inbox.partition_of_stream(stream), entries, first=first)
                    if self.inbox.cluster and not any(entries for _, entries in found):
                        await asyncio.sleep(self._pause)   # the reads did not block: wait a moment
                        self._pause = min(self._pause * 2, CLUSTER_POLL_MAX_SECONDS)
                    else:
                        self._pause = CLUSTER_POLL_SECONDS
                except (RedisError, OSError) as exc:
                    log.warning("worker %s: Redis trouble (%s); retrying", self.name, type(exc).__name__)
                    self.recheck_pending()
                    await asyncio.sleep(1.0)
        finally:
            if self._tasks:   # drain: finish what was started (SIGTERM), the rest stays pending for others
                await asyncio.gather(*self._tasks, return_exceptions=True)
            try:
                for p in list(self.held):
                    await self.inbox.release(p, self.name)
                await self.inbox.redis.zrem(self.inbox.registry, self.name)
            except RedisError:
                pass   # the leases expire by themselves


def _others_pending(summary: dict, name: str) -> bool:
    """Whether an XPENDING summary shows entries pending on a consumer other than `name`."""
    return any((c["name"].decode() if isinstance(c["name"], bytes) else c["name"]) != name and int(c["pending"])
               for c in summary.get("consumers") or [])

