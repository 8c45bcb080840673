"""What a catalog is, in a few words for a greeting: where it came from, how many products, and example
questions made from its own products (the demo shop's own examples only for the demo catalog)."""

from __future__ import annotations

from dataclasses import dataclass

import aiosqlite

DEMO_EXAMPLES = ("足球多少钱？", "羽毛球拍买两支有优惠吗？", "我准备跑马拉松，需要透气并且能支撑足弓的装备")


@dataclass(frozen=True)
class CatalogOverview:
    path: str                    # the catalog file
    source: str                  # "demo", "import:<file>", …
    products: int
    examples: tuple[str, ...]    # questions a customer could ask this shop

    @property
    def demo(self) -> bool:
        return self.source == "demo"


async def catalog_overview(conn: aiosqlite.Connection) -> CatalogOverview:
    files = await conn.execute_fetchall("PRAGMA database_list")
    path = next((row[2] for row in files if row[1] == "main"), "") or ""
    rows = await conn.execute_fetchall("SELECT value FROM catalog_meta WHERE key = 'source'")
    source = rows[0][0] if rows else "unknown"
    (count,), = await conn.execute_fetchall("SELECT COUNT(*) FROM products")
    if source == "demo":
        return CatalogOverview(path, source, count, DEMO_EXAMPLES)
    examples: list[str] = []
    priced = await conn.execute_fetchall(
        "SELECT product_name FROM products WHERE price IS NOT NULL ORDER BY stock_quantity DESC, product_id LIMIT 1")
    if priced:
        examples.append(f"{priced[0][0]}多少钱？")
    promoted = await conn.execute_fetchall(
        "SELECT p.product_name FROM promotions x JOIN products p USING (product_id) ORDER BY x.promotion_id LIMIT 1")
    if promoted:
        examples.append(f"{promoted[0][0]}有优惠吗？")
    category = await conn.execute_fetchall(
        "SELECT category FROM products WHERE category IS NOT NULL AND category != '' "
        "GROUP BY category ORDER BY COUNT(*) DESC, category LIMIT 1")
    if category:
        examples.append(f"你们有哪些{category[0][0]}？")
    return CatalogOverview(path, source, count, tuple(examples) or ("有什么推荐的商品吗？",))
