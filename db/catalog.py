"""Verified product and promotion facts, read by id with parameterized SQL."""

from __future__ import annotations

from collections.abc import Iterable
from decimal import Decimal
from typing import Any

import aiosqlite

from db.facts import Product, ProductDetails, Promotion, PromotionList
from db.ids import normalize_ids, placeholders


def _decimal(text: str | None) -> Decimal | None:
    return None if text is None else Decimal(text)


def product_from_row(row: Any) -> Product:
    return Product(product_id=row["product_id"], product_name=row["product_name"], brand=row["brand"],
                   description=row["description"], specifications=row["specifications"], usage=row["usage"],
                   price=_decimal(row["price"]), stock_quantity=row["stock_quantity"])


def promotion_from_row(row: Any) -> Promotion:
    return Promotion(promotion_id=row["promotion_id"], product_id=row["product_id"],
                     promotion_text=row["promotion_text"], discount_type=row["discount_type"],
                     discount_value=_decimal(row["discount_value"]), minimum_quantity=row["minimum_quantity"],
                     minimum_spend=_decimal(row["minimum_spend"]), extra_condition=row["extra_condition"])


async def fetch_products(conn: aiosqlite.Connection, ids: list[str]) -> dict[str, Product]:
    if not ids:
        return {}
    sql = f"SELECT * FROM products WHERE product_id IN ({placeholders(len(ids))})"
    async with conn.execute(sql, ids) as cur:
        return {row["product_id"]: product_from_row(row) for row in await cur.fetchall()}


async def fetch_promotions(conn: aiosqlite.Connection, ids: list[str]) -> list[Promotion]:
    if not ids:
        return []
    sql = (f"SELECT * FROM promotions WHERE product_id IN ({placeholders(len(ids))}) "
           "ORDER BY product_id, promotion_id")
    async with conn.execute(sql, ids) as cur:
        return [promotion_from_row(row) for row in await cur.fetchall()]


async def get_product_details(conn: aiosqlite.Connection, product_ids: Iterable[object]) -> ProductDetails:
    """Verified product rows for up to 10 ids; unknown ids are listed in `missing_product_ids`."""
    ids = normalize_ids(product_ids)
    found = await fetch_products(conn, ids)
    return ProductDetails(tuple(found[i] for i in ids if i in found), tuple(i for i in ids if i not in found))


async def get_promotions(conn: aiosqlite.Connection, product_ids: Iterable[object]) -> PromotionList:
    """Verified promotions of up to 10 existing products (a product may have none)."""
    ids = normalize_ids(product_ids)
    known = await fetch_products(conn, ids)
    existing = tuple(i for i in ids if i in known)
    return PromotionList(existing, tuple(await fetch_promotions(conn, list(existing))),
                         tuple(i for i in ids if i not in known))


async def catalog_brands(conn: aiosqlite.Connection) -> frozenset[str]:
    """Every brand the catalog sells: the words a brand claim in an answer is read by."""
    async with conn.execute("SELECT DISTINCT brand FROM products WHERE brand != ''") as cur:
        return frozenset(row[0] for row in await cur.fetchall())


async def products_for_retrieval(conn: aiosqlite.Connection) -> list[dict[str, Any]]:
    """The descriptive fields of every product, for the search index (never price or stock)."""
    sql = ("SELECT product_id, product_name, brand, description, specifications, usage "
           "FROM products ORDER BY product_id")
    async with conn.execute(sql) as cur:
        return [dict(row) for row in await cur.fetchall()]
