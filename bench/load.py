"""Load benchmark: many simulated chats through the fake Telegram Bot API against the real bot
process(es) (the durable inbox on real Redis, the offline model). Prints replies per second, p50/p95/p99
latency from the update being available to its reply arriving, Redis round trips and commands per
message, lost, duplicate and out-of-order replies — and the same figures for a bare aiogram echo bot
(bench/echo_bot.py) through the same fake server in the same run, with ours as ratios to it.

    python bench/load.py [--chats 1000] [--messages 5] [--workers 1] [--burst] [--cluster] [--turn-process off]

Default: each chat waits for its reply before its next message (a conversation; the questions include
follow-ups that need the chat's memory). --burst: each chat sends all its messages at once (price
questions whose answers name their own figure, so the order of the replies can be checked).
--cluster: instead of the echo bot, the same load on a Redis Cluster (six redis-server processes, three
masters and three replicas, started here: tests/fakes/redis_cluster.py) after the single node, in the same
run — once with REDIS_WAIT_REPLICAS=0 and once with its cluster default, 1 (WAIT before confirming) — with
the cluster's figures as ratios to the single node's and the WAITs per message.
Needs Redis on 127.0.0.1:6379 (db 15 is used, under a key prefix of its own)."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import aiohttp
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from handlers import texts  # noqa: E402
from handlers.delivery.inbox import Inbox  # noqa: E402
from handlers.stores import cluster_client  # noqa: E402
from tests.fakes.bot_process import BotProcess  # noqa: E402
from tests.fakes.redis_cluster import RedisClusterNodes  # noqa: E402
from tests.fakes.redis_support import connect, drop_prefix, unique_prefix  # noqa: E402
from tests.fakes.telegram_server import FakeTelegram  # noqa: E402

QUESTIONS = ["足球多少钱", "有优惠吗", "那买两个呢", "羽毛球拍买两支多少钱", "我准备跑马拉松，需要透气并且能支撑足弓的装备",
             "怎么退货", "瑜伽垫有货吗", "店里有无人机吗"]
# --burst: each answer names its product's price, which tells which question it answers
PRICED = [("足球多少钱", "120元"), ("篮球多少钱", "200元"), ("瑜伽垫多少钱", "150元"), ("排球多少钱", "229元"),
          ("网球拍多少钱", "899元"), ("乒乓球拍多少钱", "129元"), ("跑步鞋多少钱", "500元")]
OFFERS = (texts.HANDOFF_OFFER, texts.NO_HANDOFF)   # the extra "转人工?" after two unhelped answers


def question(burst: bool, chat_id: int, i: int) -> str:
    return PRICED[(chat_id + i) % len(PRICED)][0] if burst else QUESTIONS[(chat_id + i) % len(QUESTIONS)]


def answers(fake: FakeTelegram, chat_id: int) -> list:
    return [s for s in fake.messages_to(chat_id) if not s.text.startswith(OFFERS)]


async def converse(fake: FakeTelegram, chat_id: int, messages: int, latencies: list[float]) -> None:
    """One message, wait for its reply, the next."""
    for i in range(messages):
        before = len(fake.replies(chat_id))
        started = time.monotonic()
        await fake.say(chat_id, question(False, chat_id, i))
        await fake.wait_replies(chat_id, before + 1, within=300)
        latencies.append((fake.messages_to(chat_id)[before].at - started) * 1000)


async def burst(fake: FakeTelegram, chat_id: int, messages: int, latencies: list[float]) -> None:
    """All messages at once, then wait for as many replies."""
    sent = []
    for i in range(messages):
        sent.append(time.monotonic())
        await fake.say(chat_id, question(True, chat_id, i))
    deadline = time.monotonic() + 300
    while len(answers(fake, chat_id)) < messages and time.monotonic() < deadline:
        await fake.wait_replies(chat_id, len(fake.replies(chat_id)) + 1, within=max(deadline - time.monotonic(), 0))
    latencies.extend((reply.at - at) * 1000 for reply, at in zip(answers(fake, chat_id), sent, strict=False))


def faults(fake: FakeTelegram, chats: range, messages: int, burst_mode: bool, echo: bool) -> tuple[int, int, int]:
    """Lost, duplicate and out-of-order replies, from what each chat received against what it asked."""
    lost = duplicate = disorder = 0
    for chat_id in chats:
        got = [s.text for s in answers(fake, chat_id)]
        lost += max(messages - len(got), 0)
        duplicate += max(len(got) - messages, 0)
        if echo:
            wanted = [question(burst_mode, chat_id, i) for i in range(messages)]
        elif burst_mode:
            wanted = [PRICED[(chat_id + i) % len(PRICED)][1] for i in range(messages)]
        else:
            continue   # a conversation waits for each reply: order cannot break; lost and duplicates still count
        disorder += sum(1 for w, g in zip(wanted, got, strict=False) if w not in g)
    return lost, duplicate, disorder


def with_children(pids: list[int]) -> list[int]:
    """The processes and their children (a bot's turn process, handlers/turn_process.py)."""
    children = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) in pids:
                children.append(int(stat.parent.name))
        except (OSError, ValueError, IndexError):
            pass
    return [*pids, *children]


def cpu_seconds(pids: list[int]) -> float:
    """CPU time (user + system, every thread) the processes have used so far, from /proc: what a message
    costs the bot, beside how long it waited. (It rises on a busy machine too, less than the latency.)"""
    total = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])   # utime, stime (fields 14 and 15 of stat(5))
    return total / os.sysconf("SC_CLK_TCK")


def core_waits(pids: list[int]) -> float:
    """Seconds the processes' threads have spent so far runnable but waiting for a core (the second field of
    /proc/<pid>/task/<tid>/schedstat): on a shared machine, how much of the latency is other processes'
    CPU, not ours. (Threads that have ended are not counted.)"""
    total = 0
    for pid in pids:
        for task in Path(f"/proc/{pid}/task").iterdir():
            try:
                total += int((task / "schedstat").read_text().split()[1])
            except (OSError, IndexError, ValueError):
                pass
    return total / 1e9


async def drive(fake: FakeTelegram, args) -> tuple[float, list[float], float]:
    """(replies/s, latencies in ms, this process's CPU per message: the fake Bot API server and the chats)."""
    latencies: list[float] = []
    step = burst if args.burst else converse
    started, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(step(fake, 1000 + c, args.messages, latencies) for c in range(args.chats)))
    total = args.chats * args.messages
    return total / (time.perf_counter() - started), latencies, (time.process_time() - cpu) / total


async def echo_baseline(args):
    fake = await FakeTelegram().start()
    env = {**os.environ, "BOT_TOKEN": fake.token, "TELEGRAM_API_BASE": fake.url}
    process = await asyncio.create_subprocess_exec(sys.executable, str(ROOT / "bench" / "echo_bot.py"), env=env,
                                                   stdout=asyncio.subprocess.DEVNULL,
                                                   stderr=asyncio.subprocess.DEVNULL)
    try:
        await fake.wait_for(lambda: any(m == "getUpdates" for m, _ in fake.calls), within=60)
        cpu, waited = cpu_seconds([process.pid]), core_waits([process.pid])
        rate, latencies, harness = await drive(fake, args)
        cpu = (cpu_seconds([process.pid]) - cpu) / (args.chats * args.messages)
        waited = (core_waits([process.pid]) - waited) / (args.chats * args.messages)
        found = faults(fake, range(1000, 1000 + args.chats), args.messages, args.burst, echo=True)
        return rate, latencies, found, cpu, waited, harness
    finally:
        process.terminate()
        await process.wait()
        await fake.stop()


async def scraped(processes, name: str) -> float:
    """A counter of the bot processes' /metrics, summed (over its labels too)."""
    total = 0.0
    async with aiohttp.ClientSession() as http:
        for process in processes:
            async with http.get(f"http://127.0.0.1:{process.port}/metrics") as response:
                total += sum(float(line.rsplit(" ", 1)[1]) for line in (await response.text()).splitlines()
                             if line.startswith((f"{name} ", f"{name}{{")))
    return total


async def balanced(redis, prefix: str, workers: int, partitions: int = 4) -> None:
    """Wait until every inbox partition is leased and each worker holds its share."""
    deadline, inbox = time.monotonic() + 60, Inbox(redis, prefix, partitions)
    while time.monotonic() < deadline:
        owners = [await redis.get(inbox.lease(p)) for p in range(partitions)]
        if all(owners) and len(set(owners)) == min(workers, partitions):
            return
        await asyncio.sleep(0.2)
    raise RuntimeError("the workers did not share the inbox partitions within 60 s")


async def commands_processed(redis, cluster: bool) -> int:
    """Commands Redis executed so far (on a cluster: summed over its masters)."""
    if not cluster:
        return int((await redis.info("stats"))["total_commands_processed"])
    found = await redis.info("stats", target_nodes=redis.PRIMARIES)
    return sum(int(stats["total_commands_processed"]) for stats in found.values())


async def ours(args, cluster: RedisClusterNodes | None = None, **settings: str):
    fake = await FakeTelegram().start()
    redis = cluster_client(cluster.url) if cluster else await connect()
    prefix = unique_prefix()
    with tempfile.TemporaryDirectory() as tmp:
        # as deployed: no JSONL copy; the turn process as a plain `python bot.py` has it (the tests' default is off)
        env = {"RATE_LIMIT_MESSAGES": "1000", "AUDIT_PATH": None, "TURN_PROCESS": args.turn_process, **settings}
        if cluster:
            env.update({"REDIS_URL": cluster.url, "REDIS_CLUSTER": "1"})
        processes = [BotProcess(fake, Path(tmp), prefix, **env)]
        processes += [BotProcess(fake, Path(tmp), prefix, "work", **env) for _ in range(args.workers - 1)]
        try:
            for process in processes:   # more workers: the inbox's partitions are shared among them
                await process.start()
            await balanced(redis, prefix, len(processes))
            for process in processes:   # measured once the turn process answers (if the bot has one)
                await process.turn_process()
            await fake.say(1, "足球多少钱")   # warm-up
            await fake.wait_replies(1, 1)
            commands = await commands_processed(redis, cluster is not None)
            trips = await scraped(processes, "kefu_redis_round_trips_total")
            waits = await scraped(processes, "kefu_redis_replica_waits_total")
            pids = with_children([p.process.pid for p in processes])
            cpu, waited = cpu_seconds(pids), core_waits(pids)
            children = pids[len(processes):]
            children_cpu = cpu_seconds(children)
            calls_before = len(fake.calls)
            rate, latencies, harness = await drive(fake, args)
            api_calls = Counter(method for method, _ in fake.calls[calls_before:])
            cpu, waited = cpu_seconds(pids) - cpu, core_waits(pids) - waited
            children_cpu = cpu_seconds(children) - children_cpu
            commands = await commands_processed(redis, cluster is not None) - commands
            trips = await scraped(processes, "kefu_redis_round_trips_total") - trips
            waits = await scraped(processes, "kefu_redis_replica_waits_total") - waits
            found = faults(fake, range(1000, 1000 + args.chats), args.messages, args.burst, echo=False)
        finally:
            for process in reversed(processes):
                _, output = await process.stop()
                for line in output.splitlines():
                    if "customer turns answered by the turn process" in line:
                        print(line.split(": ", 1)[1])
            if cluster is None:   # the cluster is stopped afterwards, with everything in it
                await drop_prefix(redis, prefix)
            await redis.aclose()
            await fake.stop()
    total = args.chats * args.messages
    if children:
        print(f"CPU per message in the turn process: {children_cpu / total * 1000:.2f} ms, in the bot's own "
              f"process(es): {(cpu - children_cpu) / total * 1000:.2f} ms")
    print("Bot API calls per message: " + ", ".join(f"{m} {n / total:.2f}" for m, n in api_calls.most_common()))
    return (rate, latencies, found, trips / total, commands / total, waits / total, cpu / total, waited / total,
            harness)


async def against_cluster(args) -> None:
    """The same load on one node, then on a three-master cluster without and with WAIT, in one run."""
    single = await ours(args)
    with tempfile.TemporaryDirectory() as tmp:
        nodes = await asyncio.to_thread(RedisClusterNodes.start, Path(tmp))
        try:
            no_wait = await ours(args, nodes, REDIS_WAIT_REPLICAS="0")
            waiting = await ours(args, nodes)   # the cluster's default: REDIS_WAIT_REPLICAS=1
        finally:
            nodes.stop()
    mode = "each chat sends all its messages at once" if args.burst else \
        "each chat waits for its reply before its next message"
    print(f"{args.workers} worker(s); {args.chats} chats × {args.messages} messages ({mode})")
    print("| Redis | replies/s | p50 ms | p99 ms | round trips / message | commands / message | WAITs / message "
          "| lost / dup / disorder | throughput, p99 vs one node |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    runs = (("one node", single), ("cluster, 3 masters, no WAIT", no_wait),
            ("cluster, 3 masters, WAIT 1 (default)", waiting))
    base_p99 = np.percentile(single[1], 99)
    for name, (rate, latencies, found, trips, commands, waits, *_) in runs:
        p50, p99 = np.percentile(latencies, 50), np.percentile(latencies, 99)
        print(f"| {name} | {rate:.1f} | {p50:.0f} | {p99:.0f} | {trips:.2f} | {commands:.2f} | {waits:.2f} | "
              f"{found[0]} / {found[1]} / {found[2]} | {rate / single[0]:.2f}×, {p99 / base_p99:.2f}× |")
    p50_cost = np.percentile(waiting[1], 50) - np.percentile(no_wait[1], 50)
    print(f"WAIT on the cluster: throughput {waiting[0] / no_wait[0]:.2f}× of no WAIT, p50 {p50_cost:+.0f} ms, "
          f"round trips per message {waiting[3] - no_wait[3]:+.2f}, commands {waiting[4] - no_wait[4]:+.2f}")


async def main(args) -> None:
    if args.cluster:
        await against_cluster(args)
        return
    echo_rate, echo_latencies, echo_faults, echo_cpu, echo_waited, echo_harness = await echo_baseline(args)
    rate, latencies, found, trips, commands, _, cpu, waited, harness = await ours(args)
    mode = "each chat sends all its messages at once" if args.burst else \
        "each chat waits for its reply before its next message"
    print(f"{args.workers} worker(s); {args.chats} chats × {args.messages} messages ({mode})")
    print(f"throughput: {rate:.1f} replies/s; the bare aiogram echo bot, same run: {echo_rate:.1f} replies/s "
          f"(ours {rate / echo_rate:.0%} of it)")
    print(f"CPU per message (the bot's processes, every thread): {cpu * 1000:.2f} ms; the echo bot "
          f"{echo_cpu * 1000:.2f} ms ({cpu / echo_cpu:.1f}×)")
    print(f"this benchmark's own process (the fake Bot API server and the chats) per message: "
          f"{harness * 1000:.2f} ms of CPU driving ours, {echo_harness * 1000:.2f} ms driving the echo bot")
    print(f"waiting for a core (runnable, other processes on it) per message: the bot's threads {waited * 1000:.2f} ms; "
          f"the echo bot's {echo_waited * 1000:.2f} ms")
    for q in (50, 95, 99):
        p, e = np.percentile(latencies, q), np.percentile(echo_latencies, q)
        print(f"latency update→reply p{q}: {p:.0f} ms (echo bot {e:.0f} ms, {p / e:.1f}×)")
    print(f"lost / duplicate / out-of-order replies: ours {found[0]} / {found[1]} / {found[2]}; echo bot "
          f"{echo_faults[0]} / {echo_faults[1]} / {echo_faults[2]} (offers of a person after two unhelped "
          "answers are not counted)")
    print(f"Redis per message: {trips:.1f} round trips, {commands:.1f} commands (inbox append, partition read, "
          "handoff state, memory load and append, done-marker with acknowledgement; lease renewals and gauges "
          "included)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--chats", type=int, default=1000)
    parser.add_argument("--messages", type=int, default=5)
    parser.add_argument("--workers", type=int, default=1, help="workers in all (python bot.py is the first)")
    parser.add_argument("--burst", action="store_true", help="each chat sends all its messages at once")
    parser.add_argument("--turn-process", default="auto", choices=["auto", "on", "off"],
                        help="TURN_PROCESS of the bot's processes (auto, as a plain python bot.py)")
    parser.add_argument("--cluster", action="store_true",
                        help="one node, then a Redis Cluster started here, in one run (no echo bot)")
    asyncio.run(main(parser.parse_args()))
