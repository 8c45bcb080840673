"""Where the chats' state lives: in Redis with REDIS_URL (one client, its round trips counted), else in this
process. The sessions (memory and handoff state), the handoff store and the guards always come as a
matching set, so no caller pairs a Redis store with an in-process one."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from redis.asyncio import Redis, RedisCluster
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import RedisClusterException

from agent.handoff import HandoffStore, LocalHandoffStore, RedisHandoffStore
from agent.memory import InProcessMemory
from agent.memory_redis import RedisMemory
from agent.session import InProcessSessions, Sessions
from agent.settings import Settings, StartupError
from handlers.delivery.guards import LocalGuards, RedisGuards
from handlers.delivery.metrics import CountingConnection
from handlers.delivery.partitions import Partitions
from handlers.delivery.replicas import ReplicaWait
from handlers.sessions import RedisSessions


@asynccontextmanager
async def redis_client(settings: Settings) -> AsyncIterator[Redis | RedisCluster | None]:
    """A Redis client that answers, or None without REDIS_URL; an unreachable Redis stops start-up. With
    REDIS_CLUSTER=1 the URL names one node of a Redis Cluster and the client finds the others. With
    REDIS_WAIT_REPLICAS > 0 (the default on a cluster) the client carries its `ReplicaWait` (`replica_wait`),
    which the inbox and the sessions use: on a cluster with a client of its own that never retries."""
    if settings.redis_url is None:
        yield None
        return
    cluster = " as a Redis Cluster node (REDIS_CLUSTER=1)" if settings.redis_cluster else ""
    try:
        client = cluster_client(str(settings.redis_url)) if settings.redis_cluster else \
            Redis.from_url(str(settings.redis_url), socket_timeout=5, socket_connect_timeout=5,
                           health_check_interval=30, connection_class=CountingConnection)
    except RedisClusterException:   # its only complaint about a URL: a db other than 0
        raise StartupError("REDIS_URL: a Redis Cluster has only db 0 (redis://host:port/0)") from None
    waits = None
    try:
        try:
            await client.ping()
        except Exception as exc:   # noqa: BLE001 - whatever the reason, the line below says what to fix
            raise StartupError(f"REDIS_URL: Redis does not answer{cluster} ({type(exc).__name__})") from None
        if settings.wait_replicas:
            waits = cluster_client(str(settings.redis_url), retries=0) if settings.redis_cluster else client
            client.replica_wait = ReplicaWait(waits, settings.wait_replicas, settings.redis_wait_timeout_ms)
        yield client
    finally:
        if waits is not None and waits is not client:
            await waits.aclose()
        await client.aclose()


def chat_stores(settings: Settings, redis: Redis | None, *, inbox_mode: bool = False,
                warn: bool = True) -> tuple[Sessions, HandoffStore, LocalGuards | RedisGuards]:
    """The chats' sessions, handoff store and guards: in Redis with REDIS_URL, in this process otherwise."""
    if redis is not None:
        keys = Partitions(settings.redis_prefix, settings.inbox_partitions).chat_keys()   # a chat with its partition
        handoffs = RedisHandoffStore(redis, settings.redis_prefix, keys=keys)
        sessions = RedisSessions(redis, RedisMemory(redis, settings.memory_ttl_seconds, keys=keys), handoffs)
        guards = RedisGuards(redis, settings.redis_prefix, settings.rate_limit_messages,
                             settings.rate_limit_window_seconds, lock_seconds=settings.turn_budget_seconds + 30,
                             rate_in_process=inbox_mode)
        return sessions, handoffs, guards
    handoffs = LocalHandoffStore()
    return InProcessSessions(InProcessMemory(warn=warn), handoffs), handoffs, \
        LocalGuards(settings.rate_limit_messages, settings.rate_limit_window_seconds)


def cluster_client(url: str, retries: int | None = None) -> RedisCluster:
    """redis-py's asyncio cluster client from one node's URL (db 0: a cluster has no other), its round
    trips counted like the single node's; MOVED/ASK and a failover are followed within bounded retries
    (`retries=0`: none, the caller retries — what WAIT needs, handlers/delivery/replicas.py)."""
    retry = {} if retries is None else {"retry": Retry(NoBackoff(), retries)}
    client = RedisCluster.from_url(url, socket_timeout=5, socket_connect_timeout=5, health_check_interval=30,
                                   **retry)
    # the cluster client fixes its connection class; every node it finds is made from these arguments
    client.nodes_manager.connection_kwargs["connection_class"] = CountingConnection
    for node in client.nodes_manager.startup_nodes.values():
        node.connection_class = CountingConnection
    return client
