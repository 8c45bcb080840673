"""Where the chats' state lives: in Redis with REDIS_URL (one client, its round trips counted), else in this
process. The sessions (memory and handoff state), the handoff store and the guards always come as a
matching set, so no caller pairs a Redis store with an in-process one."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from redis.asyncio import Redis

from agent.handoff import HandoffStore, LocalHandoffStore, RedisHandoffStore
from agent.memory import InProcessMemory
from agent.memory_redis import RedisMemory
from agent.session import InProcessSessions, Sessions
from agent.settings import Settings, StartupError
from handlers.delivery.guards import LocalGuards, RedisGuards
from handlers.delivery.metrics import CountingConnection
from handlers.sessions import RedisSessions


@asynccontextmanager
async def redis_client(settings: Settings) -> AsyncIterator[Redis | None]:
    """A Redis client that answers, or None without REDIS_URL; an unreachable Redis stops start-up."""
    if settings.redis_url is None:
        yield None
        return
    client = Redis.from_url(str(settings.redis_url), socket_timeout=5, socket_connect_timeout=5,
                            health_check_interval=30, connection_class=CountingConnection)
    try:
        try:
            await client.ping()
        except Exception as exc:   # noqa: BLE001 - whatever the reason, the line below says what to fix
            raise StartupError(f"REDIS_URL: Redis does not answer ({type(exc).__name__})") from None
        yield client
    finally:
        await client.aclose()


def chat_stores(settings: Settings, redis: Redis | None, *, inbox_mode: bool = False,
                warn: bool = True) -> tuple[Sessions, HandoffStore, LocalGuards | RedisGuards]:
    """The chats' sessions, handoff store and guards: in Redis with REDIS_URL, in this process otherwise."""
    if redis is not None:
        handoffs = RedisHandoffStore(redis, settings.redis_prefix)
        sessions = RedisSessions(redis, RedisMemory(redis, settings.memory_ttl_seconds, prefix=settings.redis_prefix),
                                 handoffs)
        guards = RedisGuards(redis, settings.redis_prefix, settings.rate_limit_messages,
                             settings.rate_limit_window_seconds, lock_seconds=settings.turn_budget_seconds + 30,
                             rate_in_process=inbox_mode)
        return sessions, handoffs, guards
    handoffs = LocalHandoffStore()
    return InProcessSessions(InProcessMemory(warn=warn), handoffs), handoffs, \
        LocalGuards(settings.rate_limit_messages, settings.rate_limit_window_seconds)
