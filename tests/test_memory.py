"""One memory contract, run against the in-process store and real Redis."""

import asyncio

import pytest

from agent.memory import InProcessMemory, Turn
from agent.memory_redis import RedisMemory


@pytest.fixture(params=["in-process", "redis"])
async def store(request, redis):
    if request.param == "redis":
        return RedisMemory(redis, ttl_seconds=60, prefix=redis.test_prefix)
    return InProcessMemory(warn=False)


async def test_empty_chat(store):
    memory = await store.load("nobody")
    assert memory.turns == [] and memory.focus_product_ids == [] and memory.last_quantity is None


async def test_keeps_the_last_eight_turns_in_order(store):
    for i in range(11):
        await store.append("c1", Turn(f"问{i}", f"答{i}"), ["001"] if i == 3 else None, 2 if i == 3 else None)
    memory = await store.load("c1")
    assert [t.user for t in memory.turns] == [f"问{i}" for i in range(3, 11)]
    assert memory.focus_product_ids == ["001"] and memory.last_quantity == 2


async def test_focus_is_replaced_by_the_next_verified_answer(store):
    await store.append("c", Turn("足球多少钱", "120元"), ["001"], 1)
    await store.append("c", Turn("无人机呢", "没有"), None, None)
    assert (await store.load("c")).focus_product_ids == ["001"]
    await store.append("c", Turn("羽毛球拍呢", "300元"), ["003"], None)
    memory = await store.load("c")
    assert memory.focus_product_ids == ["003"] and memory.last_quantity is None


async def test_reset_and_isolation(store):
    await store.append("a", Turn("q", "a"), ["001"], 1)
    await store.append("b", Turn("q", "a"), ["002"], 1)
    await store.reset("a")
    assert (await store.load("a")).turns == [] and (await store.load("b")).focus_product_ids == ["002"]


async def test_concurrent_appends_lose_nothing(store):
    await asyncio.gather(*(store.append("c", Turn(f"q{i}", "a"), None, None) for i in range(8)))
    assert sorted(t.user for t in (await store.load("c")).turns) == sorted(f"q{i}" for i in range(8))


async def test_redis_memory_expires_and_survives_a_new_client(redis):
    from tests.fakes.redis_support import connect

    store = RedisMemory(redis, ttl_seconds=60, prefix=redis.test_prefix)
    await store.append("c", Turn("足球多少钱", "120元"), ["001"], 1)
    ttl = await redis.ttl(store.keys.key("c", "chat:c:turns"))
    assert 0 < ttl <= 60
    other = await connect()   # a restarted bot: a new process, the same Redis
    try:
        memory = await RedisMemory(other, prefix=redis.test_prefix).load("c")
    finally:
        await other.aclose()
    assert memory.turns == [Turn("足球多少钱", "120元")] and memory.focus_product_ids == ["001"]


async def test_damaged_entries_are_skipped(redis):
    store = RedisMemory(redis, prefix=redis.test_prefix)
    await redis.rpush(store.keys.key("c", "chat:c:turns"), "not json", '{"user": "q", "assistant": "a"}')
    assert (await store.load("c")).turns == [Turn("q", "a")]
