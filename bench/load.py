"""Load benchmark: many simulated chats through the fake Telegram Bot API against the real bot
process (polling, real Redis, offline model). Prints messages per second, p50/p99 latency from the
update being available to the reply arriving, and Redis commands per message.

    python bench/load.py [--chats 50] [--messages 4]

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

from tests.fakes.bot_process import BotProcess  # noqa: E402
from tests.fakes.redis_support import connect, drop_prefix, unique_prefix  # noqa: E402
from tests.fakes.telegram_server import FakeTelegram  # noqa: E402

QUESTIONS = ["足球多少钱", "有优惠吗", "那买两个呢", "羽毛球拍买两支多少钱", "我准备跑马拉松，需要透气并且能支撑足弓的装备",
             "怎么退货", "瑜伽垫有货吗", "店里有无人机吗"]


async def commands_processed(redis) -> int:
    return int((await redis.info("stats"))["total_commands_processed"])


async def chat(fake: FakeTelegram, chat_id: int, messages: int, latencies: list[float]) -> None:
    for i in range(messages):
        before = len(fake.replies(chat_id))
        started = time.perf_counter()
        await fake.say(chat_id, QUESTIONS[(chat_id + i) % len(QUESTIONS)])
        await fake.wait_replies(chat_id, before + 1, within=120)
        latencies.append((time.perf_counter() - started) * 1000)


async def main(args) -> None:
    fake = await FakeTelegram().start()
    redis = await connect()
    prefix = unique_prefix()
    with tempfile.TemporaryDirectory() as tmp:
        bot = BotProcess(fake, Path(tmp), prefix, RATE_LIMIT_MESSAGES="1000")
        try:
            await bot.start()
            await fake.say(1, "足球多少钱")              # warm-up
            await fake.wait_replies(1, 1)
            latencies: list[float] = []
            redis_before = await commands_processed(redis)
            started = time.perf_counter()
            await asyncio.gather(*(chat(fake, 1000 + c, args.messages, latencies) for c in range(args.chats)))
            elapsed = time.perf_counter() - started
            redis_after = await commands_processed(redis)
        finally:
            await bot.stop()
            await drop_prefix(redis, prefix)
            await redis.aclose()
            await fake.stop()
    total = args.chats * args.messages
    print(f"{args.chats} chats × {args.messages} messages = {total} messages in {elapsed:.1f} s "
          f"(each chat waits for its reply before its next message)")
    print(f"throughput: {total / elapsed:.1f} messages/s")
    print(f"latency update→reply: p50 {np.percentile(latencies, 50):.0f} ms, p99 {np.percentile(latencies, 99):.0f} ms")
    print(f"Redis commands per message: {(redis_after - redis_before) / total:.1f} "
          "in 6 round trips by construction: dedup SET NX, lock acquire, rate-limit pipeline, memory load "
          "pipeline, memory append transaction, lock release")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--chats", type=int, default=50)
    parser.add_argument("--messages", type=int, default=4)
    asyncio.run(main(parser.parse_args()))
