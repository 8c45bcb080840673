"""Aggregates over orders: fixed SQL per metric and dimension, parameters bound, never written by a
model. Money is summed as integer cents in SQL (exact for amounts of at most 2 decimals) and becomes
Decimal here; averages are Decimal, 2 places, ROUND_HALF_UP. Each query has a timeout; identical
queries are served from a cache keyed by the query and the catalog's build."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import sqlite3
from collections import OrderedDict
from dataclasses import dataclass
from datetime import date, timedelta
from decimal import ROUND_HALF_UP, Decimal
from enum import StrEnum

import aiosqlite

from db.facts import SOURCE, Status
from db.metrics import BY_KEY, PAID, PLACED, Metric, MetricDefinition, MetricKey, stated_by
from db.schema import ORDER_STATUSES, REGIONS

__all__ = ["PAID", "Metric", "MetricKey"]   # re-exported: the measures and statuses live in db/metrics.py

CENT = Decimal("0.01")
QUERY_TIMEOUT_SECONDS = 5.0
WIDE_PERIOD_DAYS = 62
CACHE_SIZE = 256


class Dimension(StrEnum):
    DAY = "day"
    WEEK = "week"         # keyed by the Monday the week starts on
    MONTH = "month"
    REGION = "region"
    CATEGORY = "category"
    PRODUCT = "product"
    STATUS = "status"


TIME_DIMENSIONS = {Dimension.DAY, Dimension.WEEK, Dimension.MONTH}
_KEY_SQL = {
    Dimension.DAY: "substr(o.created_at, 1, 10)",
    Dimension.WEEK: "date(substr(o.created_at, 1, 10), '-6 days', 'weekday 1')",
    Dimension.MONTH: "substr(o.created_at, 1, 7)",
    Dimension.REGION: "o.region",
    Dimension.CATEGORY: "p.category",
    Dimension.PRODUCT: "p.product_name",
    Dimension.STATUS: "o.status",
}
_CENTS = "CAST(ROUND(CAST(o.total AS REAL) * 100) AS INTEGER)"
_ORDER_BY = {Metric.COUNT: "n", Metric.TOTAL: "cents", Metric.AVERAGE: "1.0 * cents / n", Metric.MAX: "max_cents",
             Metric.MIN: "min_cents", Metric.UNITS: "units"}


class AggregateError(Exception):
    """A query that cannot run: a bad filter, or the database took longer than the timeout."""


@dataclass(frozen=True)
class OrderQuery:
    metric: Metric
    start: date | None = None       # inclusive, Asia/Shanghai local dates
    end: date | None = None         # inclusive
    region: str | None = None
    category: str | None = None
    status: str | None = None
    statuses: tuple[str, ...] | None = None   # any of these (e.g. the paid ones)
    product_id: str | None = None
    user_id: str | None = None      # a customer's own orders; set from the update, never by a model
    group_by: Dimension | None = None
    top_n: int = 10
    definition: MetricKey | None = None   # the named metric (db/metrics.py) this query computes

    @property
    def counted_statuses(self) -> tuple[str, ...] | None:
        """The statuses this query counts; None: every placed order."""
        if self.status is not None:
            return (self.status,) if not self.statuses or self.status in self.statuses else ()
        return self.statuses or None

    def where(self) -> tuple[str, list[object]]:
        clauses, args = [], []
        if self.start is not None:
            clauses.append("o.created_at >= ?")
            args.append(self.start.isoformat())
        if self.end is not None:
            clauses.append("o.created_at < ?")
            args.append((self.end + timedelta(days=1)).isoformat())
        for column, value in (("o.region", self.region), ("p.category", self.category), ("o.status", self.status),
                              ("o.product_id", self.product_id), ("o.user_id", self.user_id)):
            if value is not None:
                clauses.append(f"{column} = ?")
                args.append(value)
        if self.statuses:
            clauses.append(f"o.status IN ({', '.join('?' for _ in self.statuses)})")
            args.extend(self.statuses)
        return (" WHERE " + " AND ".join(clauses) if clauses else ""), args

    def check(self) -> None:
        if self.region is not None and self.region not in REGIONS:
            raise AggregateError(f"region must be one of {', '.join(REGIONS)}")
        for status in (self.status, *(self.statuses or ())):
            if status is not None and status not in ORDER_STATUSES:
                raise AggregateError(f"status must be one of {', '.join(ORDER_STATUSES)}")
        if self.start and self.end and self.start > self.end:
            raise AggregateError("the period starts after it ends")
        if not 1 <= self.top_n <= 50:
            raise AggregateError("top_n must be between 1 and 50")


@dataclass(frozen=True)
class AggregateRow:
    key: str                 # the group ("华东", "2026-10", "足球"…), or "全部"
    value: Decimal           # the metric: a count, units, or money
    orders: int
    share: Decimal | None    # this group's part of the whole, in percent, 1 place (groups only)


ALL = "全部"


@dataclass(frozen=True)
class Aggregate:
    query: OrderQuery
    rows: tuple[AggregateRow, ...]
    whole: Decimal           # the metric over every matching order (not only the top groups)
    orders: int              # matching orders
    source: str = SOURCE

    @property
    def metric(self) -> str:
        return self.query.metric.value

    @property
    def period(self) -> tuple[date | None, date | None]:
        return self.query.start, self.query.end

    @property
    def definition(self) -> MetricDefinition | None:
        return BY_KEY.get(self.query.definition) if self.query.definition else None

    @property
    def definition_key(self) -> str | None:
        """The named metric, as the report checker matches it to the name an answer writes: a 销售额 query over
        orders not (all) paid is not 销售额 ("total:unpaid")."""
        definition = self.definition
        if definition is None:
            return None
        named = definition.label_for(self.statuses) == definition.label
        return str(definition.key) if named else f"{definition.key}:unpaid"

    @property
    def statuses(self) -> tuple[str, ...] | None:
        return self.query.counted_statuses

    @property
    def stated_by(self) -> tuple[tuple[str, ...], ...]:
        """How an answer may say which orders this counted (db/metrics.stated_by)."""
        return stated_by(self.statuses)

    @property
    def evidence_id(self) -> str:
        digest = hashlib.sha1(repr(self.query).encode()).hexdigest()[:10]
        return f"agg:{self.query.metric}:{digest}"

    @property
    def status(self) -> Status:
        return Status.VERIFIED if self.orders else Status.NOT_FOUND

    @property
    def money(self) -> bool:
        return self.query.metric in (Metric.TOTAL, Metric.AVERAGE, Metric.MAX, Metric.MIN)

    def as_tool_result(self) -> dict:
        """What a model reads of the aggregate: exact strings for every figure, and its evidence id."""
        start, end = self.period
        definition = self.definition
        return {"status": str(self.status), "evidence_id": self.evidence_id, "metric": self.metric,
                "metric_name": definition.label if definition else None,
                "counted_statuses": list(self.statuses or ORDER_STATUSES),
                "period": [str(start) if start else None, str(end) if end else None],
                "whole": format(self.whole, "f"), "orders": self.orders,
                "rows": [{"key": r.key, "value": format(r.value, "f"), "orders": r.orders,
                          "share_percent": format(r.share, "f") if r.share is not None else None}
                         for r in self.rows]}


def _value(metric: Metric, n: int, cents: int | None, units: int | None, max_cents: int | None,
           min_cents: int | None) -> Decimal:
    if metric is Metric.COUNT:
        return Decimal(n)
    if metric is Metric.UNITS:
        return Decimal(units or 0)
    if not n:
        return Decimal(0).quantize(CENT)
    if metric is Metric.AVERAGE:
        return (Decimal(cents or 0) / n / 100).quantize(CENT, ROUND_HALF_UP)
    chosen = {Metric.TOTAL: cents, Metric.MAX: max_cents, Metric.MIN: min_cents}[metric]
    return (Decimal(chosen or 0) / 100).quantize(CENT)


def _sql(query: OrderQuery, grouped: bool) -> tuple[str, list[object]]:
    """CROSS JOIN keeps orders the outer loop (SQLite's way to fix the join order): a period is read from
    the covering time index and products are looked up by key, instead of a range probe per product."""
    where, args = query.where()
    needs_products = query.category is not None or query.group_by in (Dimension.CATEGORY, Dimension.PRODUCT)
    # SQLite cannot see how wide a bound date range is: past two months a plain scan beats the index
    # (measured in bench/orders.py), unless one customer's orders are asked for.
    wide = query.start is None or query.end is None or (query.end - query.start).days > WIDE_PERIOD_DAYS
    scan = " NOT INDEXED" if wide and query.user_id is None and query.product_id is None else ""
    key = _KEY_SQL[query.group_by] if grouped and query.group_by else f"'{ALL}'"
    sql = (f"SELECT {key} AS k, COUNT(*) AS n, SUM({_CENTS}) AS cents, SUM(o.quantity) AS units, "
           f"MAX({_CENTS}) AS max_cents, MIN({_CENTS}) AS min_cents FROM orders o{scan}"
           f"{' CROSS JOIN products p ON p.product_id = o.product_id' if needs_products else ''}{where}")
    if grouped and query.group_by:
        sql += " GROUP BY k"
        if query.group_by in TIME_DIMENSIONS:
            sql += " ORDER BY k"
        else:
            sql += f" ORDER BY {_ORDER_BY[query.metric]} DESC, k LIMIT ?"
            args = [*args, query.top_n]
    return sql, args


async def _fetch(conn: aiosqlite.Connection, sql: str, args: list[object], limit: float) -> list[sqlite3.Row]:
    """Run one query; past `limit` seconds the query is interrupted (not merely abandoned in its thread)."""
    task = asyncio.ensure_future(conn.execute_fetchall(sql, args))
    try:
        return list(await asyncio.wait_for(asyncio.shield(task), limit))
    except TimeoutError:
        await conn.interrupt()
        with contextlib.suppress(sqlite3.OperationalError):
            await task
        raise AggregateError(f"the orders query took longer than {limit:g} s") from None


async def query_orders(conn: aiosqlite.Connection, query: OrderQuery,
                       limit: float = QUERY_TIMEOUT_SECONDS) -> Aggregate:
    """The aggregate `query` asks for; each SQL statement may run at most `limit` seconds."""
    query.check()
    whole_sql, whole_args = _sql(query, grouped=False)
    (whole,) = await _fetch(conn, whole_sql, whole_args, limit)
    whole_value = _value(query.metric, whole["n"], whole["cents"], whole["units"], whole["max_cents"],
                         whole["min_cents"])
    rows: tuple[AggregateRow, ...] = ()
    if query.group_by is not None:
        sql, args = _sql(query, grouped=True)
        found = await _fetch(conn, sql, args, limit)
        additive = query.metric in (Metric.COUNT, Metric.TOTAL, Metric.UNITS) and whole_value > 0
        rows = tuple(AggregateRow(
            str(r["k"]), value := _value(query.metric, r["n"], r["cents"], r["units"], r["max_cents"], r["min_cents"]),
            r["n"], (value * 100 / whole_value).quantize(Decimal("0.1"), ROUND_HALF_UP) if additive else None)
            for r in found)
    elif whole["n"]:
        rows = (AggregateRow(ALL, whole_value, whole["n"], None),)
    return Aggregate(query, rows, whole_value, whole["n"])


def metric_query(key: MetricKey, statuses: tuple[str, ...] | None = None, **filters) -> OrderQuery:
    """The query of a named metric: its own statuses (db/metrics.py), or the ones the operator named."""
    definition = BY_KEY[MetricKey(key)]
    counted = definition.counted(statuses)
    return OrderQuery(definition.measure, statuses=None if set(counted) == set(PLACED) else counted,
                      definition=definition.key, **filters)


class OrderAnalytics:
    """query_orders with a cache: the same query on the same catalog build is answered from memory."""

    def __init__(self, conn: aiosqlite.Connection, size: int = CACHE_SIZE, limit: float = QUERY_TIMEOUT_SECONDS):
        self.conn, self.size, self.limit = conn, size, limit
        self._cache: OrderedDict[tuple[str, OrderQuery], Aggregate] = OrderedDict()
        self._version: str | None = None
        self.hits = self.misses = 0

    async def version(self) -> str:
        if self._version is None:
            rows = await self.conn.execute_fetchall("SELECT value FROM catalog_meta WHERE key = 'built_at'")
            self._version = rows[0][0] if rows else ""
        return self._version

    async def query(self, query: OrderQuery) -> Aggregate:
        key = (await self.version(), query)
        cached = self._cache.get(key)
        if cached is not None:
            self.hits += 1
            self._cache.move_to_end(key)
            return cached
        self.misses += 1
        result = await query_orders(self.conn, query, self.limit)
        self._cache[key] = result
        if len(self._cache) > self.size:
            self._cache.popitem(last=False)
        return result
