"""Verified product and promotion facts, read by id with parameterized SQL."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import aiosqlite

from db.facts import Category, CategoryList, Product, ProductDetails, Promotion, PromotionList
from db.ids import normalize_ids, placeholders


def _decimal(text: str | None) -> Decimal | None:
    return None if text is None else Decimal(text)


def product_from_row(row: Any) -> Product:
    return Product(product_id=row["product_id"], product_name=row["product_name"], brand=row["brand"],
                   description=row["description"], specifications=row["specifications"], usage=row["usage"],
                   price=_decimal(row["price"]), stock_quantity=row["stock_quantity"], category=row["category"],
                   aliases=_aliases(row))


def _aliases(row: Any) -> tuple[str, ...]:
    """The row's other names; a catalog built before the column existed has none."""
    raw = row["aliases"] if "aliases" in row.keys() else ""
    return tuple(a for a in (raw or "").split("|") if a)


def promotion_from_row(row: Any) -> Promotion:
    return Promotion(promotion_id=row["promotion_id"], product_id=row["product_id"],
                     promotion_text=row["promotion_text"], discount_type=row["discount_type"],
                     discount_value=_decimal(row["discount_value"]), minimum_quantity=row["minimum_quantity"],
                     minimum_spend=_decimal(row["minimum_spend"]), extra_condition=row["extra_condition"])


async def fetch_products(conn: aiosqlite.Connection, ids: list[str]) -> dict[str, Product]:
    if not ids:
        return {}
    sql = f"SELECT * FROM products WHERE product_id IN ({placeholders(len(ids))})"
    # execute_fetchall: one trip to aiosqlite's thread instead of three (execute, fetch, close)
    return {row["product_id"]: product_from_row(row) for row in await conn.execute_fetchall(sql, ids)}


async def fetch_promotions(conn: aiosqlite.Connection, ids: list[str]) -> list[Promotion]:
    if not ids:
        return []
    sql = (f"SELECT * FROM promotions WHERE product_id IN ({placeholders(len(ids))}) "
           "ORDER BY product_id, promotion_id")
    return [promotion_from_row(row) for row in await conn.execute_fetchall(sql, ids)]


def details_from(ids: list[str], found: dict[str, Product]) -> ProductDetails:
    """The details result for normalized `ids`, from product rows already read."""
    return ProductDetails(tuple(found[i] for i in ids if i in found), tuple(i for i in ids if i not in found))


def promotions_from(ids: list[str], known: dict[str, Product], promotions: Iterable[Promotion]) -> PromotionList:
    """The promotions result for normalized `ids`, from product and promotion rows already read."""
    existing = tuple(i for i in ids if i in known)
    return PromotionList(existing, tuple(p for p in promotions if p.product_id in known),
                         tuple(i for i in ids if i not in known))


async def get_product_details(conn: aiosqlite.Connection, product_ids: Iterable[object]) -> ProductDetails:
    """Verified product rows for up to 10 ids; unknown ids are listed in `missing_product_ids`."""
    ids = normalize_ids(product_ids)
    return details_from(ids, await fetch_products(conn, ids))


async def get_promotions(conn: aiosqlite.Connection, product_ids: Iterable[object]) -> PromotionList:
    """Verified promotions of up to 10 existing products (a product may have none)."""
    ids = normalize_ids(product_ids)
    known = await fetch_products(conn, ids)
    return promotions_from(ids, known, await fetch_promotions(conn, [i for i in ids if i in known]))


async def products_for_retrieval(conn: aiosqlite.Connection) -> list[dict[str, Any]]:
    """The descriptive fields of every product, for the search index (never price or stock)."""
    fields = ("product_id", "product_name", "brand", "description", "specifications", "usage", "aliases")
    async with conn.execute("SELECT * FROM products ORDER BY product_id") as cur:
        return [{k: row[k] for k in fields if k in row.keys()} for row in await cur.fetchall()]


SORTS = ("relevance", "price_asc", "price_desc", "stock_desc")
PRICE_SORTS = frozenset({"price_asc", "price_desc"})   # the orders by price: the cheapest (or dearest) of a kind


@dataclass(frozen=True)
class ProductFilter:
    """Structured conditions on products, applied by SQL (brand, category, stock) and by Decimal (price)."""

    max_price: Decimal | None = None
    min_price: Decimal | None = None
    brand: str | None = None
    category: str | None = None
    in_stock: bool = False

    def __bool__(self) -> bool:
        return any(v not in (None, False) for v in (self.max_price, self.min_price, self.brand, self.category,
                                                      self.in_stock))

    def where(self) -> tuple[str, list[object]]:
        clauses, args = [], []
        if self.brand:
            clauses.append("lower(brand) = lower(?)")
            args.append(self.brand.strip())
        if self.category:
            clauses.append("(category = ? OR instr(?, category) > 0 AND category != '')")
            args += [self.category.strip(), self.category.strip()]
        if self.in_stock:
            clauses.append("stock_quantity > 0")
        return (" AND ".join(clauses) or "1"), args

    def admits(self, product: Product, paid: Decimal | None = None) -> bool:
        """`paid`: what one unit costs now under its promotions, when lower than the price: a budget is met by what
        the customer pays (a 120元 ball at 9折 is within 110), the lower bound by the price itself."""
        if self.max_price is None and self.min_price is None:
            return True
        if product.price is None:
            return False
        cost = min(product.price, paid) if paid is not None else product.price
        return ((self.max_price is None or cost <= self.max_price)
                and (self.min_price is None or product.price >= self.min_price))


def _ordered(products: list[Product], sort: str) -> list[Product]:
    if sort == "price_asc":
        return sorted(products, key=lambda p: (p.price is None, p.price or 0))
    if sort == "price_desc":
        return sorted(products, key=lambda p: (p.price is None, -(p.price or 0)))
    if sort == "stock_desc":
        return sorted(products, key=lambda p: -(p.stock_quantity or 0))
    return products


PaidNow = Callable[[list[Product]], Awaitable[dict[str, Decimal]]]


async def find_products(conn: aiosqlite.Connection, where: ProductFilter, ids: list[str] | None = None,
                        sort: str = "relevance", limit: int = 10, paid_now: PaidNow | None = None) -> list[Product]:
    """Products meeting `where`: among `ids` (kept in their order for "relevance"), or the whole catalog.
    `paid_now` (db.pricing.paid_now): what one unit of each product priced above the budget costs under its
    promotions, read for those alone."""
    sql, args = where.where()
    if ids is not None:
        if not ids:
            return []
        sql = f"product_id IN ({placeholders(len(ids))}) AND {sql}"
        args = [*ids, *args]
    rows = [product_from_row(row) for row in
            await conn.execute_fetchall(f"SELECT * FROM products WHERE {sql} ORDER BY product_id", args)]
    over = [p for p in rows if where.max_price is not None and p.price is not None and p.price > where.max_price]
    paid = await paid_now(over) if paid_now is not None and over else {}
    found = [p for p in rows if where.admits(p, paid.get(p.product_id))]
    if ids is not None:
        rank = {pid: i for i, pid in enumerate(ids)}
        found.sort(key=lambda p: rank[p.product_id])
    return _ordered(found, sort)[:limit]


async def products_of_kind(conn: aiosqlite.Connection, kind: str) -> list[str]:
    """Ids of the products whose name, pack size aside, ends with `kind` (鞋: 跑步鞋, 篮球鞋…; 球: 足球,
    乒乓球（10只装）…): a kind of goods written as one character, which the catalog's names answer exactly."""
    async with conn.execute("SELECT product_id FROM products WHERE product_name LIKE ? ESCAPE '\\' "
                            "OR product_name LIKE ? ESCAPE '\\' ORDER BY product_id",
                            (f"%{_like(kind)}", f"%{_like(kind)}（%")) as cur:
        return [row[0] for row in await cur.fetchall()]


async def list_categories(conn: aiosqlite.Connection) -> CategoryList:
    """The catalog's categories with how many products each holds, the fullest first (a product without one
    is left out)."""
    async with conn.execute("SELECT category, COUNT(*) FROM products WHERE TRIM(COALESCE(category, '')) != '' "
                            "GROUP BY category ORDER BY COUNT(*) DESC, MIN(product_id)") as cur:
        return CategoryList(tuple(Category(str(name), int(n)) for name, n in await cur.fetchall()))


def _like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


async def catalog_words(conn: aiosqlite.Connection) -> list[tuple[str, str, str, str]]:
    """(product_id, name, brand, category) of every product: the words the message reader knows."""
    async with conn.execute("SELECT product_id, product_name, brand, category FROM products ORDER BY product_id") as cur:
        return [tuple(row) for row in await cur.fetchall()]  # type: ignore[misc]


async def catalog_aliases(conn: aiosqlite.Connection) -> dict[str, tuple[str, ...]]:
    """product_id → the other names the catalog gives it (the optional `aliases` column)."""
    async with conn.execute("PRAGMA table_info(products)") as cur:
        if "aliases" not in {row[1] for row in await cur.fetchall()}:
            return {}   # a catalog built before the column existed
    async with conn.execute("SELECT product_id, aliases FROM products WHERE aliases != ''") as cur:
        return {row[0]: tuple(a for a in row[1].split("|") if a) for row in await cur.fetchall()}
