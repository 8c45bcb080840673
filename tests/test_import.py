"""Importing a shop's spreadsheets: every bad line is named and nothing is written on error."""

import hashlib
import sqlite3
import subprocess
import sys
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
    assert run_bot("init-db", "--path", "shop.db", cwd=tmp_path).returncode == 0
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
    assert run_bot("init-db", "--path", "shop.db", cwd=tmp_path).returncode == 0
    again = run_bot("init-db", "--path", "shop.db", cwd=tmp_path)
    assert again.returncode == 1 and "--force" in again.stdout
    assert run_bot("init-db", "--path", "shop.db", "--force", cwd=tmp_path).returncode == 0


def test_a_line_with_surplus_fields_is_named(tmp_path):
    products = write(tmp_path / "p.csv", HEADER + "A1,好球,牌子,10,5,,,\nA2,坏行,牌子,10,5,,,,多余\n")
    with pytest.raises(CatalogError, match="p.csv line 3: more fields than the header has columns"):
        read_catalog_csv(products)
