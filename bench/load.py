"""Load benchmark: many simulated chats through the fake Telegram Bot API against the real bot
process (polling, real Redis, offline model). Prints messages per second, p50/p95/p99 latency from the
update being available to the reply arriving, Redis commands per message, lost, duplicate and
out-of-order replies — and the same figures for a bare aiogram echo bot (bench/echo_bot.py) through the
same fake server in the same run, with ours as ratios to it.

    python bench/load.py [--chats 1000] [--messages 5] [--workers 1]

Needs Redis on 127.0.0.1:6379 (db 15 is used, under a key prefix of its own)."""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from handlers import texts  # noqa: E402
from tests.fakes.bot_process import BotProcess  # noqa: E402
from tests.fakes.redis_support import connect, drop_prefix, unique_prefix  # noqa: E402
from tests.fakes.telegram_server import FakeTelegram  # noqa: E402

QUESTIONS = ["足球多少钱", "有优惠吗", "那买两个呢", "羽毛球拍买两支多少钱", "我准备跑马拉松，需要透气并且能支撑足弓的装备",
             "怎么退货", "瑜伽垫有货吗", "店里有无人机吗"]


async def commands_processed(redis) -> int:
    return int((await redis.info("stats"))["total_commands_processed"])


async def round_trips(processes) -> float:
    """Redis round trips written by the bot processes so far (their /metrics counters, summed)."""
    import aiohttp

    total = 0.0
    async with aiohttp.ClientSession() as http:
        for process in processes:
            async with http.get(f"http://127.0.0.1:{process.port}/metrics") as response:
                for line in (await response.text()).splitlines():
                    if line.startswith("kefu_redis_round_trips_total "):
                        total += float(line.split()[1])
    return total


async def chat(fake: FakeTelegram, chat_id: int, messages: int, latencies: list[float]) -> None:
    for i in range(messages):
        before = len(fake.replies(chat_id))
        started = time.perf_counter()
        await fake.say(chat_id, QUESTIONS[(chat_id + i) % len(QUESTIONS)])
        await fake.wait_replies(chat_id, before + 1, within=120)
        latencies.append((time.perf_counter() - started) * 1000)


def check(fake: FakeTelegram, chats: range, messages: int, expected) -> tuple[int, int, int]:
    """Lost, duplicate and out-of-order replies, from what each chat received against what it asked."""
    lost = duplicate = disorder = 0
    for chat_id in chats:
        got = fake.replies(chat_id)
        lost += max(messages - len(got), 0)
        duplicate += max(len(got) - messages, 0)
        wanted = [expected(chat_id, i) for i in range(messages)]
        disorder += sum(1 for w, g in zip(wanted, got, strict=False) if w not in g)
    return lost, duplicate, disorder


async def echo_baseline(args) -> tuple[float, list[float], tuple[int, int, int]]:
    import os
    import sys as _sys

    fake = await FakeTelegram().start()
    env = {**os.environ, "BOT_TOKEN": fake.token, "TELEGRAM_API_BASE": fake.url}
    process = await asyncio.create_subprocess_exec(_sys.executable, str(ROOT / "bench" / "echo_bot.py"), env=env,
                                                   stdout=asyncio.subprocess.DEVNULL,
                                                   stderr=asyncio.subprocess.DEVNULL)
    try:
        await fake.wait_for(lambda: any(m == "getUpdates" for m, _ in fake.calls), within=60)
        latencies: list[float] = []
        started = time.perf_counter()
        await asyncio.gather(*(chat(fake, 1000 + c, args.messages, latencies) for c in range(args.chats)))
        elapsed = time.perf_counter() - started
        faults = check(fake, range(1000, 1000 + args.chats), args.messages,
                       lambda c, i: QUESTIONS[(c + i) % len(QUESTIONS)])
    finally:
        process.terminate()
        await process.wait()
        await fake.stop()
    return args.chats * args.messages / elapsed, latencies, faults


async def main(args) -> None:
    echo_rate, echo_latencies, echo_faults = await echo_baseline(args)
    fake = await FakeTelegram().start()
    redis = await connect()
    prefix = unique_prefix()
    with tempfile.TemporaryDirectory() as tmp:
        bot = BotProcess(fake, Path(tmp), prefix, RATE_LIMIT_MESSAGES="1000")
        extra = [BotProcess(fake, Path(tmp), prefix, "work", RATE_LIMIT_MESSAGES="1000")
                 for _ in range(args.workers - 1)]
        try:
            await bot.start()
            for worker in extra:        # more workers: the inbox's partitions are shared among them
                await worker.start()
            await fake.say(1, "足球多少钱")              # warm-up
            await fake.wait_replies(1, 1)
            latencies: list[float] = []
            redis_before = await commands_processed(redis)
            trips_before = await round_trips([bot, *extra])
            started = time.perf_counter()
            await asyncio.gather(*(chat(fake, 1000 + c, args.messages, latencies) for c in range(args.chats)))
            elapsed = time.perf_counter() - started
            redis_after = await commands_processed(redis)
            trips_after = await round_trips([bot, *extra])
            offers = (texts.HANDOFF_OFFER, texts.NO_HANDOFF)   # the extra "转人工?" after two unhelped answers
            replies_by_chat = {c: [r for r in fake.replies(c) if not r.startswith(offers)]
                               for c in range(1000, 1000 + args.chats)}
        finally:
            for worker in extra:
                await worker.stop()
            await bot.stop()
            await drop_prefix(redis, prefix)
            await redis.aclose()
            await fake.stop()
    total = args.chats * args.messages
    rate = total / elapsed
    print(f"{args.workers} worker(s); {args.chats} chats × {args.messages} messages = {total} messages in {elapsed:.1f} s "
          f"(each chat waits for its reply before its next message)")
    print(f"throughput: {rate:.1f} messages/s; the bare aiogram echo bot, same run: {echo_rate:.1f} messages/s "
          f"(ours {rate / echo_rate:.0%} of it)")
    for q in (50, 95, 99):
        ours, echo = np.percentile(latencies, q), np.percentile(echo_latencies, q)
        print(f"latency update→reply p{q}: {ours:.0f} ms (echo bot {echo:.0f} ms, {ours / echo:.1f}×)")
    print(f"echo bot lost/duplicate/out-of-order: {echo_faults}; ours: lost "
          f"{sum(max(args.messages - len(fake_replies), 0) for fake_replies in replies_by_chat.values())}, "
          f"duplicates {sum(max(len(r) - args.messages, 0) for r in replies_by_chat.values())} (offers of a person "
          "after two unhelped answers are not counted)")
    print(f"Redis per message: {(trips_after - trips_before) / total:.1f} round trips, "
          f"{(redis_after - redis_before) / total:.1f} commands (inbox append, partition read and acknowledgement, "
          "done-marker, rate limit, memory load and append, handoff state; lease renewals and gauges included)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--chats", type=int, default=1000)
    parser.add_argument("--messages", type=int, default=5)
    parser.add_argument("--workers", type=int, default=1, help="workers in all (python bot.py is the first)")
    asyncio.run(main(parser.parse_args()))
