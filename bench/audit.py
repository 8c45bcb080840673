"""Audit store and console figures, measured in one run:

1. writing: realistic turn records through AuditLog into the SQLite store (records/s until all are on
   disk, and what one `record()` costs the event loop, p50/p95), against the previous design in the
   same run (the rotated JSON Lines file, also written by a thread);
2. size: the database per 10,000 turns;
3. reading: the console's pages rendered over HTTP with 100,000 turns stored (p50/p95 per view);
4. the same writing and pages on PostgreSQL (issue 25: AUDIT_DB=postgresql://…), in a schema of its own
   (dropped afterwards), as ratios to SQLite in the same run; and the live feed's poll for new ids (its
   query's p50, and how soon a record added is visible to it).

    python bench/audit.py [--turns 100000] [--runs 20] [--postgres URL | --no-postgres]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import aiohttp

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agent.audit import AuditLog  # noqa: E402
from agent.trace import ToolTrace, TurnResult, TurnTrace, VerdictTrace  # noqa: E402
from db.audit_store import AuditFilter, AuditStore, DatabaseUrl, open_store  # noqa: E402
from handlers.web.app import build_web_app  # noqa: E402
from tests.fakes.local_http import serve  # noqa: E402

TOKEN = "bench-token-123456"
SIGNS = ("not_found_but_confident", "negative_reply", "rephrased", "thumbs_down")
QUESTIONS = ["足球多少钱", "有优惠吗", "那买两个呢", "羽毛球拍买两支多少钱", "怎么退货", "我这个月花了多少钱"]


def result(n: int, rng: random.Random) -> TurnResult:
    blocked = rng.random() < 0.08
    verdicts = [VerdictTrace(False, [rng.choice(["WRONG_ROLE", "UNVERIFIED_AMOUNT", "MISSING_CONDITION"])], "remote",
                             "足球售价108元。", "'108元' is the total for 1 unit")] if blocked else []
    verdicts.append(VerdictTrace(True, [], "remote", "足球（耐克）售价120元，库存50个。"))
    trace = TurnTrace(model="remote", model_calls=2 + blocked, latency_ms=rng.uniform(300, 3000), verdicts=verdicts,
                      citations=["product:001", "promotion:P001"], evidence_ids=["product:001", "promotion:P001"],
                      tool_calls=[ToolTrace("search_products", {"query": "足球", "top_k": 3}, "candidates", 12.0,
                                            ["product:001", "promotion:P001", "calc:001:1:regular"])])
    return TurnResult("足球（耐克）售价120元，库存50个。足球当前优惠：“9折”。", "grounded", ["product:001"], trace=trace)


def pct(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


def write(audit: AuditLog, turns: int, flush) -> tuple[float, list[float]]:
    rng = random.Random(5)
    results = [result(n, rng) for n in range(200)]
    costs = []
    started = time.perf_counter()
    for n in range(turns):
        t0 = time.perf_counter()
        audit.record(chat_id=str(1000 + n % 5000), user_id=str(1000 + n % 5000), message=QUESTIONS[n % 6],
                     result=results[n % 200], update_id=n,
                     flags=(SIGNS[n // 20 % len(SIGNS)],) if n % 20 == 0 else ())   # 5% flagged turns
        costs.append((time.perf_counter() - t0) * 1e6)
    flush()
    return turns / (time.perf_counter() - started), costs


def backdate(path: Path, days: int) -> None:
    """Spread the stored turns over the last `days` days, as a store that has been running would be."""
    import sqlite3

    conn = sqlite3.connect(path)
    now = datetime.now(UTC)
    ids = [r[0] for r in conn.execute("SELECT id FROM audit")]
    with conn:
        conn.executemany("UPDATE audit SET time = ? WHERE id = ?",
                         [((now - timedelta(seconds=days * 86400 * (1 - i / len(ids)))).isoformat(timespec="milliseconds"),
                           rid) for i, rid in enumerate(ids)])
    conn.close()


def backdate_postgres(store, days: int) -> None:
    """`backdate` for the PostgreSQL store, in one statement; then ANALYZE, as autovacuum would."""
    with store._pool.connection() as conn:
        conn.execute(
            "WITH n AS (SELECT id, row_number() OVER (ORDER BY id) AS i, count(*) OVER () AS c FROM audit) "
            "UPDATE audit a SET time = to_char((now() - make_interval(secs => %s * 86400.0 * (1 - (n.i - 1)::float8 "
            "/ n.c))) AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"+00:00\"') FROM n WHERE a.id = n.id",
            (days,))
        conn.execute("VACUUM ANALYZE audit")


def feed_poll(store, runs: int = 200) -> tuple[list[float], list[float]]:
    """The live feed's poll (ids above the latest, oldest first) in ms; and how long a record added takes
    to be visible to it (ms: the writer's batch and commit, polled every millisecond)."""
    latest = store.latest_id()
    polls = []
    for _ in range(runs):
        started = time.perf_counter()
        store.query(AuditFilter(), 200, 0, False, latest)
        polls.append((time.perf_counter() - started) * 1000)
    rng, visible = random.Random(9), []
    audit = AuditLog(store)
    for n in range(min(runs, 50)):
        started = time.perf_counter()
        audit.record(chat_id="poll", user_id="poll", message="足球多少钱", result=result(n, rng), update_id=10**9 + n)
        while not store.query(AuditFilter(), 200, 0, False, latest):
            time.sleep(0.001)
        visible.append((time.perf_counter() - started) * 1000)
        latest = store.latest_id()
    return polls, visible


async def pages(store: AuditStore, runs: int) -> dict[str, list[float]]:
    runner, url = await serve(build_web_app(store, TOKEN))
    out: dict[str, list[float]] = {}
    try:
        async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as session:
            page = await (await session.get(f"{url}/login")).text()
            csrf = page.split('name="csrf" value="')[1].split('"')[0]
            await session.post(f"{url}/login", data={"csrf": csrf, "token": TOKEN})
            some = store.query(limit=1)[0]["id"]
            views = {"feed, page 1": "/", "feed, page 100": "/?page=100", "filter: one chat": "/?chat=1042",
                     "filter: reason code": "/?code=WRONG_ROLE", "filter: free text": "/?q=退货",
                     "filter: misunderstood": "/?misunderstood=1", "filter: one sign": "/?sign=rephrased",
                     "a chat's thread": "/chat/1042", "a turn in detail": f"/turn/{some}",
                     "daily summary (14 days)": "/summary"}
            for name, path in views.items():
                times = []
                for _ in range(runs):
                    started = time.perf_counter()
                    async with session.get(url + path) as response:
                        await response.read()
                        assert response.status == 200, (path, response.status)
                    times.append((time.perf_counter() - started) * 1000)
                out[name] = times
    finally:
        await runner.cleanup()
    return out


async def main(args) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        db, jsonl = Path(tmp) / "audit.db", Path(tmp) / "audit.jsonl"
        store = AuditStore(db, queue_size=args.turns + 1)   # room for the whole burst: the writer's own pace
        rate, costs = write(AuditLog(store), args.turns, store.flush)
        old = AuditLog(jsonl=jsonl)
        old_rate, old_costs = write(old, args.turns, lambda: old.jsonl.close())
        print(f"{args.turns:,} turns written")
        print(f"  SQLite store: {rate:,.0f} records/s to disk; record() on the event loop p50 {pct(costs, 50):.0f} µs, "
              f"p95 {pct(costs, 95):.0f} µs; dropped {store.dropped}; (with the bot's queue of 10,000 a burst "
              "larger than that is dropped and counted, never blocking a reply)")
        print(f"  JSON Lines (previous design, same run): {old_rate:,.0f} records/s; record() p50 "
              f"{pct(old_costs, 50):.0f} µs, p95 {pct(old_costs, 95):.0f} µs; the store writes at "
              f"{rate / old_rate:.2f}× its rate")
        size = db.stat().st_size + sum(p.stat().st_size for p in db.parent.glob("audit.db-*"))
        lines = sum(p.stat().st_size for p in jsonl.parent.glob("audit.jsonl*"))
        print(f"  database: {size / 2**20:.1f} MB, {size / 2**20 / (args.turns / 10_000):.2f} MB per 10,000 turns "
              f"(JSON Lines: {lines / 2**20 / (args.turns / 10_000):.2f} MB per 10,000, before rotation drops any)")
        store.close()
        backdate(db, 30)
        store = AuditStore(db)
        timings = await pages(store, args.runs)
        print(f"\nconsole pages with {args.turns:,} turns stored, {args.runs} requests each (ms):")
        for name, values in timings.items():
            print(f"  {name:26} p50 {pct(values, 50):7.1f}   p95 {pct(values, 95):7.1f}")
        polls, visible = feed_poll(store)
        store.close()
        if args.no_postgres:
            return
        await postgres(args, rate, timings, polls, visible)


async def postgres(args, sqlite_rate: float, sqlite_pages: dict[str, list[float]], sqlite_polls: list[float],
                   sqlite_visible: list[float]) -> None:
    """Part 4: the same turns and pages on PostgreSQL, as ratios to the SQLite figures of this run."""
    from tests.fakes.postgres import POSTGRES_TEST_URL, own_schema

    with own_schema(args.postgres or POSTGRES_TEST_URL) as (_, url):
        store = open_store(DatabaseUrl(url), queue_size=args.turns + 1)
        rate, costs = write(AuditLog(store), args.turns, store.flush)
        with store._pool.connection() as conn:
            size = conn.execute("SELECT pg_total_relation_size('audit') + pg_total_relation_size('audit_codes') "
                                "+ pg_total_relation_size('audit_flags')").fetchone()[0]
        print(f"\nPostgreSQL store (same run): {rate:,.0f} records/s written ({rate / sqlite_rate:.2f}× SQLite's "
              f"{sqlite_rate:,.0f}); record() p50 {pct(costs, 50):.0f} µs, p95 {pct(costs, 95):.0f} µs; "
              f"dropped {store.dropped}; {size / 2**20 / (args.turns / 10_000):.2f} MB per 10,000 turns")
        backdate_postgres(store, 30)
        timings = await pages(store, args.runs)
        print(f"console pages on PostgreSQL with {args.turns:,} turns, {args.runs} requests each (ms; ratio to "
              "SQLite's p50 in this run):")
        for name, values in timings.items():
            ratio = pct(values, 50) / pct(sqlite_pages[name], 50)
            print(f"  {name:26} p50 {pct(values, 50):7.1f}   p95 {pct(values, 95):7.1f}   {ratio:5.2f}×")
        polls, visible = feed_poll(store)
        print(f"live feed poll (ids above the latest): p50 {pct(polls, 50):.2f} ms on PostgreSQL, "
              f"{pct(sqlite_polls, 50):.2f} ms on SQLite; a record added is visible to it after p50 "
              f"{pct(visible, 50):.1f} ms (SQLite {pct(sqlite_visible, 50):.1f} ms)")
        store.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--postgres", help="a PostgreSQL URL (default: the tests' 127.0.0.1:5432/test)")
    parser.add_argument("--no-postgres", action="store_true", help="SQLite only")
    asyncio.run(main(parser.parse_args()))
