"""The durable inbox on Redis Streams: appended once per update, partitioned by chat, answered by
workers that lease partitions; a worker killed mid-turn leaves its message to the next one, which
answers it exactly once."""

from __future__ import annotations

import asyncio
import json
import time
from contextlib import asynccontextmanager

import aiohttp
import pytest
from aiogram import Bot
from aiogram.types import Update

from agent.conversation import Conversation
from agent.handoff import RedisHandoffStore
from agent.memory_redis import RedisMemory
from agent.turn import Agent
from handlers.delivery.guards import ChatSequencer, LocalGuards
from handlers.delivery.inbox import GROUP, Inbox
from handlers.delivery.workers import Worker
from handlers.handoff import Desk
from handlers.sessions import RedisSessions
from handlers.telegram import build_dispatcher
from tests.fakes.bot_process import wait_handled
from tests.fakes.bot_session import RecordingSession
from tests.fakes.openai_server import FakeOpenAI, tool_call

_ids = iter(range(5_000_000, 10**9))


def update(chat_id: int, text: str, update_id: int | None = None) -> Update:
    return Update.model_validate({"update_id": update_id or next(_ids), "message": {
        "message_id": next(_ids), "date": int(time.time()), "text": text,
        "chat": {"id": chat_id, "type": "private"}, "from": {"id": chat_id, "is_bot": False, "first_name": "顾客"}}})


def worker_parts(inbox: Inbox, conn, search) -> tuple[RecordingSession, Bot, object]:
    """What an in-process worker needs: a recording Bot API session, the bot, the real dispatcher with the
    chats' sessions in the inbox's Redis."""
    session = RecordingSession()
    bot = Bot("42:TEST", session=session)
    keys = inbox.layout.chat_keys()
    handoffs = RedisHandoffStore(inbox.redis, inbox.prefix, keys=keys)
    sessions = RedisSessions(inbox.redis, RedisMemory(inbox.redis, keys=keys), handoffs)
    guards = LocalGuards()
    conversation = Conversation(Agent(conn, search), sessions, rate=guards.rate)
    dispatcher = build_dispatcher(conversation=conversation, desk=Desk(bot, handoffs, conversation),
                                  guards=guards, sequencer=ChatSequencer(), audit=None, inbox=inbox)
    return session, bot, dispatcher


async def test_appended_once_per_update_and_one_partition_per_chat(redis_alone):
    redis = redis_alone   # a Redis of its own: SCRIPT FLUSH below would unload the scripts of tests running beside
    inbox = Inbox(redis, redis.test_prefix, partitions=4)
    await inbox.ensure_groups()
    first = update(7, "足球多少钱", update_id=1)
    assert await inbox.append(first) and not await inbox.append(first)          # a re-delivery is dropped
    assert {inbox.partition_of(update(7, str(n))) for n in range(20)} == {inbox.partition_of(first)}
    assert len({inbox.partition_of(update(c, "x")) for c in range(1, 200)}) == 4
    assert await redis.xlen(inbox.stream(inbox.partition_of(first))) == 1
    await redis.script_flush()   # a restarted Redis has no scripts: the pipeline loads them again
    batch = [update(7, "那买两个呢", update_id=2), first, update(8, "篮球多少钱", update_id=3)]
    await inbox.append_many(batch)              # one getUpdates batch, one round trip; the duplicate dropped
    await inbox.append_many(batch)
    entries = await redis.xrange(inbox.stream(inbox.partition_of(first)))
    assert [json.loads(f[b"update"])["update_id"] for _, f in entries] == [1, 2]      # in order, once


async def test_a_worker_answers_in_order_and_a_successor_reruns_what_was_left(redis, conn, search):
    inbox = Inbox(redis, redis.test_prefix, partitions=2)
    await inbox.ensure_groups()
    questions = ["足球多少钱", "有优惠吗", "那买两个呢"]
    for text in questions:
        await inbox.append(update(31, text))
    await inbox.append(update(32, "篮球多少钱"))
    # a worker that died: it read chat 32's message and never acknowledged it
    p32 = inbox.partition_of(update(32, ""))
    await redis.xreadgroup(GROUP, "dead-worker", {inbox.stream(p32): ">"}, count=1)

    session, bot, dispatcher = worker_parts(inbox, conn, search)
    stop = asyncio.Event()
    worker = Worker(inbox, dispatcher, bot, "w1", lease_ms=2000)
    running = asyncio.create_task(worker.run(stop))
    await session.until(lambda: len(session.texts(31)) >= 3 and session.texts(32), within=30)
    stop.set()
    await running
    replies = session.texts(31)
    assert "120元" in replies[0] and "9折" in replies[1] and "216元" in replies[2]     # in order, with memory
    assert len(session.texts(32)) == 1 and "200元" in session.texts(32)[0]            # the dead worker's, once
    for p in range(2):
        assert (await redis.xpending(inbox.stream(p), GROUP))["pending"] == 0        # all acknowledged
    # handled but not acknowledged (died after replying): a re-run does not answer twice
    again = update(33, "足球多少钱")
    await inbox.append(again)
    stream = inbox.stream(inbox.partition_of(again))
    await redis.xreadgroup(GROUP, "died-after-replying", {stream: ">"}, count=1)   # delivered to it ...
    await inbox.mark_done(again.update_id, stream)                               # ... answered, never acked
    stop = asyncio.Event()
    running = asyncio.create_task(Worker(inbox, dispatcher, bot, "w2", lease_ms=2000).run(stop))
    (last_id, _), = await redis.xrevrange(stream, count=1)

    async def acknowledged() -> bool:
        (group,) = [g for g in await redis.xinfo_groups(stream) if g["name"] in (GROUP, GROUP.encode())]
        return group["last-delivered-id"] == last_id and group["pending"] == 0

    deadline = time.monotonic() + 30
    while not await acknowledged() and time.monotonic() < deadline:  # noqa: ASYNC110 - Redis, polled
        await asyncio.sleep(0.05)
    assert await acknowledged()
    stop.set()
    await running
    assert session.texts(33) == []


def stalls_first(calls: list[int]):
    """The first chat request hangs (a slow model holding the turn); later ones answer honestly."""
    def reply(body: dict) -> dict | str:
        calls.append(1)
        if len(calls) == 1:
            return "stall"
        return honest(body)
    return reply


def honest(body: dict) -> dict:
    results = [json.loads(m["content"]) for m in body["messages"] if m["role"] == "tool"]
    if not results:
        return {"tool_calls": [tool_call("search_products", {"query": "足球", "top_k": 3})]}
    return {"tool_calls": [tool_call("submit_answer", {"answer": "足球售价120元。", "citation_ids": ["product:001"],
                                                       "status": "grounded"}, "call_2")]}


@asynccontextmanager
async def slow_turn(world, chat_id: int, stall_seconds: float):
    """A receiver and a worker whose model holds the first turn for `stall_seconds`; yields once a
    customer's question is in flight (the model has been called): (worker, receiver, start_worker)."""
    fake, bot, _ = world
    openai = await FakeOpenAI(chat_function=stalls_first([]), stall_seconds=stall_seconds).start()
    model = {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": openai.url, "LLM_TIMEOUT_SECONDS": "50",
             "LLM_MAX_RETRIES": "0", "INBOX_LEASE_MS": "1500", "INBOX_PARTITIONS": "2"}

    async def start_worker():
        worker = bot("work", **model)
        await worker.start()
        return worker

    try:
        receiver = bot("receive", **model)
        await receiver.start()
        worker = await start_worker()
        await fake.say(chat_id, "足球多少钱")
        await openai.wait_requests("chat")   # the turn is in flight
        yield worker, receiver, start_worker
        code, output = await receiver.stop()
        assert code == 0, output
    finally:
        await openai.stop()


async def test_a_worker_hands_the_dispatcher_an_update_mounted_on_its_bot(redis, conn, search, monkeypatch):
    """aiogram re-parses an update of no bot (a dump and a second validation of every nested object) to
    mount it: the worker parses the inbox's entry once, with its bot in the context."""
    inbox = Inbox(redis, redis.test_prefix, partitions=1)
    await inbox.ensure_groups()
    await inbox.append(update(41, "足球多少钱"))
    session, bot, dispatcher = worker_parts(inbox, conn, search)
    fed, feed = [], dispatcher.feed_update

    async def watched(to: Bot, given: Update, **kwargs):
        fed.append(given.bot is to and given.message.bot is to)
        return await feed(to, given, **kwargs)

    monkeypatch.setattr(dispatcher, "feed_update", watched)
    stop = asyncio.Event()
    running = asyncio.create_task(Worker(inbox, dispatcher, bot, "w-mount", lease_ms=2000).run(stop))
    await session.until(lambda: session.texts(41), within=30)
    stop.set()
    await running
    assert fed == [True] and "120元" in session.texts(41)[0]


async def test_a_worker_killed_mid_turn_leaves_the_message_to_the_next_one(world):
    fake = world[0]
    async with slow_turn(world, 41, stall_seconds=8) as (first, _, start_worker):
        await first.kill()
        second = await start_worker()
        (reply,) = await fake.wait_replies(41, 1, within=60)
        assert "120元" in reply
        await wait_handled(fake, second)
        assert fake.replies(41) == [reply]                            # exactly once
        code, output = await second.stop()
        assert code == 0, output


async def test_sigterm_finishes_the_turn_in_flight_and_metrics_show_the_inbox(world):
    fake = world[0]
    async with slow_turn(world, 51, stall_seconds=3) as (worker, _, _):
        async with aiohttp.ClientSession() as http, http.get(f"http://127.0.0.1:{worker.port}/metrics") as response:
            assert "kefu_inbox_pending{" in await response.text()
        code, output = await worker.stop()          # SIGTERM while the model holds the turn
        assert code == 0, output
        (reply,) = fake.replies(51)                 # answered before the process left, once
        assert "120元" in reply


async def test_handle_once_retries_trouble_before_the_reply_and_never_sends_twice(redis, monkeypatch):
    from aiogram.methods import SendChatAction, SendMessage
    from redis.exceptions import ConnectionError as RedisConnectionError

    from handlers.delivery import inbox as inbox_module
    from handlers.delivery.inbox import DeliveryMarker

    monkeypatch.setattr(inbox_module, "TURN_RETRY_WAITS", (0.01, 0.01))
    inbox = Inbox(redis, redis.test_prefix, partitions=1)
    marker, sent = DeliveryMarker(), []

    async def make_request(bot, method):
        sent.append(type(method).__name__)
        return True

    async def turn(fail_before: int, fail_after: int, runs: list):
        runs.append(1)
        await marker(make_request, None, SendChatAction(chat_id=1, action="typing"))   # typing is not a reply
        if len(runs) <= fail_before:
            raise RedisConnectionError("Redis restarting")
        await marker(make_request, None, SendMessage(chat_id=1, text="答"))
        if len(runs) <= fail_after:
            raise RedisConnectionError("memory not saved")
        return "ok"

    runs: list = []   # trouble before the reply: run again, answered once
    assert await inbox.handle_once(1, lambda: turn(1, 0, runs)) == "ok" and len(runs) == 2
    assert sent.count("SendMessage") == 1 and await inbox.is_done(1)
    runs, sent[:] = [], []   # trouble after the reply: marked done, not run again
    assert await inbox.handle_once(2, lambda: turn(0, 5, runs)) is None and len(runs) == 1
    assert sent.count("SendMessage") == 1 and await inbox.is_done(2)
    runs = []                # handled before (a re-run after a crash): not run at all
    assert await inbox.handle_once(2, lambda: turn(0, 0, runs)) is None and runs == []
    runs = []                # trouble that outlasts the budget: raised, the entry stays pending
    with pytest.raises(RedisConnectionError):
        await inbox.handle_once(3, lambda: turn(9, 0, runs))
    assert len(runs) == 3 and not await inbox.is_done(3)


async def test_a_turn_reads_state_and_memory_together_and_writes_memory_done_and_ack_together(redis):
    """The chat's session: opening reads the handoff state and the memory in one round trip; the commit
    writes the memory, the done-marker and the acknowledgement in one. The same results as apart."""
    from redis.asyncio import Redis

    from agent.memory import Turn
    from agent.session import Outcome
    from handlers.delivery.inbox import Entry
    from handlers.delivery.metrics import REDIS_ROUND_TRIPS, CountingConnection
    from tests.fakes.redis_support import REDIS_TEST_URL

    counted = Redis.from_url(REDIS_TEST_URL, connection_class=CountingConnection)
    try:
        inbox = Inbox(counted, redis.test_prefix, partitions=1)
        keys = inbox.layout.chat_keys()   # a chat's keys beside its partition's stream, as bot.py wires them
        memory, store = RedisMemory(counted, keys=keys), RedisHandoffStore(counted, redis.test_prefix, keys=keys)
        sessions = RedisSessions(counted, memory, store)
        await inbox.ensure_groups()
        await inbox.append(update(61, "足球多少钱", update_id=7001))
        ((_, ((entry_id, _),)),) = await counted.xreadgroup(GROUP, "w", {inbox.stream(0): ">"}, count=1)
        await memory.append("61", Turn("你好", "您好"), ["001"], 2)
        await store.begin("61", "61", "顾客", 100.0)

        entry = Entry(inbox.stream(0), entry_id, first=True)
        trips = REDIS_ROUND_TRIPS._value.get()
        session = await sessions.open("61", inbox.receipt(7001, entry))
        assert REDIS_ROUND_TRIPS._value.get() - trips == 1
        assert session.handoff == await store.get("61") and session.memory == await memory.load("61")
        assert session.memory.focus_product_ids == ["001"] and session.memory.last_quantity == 2

        trips = REDIS_ROUND_TRIPS._value.get()
        await session.commit(Outcome(Turn("足球多少钱", "120元")))
        assert REDIS_ROUND_TRIPS._value.get() - trips == 1 and entry.acked
        assert await inbox.is_done(7001) and (await counted.xpending(inbox.stream(0), GROUP))["pending"] == 0
        assert [t.user for t in (await memory.load("61")).turns] == ["你好", "足球多少钱"]
        trips = REDIS_ROUND_TRIPS._value.get()
        await inbox.finish(7001, entry)                 # settled already: nothing more to write
        assert REDIS_ROUND_TRIPS._value.get() == trips
    finally:
        await counted.aclose()


async def test_workers_share_the_partitions_evenly_and_take_them_back_when_one_leaves(redis, conn, search):
    inbox = Inbox(redis, redis.test_prefix, partitions=4)
    session, bot, dispatcher = worker_parts(inbox, conn, search)
    first, second = (Worker(inbox, dispatcher, bot, name, lease_ms=1500) for name in ("w1", "w2"))
    stops = [asyncio.Event(), asyncio.Event()]

    async def until(condition, what: str) -> None:
        deadline = time.monotonic() + 20
        while not condition():
            assert time.monotonic() < deadline, f"{what}: w1 {first.held}, w2 {second.held}"
            await asyncio.sleep(0.05)

    running = [asyncio.create_task(first.run(stops[0]))]
    await until(lambda: len(first.held) == 4, "the only worker holds every partition")
    running.append(asyncio.create_task(second.run(stops[1])))
    await until(lambda: len(first.held) == len(second.held) == 2 and not first.held & second.held,
                "a worker that joins gets its share")
    await inbox.append(update(71, "足球多少钱"))
    await until(lambda: session.texts(71), "answered by whichever holds the chat's partition")
    stops[1].set()
    await running[1]
    await until(lambda: len(first.held) == 4, "a worker that leaves hands its partitions back")
    stops[0].set()
    await running[0]
    assert len(session.texts(71)) == 1


async def test_a_read_whose_reply_was_lost_is_run_again_by_the_same_worker(redis, conn, search):
    """Redis unreachable for a while: a worker's XREADGROUP times out on the client but runs on the server
    once Redis answers again, so its entries are pending for this worker and no new read returns them.
    After Redis trouble the worker reads its own pending entries again; the message is answered once."""
    inbox = Inbox(redis, redis.test_prefix, partitions=1)
    await inbox.ensure_groups()
    session, bot, dispatcher = worker_parts(inbox, conn, search)
    worker = Worker(inbox, dispatcher, bot, "w-lost", lease_ms=5000)
    assert await worker._leases() and worker.held == {0}
    await inbox.append(update(43, "足球多少钱"))
    lost = await redis.xreadgroup(GROUP, "w-lost", {inbox.stream(0): ">"}, count=10)   # the reply nobody got
    assert lost and (await redis.xpending(inbox.stream(0), GROUP))["pending"] == 1
    worker.recheck_pending()                     # what the worker's loop does on Redis trouble
    await worker._run_again()
    assert await session.until(lambda: session.texts(43), within=30)
    await asyncio.gather(*worker._tasks)
    assert len(session.texts(43)) == 1 and "120元" in session.texts(43)[0]
    assert (await redis.xpending(inbox.stream(0), GROUP))["pending"] == 0
    await inbox.release(0, "w-lost")


async def test_a_read_that_reached_redis_late_is_found_at_the_next_lease_cycle(redis, conn, search, caplog):
    """A read whose bytes reached Redis only after the worker had recovered (its connection's
    retransmissions came through after a newer connection's) leaves entries pending for this worker
    without any error in its loop. Every lease cycle the worker reads its own pending entries again."""
    inbox = Inbox(redis, redis.test_prefix, partitions=1)
    await inbox.ensure_groups()
    session, bot, dispatcher = worker_parts(inbox, conn, search)
    worker = Worker(inbox, dispatcher, bot, "w-late", lease_ms=1500)
    stop = asyncio.Event()
    running = asyncio.create_task(worker.run(stop))
    try:
        assert await session.until(lambda: worker.held == {0}, within=10)
        late = update(44, "足球多少钱")
        async with redis.pipeline(transaction=True) as pipe:   # appended and read as the worker, atomically:
            pipe.xadd(inbox.stream(0), {"update": late.model_dump_json(exclude_none=True)})   # its own blocked
            pipe.xreadgroup(GROUP, "w-late", {inbox.stream(0): ">"}, count=10)   # read gets nothing
            _, read = await pipe.execute()
        assert read
        assert await session.until(lambda: session.texts(44), within=20)
        await session.until(lambda: not worker._in_flight, within=20)
        assert len(session.texts(44)) == 1 and "120元" in session.texts(44)[0]
        assert (await redis.xpending(inbox.stream(0), GROUP))["pending"] == 0
        assert not any("Redis trouble" in r.getMessage() for r in caplog.records)   # no error led to it
    finally:
        stop.set()
        await running


async def test_what_a_worker_that_lost_its_lease_read_late_is_claimed_by_the_new_holder_in_order(
        redis, conn, search, caplog):
    """A worker that lost its lease (cut off from Redis longer than a lease) and whose read reached Redis
    after the new holder had taken the partition over leaves an entry pending on itself, where neither it
    (it no longer holds the partition) nor the takeover's claim (already made) would see it. The holder
    claims entries pending on other consumers once idle longer than a lease; a newer message of the same
    chat, read meanwhile, waits for it: both are answered once, the older first."""
    inbox = Inbox(redis, redis.test_prefix, partitions=1)
    await inbox.ensure_groups()
    session, bot, dispatcher = worker_parts(inbox, conn, search)
    worker = Worker(inbox, dispatcher, bot, "w-new", lease_ms=1500)
    stop = asyncio.Event()
    running = asyncio.create_task(worker.run(stop))
    try:
        assert await session.until(lambda: worker.held == {0} and not worker._claim, within=10)
        late = update(46, "足球多少钱")
        async with redis.pipeline(transaction=True) as pipe:   # the old holder's late read takes it, atomically:
            pipe.xadd(inbox.stream(0), {"update": late.model_dump_json(exclude_none=True)})   # the holder's own
            pipe.xreadgroup(GROUP, "w-old", {inbox.stream(0): ">"}, count=10)   # blocked read gets nothing
            _, read = await pipe.execute()
        assert read
        await inbox.append(update(46, "篮球多少钱"))             # newer, same chat: read by the holder at once
        assert await session.until(lambda: len(session.texts(46)) >= 2, within=30), session.texts(46)
        assert await session.until(lambda: not worker._in_flight, within=20)
        assert (await redis.xpending(inbox.stream(0), GROUP))["pending"] == 0
        replies = session.texts(46)
        assert len(replies) == 2 and "120元" in replies[0] and "200元" in replies[1], replies   # once, in order
        assert any("left pending by another consumer" in r.getMessage() for r in caplog.records)
    finally:
        stop.set()
        await running


async def inbox_through_a_proxy(redis):
    """An inbox whose Redis connection runs through a TCP proxy the test can cut: (proxy, client, inbox). The
    client is like the bot's (a timeout retried once on a new connection), with a one-second timeout."""
    from urllib.parse import urlsplit

    from redis.asyncio import Redis
    from redis.asyncio.retry import Retry
    from redis.backoff import NoBackoff

    from tests.fakes.redis_support import REDIS_TEST_URL
    from tests.fakes.tcp_proxy import TcpProxy

    url = urlsplit(REDIS_TEST_URL)
    proxy = await TcpProxy(url.hostname, url.port or 6379).start()
    through = Redis(host="127.0.0.1", port=proxy.port, db=int(url.path.strip("/") or 0), socket_timeout=1,
                    socket_connect_timeout=1, retry=Retry(NoBackoff(), 1))
    return proxy, through, Inbox(through, redis.test_prefix, partitions=1)


async def test_a_network_cut_during_a_takeover_loses_nothing_and_keeps_the_order(redis, conn, search, caplog):
    """A real network cut (a TCP proxy holding bytes both ways) between a worker and Redis just as it takes
    over a partition, longer than its client's retries: the XAUTOCLAIM of a dead predecessor's message
    (and the client's retries of it) reach Redis only after the worker recovered, as a connection's
    backed-off retransmissions can; a newer message of the same chat arrives during the cut. Both are
    answered once, the older first."""
    inbox = Inbox(redis, redis.test_prefix, partitions=1)
    await inbox.ensure_groups()
    await inbox.append(update(45, "足球多少钱"))
    await redis.xreadgroup(GROUP, "dead-worker", {inbox.stream(0): ">"}, count=1)   # read, never answered

    proxy, through, far = await inbox_through_a_proxy(redis)
    session, bot, dispatcher = worker_parts(far, conn, search)
    worker = Worker(far, dispatcher, bot, "w-cut", lease_ms=8000)
    stop = asyncio.Event()
    proxy.cut_on(b"XAUTOCLAIM")
    running = asyncio.create_task(worker.run(stop))
    try:
        assert await session.until(lambda: proxy.marked, within=10)     # the cut began with the claim
        await inbox.append(update(45, "篮球多少钱"))                      # sent during the cut, same chat
        assert await session.until(lambda: any("Redis trouble" in r.getMessage() for r in caplog.records),
                                   within=20)                           # the worker's loop saw the error
        proxy.heal(but=proxy.marked)        # the network is back; the claim's bytes are still on their way
        answered = await session.until(lambda: len(session.texts(45)) >= 2, within=20)
        proxy.heal()                        # the claim reaches Redis at last, and runs there
        cycles = worker_cycles(worker)
        await session.until(lambda: cycles[0] >= 2 and not worker._in_flight, within=20)
        replies = session.texts(45)
        assert answered, replies
        assert len(replies) == 2 and "120元" in replies[0] and "200元" in replies[1], replies   # once, in order
        assert (await redis.xpending(inbox.stream(0), GROUP))["pending"] == 0
    finally:
        stop.set()
        await running
        await through.aclose()
        await proxy.stop()


def worker_cycles(worker: Worker) -> list[int]:
    """Count the worker's lease cycles from now on (in a one-element list)."""
    cycles, leases = [0], worker._leases

    async def counted() -> bool:
        balanced = await leases()
        cycles[0] += 1
        return balanced

    worker._leases = counted
    return cycles


async def test_a_worker_started_while_redis_does_not_answer_waits_and_then_works(redis, conn, search, caplog):
    """Redis away as a worker starts (its first call, creating the consumer groups, times out) is trouble
    like any other: the worker retries instead of ending, and answers once Redis is back. (A worker process
    started just before a Redis blip died this way, its messages left unanswered.)"""
    proxy, through, far = await inbox_through_a_proxy(redis)
    session, bot, dispatcher = worker_parts(far, conn, search)
    stop = asyncio.Event()
    proxy.cut_on(b"XGROUP")                                   # the worker's first call is held
    running = asyncio.create_task(Worker(far, dispatcher, bot, "w-start", lease_ms=3000).run(stop))
    try:
        assert await session.until(lambda: any("Redis trouble" in r.getMessage() for r in caplog.records)
                                   or running.done(), within=20)
        assert not running.done()                             # still running, not ended by the timeout
        proxy.heal()
        await Inbox(redis, redis.test_prefix, partitions=1).append(update(46, "足球多少钱"))
        assert await session.until(lambda: session.texts(46), within=20), "never answered"
        assert "120元" in session.texts(46)[0]
    finally:
        stop.set()
        await running
        await through.aclose()
        await proxy.stop()


@pytest.mark.slow   # two redis-servers of its own, one frozen (conftest: slow)
async def test_with_a_replica_asked_nothing_counts_as_appended_or_acknowledged_before_the_replica_has_it(tmp_path):
    """REDIS_WAIT_REPLICAS=1 on a master with one replica (two redis-servers of the test's own; the replica
    frozen with SIGSTOP stays connected and answers nothing): an append returns once the replica has it; while
    the replica does not confirm, an append raises NotReplicated and the polling receiver does not confirm the
    update to Telegram, nor does the webhook (503) — once it does, the update is appended once; an acknowledgement (done-marker + XACK,
    by the inbox or a chat session's commit) is not settled either. A master left without replicas (its
    replica gone) is not waited for."""
    from aiogram.client.session.aiohttp import AiohttpSession
    from aiogram.client.telegram import TelegramAPIServer
    from aiohttp import web

    from agent.memory import Turn
    from agent.session import Outcome
    from handlers.delivery.inbox import receive
    from handlers.delivery.metrics import REPLICA_WAITS
    from handlers.delivery.receipt import Entry
    from handlers.delivery.replicas import NotReplicated, ReplicaWait
    from handlers.delivery.runners import SECRET_HEADER, WEBHOOK_PATH, add_webhook_intake
    from tests.fakes.local_http import serve
    from tests.fakes.redis_server import RedisServer
    from tests.fakes.telegram_server import FakeTelegram

    (tmp_path / "m").mkdir()
    (tmp_path / "r").mkdir()
    master, replica = await RedisServer(tmp_path / "m").start(), await RedisServer(tmp_path / "r").start()
    client, copy = master.client(), replica.client()
    fake = await FakeTelegram().start()
    bot = Bot(fake.token, session=AiohttpSession(api=TelegramAPIServer.from_base(fake.url)))

    async def until(condition, within: float = 30) -> None:
        deadline = time.monotonic() + within
        while not await condition():
            assert time.monotonic() < deadline, "timed out"
            await asyncio.sleep(0.05)

    def replicas_connected(n: int):
        async def check() -> bool:   # connected and caught up: its first sync done (a busy host takes a while,
            _, offset, replicas = await client.execute_command("ROLE")   # and WAIT would time out meanwhile)
            return len(replicas) == n and offset > 0 and all(int(r[2]) >= offset for r in replicas)
        return check

    def refused_at_least(n: float):
        async def check() -> bool:
            return REPLICA_WAITS.labels(outcome="not_replicated")._value.get() >= n
        return check

    app = web.Application()
    runner, url = None, ""

    async def post_update(message: Update) -> int:
        async with aiohttp.ClientSession() as http, http.post(
                f"{url}{WEBHOOK_PATH}", data=message.model_dump_json(exclude_none=True),
                headers={SECRET_HEADER: "webhook-secret-123", "Content-Type": "application/json"}) as response:
            return response.status

    try:
        await copy.replicaof("127.0.0.1", master.port)
        await until(replicas_connected(1))
        wait = ReplicaWait(client, 1, timeout_ms=300)
        inbox = Inbox(client, "kefu:", partitions=2, replicas=wait)
        await inbox.ensure_groups()
        add_webhook_intake(app, inbox, "webhook-secret-123")
        runner, url = await serve(app)
        first = update(61, "足球多少钱")
        stream = inbox.stream(inbox.partition_of(first))
        assert await inbox.append(first)
        assert await copy.xlen(stream) == 1                                   # on the replica when it returned

        replica.freeze()
        with pytest.raises(NotReplicated):
            await inbox.append(update(61, "有优惠吗"))
        refused = REPLICA_WAITS.labels(outcome="not_replicated")._value.get()
        stop = asyncio.Event()
        receiving = asyncio.create_task(receive(bot, inbox, stop, poll_seconds=1))
        update_id = await fake.say(62, "篮球多少钱")
        await until(refused_at_least(refused + 2))
        assert [u["update_id"] for u in fake.unconfirmed] == [update_id]     # Telegram would send it again
        posted = update(63, "排球多少钱")                                      # the webhook answers 503: sent again
        assert await post_update(posted) == 503
        replica.thaw()
        await fake.wait_for(lambda: not fake.unconfirmed, within=30, what="the update confirmed")
        assert await post_update(posted) == 200
        stop.set()
        await receiving
        other = inbox.stream(inbox.partition_of(update(62, "")))
        appended = [json.loads(f[b"update"])["update_id"] for _, f in await copy.xrange(other)]
        assert appended.count(update_id) == 1                                 # tried several times, appended once

        ((_, entries),) = await client.xreadgroup(GROUP, "w", {stream: ">"}, count=1)
        entry = Entry(stream, entries[0][0], first=True)
        done = inbox.marker(inbox.partition_of(first), "done", first.update_id)
        replica.freeze()
        with pytest.raises(NotReplicated):
            await inbox.finish(first.update_id, entry)
        assert not entry.acked                                                # settled again later
        keys = inbox.layout.chat_keys()
        handoffs = RedisHandoffStore(client, "kefu:", keys=keys)
        sessions = RedisSessions(client, RedisMemory(client, keys=keys), handoffs, replicas=wait)
        session = await sessions.open("61", inbox.receipt(first.update_id, entry))
        with pytest.raises(NotReplicated):
            await session.commit(Outcome(Turn("足球多少钱", "120元"), ["001"], 1))
        assert not entry.acked
        replica.thaw()
        await inbox.finish(first.update_id, entry)
        assert entry.acked and await copy.exists(done)
        assert (await copy.xpending(stream, GROUP))["pending"] == 0

        await replica.crash()                                                 # no replica left: nothing to wait for
        await until(replicas_connected(0))
        assert await inbox.append(update(61, "那买两个呢")) and await inbox.append(update(61, "谢谢"))
    finally:
        if runner is not None:
            await runner.cleanup()
        await bot.session.close()
        await fake.stop()
        await client.aclose()
        await copy.aclose()
        await replica.stop()
        await master.stop()


async def test_no_wait_for_replicas_on_one_node_unless_asked():
    """REDIS_WAIT_REPLICAS: 0 on one node (no WAIT, the inbox and the sessions as before), 1 on a cluster
    (tests/test_cluster.py), any number when set."""
    from agent.settings import Settings
    from handlers.delivery.replicas import ReplicaWait
    from handlers.stores import chat_stores, redis_client
    from tests.fakes.redis_support import REDIS_TEST_URL

    assert Settings(_env_file=None).wait_replicas == 0
    assert Settings(_env_file=None, redis_cluster=True).wait_replicas == 1
    assert Settings(_env_file=None, redis_cluster=True, redis_wait_replicas=0).wait_replicas == 0
    async with redis_client(Settings(_env_file=None, redis_url=REDIS_TEST_URL)) as client:
        assert ReplicaWait.of(client) is None and Inbox(client).replicas is None
        sessions, _, _ = chat_stores(Settings(_env_file=None, redis_url=REDIS_TEST_URL), client)
        assert sessions.replicas is None
    asked = Settings(_env_file=None, redis_url=REDIS_TEST_URL, redis_wait_replicas=2, redis_wait_timeout_ms=50)
    async with redis_client(asked) as client:
        wait = ReplicaWait.of(client)
        assert wait.redis is client and (wait.replicas, wait.timeout_ms) == (2, 50)   # one node: the same client
        assert Inbox(client).replicas is wait and chat_stores(asked, client)[0].replicas is wait
