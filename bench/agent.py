"""Agent benchmark: model calls per answered question by type, and the pipeline's own overhead per turn
with an instant model, side by side with the original design's one-tool-per-model-call flow.

    python bench/agent.py [--rounds 20]

"kefu-bot" is the real turn loop with its backend preparation (search returns verified details,
promotions and the calculation together). "original flow" is the same loop and the same honest model
calling one tool per model call (search → details → promotions → calculation → answer), as the
shop's first design did. Model time is excluded from the overhead figures (the models are instant).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agent import answers  # noqa: E402
from agent.memory import ChatMemory  # noqa: E402
from agent.models import ModelReply, ToolCall  # noqa: E402
from agent.offline import OfflineModel  # noqa: E402
from agent.turn import Agent  # noqa: E402
from db.build import write_catalog  # noqa: E402
from db.connection import open_readonly  # noqa: E402
from db.records import demo_catalog  # noqa: E402
from retrieval.embedders import LocalE5Embedder  # noqa: E402
from retrieval.index import build_index  # noqa: E402
from retrieval.service import catalog_docs, load_search  # noqa: E402
from tests.fakes.demo import DEMO_DAY  # noqa: E402

QUESTIONS = {
    "price": ["足球多少钱", "篮球什么价格", "瑜伽垫怎么卖", "网球拍多少钱", "跑步鞋售价多少"],
    "promotion": ["足球有优惠吗", "篮球有什么活动", "羽毛球拍打折吗", "乒乓球有促销吗", "瑜伽垫有赠品吗"],
    "quantity": ["羽毛球拍买两支多少钱", "足球买三个多少钱", "乒乓球买三盒", "篮球买两个", "哑铃买两套多少钱"],
    "first purchase": ["跑步鞋首次购买多少钱", "第一次买跑步鞋有优惠吗"],
    "need": ["我准备跑马拉松，需要透气并且能支撑足弓的装备", "想在家练瑜伽需要防滑的垫子", "游泳时眼睛进水看不清"],
    "not sold": ["店里有无人机吗", "钓鱼竿多少钱"],
    "policy": ["怎么退货", "多久发货"],
    "budget": ["300元以内的球拍有哪些", "100块以下的健身用品"],
    "comparison": ["排球和篮球哪个贵", "护膝跟护踝哪个便宜"],
    "basket": ["护膝和护踝各买一个多少钱", "买两个足球一个篮球多少钱"],
}


class OneToolAtATime:
    """An honest model that calls one tool per model call, as the original design did."""

    name = "one-tool-at-a-time"

    def __init__(self) -> None:
        self.offline = OfflineModel()
        self.n = 0

    def _call(self, name, args):
        self.n += 1
        return ModelReply(None, [ToolCall(f"c{self.n}", name, json.dumps(args, ensure_ascii=False))])

    async def complete(self, messages, tools, tool_choice="auto", context=None):
        question, called = context.question, context.called
        if not called:
            reply = await self.offline.complete(messages, tools, tool_choice, context=context)
            first = reply.tool_calls[0].name if reply.tool_calls else ""
            if first == "get_product_details" and not context.focus_product_ids:
                return self._call("search_products", {"query": question})   # the original design always searched
            return reply
        if called[-1] not in ("search_products", "get_product_details", "get_promotions"):
            return await self.offline.complete(messages, tools, tool_choice, context=context)
        findings = answers.Findings.gather(result for _, result in context.results)
        ids = findings.candidates or list(findings.products)
        if not ids:
            return await self.offline.complete(messages, tools, tool_choice, context=context)
        if called[-1] == "search_products":
            return self._call("get_product_details", {"product_ids": ids[:3]})
        if called[-1] == "get_product_details":
            return self._call("get_promotions", {"product_ids": ids[:3]})
        return self._call("calculate_final_price", {"product_id": ids[0], "quantity": context.intent.quantity or 1,
                                                    "is_first_purchase": context.intent.first_purchase})


class Timed:
    """Wraps a model and adds up the time spent inside it, so it can be excluded."""

    def __init__(self, model):
        self.model, self.name, self.seconds = model, model.name, 0.0

    async def complete(self, *args, **kwargs):
        t = time.perf_counter()
        try:
            return await self.model.complete(*args, **kwargs)
        finally:
            self.seconds += time.perf_counter() - t


async def run(agent_factory, rounds: int):
    calls: dict[str, list[int]] = {k: [] for k in QUESTIONS}
    overhead: list[float] = []
    timed, agent = agent_factory()   # one agent per process, as the bot runs it (it reads the catalog's words once)
    for round_no in range(rounds):
        for kind, questions in QUESTIONS.items():
            for q in questions:
                model_seconds = timed.seconds
                t = time.perf_counter()
                result = await agent.answer(q, user_id="bench", memory=ChatMemory())
                total = time.perf_counter() - t
                if round_no == 0:
                    calls[kind].append(result.trace.model_calls)
                if round_no > 0:   # round 0 warms caches
                    overhead.append((total - (timed.seconds - model_seconds)) * 1000)
    return calls, overhead


async def main(args) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        db, index = Path(tmp) / "shop.db", Path(tmp) / "shop.index"
        write_catalog(db, demo_catalog(DEMO_DAY), source="bench")
        conn = await open_readonly(db)
        embedder = LocalE5Embedder()
        await build_index(index, await catalog_docs(conn), embedder, progress=False)
        search = await load_search(conn, index, embedder)

        def ours():
            timed = Timed(OfflineModel())
            agent = Agent(conn, search, timed)
            return timed, agent

        def original():
            timed = Timed(OneToolAtATime())
            return timed, Agent(conn, search, timed, max_model_calls=10, prepare=False)

        results = {"kefu-bot": await run(ours, args.rounds), "original flow": await run(original, args.rounds)}
        await conn.close()

    print("model calls per answered question (median / max), honest instant model:")
    print(f"{'type':16s} " + " ".join(f"{name:>16s}" for name in results))
    for kind in QUESTIONS:
        cells = []
        for calls, _ in results.values():
            values = calls[kind]
            cells.append(f"{statistics.median(values):>6.1f} / {max(values):<7d}")
        print(f"{kind:16s} " + " ".join(f"{c:>16s}" for c in cells))
    print("\npipeline overhead per turn, model time excluded (ms):")
    for name, (_, overhead) in results.items():
        print(f"{name:16s} p50 {np.percentile(overhead, 50):6.1f}   p99 {np.percentile(overhead, 99):6.1f}   "
              f"({len(overhead)} turns)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=10)
    asyncio.run(main(parser.parse_args()))
