"""Aggregates over a large order history: 1,000,000 generated orders in our schema, queried through
db/aggregates.py with and without the orders indexes; the cache on a repeated mix of questions; and
the shop design document's approach (amounts as REAL, summed as floats, nothing checked) on the same
rows, measured in the same run, with the cases where its floats differ from the exact Decimal answer.

    python bench/orders.py [--orders 1000000] [--runs 15]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from datetime import date, datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from db.aggregates import Dimension, Metric, OrderAnalytics, OrderQuery, query_orders  # noqa: E402
from db.build import write_catalog  # noqa: E402
from db.connection import open_readonly  # noqa: E402
from db.records import demo_catalog  # noqa: E402
from db.schema import ORDER_STATUSES, REGIONS  # noqa: E402
from tests.fakes.demo import DEMO_DAY  # noqa: E402

SHAPES = {
    "month total, signed": OrderQuery(Metric.TOTAL, date(2026, 10, 1), date(2026, 10, 31), status="已签收"),
    "month average by region": OrderQuery(Metric.AVERAGE, date(2026, 10, 1), date(2026, 10, 31),
                                          group_by=Dimension.REGION),
    "quarter units by category": OrderQuery(Metric.UNITS, date(2026, 7, 1), date(2026, 9, 30),
                                            group_by=Dimension.CATEGORY),
    "year count by day": OrderQuery(Metric.COUNT, date(2026, 1, 1), date(2026, 11, 28), group_by=Dimension.DAY),
    "top 5 products, 双十一": OrderQuery(Metric.TOTAL, date(2026, 11, 11), date(2026, 11, 11),
                                      group_by=Dimension.PRODUCT, top_n=5),
    "one customer's month": OrderQuery(Metric.TOTAL, date(2026, 11, 1), date(2026, 11, 29), user_id="u00042"),
}


def build(path: Path, orders: int, indexes: bool) -> None:
    """The demo catalog's products, then `orders` random orders over 13 months (fast, seeded)."""
    write_catalog(path, demo_catalog(DEMO_DAY), source="bench")
    conn = sqlite3.connect(path)
    conn.execute("DELETE FROM orders")
    if not indexes:
        for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'orders' "
                                    "AND name NOT LIKE 'sqlite_autoindex%'").fetchall():
            conn.execute(f"DROP INDEX {name}")
    rng = random.Random(7)
    products = conn.execute("SELECT product_id, price FROM products WHERE price IS NOT NULL").fetchall()
    start = datetime(2025, 10, 29)
    span = int((datetime(2026, 11, 29) - start).total_seconds())

    def rows():
        for n in range(orders):
            product, price = products[rng.randrange(len(products))]
            quantity = rng.choice((1, 1, 1, 2, 3))
            factor = rng.choice((Decimal(1), Decimal("0.9"), Decimal("0.85")))
            total = (Decimal(price) * quantity * factor).quantize(Decimal("0.01"), ROUND_HALF_UP)
            when = start + timedelta(seconds=rng.randrange(span))
            yield (f"B{n:08d}", f"u{rng.randrange(1, 50_000):05d}", product, quantity, format(total, "f"),
                   rng.choice(ORDER_STATUSES), rng.choice(REGIONS), when.isoformat(timespec="seconds"))

    with conn:
        conn.executemany("INSERT INTO orders VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows())
    conn.execute("ANALYZE")
    conn.close()


def pct(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


async def time_shapes(path: Path, runs: int) -> dict[str, list[float]]:
    conn = await open_readonly(path)
    out: dict[str, list[float]] = {}
    try:
        for name, query in SHAPES.items():
            times = []
            for _ in range(runs):
                started = time.perf_counter()
                await query_orders(conn, query, limit=120)
                times.append((time.perf_counter() - started) * 1000)
            out[name] = times
    finally:
        await conn.close()
    return out


async def cache_mix(path: Path, questions: int) -> tuple[int, int, float, float]:
    conn = await open_readonly(path)
    analytics = OrderAnalytics(conn, limit=120)
    rng = random.Random(3)
    shapes = list(SHAPES.values())
    times = []
    try:
        for _ in range(questions):
            started = time.perf_counter()
            await analytics.query(rng.choice(shapes))
            times.append((time.perf_counter() - started) * 1000)
    finally:
        await conn.close()
    return analytics.hits, analytics.misses, pct(times, 50), pct(times, 95)


def float_design(path: Path, runs: int) -> tuple[list[float], list[str]]:
    """The design document's way: SUM/AVG over REAL, no validation. Its timing, and where it is wrong."""
    conn = sqlite3.connect(path)
    sql = ("SELECT region, SUM(CAST(total AS REAL)), AVG(CAST(total AS REAL)), COUNT(*) FROM orders "
           "WHERE created_at >= ? AND created_at < ? GROUP BY region")
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        conn.execute(sql, ("2026-10-01", "2026-11-01")).fetchall()
        times.append((time.perf_counter() - started) * 1000)
    differences = []
    for month in range(1, 12):
        first, after = f"2026-{month:02d}-01", (f"2026-{month + 1:02d}-01" if month < 12 else "2027-01-01")
        floats = {r[0]: (r[1], r[2], r[3]) for r in conn.execute(sql, (first, after))}
        exact: dict[str, list[Decimal]] = {}
        for region, total in conn.execute("SELECT region, total FROM orders WHERE created_at >= ? AND created_at < ?",
                                          (first, after)):
            exact.setdefault(region, []).append(Decimal(total))
        for region, values in exact.items():
            total, average = sum(values, Decimal(0)), (sum(values, Decimal(0)) / len(values))
            float_sum, float_avg, _ = floats[region]
            if repr(float_sum) != format(total, "f") and f"{float_sum:.2f}" != format(total, "f"):
                differences.append(f"{first[:7]} {region} sum: float {float_sum!r} vs Decimal {total}")
            if round(float_avg, 2) != float(average.quantize(Decimal("0.01"), ROUND_HALF_UP)):
                differences.append(f"{first[:7]} {region} average: float round() {round(float_avg, 2)} vs "
                                   f"Decimal ROUND_HALF_UP {average.quantize(Decimal('0.01'), ROUND_HALF_UP)} "
                                   f"(exact {average:.6f}…)")
            elif repr(float_sum) != format(total, "f"):
                differences.append(f"{first[:7]} {region} sum as the float shows it: {float_sum!r} (exact {total})")
    conn.close()
    return times, differences


async def main(args) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        indexed, bare = Path(tmp) / "indexed.db", Path(tmp) / "bare.db"
        started = time.perf_counter()
        build(indexed, args.orders, indexes=True)
        build(bare, args.orders, indexes=False)
        print(f"{args.orders:,} orders generated twice (with and without the orders indexes) in "
              f"{time.perf_counter() - started:.0f} s; database {indexed.stat().st_size / 2**20:.0f} MB with "
              f"indexes, {bare.stat().st_size / 2**20:.0f} MB without")
        with_ix, without_ix = await time_shapes(indexed, args.runs), await time_shapes(bare, args.runs)
        print(f"\nper query shape, {args.runs} runs each (ms):")
        print(f"{'shape':28} {'indexed p50':>12} {'p95':>8} {'no index p50':>13} {'p95':>8}")
        for name in SHAPES:
            a, b = with_ix[name], without_ix[name]
            print(f"{name:28} {pct(a, 50):12.1f} {pct(a, 95):8.1f} {pct(b, 50):13.1f} {pct(b, 95):8.1f}")
        hits, misses, p50, p95 = await cache_mix(indexed, 200)
        print(f"\ncache: 200 questions drawn from {len(SHAPES)} shapes → {hits} hits, {misses} misses; "
              f"p50 {p50:.3f} ms, p95 {p95:.3f} ms per question")
        float_times, differences = float_design(indexed, args.runs)
        ours = with_ix["month average by region"]
        print(f"\nthe design document's float SUM/AVG by region for a month: p50 {pct(float_times, 50):.1f} ms; ours "
              f"(exact cents, Decimal) p50 {pct(ours, 50):.1f} ms = {pct(ours, 50) / pct(float_times, 50):.2f}× its time")
        print(f"where its floats are not the exact answer ({len(differences)} of 77 month×region groups):")
        for line in differences[:6]:
            print("  " + line)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--orders", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=15)
    asyncio.run(main(parser.parse_args()))
