"""Real Redis for tests. Missing Redis is a failure with a clear message, never a skip."""

from __future__ import annotations

import os
import uuid

from redis.asyncio import Redis

REDIS_TEST_URL = os.environ.get("REDIS_TEST_URL", "redis://127.0.0.1:6379/15")


async def connect() -> Redis:
    redis = Redis.from_url(REDIS_TEST_URL, socket_timeout=5, socket_connect_timeout=5)
    try:
        await redis.ping()
    except Exception as exc:   # noqa: BLE001 - any connection problem means the same thing here
        await redis.aclose()
        raise RuntimeError(f"these tests need a real Redis at {REDIS_TEST_URL} "
                           f"(start one: redis-server --daemonize yes): {exc}") from exc
    return redis


def unique_prefix() -> str:
    return f"kefu-test:{uuid.uuid4().hex[:12]}:"


async def drop_prefix(redis: Redis, prefix: str) -> None:
    keys = [k async for k in redis.scan_iter(match=f"{prefix}*")]
    if keys:
        await redis.delete(*keys)
