"""A Redis Cluster master failover under load: a real `python bot.py` with REDIS_CLUSTER=1 on a cluster of six
local redis-server processes (tests/fakes/redis_cluster.py, node timeout 1 s); chats send price questions at a
steady pace (each answer names its own figure, so order is checked); a master holding inbox partitions is
SIGKILLed mid-stream. Prints messages lost (must be 0), duplicated, out of order, delayed (answered later than
the slowest answer before the kill), latency before / after, and the time to recover (kill → the first answer
to a message sent after it on the killed master's partitions). Once with REDIS_WAIT_REPLICAS=0 and once with
the cluster default (1), each on a cluster of its own, in one run.

    python bench/cluster.py [--chats 12] [--messages 40] [--interval 0.3] [--kill-after 4]

The load on one node vs the cluster (throughput, p99, round trips, WAIT per message) is bench/load.py --cluster."""

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

from bench.load import PRICED, answers  # noqa: E402
from handlers.delivery.inbox import Inbox  # noqa: E402
from handlers.stores import cluster_client  # noqa: E402
from tests.fakes.bot_process import BotProcess  # noqa: E402
from tests.fakes.redis_cluster import RedisClusterNodes  # noqa: E402
from tests.fakes.redis_support import unique_prefix  # noqa: E402
from tests.fakes.telegram_server import FakeTelegram  # noqa: E402


async def failover(args, **settings: str) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        nodes = await asyncio.to_thread(RedisClusterNodes.start, Path(tmp) / "cluster")
        fake = await FakeTelegram().start()
        prefix = unique_prefix()
        process = BotProcess(fake, Path(tmp), prefix, REDIS_URL=nodes.url, REDIS_CLUSTER="1", RATE_LIMIT_MESSAGES="1000",
                             AUDIT_PATH=None, **settings)
        client = cluster_client(nodes.url)
        try:
            await client.initialize()
            inbox = Inbox(client, prefix, 4)
            by_partition = {p: client.get_node_from_key(inbox.stream(p)).port for p in range(4)}
            victim = nodes.master_with_replica(sorted(set(by_partition.values()) - {nodes.ports[0]}))
            on_victim = {p for p, port in by_partition.items() if port == victim}
            await process.start()
            chats = list(range(1000, 1000 + args.chats))
            sent: dict[int, list[float]] = {c: [] for c in chats}

            async def chat(c: int) -> None:
                for i in range(args.messages):
                    sent[c].append(time.monotonic())
                    await fake.say(c, PRICED[(c + i) % len(PRICED)][0])
                    await asyncio.sleep(args.interval)

            started = time.monotonic()
            talking = asyncio.gather(*(chat(c) for c in chats))
            await asyncio.sleep(args.kill_after)
            killed = time.monotonic()
            await asyncio.to_thread(nodes.kill, victim)
            await talking
            deadline = time.monotonic() + 180
            while time.monotonic() < deadline and any(len(answers(fake, c)) < args.messages for c in chats):
                await fake.changed(0.2)
            await asyncio.sleep(3)   # a duplicate, if one were coming, comes now
            await process.stop()
        finally:
            await client.aclose()
            await fake.stop()
            nodes.stop()
    lost = duplicated = disorder = 0
    before, after, recovered = [], [], None
    for c in chats:
        got = answers(fake, c)
        lost += max(args.messages - len(got), 0)
        duplicated += max(len(got) - args.messages, 0)
        wanted = [PRICED[(c + i) % len(PRICED)][1] for i in range(args.messages)]
        disorder += sum(1 for w, g in zip(wanted, got, strict=False) if w not in g.text)
        for at, reply in zip(sent[c], got, strict=False):
            (before if at < killed else after).append((reply.at - at) * 1000)
            if at >= killed and inbox.layout.of_chat(c) in on_victim:
                recovered = min(recovered or reply.at, reply.at)
    slowest = max(before) if before else 0.0
    return {"lost": lost, "duplicated": duplicated, "disorder": disorder,
            "delayed": sum(1 for ms in after if ms > slowest), "before": before, "after": after,
            "recover": (recovered - killed) if recovered else float("nan"), "killed_at": killed - started,
            "victim_partitions": sorted(on_victim)}


async def main(args) -> None:
    runs = [("REDIS_WAIT_REPLICAS=0", await failover(args, REDIS_WAIT_REPLICAS="0")),
            ("WAIT 1 (cluster default)", await failover(args))]
    total = args.chats * args.messages
    print(f"{args.chats} chats × {args.messages} messages, one every {args.interval} s per chat; a master SIGKILLed "
          f"{args.kill_after} s in (node timeout 1 s)")
    print("| run | lost | duplicated | out of order | delayed | p50 / p99 ms before the kill | p50 / p99 / max ms "
          "after | time to recover |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, r in runs:
        b, a = np.array(r["before"] or [0]), np.array(r["after"] or [0])
        print(f"| {name} | {r['lost']} / {total} | {r['duplicated']} | {r['disorder']} | {r['delayed']} | "
              f"{np.percentile(b, 50):.0f} / {np.percentile(b, 99):.0f} | {np.percentile(a, 50):.0f} / "
              f"{np.percentile(a, 99):.0f} / {a.max():.0f} | {r['recover']:.1f} s |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--chats", type=int, default=12)
    parser.add_argument("--messages", type=int, default=40)
    parser.add_argument("--interval", type=float, default=0.3, help="seconds between one chat's messages")
    parser.add_argument("--kill-after", type=float, default=4.0, help="seconds into the stream")
    asyncio.run(main(parser.parse_args()))
