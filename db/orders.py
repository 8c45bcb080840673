"""A customer's own orders. Every query is scoped to the asking user; nobody sees another's orders."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import aiosqlite

from db.facts import Order, OrderItem, OrderList

MAX_ORDERS = 5


async def list_orders(conn: aiosqlite.Connection, user_id: str, order_id: str | None = None) -> OrderList:
    """The user's most recent orders (or one order by id), with their lines and totals."""
    sql = ("SELECT o.order_id, o.product_id, p.product_name, o.quantity, o.total, o.status, o.created_at "
           "FROM orders o JOIN products p USING (product_id) WHERE o.user_id = ?")
    args: list[Any] = [str(user_id)]
    if order_id:
        sql += " AND o.order_id = ?"
        args.append(str(order_id).strip())
    sql += " ORDER BY o.created_at DESC, o.order_id, o.product_id"
    rows = await conn.execute_fetchall(sql, args)   # one trip to aiosqlite's thread
    lines: dict[str, list[Any]] = {}
    for row in rows:
        lines.setdefault(row["order_id"], []).append(row)
    orders = tuple(Order(order_id, group[0]["status"], group[0]["created_at"],
                         tuple(OrderItem(r["product_id"], r["product_name"], r["quantity"], Decimal(r["total"]))
                               for r in group),
                         sum((Decimal(r["total"]) for r in group), Decimal(0)))
                   for order_id, group in list(lines.items())[:MAX_ORDERS])
    return OrderList(orders)
