"""Importing a shop's spreadsheets: every bad line is named and nothing is written on error."""

import hashlib
import json
import sqlite3
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest

from db.records import CatalogError, demo_catalog, read_catalog_csv, read_catalog_json
from tests.fakes.demo import DEMO_DAY

ROOT = Path(__file__).resolve().parent.parent
HEADER = "product_id,product_name,brand,price,stock_quantity,description,specifications,usage\n"
PROMO_HEADER = ("promotion_id,product_id,promotion_text,discount_type,discount_value,"
                "minimum_quantity,minimum_spend,extra_condition\n")


def run_bot(*args, cwd, env=None):
    return subprocess.run([sys.executable, str(ROOT / "bot.py"), *args], cwd=cwd, capture_output=True,
                          text=True, timeout=60, env=env)


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_demo_catalog_passes_its_own_validation():
    catalog = demo_catalog(DEMO_DAY)
    assert len(catalog.products) >= 45
    assert {p.product_id for p in catalog.products} >= {"001", "002", "003", "004", "005"}


def test_every_bad_product_line_is_reported_by_line_number(tmp_path):
    products = write(tmp_path / "p.csv", HEADER + "\n".join([
        "A1,好球,牌子,10,5,,,",
        ",无编号,牌子,10,5,,,",        # line 3: missing id
        "A3,,牌子,10,5,,,",            # line 4: missing name
        "A4,负价,牌子,-5,5,,,",         # line 5
        "A5,坏库存,牌子,5,-1,,,",        # line 6
        "A6,文字价,牌子,abc,1,,,",       # line 7
        "A1,重复,牌子,10,5,,,",          # line 8: duplicate
        "A8,三位小数,牌子,1.005,1,,,",    # line 9
    ]) + "\n")
    with pytest.raises(CatalogError) as info:
        read_catalog_csv(products)
    text = "\n".join(info.value.problems)
    for line, words in [(3, "product_id is required"), (4, "product_name is required"),
                        (5, "price must not be negative"), (6, "stock_quantity must be at least 0"),
                        (7, "price must be a number"), (8, "duplicate"), (9, "price has more than 2 decimal places")]:
        assert f"p.csv line {line}: {words}" in text
    assert "p.csv line 2:" not in text


def test_bad_promotions_are_reported(tmp_path):
    products = write(tmp_path / "p.csv", HEADER + "A1,好球,牌子,10,5,,,\n")
    promotions = write(tmp_path / "x.csv", PROMO_HEADER + "\n".join([
        "X1,A1,9折,percentage,0.9,,,",
        "X2,ZZ,9折,percentage,0.9,,,",             # unknown product
        "X3,A1,神秘,mystery,1,,,",                  # line 4: unknown type
        "X4,A1,9折,percentage,9,,,",                # line 5: not a multiplier
        "X5,A1,买三送一,buy_x_get_y,1,,,",            # line 6: no X
        "X6,A1,首单,percentage,0.8,,,vip_only",      # line 7: unknown condition
    ]) + "\n")
    with pytest.raises(CatalogError) as info:
        read_catalog_csv(products, promotions)
    text = "\n".join(info.value.problems)
    assert "x.csv line 4: discount_type must be one of" in text
    assert "x.csv line 5: a percentage discount needs discount_value between 0 and 1" in text
    assert "x.csv line 6: buy_x_get_y needs minimum_quantity" in text
    assert "x.csv line 7: extra_condition must be empty or one of first_purchase" in text


def test_unknown_product_in_promotion_is_reported(tmp_path):
    products = write(tmp_path / "p.csv", HEADER + "A1,好球,牌子,10,5,,,\n")
    promotions = write(tmp_path / "x.csv", PROMO_HEADER + "X2,ZZ,9折,percentage,0.9,,,\n")
    with pytest.raises(CatalogError, match="promotion X2: unknown product_id 'ZZ'"):
        read_catalog_csv(products, promotions)


def test_missing_columns_and_missing_file(tmp_path):
    with pytest.raises(CatalogError, match="missing column"):
        read_catalog_csv(write(tmp_path / "p.csv", "id,name\n1,x\n"))
    with pytest.raises(CatalogError, match="cannot be read"):
        read_catalog_csv(tmp_path / "absent.csv")


def test_json_catalog_for_evaluation(tmp_path):
    path = write(tmp_path / "c.json", '[{"product_id": "9", "product_name": "球"}, '
                                      '{"product_id": 10, "product_name": "拍", "price": 5}]')
    catalog = read_catalog_json(path)
    assert [p.product_id for p in catalog.products] == ["9", "10"]
    assert catalog.products[0].price is None
    with pytest.raises(CatalogError, match="expected a JSON list"):
        read_catalog_json(write(tmp_path / "bad.json", '{"a": 1}'))


@pytest.mark.slow   # a real bot.py process
def test_cli_import_refuses_a_broken_csv_and_keeps_the_old_catalog(tmp_path):
    assert run_bot("init-db", "--path", "shop.db", "--no-index", cwd=tmp_path).returncode == 0   # the catalog is the point
    before = hashlib.sha256((tmp_path / "shop.db").read_bytes()).hexdigest()
    write(tmp_path / "p.csv", HEADER + "B1,好球,牌子,10,5,,,\nB2,坏球,牌子,-1,5,,,\n")
    result = run_bot("import-catalog", "p.csv", "--path", "shop.db", cwd=tmp_path)
    assert result.returncode == 1
    assert "p.csv line 3: price must not be negative" in result.stderr
    assert "nothing was written" in result.stderr
    assert "Traceback" not in result.stderr
    assert hashlib.sha256((tmp_path / "shop.db").read_bytes()).hexdigest() == before
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.slow   # a real bot.py process
def test_cli_import_replaces_the_catalog(tmp_path):
    write(tmp_path / "p.csv", HEADER + "B1,好球,牌子,10.50,5,,,\n")
    write(tmp_path / "x.csv", PROMO_HEADER + "Y1,B1,满20减5,fixed_reduction,5,,20,\n")
    result = run_bot("import-catalog", "p.csv", "x.csv", "--path", "shop.db", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    with sqlite3.connect(tmp_path / "shop.db") as db:
        assert db.execute("SELECT product_name, price FROM products").fetchall() == [("好球", "10.50")]
        assert db.execute("SELECT minimum_spend FROM promotions").fetchall() == [("20",)]


@pytest.mark.slow   # a real bot.py process
def test_cli_init_db_does_not_overwrite_without_force(tmp_path):
    # the catalog file is the point here (building its index is tested in test_safe_defaults/test_retrieval)
    assert run_bot("init-db", "--path", "shop.db", "--no-index", cwd=tmp_path).returncode == 0
    again = run_bot("init-db", "--path", "shop.db", "--no-index", cwd=tmp_path)
    assert again.returncode == 1 and "--force" in again.stdout
    assert run_bot("init-db", "--path", "shop.db", "--force", "--no-index", cwd=tmp_path).returncode == 0
    assert not (tmp_path / "shop.index").exists()


def test_a_line_with_surplus_fields_is_named(tmp_path):
    products = write(tmp_path / "p.csv", HEADER + "A1,好球,牌子,10,5,,,\nA2,坏行,牌子,10,5,,,,多余\n")
    with pytest.raises(CatalogError, match="p.csv line 3: more fields than the header has columns"):
        read_catalog_csv(products)


# --- issue 21: price required, unknown headers, cross-file errors in one pass, GBK exports --------------

PRICELESS = ("product_id,product_name,category,brand,price,stock_quantity,description,specifications,usage\n"
             "B1,羽毛球,羽毛球,尤尼克斯,,30,比赛用鹅毛球,每筒12只,比赛训练\n"
             "B2,羽毛球拍,羽毛球,李宁,260,10,碳素球拍,4U,进攻\n")
PRICELESS_PROMOS = PROMO_HEADER + "X1,B1,9折,percentage,0.9,,,\n"


@pytest.mark.slow   # a real bot.py process
def test_cli_refuses_a_products_csv_without_a_price_column(tmp_path):
    write(tmp_path / "p.csv", "product_id,product_name,brand,stock_quantity\nB1,好球,牌子,5\n")
    result = run_bot("import-catalog", "p.csv", "--path", "shop.db", cwd=tmp_path)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "p.csv line 1: missing column(s): price" in result.stderr
    assert "leave a product's price cell empty when it has no price" in result.stderr
    assert "nothing was written" in result.stderr and not (tmp_path / "shop.db").exists()


@pytest.mark.slow   # a real bot.py process
def test_cli_refuses_a_misspelled_header_and_names_the_known_columns(tmp_path):
    write(tmp_path / "p.csv", "product_id,product_name,brand,prcie,stock_quantity\nB1,好球,牌子,10,5\n")
    result = run_bot("import-catalog", "p.csv", "--path", "shop.db", cwd=tmp_path)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert "p.csv line 1: missing column(s): price" in lines
    unknown = next(line for line in lines if "unknown column" in line)
    assert unknown.startswith("p.csv line 1: unknown column(s): 'prcie' (did you mean 'price'?)")
    assert ("product_id, product_name, category, brand, price, stock_quantity, description, specifications, "
            "usage, aliases") in unknown
    assert not (tmp_path / "shop.db").exists()


def test_an_unknown_column_is_refused_in_every_file_even_an_optional_one(tmp_path):
    products = write(tmp_path / "p.csv", HEADER.strip() + ",colour\nA1,好球,牌子,10,5,,,,红\nA2,坏,牌子,-1,5,,,,白\n")
    promotions = write(tmp_path / "x.csv", PROMO_HEADER.strip() + ",note\nX1,A1,9折,percentage,0.9,,,,\n")
    knowledge = write(tmp_path / "k.csv", "doc_id,title,body\nd1,退货,七天\n")
    orders = write(tmp_path / "o.csv", "order_id,user_id,product_id,quantity,total,status,regoin,created_at\n"
                                       "O1,u,A1,1,10,已签收,华东,2026-11-02\n")
    with pytest.raises(CatalogError) as info:
        read_catalog_csv(products, promotions, knowledge, orders)
    text = "\n".join(info.value.problems)
    assert "p.csv line 1: unknown column(s): 'colour'" in text
    assert "p.csv line 3: price must not be negative" in text   # the rows are still checked in the same pass
    assert "x.csv line 1: unknown column(s): 'note' — a promotions file takes the columns promotion_id," in text
    assert "k.csv line 1: missing column(s): content" in text and "'body'" in text
    assert "o.csv line 1: unknown column(s): 'regoin' (did you mean 'region'?)" in text


def test_headers_are_read_without_case_or_surrounding_spaces(tmp_path):
    products = write(tmp_path / "p.csv", "Product_ID, product_name ,PRICE\nA1,好球,10\n")
    assert read_catalog_csv(products).products[0].price == Decimal("10")


def test_an_empty_price_cell_is_a_product_without_a_price(tmp_path, caplog):
    catalog = read_catalog_csv(write(tmp_path / "p.csv", PRICELESS))
    assert [(p.product_id, p.price) for p in catalog.products] == [("B1", None), ("B2", Decimal("260"))]
    assert "1 product(s) with an empty price (B1)" in caplog.text


@pytest.mark.slow   # a real bot.py process
def test_cli_reports_an_unknown_product_together_with_the_row_errors(tmp_path):
    write(tmp_path / "p.csv", HEADER + "B1,好球,牌子,10,5,,,\nB2,坏球,牌子,-1,5,,,\n")
    write(tmp_path / "x.csv", PROMO_HEADER + "Y1,ZZ,9折,percentage,0.9,,,\nY2,B2,9折,percentage,0.9,,,\n"
                                             "Y3,B1,9折,percentage,9,,,\n")
    write(tmp_path / "o.csv", ",".join(("order_id", "user_id", "product_id", "quantity", "total", "status", "region",
                                        "created_at")) + "\nO1,u1,B1,1,10,已签收,华东,2026-11-02\n"
                                                         "O2,u1,QQ,1,10,已签收,华东,2026-11-02\n")
    result = run_bot("import-catalog", "p.csv", "x.csv", "--orders", "o.csv", "--path", "shop.db", cwd=tmp_path)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    problems = [line for line in result.stderr.splitlines() if " line " in line]
    assert problems == [
        "p.csv line 3: price must not be negative, got '-1'",
        "x.csv line 2: promotion Y1: unknown product_id 'ZZ' (no product with this id in p.csv)",
        "x.csv line 4: a percentage discount needs discount_value between 0 and 1 (9折 = 0.9)",
        "o.csv line 3: order O2: unknown product_id 'QQ' (no product with this id in p.csv)",
    ]   # Y2 names B2, whose own line is bad: that line is reported, not the promotion
    assert "Import refused: 4 problem(s)" in result.stderr


def test_references_are_checked_when_the_products_header_is_broken(tmp_path):
    products = write(tmp_path / "p.csv", "product_id,product_name,prcie\nA1,好球,10\n")
    promotions = write(tmp_path / "x.csv", PROMO_HEADER + "X1,A1,9折,percentage,0.9,,,\nX2,ZZ,9折,percentage,0.9,,,\n")
    with pytest.raises(CatalogError) as info:
        read_catalog_csv(products, promotions)
    assert info.value.problems[-1] == "x.csv line 3: promotion X2: unknown product_id 'ZZ' (no product with this id in p.csv)"
    assert not any("x.csv line 2" in p for p in info.value.problems)


@pytest.mark.slow   # a real bot.py process
def test_cli_reads_an_excel_chinese_csv_in_gbk(tmp_path):
    (tmp_path / "p.csv").write_bytes((HEADER + "B1,好球,斯伯丁,10.50,5,七号篮球,标准,室内外\n").encode("gbk"))
    (tmp_path / "x.csv").write_bytes((PROMO_HEADER + "Y1,B1,满20减5,fixed_reduction,5,,20,\n").encode("gb18030"))
    result = run_bot("import-catalog", "p.csv", "x.csv", "--path", "shop.db", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "p.csv is not UTF-8: read it as GBK/GB18030" in result.stderr and 'as "CSV UTF-8' in result.stderr
    with sqlite3.connect(tmp_path / "shop.db") as db:
        assert db.execute("SELECT product_name, brand, description, price FROM products").fetchall() == [
            ("好球", "斯伯丁", "七号篮球", "10.50")]
        assert db.execute("SELECT promotion_text FROM promotions").fetchall() == [("满20减5",)]


@pytest.mark.parametrize(("data", "said"), [
    ("product_id,product_name,price\nA1,café,1\n".encode("latin-1"),
     "p.csv line 2: the file is neither UTF-8 nor GBK/GB18030 text"),
    ("product_id,product_name,price\nA1,好球,1\n".encode("utf-16"), "p.csv: is UTF-16 text"),
    (("product_id,product_name,price\n" + "".join(f"A{i},好球{i},1\n" for i in range(8))).encode()
     + b"A9,\xe5\xa5,1\n", "p.csv line 10: a byte that is not UTF-8 in a UTF-8 file"),
    ("product_id,product_name,price\nA1,沙滩,1\n".encode("gbk"),   # also valid UTF-8: 'ɳ̲'
     "p.csv line 2: cannot tell whether the file is UTF-8 or GBK ('ɳ̲' or '沙滩')"),
    ("product_id,product_name,price\nA1,Café,1\n".encode(), "p.csv line 2: cannot tell whether the file is UTF-8 or GBK"),
], ids=["latin-1", "utf-16", "damaged-utf-8", "gbk-or-utf-8", "utf-8-or-gbk"])
def test_a_file_in_another_encoding_is_refused_with_the_hint(tmp_path, data, said):
    (tmp_path / "p.csv").write_bytes(data)
    with pytest.raises(CatalogError) as info:
        read_catalog_csv(tmp_path / "p.csv")
    (problem,) = info.value.problems
    assert said in problem and 'save it from Excel as "CSV UTF-8' in problem


@pytest.mark.parametrize("text", ["\ufeffproduct_id,product_name,price\nA1,Café,1\n",   # Excel's BOM
                                  "product_id,product_name,price\nA1,“好球”Café·5号,1\n"])   # Chinese in UTF-8
def test_utf8_is_utf8(tmp_path, text):
    (tmp_path / "p.csv").write_bytes(text.encode())
    assert read_catalog_csv(tmp_path / "p.csv").products[0].product_name == text.split(",")[-2]


# --- a product without a price: every answer about its price says it is not available -----------------

@pytest.fixture
async def priceless(tmp_path):
    """A catalog imported with 羽毛球's price cell left empty: its connection and (lexical) search."""
    from db.build import write_catalog
    from db.connection import open_readonly
    from retrieval.search import ProductSearch
    from retrieval.service import catalog_docs

    write_catalog(tmp_path / "shop.db", read_catalog_csv(write(tmp_path / "p.csv", PRICELESS),
                                                         write(tmp_path / "x.csv", PRICELESS_PROMOS)), source="test")
    conn = await open_readonly(tmp_path / "shop.db")
    try:
        yield conn, ProductSearch(await catalog_docs(conn))
    finally:
        await conn.close()


@pytest.mark.parametrize(("question", "must"), [
    ("羽毛球多少钱", ["羽毛球（尤尼克斯）价格暂未提供"]),
    ("羽毛球买两筒多少钱", ["价格暂未提供", "暂时无法为您计算总价"]),
    ("羽毛球有货吗", ["价格暂未提供", "库存30"]),
    ("有哪些尤尼克斯的商品", ["羽毛球（尤尼克斯），价格暂未提供"]),
    ("羽毛球和羽毛球拍哪个便宜", ["羽毛球（尤尼克斯）价格暂未提供", "羽毛球拍（李宁）售价260元", "暂时无法比较价格"]),
])
async def test_every_answer_says_the_price_is_not_available(priceless, question, must):
    from agent.turn import Agent

    result = await Agent(*priceless).answer(question, user_id="u")
    assert result.status == "grounded" and not result.trace.fallback and not result.trace.degraded, result.answer
    for text in must:
        assert text in result.answer, result.answer
    assert "260元" in result.answer or "元" not in result.answer   # no amount but the one the database gave


async def test_a_model_stating_a_price_the_database_did_not_give_is_blocked(priceless):
    from agent.models import ModelReply, ScriptedModel, call
    from agent.turn import Agent

    def submit(answer, cites):
        return ModelReply(None, [call("submit_answer", json.dumps(
            {"answer": answer, "citation_ids": cites, "status": "grounded"}, ensure_ascii=False))])

    model = ScriptedModel([ModelReply(None, [call("search_products", '{"query": "羽毛球"}')]),
                           submit("羽毛球售价90元。", ["product:B1", "promotion:X1"]),
                           submit("羽毛球售价260元。", ["product:B1", "product:B2"]),
                           submit("羽毛球价格暂未提供。", ["product:B1"])])
    result = await Agent(*priceless, model).answer("羽毛球多少钱", user_id="u")
    assert result.answer == "羽毛球价格暂未提供。"
    assert [v.ok for v in result.trace.verdicts] == [False, False, True]
    seen = json.loads(model.calls[1][0][-1]["content"])["prepared_evidence"]["product_details"]["products"]
    assert [(p["price"], p["price_status"][:12]) for p in seen if p["product_id"] == "B1"] == [(None, "not_provided")]


async def test_the_validator_holds_a_missing_price_as_a_fact_of_the_record(priceless, conn):
    from agent.tools import file_evidence
    from db.catalog import get_product_details
    from guardrails import validator as v
    from guardrails.ledger import EvidenceLedger

    own, _ = priceless
    ledger = EvidenceLedger()
    file_evidence(ledger, await get_product_details(own, ["B1", "B2"]))
    file_evidence(ledger, await get_product_details(conn, ["001"]))   # the demo's 足球, 120元
    assert v.validate("羽毛球多少钱", "羽毛球暂无价格。", ["product:B1"], ledger).ok
    said = v.validate("足球多少钱", "足球价格暂未提供。", ["product:001"], ledger)
    assert said.codes == [v.PRICE_STATUS_CONTRADICTS] and "足球 is 120元" in said.message
    assert v.validate("羽毛球拍多少钱", "羽毛球拍价格暂未提供。", ["product:B2"], ledger).codes == [
        v.PRICE_STATUS_CONTRADICTS]
