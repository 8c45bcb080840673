"""Handoff benchmark: customers handed to a person through the fake Bot API, against the real bot
process (polling, real Redis, offline model). Prints, with p50/p95: handoff start (customer's 转人工 →
the customer told, topic and card made), customer → topic relay, operator → customer relay, Redis
commands per relayed message; and the same relay through a bare aiogram copy bot in the same run
(bench/echo_bot.py), as a ratio.

    python bench/handoff.py [--chats 20] [--messages 5]

Needs Redis on 127.0.0.1:6379 (db 15 is used, under a key prefix of its own)."""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.fakes.bot_process import BotProcess  # noqa: E402
from tests.fakes.redis_support import connect, drop_prefix, unique_prefix  # noqa: E402
from tests.fakes.telegram_server import FakeTelegram  # noqa: E402

GROUP, OPERATOR = -1009999, 777
QUESTIONS = ["足球多少钱", "我的订单到哪了", "能便宜点吗", "这个颜色有吗", "今天能发货吗"]


def p(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1] if len(values) > 1 else values[0]


def copies_from(fake: FakeTelegram, to_chat: int, source_chat: int) -> int:
    return sum(1 for s in fake.sent if s.kind == "copy" and s.chat_id == to_chat and s.source
               and s.source[0] == source_chat)


async def timed(fake: FakeTelegram, send, done) -> float:
    started = time.perf_counter()
    await send()
    await fake.wait_for(done, within=120, poll=0.002)
    return (time.perf_counter() - started) * 1000


async def ours(chats: int, messages: int) -> dict[str, list[float] | float]:
    fake, redis, prefix = await FakeTelegram().start(), await connect(), unique_prefix()
    starts, inbound, outbound = [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        bot = BotProcess(fake, Path(tmp), prefix, OPERATOR_CHAT_ID=str(GROUP), OPERATOR_IDS=str(OPERATOR),
                         SERVICE_HOURS="00:00-24:00", RATE_LIMIT_MESSAGES="1000")
        try:
            await bot.start()

            async def customer(chat: int) -> None:
                starts.append(await timed(fake, lambda: fake.say(chat, "转人工"),
                                          lambda: len(fake.replies(chat)) >= 1))
                thread = next(t for t, topic in fake.topics.items() if topic.name.endswith(f"· {chat}"))
                for n, question in enumerate(QUESTIONS[:messages], 1):
                    inbound.append(await timed(fake, lambda q=question: fake.say(chat, q),
                                               lambda n=n: copies_from(fake, GROUP, chat) >= n))
                    outbound.append(await timed(
                        fake, lambda: fake.push(fake.group_message(GROUP, thread, OPERATOR, "好的，马上为您查询")),
                        lambda n=n: copies_from(fake, chat, GROUP) >= n))

            before = int((await redis.info("stats"))["total_commands_processed"])
            await asyncio.gather(*(customer(5000 + c) for c in range(chats)))
            after = int((await redis.info("stats"))["total_commands_processed"])
        finally:
            await bot.stop()
            await drop_prefix(redis, prefix)
            await redis.aclose()
            await fake.stop()
    return {"start": starts, "in": inbound, "out": outbound, "redis": (after - before) / (len(inbound) + len(outbound))}


async def baseline(chats: int, messages: int) -> list[float]:
    fake = await FakeTelegram().start()
    env = {**os.environ, "BOT_TOKEN": fake.token, "TELEGRAM_API_BASE": fake.url}
    process = await asyncio.create_subprocess_exec(sys.executable, str(ROOT / "bench" / "echo_bot.py"),
                                                   "--copy-to", str(GROUP), env=env,
                                                   stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
    latencies: list[float] = []
    try:
        await fake.wait_for(lambda: any(m == "getUpdates" for m, _ in fake.calls), within=60)

        async def customer(chat: int) -> None:
            for n, question in enumerate(QUESTIONS[:messages], 1):
                latencies.append(await timed(fake, lambda q=question: fake.say(chat, q),
                                             lambda n=n: copies_from(fake, GROUP, chat) >= n))

        await asyncio.gather(*(customer(5000 + c) for c in range(chats)))
    finally:
        process.terminate()
        await process.wait()
        await fake.stop()
    return latencies


async def main(args) -> None:
    echo = await baseline(args.chats, args.messages)
    result = await ours(args.chats, args.messages)
    print(f"{args.chats} customers handed off, {args.messages} messages each way; each waits for the last to arrive")
    print(f"baseline, bare aiogram copy bot, customer → group: p50 {p(echo, 50):.0f} ms, p95 {p(echo, 95):.0f} ms")
    for key, label in (("in", "customer → topic"), ("out", "operator → customer")):
        values = result[key]
        print(f"kefu-bot {label}: p50 {p(values, 50):.0f} ms, p95 {p(values, 95):.0f} ms "
              f"({p(values, 50) / p(echo, 50):.2f}× / {p(values, 95) / p(echo, 95):.2f}× the baseline)")
    print(f"kefu-bot handoff start (told + topic + card): p50 {p(result['start'], 50):.0f} ms, "
          f"p95 {p(result['start'], 95):.0f} ms")
    print(f"Redis commands per relayed message: {result['redis']:.1f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--chats", type=int, default=20)
    parser.add_argument("--messages", type=int, default=5)
    asyncio.run(main(parser.parse_args()))
