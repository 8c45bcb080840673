"""Read-only access and the verified-fact queries."""

import hashlib
import sqlite3
from decimal import Decimal

import pytest

from db.catalog import get_product_details, get_promotions
from db.connection import CatalogUnavailable, open_readonly
from db.knowledge import contact_policy, documents_by_id
from db.orders import list_orders
from retrieval.service import load_passages

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


async def test_policy_chunks_are_found_by_bm25_and_read_by_id(conn):
    passages = await load_passages(conn, None)
    assert "returns#1" in [pid for pid, _ in await passages.search("怎么退货？")]
    assert [pid for pid, _ in await passages.search("能开发票吗")][0] == "invoice#1"
    assert await passages.search("火星旅行") == []
    result = await documents_by_id(conn, ["returns#4", "nope#1", "returns#1"])
    assert [d.evidence_id for d in result.documents] == ["doc:returns#4", "doc:returns#1"]
    assert "| 微信支付 |" in result.documents[0].content            # a table is one chunk, kept whole
    assert result.documents[0].title == "退换货政策 › 退款时效"
    assert (await documents_by_id(conn, [])).status == "not_found"
    assert (await contact_policy(conn)).doc_id == "service#1"


async def test_hybrid_policy_search_ranks_the_answering_chunk_first(conn, local_embedder):
    passages = await load_passages(conn, local_embedder)
    assert [pid for pid, _ in await passages.search("退款多久到账")][0] == "returns#4"
    assert [pid for pid, _ in await passages.search("脚长255毫米穿多大码")][0] == "sizing#2"
    assert await passages.search("你们招聘吗") == []


async def test_orders_are_scoped_to_the_user(conn):
    mine = await list_orders(conn, "console")
    assert [o.order_id for o in mine.orders] == ["A1002", "A1001"]
    assert mine.orders[1].total == Decimal("216.00")
    assert (await list_orders(conn, "console", "A1003")).status == "not_found"  # someone else's
    assert (await list_orders(conn, "10001", "A1003")).orders[0].items[0].product_name == "羽毛球拍"


async def test_an_order_line_says_what_one_unit_cost_after_its_promotions(conn):
    from agent.tools import file_evidence
    from db.facts import OrderItem
    from guardrails.ledger import EvidenceLedger
    from guardrails.validator import validate

    (football,) = [o for o in (await list_orders(conn, "console")).orders if o.order_id == "A1001"]
    assert football.items[0].paid == Decimal("216.00") and football.items[0].paid_each == Decimal("108.00")
    assert OrderItem("x", "x", 3, Decimal("100")).paid_each == Decimal("33.33")   # Decimal, to the fen
    ledger = EvidenceLedger()
    file_evidence(ledger, await list_orders(conn, "console", "A1001"))
    said = "订单A1001：足球2个，金额216元，状态：已签收。退货按实际支付金额退款：足球折合每个{}。"
    assert validate("能退多少", said.format("108元"), ["order:A1001"], ledger).ok
    assert not validate("能退多少", said.format("120元"), ["order:A1001"], ledger).ok   # (the list price is no refund)


def test_markdown_policies_are_chunked_by_heading_paragraph_and_table(tmp_path):
    from db.policies import chunk_markdown, read_policies
    from db.records import CatalogError

    text = "# 退货\n\n第一段。\n第一段续。\n\n## 运费\n\n| a | b |\n| --- | --- |\n| 1 | 2 |\n说明紧跟表格。\n\n- 一\n- 二\n"
    chunks = chunk_markdown("r", text)
    assert [(c.doc_id, c.title) for c in chunks] == [("r#1", "退货"), ("r#2", "退货 › 运费"), ("r#3", "退货 › 运费"),
                                                     ("r#4", "退货 › 运费")]
    assert chunks[0].content == "第一段。\n第一段续。" and chunks[1].content.count("|") == 9
    assert chunks[3].content == "- 一\n- 二"
    (tmp_path / "bad name.md").write_text("# x\n\ny", encoding="utf-8")
    with pytest.raises(CatalogError, match="bad name.md"):
        read_policies(tmp_path)
