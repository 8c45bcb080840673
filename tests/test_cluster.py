"""On a real Redis Cluster (three masters, three replicas; tests/fakes/redis_cluster.py, one per test run):
the inbox's partitions spread over the masters; updates appended once, read and acknowledged by a worker;
a chat's memory, handoff state, miss counter and rate limit through the real stores, the turn's read and
its write one round trip each (one slot); a real `python bot.py` with REDIS_CLUSTER=1 answering; and, on a
cluster of this module's own (`-k failover`), masters SIGKILLed: a turn in flight is answered once and settled
on the promoted replica, and under a real `python bot.py` every message of a stream is answered once, in
order — appends, reads and acknowledgements wait for a replica (WAIT, REDIS_WAIT_REPLICAS=1 by default on a
cluster), so nothing confirmed is lost with the master."""

from __future__ import annotations

import asyncio
import time

import pytest
from redis.crc import key_slot
from redis.exceptions import RedisError

from agent.handoff import Claim, Mode
from agent.memory import Turn
from agent.session import Outcome
from agent.settings import Settings
from handlers.delivery.inbox import GROUP, Entry, Inbox
from handlers.delivery.metrics import REDIS_ROUND_TRIPS
from handlers.delivery.replicas import ReplicaWait
from handlers.delivery.workers import Worker
from handlers.stores import chat_stores, cluster_client
from tests.fakes.redis_cluster import shared_cluster
from tests.fakes.redis_support import unique_prefix
from tests.test_inbox import update, worker_cycles, worker_parts


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
        wait = ReplicaWait.of(client)   # REDIS_WAIT_REPLICAS=1 by default on a cluster, on a client that never retries
        assert wait.replicas == 1 and wait.redis is not client and wait.redis.retry.get_retries() == 0


@pytest.fixture(scope="module")
def own_cluster(tmp_path_factory, shared_builds):
    """A cluster of this module's failover tests (they kill masters): one for the module, each test killing
    a master that still has its replica."""
    from tests.fakes.redis_cluster import RedisClusterNodes

    nodes = RedisClusterNodes.start(tmp_path_factory.mktemp("own-cluster"))
    try:
        yield nodes
    finally:
        nodes.stop()


def victim_of(client, inbox: Inbox, nodes) -> tuple[int, list[int]]:
    """A master other than the one the URL names, holding partitions and with its replica connected: its port
    and its partitions."""
    by_partition = {p: client.get_node_from_key(inbox.stream(p)) for p in range(inbox.partitions)}
    candidates = sorted({n.port for n in by_partition.values()} - {nodes.ports[0]})
    port = nodes.master_with_replica(candidates)
    assert port is not None, "no master with a replica left in the test's cluster"
    return port, [p for p, n in by_partition.items() if n.port == port]


@pytest.mark.slow
async def test_failover_with_a_turn_in_flight_it_is_answered_once_and_settled_on_the_replica(
        own_cluster, conn, search):
    """A worker's turn is in flight (its memory read, its answer ready, the reply not yet sent) when the master of
    its partition is SIGKILLed: the reply is sent once; the turn's commit fails on the dead master and is settled
    (done-marker + XACK) on the replica that took over; the entry was read with WAIT, so the promoted replica
    still shows it pending to this worker and it is never read as new again; the chat's next message, appended
    on the promoted replica, is answered after it; a successor worker re-running the partition answers nothing
    again."""
    from aiogram.methods import SendMessage

    from handlers.delivery.inbox import DeliveryMarker

    nodes = own_cluster
    client, waits = cluster_client(nodes.url), cluster_client(nodes.url, retries=0)
    await client.initialize()
    client.replica_wait = ReplicaWait(waits, 1, 1000)
    inbox = Inbox(client, unique_prefix(), partitions=4)
    await inbox.ensure_groups()
    victim, on_victim = victim_of(client, inbox, nodes)
    chat = next(c for c in range(9800, 9900) if inbox.layout.of_chat(c) in on_victim)
    session, bot, dispatcher = worker_parts(inbox, conn, search)
    held, release = asyncio.Event(), asyncio.Event()

    async def hold_first_reply(make_request, bot_, method):
        if isinstance(method, SendMessage) and method.chat_id == chat and not release.is_set():
            held.set()
            await release.wait()
        return await make_request(bot_, method)

    session.middleware(hold_first_reply)
    session.middleware(DeliveryMarker())   # as make_bot has it: a reply sent is never sent again
    stop = asyncio.Event()
    running = asyncio.create_task(Worker(inbox, dispatcher, bot, "w1", lease_ms=2000).run(stop))
    try:
        first = update(chat, "足球多少钱")
        await inbox.append(first)
        await asyncio.wait_for(held.wait(), 60)                        # the turn is in flight
        await asyncio.to_thread(nodes.kill, victim)
        await asyncio.to_thread(nodes.wait_failed_over, victim)
        release.set()
        second = update(chat, "篮球多少钱")
        for _ in range(100):   # the receiver's own retries: the cluster client learns the new master
            try:
                await inbox.append(second)
                break
            except (RedisError, OSError):
                await asyncio.sleep(0.2)
        assert await session.until(lambda: len(session.texts(chat)) >= 2, within=90)
        stream = inbox.stream(inbox.layout.of_chat(chat))
        assert await settled(client, stream, within=60)
    finally:
        stop.set()
        await running
    stop = asyncio.Event()   # a successor takes the partition over and re-runs whatever it finds pending
    successor = Worker(inbox, dispatcher, bot, "w2", lease_ms=2000)
    cycles = worker_cycles(successor)
    running = asyncio.create_task(successor.run(stop))
    try:
        deadline = time.monotonic() + 30
        while inbox.layout.of_chat(chat) not in successor.held and time.monotonic() < deadline:  # noqa: ASYNC110
            await asyncio.sleep(0.05)
        assert inbox.layout.of_chat(chat) in successor.held
        # two more lease cycles, each with its claim, re-read and read of the partition, and nothing in flight:
        # whatever the successor found to run again has been answered by now (not a fixed wait)
        since = cycles[0]
        assert await session.until(lambda: cycles[0] >= since + 2 and not successor._in_flight, within=30)
    finally:
        stop.set()
        await running
    replies = session.texts(chat)
    assert len(replies) == 2 and "120元" in replies[0] and "200元" in replies[1], replies   # once each, in order
    assert client.get_node_from_key(stream).port != victim                                 # the replica took over
    for message in (first, second):
        assert await inbox.is_done(message.update_id, stream)
    await client.aclose()
    await waits.aclose()


async def settled(client, stream: str, within: float) -> bool:
    """Every entry of `stream` read by the group and acknowledged."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            last = (await client.xinfo_stream(stream))["last-generated-id"]
            (group,) = [g for g in await client.xinfo_groups(stream) if g["name"] in (GROUP, GROUP.encode())]
            if group["pending"] == 0 and group["last-delivered-id"] == last:
                return True
        except (RedisError, OSError):
            pass
        await asyncio.sleep(0.1)
    return False


@pytest.mark.slow
async def test_failover_of_a_master_mid_stream_every_message_is_answered_once_in_order(world, own_cluster):
    """A real `python bot.py` with REDIS_CLUSTER=1 (so REDIS_WAIT_REPLICAS=1): a master is SIGKILLed while chats on
    its partitions and on others are sending; its replica takes over (node timeout 1 s) and every message is
    answered once, in order: nothing was confirmed to Telegram before a replica had it (WAIT), nothing
    acknowledged either."""
    nodes = own_cluster
    fake, bot, _ = world
    process = bot(REDIS_URL=nodes.url, REDIS_CLUSTER="1")
    client = cluster_client(nodes.url)
    try:
        await client.initialize()
        inbox = Inbox(client, process.env["REDIS_PREFIX"], Settings(_env_file=None).inbox_partitions)
        victim, on_victim = victim_of(client, inbox, nodes)
        chats = [c for c in range(9600, 9700) if inbox.layout.of_chat(c) in on_victim][:2] + \
            [c for c in range(9600, 9700) if inbox.layout.of_chat(c) not in on_victim][:2]
        questions = [("足球多少钱", "120元"), ("篮球多少钱", "200元"), ("瑜伽垫多少钱", "150元"), ("排球多少钱", "229元"),
                     ("跑步鞋多少钱", "500元")]
        asked: dict[int, list[str]] = {c: [] for c in chats}

        async def say(round_: int) -> None:
            for i, chat in enumerate(chats):
                text, figure = questions[(round_ + i) % len(questions)]
                asked[chat].append(figure)
                await fake.say(chat, text)

        await process.start()
        await say(0)
        for chat in chats:
            await fake.wait_replies(chat, 1, within=60)
        await say(1)
        await asyncio.to_thread(nodes.kill, victim)        # mid-stream: the second round is in flight
        await say(2)
        await say(3)
        for chat in chats:
            await fake.wait_replies(chat, len(asked[chat]), within=120)
        await client.aclose()
        client = cluster_client(nodes.url)
        await client.initialize()
        inbox = Inbox(client, process.env["REDIS_PREFIX"], inbox.partitions)
        assert client.get_node_from_key(inbox.stream(on_victim[0])).port != victim   # the replica took over
        await wait_acknowledged(client, inbox, fake, within=90)
        for chat in chats:
            replies = fake.replies(chat)
            assert len(replies) == len(asked[chat]), (chat, replies)                 # none lost, none twice
            for figure, reply in zip(asked[chat], replies, strict=True):
                assert figure in reply, (chat, figure, reply)                        # in the order asked
        code, output = await process.stop()
        assert code == 0, output[-3000:]
    finally:
        await client.aclose()
