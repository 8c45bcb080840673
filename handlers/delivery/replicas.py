"""Waiting for a replica before a write counts as done (REDIS_WAIT_REPLICAS): an inbox append before Telegram
is told (the polling offset moves, the webhook answers 200), a worker's read and its acknowledgement
(done-marker + XACK), so that a master's failover to its replica loses none of them.

`WAIT n t` covers the writes made *on the connection it is sent on*, so it is queued in the same pipeline as
those writes, addressed to the master that holds their keys (on a Redis Cluster the pipeline runs one
connection per node; `target_nodes` puts the WAIT on that node's): no extra round trip. A write made in a
MULTI/EXEC transaction cannot be followed by WAIT in the same round trip (WAIT inside MULTI does not block),
so a transaction is followed by a second one, a fence: a write to the same slot, then WAIT — the master's
replication stream is ordered, so a replica that has the fence has the transaction before it.

A master waits for `min(REDIS_WAIT_REPLICAS, replicas connected to it)`: after a failover the promoted replica
has none (until the old master comes back as its replica) and there is nobody to fail over to, so waiting
would only stop the shop; it learns the count from `ROLE`, queued beside every WAIT (a master never seen
before is assumed to have what was asked: at most one WAIT timeout to learn otherwise). Fewer replicas than
that within REDIS_WAIT_TIMEOUT_MS: `NotReplicated` (a RedisError, so transient trouble to every caller)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any

from redis.asyncio import Redis, RedisCluster
from redis.exceptions import RedisError

from handlers.delivery import metrics

log = logging.getLogger(__name__)


class NotReplicated(RedisError):
    """A write reached its master but not, within the timeout, the replicas it waited for."""


Waits = list[tuple[str, int]]   # (node name, replicas asked) per WAIT queued, in order


class ReplicaWait:
    """WAIT for `replicas` replicas (at most `timeout_ms`) after writes, in the writes' own round trip.

    `redis` is the client these pipelines run on. On a cluster it must be one without retries of its own
    (handlers/stores.py makes it): the cluster pipeline retries by sending every command again, and the
    WAIT, whose node it was told once, would then go to any node, where it covers nothing; and a MOVED
    command is sent again alone, apart from its WAIT. Here a failure is raised instead (the callers
    retry) and the client looks at the cluster afresh before its next pipeline."""

    def __init__(self, redis: Redis | RedisCluster, replicas: int, timeout_ms: int = 1000):
        self.redis, self.replicas, self.timeout_ms = redis, replicas, timeout_ms
        self.cluster = isinstance(redis, RedisCluster)
        self._known: dict[str, int] = {}   # node name → replicas its last ROLE showed connected

    @staticmethod
    def of(redis: Any) -> ReplicaWait | None:
        """The client's own (handlers/stores.py attaches it when REDIS_WAIT_REPLICAS > 0), else None."""
        wait = getattr(redis, "replica_wait", None)
        return wait if isinstance(wait, ReplicaWait) and wait.replicas > 0 else None

    def queue(self, pipe, keys: Iterable[str]) -> Waits:
        """After the writes to `keys` queued on `pipe`: a WAIT and a ROLE per master those keys live on. Their
        replies are the last 2·len(returned) of the pipeline's; `check` or `confirmed` reads them."""
        if self.cluster:
            nodes = {}
            for key in keys:
                node = self.redis.get_node_from_key(key)
                nodes[node.name] = node
            targets = [(name, {"target_nodes": node}) for name, node in nodes.items()]
        else:
            targets = [("", {})]
        waits: Waits = []
        for name, route in targets:
            asked = min(self.replicas, self._known.get(name, self.replicas))
            pipe.execute_command("WAIT", asked, self.timeout_ms if asked else 1, **route)
            pipe.execute_command("ROLE", **route)
            waits.append((name, asked))
        return waits

    def confirmed(self, waits: Waits, replies: list) -> bool:
        """Whether every master had the writes on the replicas asked (what were connected, if fewer)."""
        ok = True
        for (name, asked), acked, role in zip(waits, replies[0::2], replies[1::2], strict=True):
            if isinstance(acked, Exception) or isinstance(role, Exception):
                ok = False
                continue
            connected = len(role[2]) if role and role[0] in (b"master", "master") else 0
            if connected != self._known.get(name, connected):
                log.warning("Redis %s now has %d replica(s) connected", name or "master", connected)
            self._known[name] = connected
            if int(acked) < min(asked, connected):
                ok = False
        metrics.REPLICA_WAITS.labels(outcome="replicated" if ok else "not_replicated").inc()
        return ok

    def check(self, waits: Waits, replies: list) -> None:
        if not self.confirmed(waits, replies):
            raise NotReplicated(f"a write did not reach {self.replicas} replica(s) within {self.timeout_ms} ms")

    async def execute(self, pipe) -> list:
        """Run a pipeline with WAITs queued: never sent again in parts (see the class); a failure is raised."""
        if not self.cluster:
            return await pipe.execute()
        try:
            return await pipe.execute(allow_redirections=False)
        except RedisError:
            await self.redis.aclose()   # a dead node or a moved slot: the next pipeline reads the cluster afresh
            raise

    async def write(self, queue_writes: Callable[[Any], Iterable[str]]) -> list:
        """The writes `queue_writes` queues (it returns the keys written), then WAIT: one round trip per master.
        Returns the writes' replies; raises NotReplicated, or the Redis error."""
        async with self.redis.pipeline(transaction=False) as pipe:
            keys = list(queue_writes(pipe))
            waits = self.queue(pipe, keys)
            replies = await self.execute(pipe)
        self.check(waits, replies[-2 * len(waits):])
        return replies[:-2 * len(waits)]

    async def after(self, key: str, fence: Callable[[Any], None]) -> None:
        """After a transaction on `key`'s slot (on another connection): `fence` queues a write to that slot,
        then WAIT. One round trip; raises NotReplicated."""
        def queue(pipe) -> list[str]:
            fence(pipe)
            return [key]

        await self.write(queue)
