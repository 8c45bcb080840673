"""On a real Redis Cluster (three masters, three replicas; tests/fakes/redis_cluster.py, one per test run):
the inbox's partitions spread over the masters; updates appended once, read and acknowledged by a worker;
a chat's memory, handoff state, miss counter and rate limit through the real stores, the turn's read and
its write one round trip each (one slot); a real `python bot.py` with REDIS_CLUSTER=1 answering; and, on a
cluster of its own, a master SIGKILLed while chats are sending: its replica takes over (node timeout 1 s)
and every message is answered once, in order (the cluster client's own bounded retries carry the Redis
calls of the turns in flight through the failover)."""

from __future__ import annotations

import asyncio
import time

import pytest
from redis.crc import key_slot

from agent.handoff import Claim, Mode
from agent.memory import Turn
from agent.session import Outcome
from agent.settings import Settings
from handlers.delivery.inbox import GROUP, Entry, Inbox
from handlers.delivery.metrics import REDIS_ROUND_TRIPS
from handlers.delivery.workers import Worker
from handlers.stores import chat_stores, cluster_client
from tests.fakes.redis_cluster import shared_cluster
from tests.fakes.redis_support import unique_prefix
from tests.test_inbox import update, worker_parts


@pytest.fixture(scope="session")
def cluster_nodes(shared_builds):
    with shared_cluster() as nodes:
        yield nodes


@pytest.fixture
async def cluster(cluster_nodes):
    """The bot's own cluster client (round trips counted), with a key prefix of this test's own."""
    client = cluster_client(cluster_nodes.url)
    await client.initialize()
    client.test_prefix = unique_prefix()
    try:
        yield client
    finally:
        await client.aclose()


def settings_for(client, **values) -> Settings:
    return Settings(_env_file=None, redis_url="redis://127.0.0.1:1/0", redis_cluster=True,
                    redis_prefix=client.test_prefix, **values)


async def test_partitions_spread_over_the_masters(cluster):
    inbox = Inbox(cluster, cluster.test_prefix, partitions=4)
    masters = {cluster.get_node_from_key(inbox.stream(p)).name for p in range(4)}
    assert len(masters) == 3 == len(cluster.get_primaries())
    inbox = Inbox(cluster, cluster.test_prefix, partitions=12)
    spread = [cluster.get_node_from_key(inbox.stream(p)).name for p in range(12)]
    assert sorted(spread.count(m) for m in set(spread)) == [4, 4, 4]


async def test_inbox_appends_once_and_a_worker_answers_in_order_and_acknowledges(cluster, conn, search):
    inbox = Inbox(cluster, cluster.test_prefix, partitions=4)
    await inbox.ensure_groups()
    chats = {71: ["足球多少钱", "有优惠吗", "那买两个呢"], 72: ["篮球多少钱"], 73: ["瑜伽垫多少钱"], 74: ["排球多少钱"]}
    batch = [update(chat, text) for chat, texts in chats.items() for text in texts]
    await inbox.append_many(batch)
    await inbox.append_many(batch[:2])                       # Telegram sending them again: dropped
    assert await inbox.append(batch[-1]) is False
    assert len({inbox.partition_of(u) for u in batch}) > 1   # more than one partition, so more than one slot
    assert sum([await cluster.xlen(inbox.stream(p)) for p in range(4)]) == len(batch)

    session, bot, dispatcher = worker_parts(inbox, conn, search)
    stop = asyncio.Event()
    running = asyncio.create_task(Worker(inbox, dispatcher, bot, "w1", lease_ms=2000).run(stop))
    try:
        await session.until(lambda: all(len(session.texts(c)) >= len(t) for c, t in chats.items()), within=60)
    finally:
        stop.set()
        await running
    replies = session.texts(71)
    assert "120元" in replies[0] and "9折" in replies[1] and "216元" in replies[2]      # in order, with memory
    assert [len(session.texts(c)) for c in chats] == [3, 1, 1, 1]
    assert "200元" in session.texts(72)[0] and "150元" in session.texts(73)[0] and "229元" in session.texts(74)[0]
    for p in range(4):
        assert (await cluster.xpending(inbox.stream(p), GROUP))["pending"] == 0           # all acknowledged
    assert await inbox.is_done(batch[0].update_id, inbox.stream(inbox.partition_of(batch[0])))


async def test_a_chats_state_lives_in_one_slot_and_a_turn_is_one_round_trip_each_way(cluster):
    settings = settings_for(cluster, rate_limit_messages=2)
    sessions, handoffs, guards = chat_stores(settings, cluster)
    inbox = Inbox(cluster, cluster.test_prefix, settings.inbox_partitions)
    await inbox.ensure_groups()
    chat = "80"
    message = update(80, "足球多少钱", update_id=8001)
    await inbox.append(message)
    stream = inbox.stream(inbox.partition_of(message))
    ((_, ((entry_id, _),)),) = await cluster.xreadgroup(GROUP, "w", {stream: ">"}, count=1)
    entry = Entry(stream, entry_id, first=True)
    receipt = inbox.receipt(8001, entry)
    keys = sessions.memories.keys
    written = [keys.key(chat, f"chat:{chat}:turns"), handoffs._keys(chat)[0], handoffs._keys(chat)[1],
               handoffs._misses_key(chat), receipt.done_key, stream]
    assert len({key_slot(k.encode()) for k in written}) == 1                          # one slot

    trips = REDIS_ROUND_TRIPS._value.get()
    session = await sessions.open(chat, receipt)
    assert REDIS_ROUND_TRIPS._value.get() - trips == 1 and session.memory.turns == []
    trips = REDIS_ROUND_TRIPS._value.get()
    await session.commit(Outcome(Turn("足球多少钱", "120元"), ["001"], 1, misses_reset=True))
    assert REDIS_ROUND_TRIPS._value.get() - trips == 1 and entry.acked              # one MULTI/EXEC
    assert (await cluster.xpending(stream, GROUP))["pending"] == 0 and await inbox.is_done(8001, stream)
    memory = await sessions.memory(chat)
    assert memory.turns == [Turn("足球多少钱", "120元")] and memory.focus_product_ids == ["001"]

    # handoff: each transition one script on the chat's slot; the idle sweep reads every partition's set
    assert await handoffs.begin(chat, chat, "顾客", 100.0) and not await handoffs.begin(chat, chat, "顾客", 101.0)
    assert await handoffs.claim(chat, 7, 102.0) is Claim.CLAIMED
    await handoffs.set_topic(chat, 555)
    assert await handoffs.chat_of_topic(555) == chat and (await handoffs.get(chat)).topic_id == 555
    await handoffs.claim("81", 7, 102.0)   # not handed off: nothing changes
    assert await handoffs.begin("81", "81", "顾客", 103.0)
    assert sorted(await handoffs.idle(200.0)) == ["80", "81"]
    assert await handoffs.end(chat, 300.0) and (await handoffs.get(chat)).mode is Mode.BOT
    assert await handoffs.idle(200.0) == ["81"]
    state, misses = await handoffs.after_turn(chat, helped=False)
    assert state.mode is Mode.BOT and misses == 1 and (await handoffs.after_turn(chat, helped=False))[1] == 2

    # the rate limit in Redis (several receiving processes): the third message of a window is refused
    fixed = time.time()
    guards.clock = lambda: fixed
    assert [await guards.rate("u80") for _ in range(4)] == ["ok", "ok", "notify", "drop"]
    async with guards.chat_lock(chat):
        assert await guards.first_time(8001) and not await guards.first_time(8001)
    await sessions.reset(chat)
    assert (await sessions.memory(chat)).turns == []


@pytest.mark.slow
async def test_a_real_bot_process_on_the_cluster_answers_each_chat_once_in_order(world, cluster_nodes):
    fake, bot, _ = world
    process = bot(REDIS_URL=cluster_nodes.url, REDIS_CLUSTER="1")
    chats = {91: [("足球多少钱", "120元"), ("篮球多少钱", "200元")], 92: [("瑜伽垫多少钱", "150元")],
             93: [("排球多少钱", "229元"), ("足球多少钱", "120元")], 94: [("跑步鞋多少钱", "500元")]}
    await process.start()
    try:
        for chat, asked in chats.items():
            for text, _ in asked:
                await fake.say(chat, text)
        for chat, asked in chats.items():
            await fake.wait_replies(chat, len(asked), within=90)
        client = cluster_client(cluster_nodes.url)
        try:
            inbox = Inbox(client, process.env["REDIS_PREFIX"], Settings(_env_file=None).inbox_partitions)
            await wait_acknowledged(client, inbox, fake)   # a second answer, if one were coming, has come now
        finally:
            await client.aclose()
        for chat, asked in chats.items():
            replies = fake.replies(chat)
            assert len(replies) == len(asked), replies                              # none lost, none twice
            for (_, figure), reply in zip(asked, replies, strict=True):
                assert figure in reply, (figure, reply)                             # in the order asked
        code, output = await process.stop()
        assert code == 0, output[-3000:]
    finally:
        await process.kill()


async def wait_acknowledged(client, inbox: Inbox, fake, within: float = 60) -> None:
    """Every update the fake handed out is confirmed, and every partition's entries read and acknowledged."""
    async def left() -> list[str]:
        waiting = [f"update {u['update_id']} not confirmed" for u in fake.unconfirmed]
        for p in range(inbox.partitions):
            stream = inbox.stream(p)
            if not await client.exists(stream):
                continue
            last = (await client.xinfo_stream(stream))["last-generated-id"]
            for group in await client.xinfo_groups(stream):
                if group["pending"] or group["last-delivered-id"] != last:
                    waiting.append(f"partition {p}: {group['pending']} pending")
        return waiting

    deadline = time.monotonic() + within
    while waiting := await left():
        assert time.monotonic() < deadline, f"not everything was handled within {within} s: {waiting}"
        await fake.changed(0.05)


async def test_a_cluster_url_the_bot_cannot_use_stops_start_up_with_one_line(cluster_nodes):
    from agent.settings import StartupError
    from handlers.stores import redis_client

    for url, says in [(cluster_nodes.url.replace("/0", "/15"), "only db 0"),
                      ("redis://127.0.0.1:1/0", "does not answer as a Redis Cluster node")]:
        with pytest.raises(StartupError, match=says):
            async with redis_client(Settings(_env_file=None, redis_url=url, redis_cluster=True)):
                pass
    async with redis_client(Settings(_env_file=None, redis_url=cluster_nodes.url, redis_cluster=True)) as client:
        assert len(client.get_primaries()) == 3
