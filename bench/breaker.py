"""Turn time against a remote model endpoint that hangs (accepts, never answers) or refuses connections,
with the default settings (LLM_TIMEOUT_SECONDS 20, LLM_MAX_RETRIES 2, LLM_CONNECT_TIMEOUT_SECONDS 3,
TURN_BUDGET_SECONDS 40, LLM_BREAKER_FAILURES 3), turn after turn: before the circuit opens every turn
waits out the endpoint; once it is open the offline model answers at once. Then the probe after the
cooling period (the clock is moved on, not waited for).

    python bench/breaker.py [--turns 6] [--budget 40]

Wall-clock minutes with the defaults (three turns of 40 s against the hung endpoint).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agent.breaker import Breaker  # noqa: E402
from agent.openai_model import OpenAIChatModel  # noqa: E402
from agent.turn import Agent  # noqa: E402
from db.build import write_catalog  # noqa: E402
from db.connection import open_readonly  # noqa: E402
from db.records import demo_catalog  # noqa: E402
from retrieval.embedders import LocalE5Embedder  # noqa: E402
from retrieval.index import build_index  # noqa: E402
from retrieval.service import catalog_docs, load_passages, load_search  # noqa: E402
from tests.fakes.demo import DEMO_DAY  # noqa: E402
from tests.fakes.openai_server import HungEndpoint, refused_url  # noqa: E402


class Clock:
    def __init__(self) -> None:
        self.now = time.monotonic()

    def __call__(self) -> float:
        return self.now


async def run(url: str, what: str, conn, search, passages, turns: int, budget: float, connections) -> None:
    clock = Clock()
    breaker = Breaker("chat", 3, 60.0, clock=clock)
    model = OpenAIChatModel.from_settings("sk-bench", url, "m", 20.0, 2, 3.0, breaker)
    agent = Agent(conn, search, model, turn_budget_seconds=budget, passages=passages)
    print(f"\n{what}")
    print(f"{'turn':>4}  {'seconds':>8}  {'connections':>11}  degraded reason")
    opened: list[float] = []
    try:
        for n in range(1, turns + 1):
            if n == turns:
                clock.now += 60   # the cooling period is over: this turn is the probe
            started = time.perf_counter()
            result = await agent.answer("足球多少钱", user_id="bench")
            took = time.perf_counter() - started
            if result.trace.degraded_reason and result.trace.degraded_reason.startswith("circuit open"):
                opened.append(took)
            label = "probe" if n == turns else str(n)
            print(f"{label:>4}  {took:8.3f}  {connections():>11}  {result.trace.degraded_reason}")
    finally:
        await model.close()
    if opened:
        print(f"open circuit: median {statistics.median(opened) * 1000:.0f} ms per turn over {len(opened)} turns")


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=6, help="turns per endpoint; the last one is the probe")
    parser.add_argument("--budget", type=float, default=40.0, help="TURN_BUDGET_SECONDS")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "shop.db"
        write_catalog(db, demo_catalog(DEMO_DAY), source="bench")
        conn = await open_readonly(db)
        embedder = LocalE5Embedder()
        await build_index(Path(tmp) / "shop.index", await catalog_docs(conn), embedder, progress=False)
        search = await load_search(conn, Path(tmp) / "shop.index", embedder)
        passages = await load_passages(conn, embedder)
        warm = Agent(conn, search, passages=passages)
        await warm.answer("足球多少钱", user_id="bench")   # vocabulary, router, jieba: not the endpoint's cost
        started = time.perf_counter()
        await warm.answer("足球多少钱", user_id="bench")
        print(f"offline model alone: {time.perf_counter() - started:.3f} s per turn")
        hung = await HungEndpoint().start()
        try:
            await run(hung.url, "hung endpoint (accepts, never answers)", conn, search, passages, args.turns,
                      args.budget, lambda: hung.connections)
        finally:
            await hung.stop()
        await run(refused_url(), "refused connections", conn, search, passages, args.turns, args.budget,
                  lambda: "-")
        await conn.close()


if __name__ == "__main__":
    asyncio.run(main())
