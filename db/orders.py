"""A customer's own orders. Every query is scoped to the asking user; nobody sees another's orders."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import aiosqlite

from db.catalog import SOURCE

MAX_ORDERS = 5


async def list_orders(conn: aiosqlite.Connection, user_id: str, order_id: str | None = None) -> dict[str, Any]:
    """The user's most recent orders (or one order by id), with their lines and totals."""
    sql = ("SELECT o.order_id, o.product_id, p.product_name, o.quantity, o.total, o.status, o.created_at "
           "FROM orders o JOIN products p USING (product_id) WHERE o.user_id = ?")
    args: list[Any] = [str(user_id)]
    if order_id:
        sql += " AND o.order_id = ?"
        args.append(str(order_id).strip())
    sql += " ORDER BY o.created_at DESC, o.order_id, o.product_id"
    async with conn.execute(sql, args) as cur:
        rows = await cur.fetchall()
    orders: dict[str, dict[str, Any]] = {}
    for row in rows:
        order = orders.setdefault(row["order_id"], {
            "evidence_id": f"order:{row['order_id']}", "order_id": row["order_id"], "status": row["status"],
            "created_at": row["created_at"], "items": [], "total": Decimal(0)})
        order["items"].append({"product_id": row["product_id"], "product_name": row["product_name"],
                               "quantity": row["quantity"]})
        order["total"] += Decimal(row["total"])
    found = list(orders.values())[:MAX_ORDERS]
    return {"status": "verified" if found else "not_found", "source": SOURCE, "orders": found}
