"""Faults through real processes (the real `python bot.py`, the fake Bot API, a real redis-server of the
test's own): Redis crashed and restarted on its append-only file, Redis frozen for 10 s, the receiver
killed between taking updates from Telegram and appending them, and the Bot API answering 5xx and 429 in
bursts. Every customer message is answered exactly once, in order per chat."""

from __future__ import annotations

import asyncio

import pytest

from tests.fakes.bot_process import wait_handled
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.redis_server import RedisServer
from tests.test_inbox import honest

# the offline model's answers name each product's price: a reply shows which question it answers
ASKED = {"足球多少钱": "120元", "篮球多少钱": "200元", "瑜伽垫多少钱": "150元", "排球多少钱": "229元"}


@pytest.fixture
async def own_redis(tmp_path):
    server = await RedisServer(tmp_path).start()
    try:
        yield server
    finally:
        await server.stop()


def assert_answered_in_order(fake, chat_id: int, asked: list[str]) -> None:
    replies = fake.replies(chat_id)
    assert len(replies) == len(asked), replies                                   # none lost, none twice
    for question, reply in zip(asked, replies, strict=True):
        assert ASKED[question] in reply, (question, reply)                     # in the order asked


async def settle(fake, process, chats: dict[int, list[str]], within: float = 90, shown=()) -> None:
    """Every chat answered once, in order; on failure, what the bot processes (`process` and `shown`) logged
    is part of the message, so a failure seen once in CI can be read."""
    try:
        for chat_id, asked in chats.items():
            await fake.wait_replies(chat_id, len(asked), within=within)
        await wait_handled(fake, process, within)   # a second answer, if one were coming, has arrived now
        for chat_id, asked in chats.items():
            assert_answered_in_order(fake, chat_id, asked)
    except AssertionError as failure:
        logs = "\n".join(f"--- {' '.join(p.args) or 'run'} (last 6,000 characters) ---\n"
                         f"{p.output.decode(errors='replace')[-6000:]}" for p in (process, *shown))
        raise AssertionError(f"{failure}\n{logs}") from None


async def test_redis_crashed_and_restarted_mid_turn_keeps_memory_and_answers_once(world, own_redis):
    fake, bot, _ = world
    stalled: list[int] = []

    def model(body: dict) -> dict | str:
        last = [m["content"] for m in body["messages"] if m["role"] == "user"][-1]
        if "篮球" in last and not stalled and not any(m["role"] == "tool" for m in body["messages"]):
            stalled.append(1)
            return "stall"   # the turn is in flight while Redis goes down
        return honest(body)

    openai = await FakeOpenAI(chat_function=model, stall_seconds=3).start()
    try:
        process = bot(REDIS_URL=own_redis.url, OPENAI_API_KEY="sk-test", OPENAI_BASE_URL=openai.url,
                      LLM_TIMEOUT_SECONDS="20", LLM_MAX_RETRIES="0")
        await process.start()
        await fake.say(61, "足球多少钱")
        await fake.wait_replies(61, 1)
        await fake.say(61, "篮球多少钱")
        await fake.wait_for(lambda: stalled, within=30, what="the second turn in flight")
        await own_redis.crash()                       # SIGKILL: only the append-only file survives
        await asyncio.sleep(1)
        await own_redis.start()
        await fake.wait_replies(61, 2, within=90)
        await fake.say(61, "那买两个呢")
        await fake.wait_replies(61, 3, within=60)
        await wait_handled(fake, process)
        assert len(fake.replies(61)) == 3, fake.replies(61)             # each answered once
        last = [r for r in openai.requests if r[0] == "chat"][-1][1]
        history = " ".join(str(m.get("content")) for m in last["messages"])
        assert "足球多少钱" in history and "篮球多少钱" in history          # the memory survived the crash
        code, output = await process.stop()
        assert code == 0, output
        assert "Traceback" not in output, output
    finally:
        await openai.stop()


async def test_redis_unreachable_for_ten_seconds_then_everything_is_answered(world, own_redis):
    fake, bot, _ = world
    process = bot(REDIS_URL=own_redis.url)
    await process.start()
    await fake.say(71, "足球多少钱")
    await fake.wait_replies(71, 1)
    own_redis.freeze()                                # nothing answers; connections hang, then time out
    try:
        for chat_id, question in [(71, "篮球多少钱"), (72, "瑜伽垫多少钱"), (71, "排球多少钱"), (73, "足球多少钱")]:
            await fake.say(chat_id, question)
            await asyncio.sleep(0.3)
        await asyncio.sleep(10)
        assert fake.replies(72) == []                 # nothing could be answered meanwhile ...
    finally:
        own_redis.thaw()
    await settle(fake, process, {71: ["足球多少钱", "篮球多少钱", "排球多少钱"], 72: ["瑜伽垫多少钱"], 73: ["足球多少钱"]})
    assert process.process.returncode is None         # ... and the bot waited instead of dying
    code, output = await process.stop()
    assert code == 0, output


async def test_receiver_killed_between_receiving_and_appending_is_answered_once(world, own_redis):
    fake, bot, _ = world
    receiver = bot("receive", REDIS_URL=own_redis.url, INBOX_PARTITIONS="2")
    worker = bot("work", REDIS_URL=own_redis.url, INBOX_PARTITIONS="2")
    await receiver.start()
    await worker.start()
    await fake.say(81, "足球多少钱")
    await fake.wait_replies(81, 1)
    redis = own_redis.client()
    try:
        await redis.execute_command("CLIENT", "PAUSE", 20_000, "WRITE")   # the receiver's append hangs ...
        update_id = await fake.say(81, "篮球多少钱")
        await fake.wait_for(lambda: any(u["update_id"] == update_id for u in fake.delivered), within=30,
                            what="the update handed to the receiver")
        await asyncio.sleep(0.5)
        await receiver.kill()                                              # ... and the receiver dies there
        await redis.execute_command("CLIENT", "UNPAUSE")
    finally:
        await redis.aclose()
    replacement = bot("receive", REDIS_URL=own_redis.url, INBOX_PARTITIONS="2")
    await replacement.start()                        # Telegram hands the unconfirmed update out again
    await fake.wait_replies(81, 2, within=60)
    again = next(u for u in fake.delivered if u["update_id"] == update_id)
    await fake.push(dict(again))                     # and once more, as Telegram does after a timeout
    await fake.say(81, "瑜伽垫多少钱")
    await settle(fake, replacement, {81: ["足球多少钱", "篮球多少钱", "瑜伽垫多少钱"]}, shown=[worker])
    for process in (replacement, worker):
        code, output = await process.stop()
        assert code == 0, output


async def test_bot_api_5xx_and_429_bursts_lose_nothing_and_keep_order(world):
    fake, bot, _ = world
    process = bot()
    await process.start()
    await fake.say(91, "足球多少钱")
    await fake.wait_replies(91, 1)
    # bursts longer than one send's own retries: the turn is run again, the message still answered once
    fake.send_failures.extend(["500", "502", "500", "502", "429", "429", "500", "429", "502", "500", "500", "502"])
    chats = {91: ["足球多少钱", "篮球多少钱", "排球多少钱"], 92: ["瑜伽垫多少钱", "足球多少钱"], 93: ["篮球多少钱"]}
    for position in range(3):
        for chat_id, asked in chats.items():
            if position < len(asked) and (chat_id, position) != (91, 0):
                await fake.say(chat_id, asked[position])
    await settle(fake, process, chats, within=120)
    assert not fake.send_failures                    # every scripted failure was met
    code, output = await process.stop()
    assert code == 0, output


async def test_a_webhook_replica_answers_503_while_redis_is_away_and_telegrams_resend_is_answered_once(world,
                                                                                                    own_redis):
    import aiohttp

    fake, bot, _ = world
    env = {"BOT_MODE": "webhook", "WEBHOOK_SECRET": "s3cret-token", "WEBHOOK_URL": "https://shop.example/",
           "REDIS_URL": own_redis.url}
    replica, worker = bot("receive", **env), bot("work", **env)
    await replica.start()
    await worker.start()
    question = {"update_id": 9101, **fake.message(95, "足球多少钱")}

    async def post() -> int:
        async with aiohttp.ClientSession() as http, http.post(
                f"http://127.0.0.1:{replica.port}/telegram/webhook", json=question,
                headers={"X-Telegram-Bot-Api-Secret-Token": "s3cret-token"}) as response:
            return response.status

    own_redis.freeze()
    try:
        assert await post() == 503           # not appended, not confirmed: Telegram keeps it and retries
    finally:
        own_redis.thaw()
    assert await post() == 200               # Telegram's retry
    assert await post() == 200               # and one more, as after a slow answer
    await settle(fake, replica, {95: ["足球多少钱"]}, shown=[worker])
    for process in (replica, worker):
        code, output = await process.stop()
        assert code == 0, output


async def test_a_network_cut_between_a_worker_process_and_redis_with_a_message_in_flight(world):
    """The real `python bot.py` talks to Redis through a TCP proxy that cuts the network the way TCP lives
    through an outage: every connection stays open, bytes are accepted both ways and held, longer than the
    client's socket timeout (5 s), then delivered late. The cut begins just as the worker starts a turn
    (the turn's first Redis command, loading the chat's memory); more messages arrive meanwhile. Each is
    answered exactly once, in order per chat, and the process lives on."""
    from urllib.parse import urlsplit

    from tests.fakes.redis_support import REDIS_TEST_URL
    from tests.fakes.tcp_proxy import TcpProxy

    fake, bot, _ = world
    url = urlsplit(REDIS_TEST_URL)
    proxy = await TcpProxy(url.hostname, url.port or 6379).start()
    process = bot(REDIS_URL=f"redis://127.0.0.1:{proxy.port}{url.path or '/0'}")
    try:
        await process.start()
        await fake.say(9501, "足球多少钱")
        await fake.wait_replies(9501, 1)
        await wait_handled(fake, process)               # the first turn settled: its memory write is done
        proxy.cut_on(b"chat:9501")                      # the next turn of this chat starts the cut
        await fake.say(9501, "篮球多少钱")
        await fake.wait_for(lambda: proxy.marked, within=30, what="the cut, with the turn in flight")
        for chat_id, question in [(9502, "瑜伽垫多少钱"), (9501, "排球多少钱")]:
            await fake.say(chat_id, question)
        await asyncio.sleep(7)                          # longer than the client's timeout: its retries are held too
        assert fake.replies(9502) == [] and len(fake.replies(9501)) == 1   # nothing got through meanwhile
        proxy.heal()                                    # everything held is delivered, late, in order per connection
        await settle(fake, process, {9501: ["足球多少钱", "篮球多少钱", "排球多少钱"], 9502: ["瑜伽垫多少钱"]})
        assert process.process.returncode is None
        code, output = await process.stop()
        assert code == 0, output
    finally:
        await process.kill()
        await proxy.stop()
