"""Read-only access and the verified-fact queries."""

import hashlib
import sqlite3
from decimal import Decimal

import pytest

from db.catalog import get_product_details, get_promotions
from db.connection import CatalogUnavailable, open_readonly
from db.knowledge import search_knowledge
from db.orders import list_orders

PINNED = {
    "001": ("足球", "耐克", "120", 50),
    "002": ("篮球", "斯伯丁", "200", 30),
    "003": ("羽毛球拍", "尤尼克斯", "300", 40),
    "004": ("跑步鞋", "阿迪达斯", "500", 20),
    "005": ("瑜伽垫", "迪卡侬", "150", 60),
}


async def test_demo_catalog_holds_the_pinned_facts(conn):
    result = await get_product_details(conn, list(PINNED))
    assert result.status == "verified"
    for product in result.products:
        name, brand, price, stock = PINNED[product.product_id]
        assert (product.product_name, product.brand, product.price, product.stock_quantity) == (
            name, brand, Decimal(price), stock)
    shoe = result.products[3]
    assert shoe.description == "适合长距离跑步，舒适透气，提供良好的足弓支撑"


async def test_demo_catalog_has_every_promotion_kind(conn):
    async with conn.execute("SELECT count(*) FROM products") as cur:
        (count,) = await cur.fetchone()
    assert count >= 45
    async with conn.execute("SELECT promotion_text, discount_type FROM promotions") as cur:
        rows = {tuple(r) for r in await cur.fetchall()}
    assert {("满500减100", "fixed_reduction"), ("买三送一", "buy_x_get_y"), ("满200包邮", "free_shipping"),
            ("9折", "percentage"), ("赠送教程视频", "gift")} <= rows


async def test_details_coerce_dedupe_and_report_missing(conn):
    result = await get_product_details(conn, [1, "001", " 001 ", "002", "999"])
    assert [p.product_id for p in result.products] == ["001", "002"]
    assert result.missing_product_ids == ("1", "999")
    assert result.products[0].evidence_id == "product:001"


async def test_details_cap_at_ten_ids(conn):
    ids = [f"{i:03d}" for i in range(1, 20)]
    result = await get_product_details(conn, ids)
    assert len(result.products) + len(result.missing_product_ids) == 10


async def test_empty_request_is_not_found_without_sql(demo_db):
    class NoSQL:
        def execute(self, *args, **kwargs):
            raise AssertionError("SQL was run for an empty id list")

    result = await get_product_details(NoSQL(), [])
    assert (result.status, result.products, result.missing_product_ids) == ("not_found", (), ())


async def test_injection_attempt_is_just_an_unknown_id(conn):
    result = await get_product_details(conn, ["001' OR '1'='1"])
    assert result.status == "not_found"


async def test_promotions_for_known_and_unknown_products(conn):
    result = await get_promotions(conn, ["001", "006", "nope"])
    assert result.status == "verified"
    assert result.product_ids == ("001", "006")
    assert [p.promotion_id for p in result.promotions] == ["P001"]
    assert result.promotions[0].discount_value == Decimal("0.9")
    assert result.missing_product_ids == ("nope",)
    assert (await get_promotions(conn, [])).status == "not_found"


@pytest.mark.parametrize("statement", [
    "UPDATE products SET price = '1' WHERE product_id = '001'",
    "INSERT INTO products (product_id, product_name, price) VALUES ('X', 'x', '1')",
    "DELETE FROM promotions",
    "DROP TABLE products",
])
async def test_writes_through_the_bot_connection_fail_and_file_is_unchanged(demo_db, statement):
    before = hashlib.sha256(demo_db.read_bytes()).hexdigest()
    conn = await open_readonly(demo_db)
    try:
        with pytest.raises(sqlite3.OperationalError):
            await conn.execute(statement)
            await conn.commit()
        with pytest.raises(sqlite3.OperationalError):
            await conn.execute("PRAGMA query_only = OFF")
            await conn.execute(statement)
            await conn.commit()
    finally:
        await conn.close()
    assert hashlib.sha256(demo_db.read_bytes()).hexdigest() == before


async def test_missing_or_foreign_file_is_a_clear_error(tmp_path):
    with pytest.raises(CatalogUnavailable, match="not found"):
        await open_readonly(tmp_path / "absent.db")
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"this is not sqlite at all" * 100)
    with pytest.raises(CatalogUnavailable):
        await open_readonly(junk)


async def test_knowledge_search_finds_policy(conn):
    result = await search_knowledge(conn, "怎么退货？")
    assert result.status == "verified"
    assert result.documents[0].evidence_id == "doc:D001"
    assert (await search_knowledge(conn, "火星旅行")).status == "not_found"


async def test_orders_are_scoped_to_the_user(conn):
    mine = await list_orders(conn, "console")
    assert [o.order_id for o in mine.orders] == ["A1002", "A1001"]
    assert mine.orders[1].total == Decimal("216.00")
    assert (await list_orders(conn, "console", "A1003")).status == "not_found"  # someone else's
    assert (await list_orders(conn, "10001", "A1003")).orders[0].items[0].product_name == "羽毛球拍"
