"""Validator benchmark: block/pass rates on the red-team corpus and validations per second,
side by side with the shop's original validator, measured in the same run.

    python bench/validator.py
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from decimal import Decimal
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.original_validator import numbers_seen, original_validate  # noqa: E402
from db.build import write_catalog  # noqa: E402
from db.catalog import get_product_details, get_promotions  # noqa: E402
from db.connection import open_readonly  # noqa: E402
from db.pricing import calculate_final_price  # noqa: E402
from db.records import demo_catalog  # noqa: E402
from guardrails.ledger import EvidenceLedger  # noqa: E402
from guardrails.validator import validate  # noqa: E402
from tests.renderings import discount_forms  # noqa: E402
from tests.test_validator import SCENARIOS, TRUE_TEMPLATES, lies_for, render_true  # noqa: E402

PRICES = {"football": ("足球", Decimal(120), Decimal(999)), "racket": ("羽毛球拍", Decimal(300), Decimal(240)),
          "yoga": ("瑜伽垫", Decimal(150), Decimal(130)), "basketball": ("篮球", Decimal(200), Decimal(100)),
          "pingpong": ("乒乓球", Decimal(35), Decimal(30))}


async def build_corpus(conn):
    """(results, citations, answer, is_true) for every truth and every lie."""
    corpus = []
    for name, (products, calcs, cites) in SCENARIOS.items():
        results = [await get_product_details(conn, products), await get_promotions(conn, products)]
        results += [await calculate_final_price(conn, pid, qty) for pid, qty in calcs]
        for template, a, d, b in TRUE_TEMPLATES[name]:
            corpus += [(results, cites, answer, True) for answer in render_true(template, a, d, b)]
        label, price, other = PRICES[name]
        corpus += [(results, cites, answer, False) for _, answer in lies_for(price, other, label)]
        corpus += [(results, cites, f"{label}现在{text}。", False)
                   for mult in ("0.7", "0.75") for text in discount_forms(Decimal(mult)).values()]
        corpus += [(results, cites, f"{label}{text}。", False)
                   for text in ("库存999件", "还剩一千个", "仅剩3件", "现货12345件")]
        corpus += [(results, cites, f"{label}（商品ID：999）有货。", False)]
    return corpus


def ours(results, cites, answer):
    ledger = EvidenceLedger()
    for r in results:
        ledger.record(r)
    return validate("多少钱？", answer, cites, ledger).ok


def theirs(results, cites, answer):
    verified = {p["product_id"] for r in results for p in r.get("products", [])}
    cited_products = [c.split(":")[1] for c in cites if c.startswith("product:")]
    return original_validate(answer, cited_products, verified, numbers_seen(results))


def rates(check, corpus):
    blocked = sum(1 for r, c, a, true in corpus if not true and not check(r, c, a))
    passed = sum(1 for r, c, a, true in corpus if true and check(r, c, a))
    lies = sum(1 for *_, true in corpus if not true)
    truths = len(corpus) - lies
    return blocked / lies, passed / truths, lies, truths


def throughput(check, corpus, rounds=5):
    per_round = []
    for _ in range(rounds):
        start = time.perf_counter()
        for r, c, a, _ in corpus:
            check(r, c, a)
        per_round.append(len(corpus) / (time.perf_counter() - start))
    return statistics.median(per_round), min(per_round)


async def main():
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "shop.db"
        write_catalog(path, demo_catalog(), source="demo")
        conn = await open_readonly(path)
        try:
            corpus = await build_corpus(conn)
        finally:
            await conn.close()
    print(f"corpus: {len(corpus)} answers")
    for label, check in (("kefu-bot validator", ours), ("original validator", theirs)):
        blocked, passed, lies, truths = rates(check, corpus)
        median, worst = throughput(check, corpus)
        print(f"{label:20s} lies blocked {blocked:7.2%} of {lies}  truths passed {passed:7.2%} of {truths}  "
              f"{median:8.0f} validations/s (median of 5 rounds, worst {worst:.0f}; ledger built per answer)")


if __name__ == "__main__":
    asyncio.run(main())
