"""Every figure from the shop's documents, plus each promotion type and its boundaries."""

from decimal import Decimal

import pytest

from db.facts import Product, Promotion
from db.pricing import calculate_final_price, price_order

D = Decimal


@pytest.mark.parametrize(
    ("product_id", "quantity", "first", "total"),
    [
        ("001", 1, False, "108.00"),   # 足球 9折
        ("001", 2, False, "216.00"),
        ("001", 3, False, "324.00"),
        ("003", 2, False, "480.00"),   # 羽毛球拍 两支及以上8折
        ("003", 1, False, "300.00"),   # one racket: no discount, never 240
        ("004", 1, True, "400.00"),    # 跑步鞋 首次购买8折
        ("004", 1, False, "500.00"),
        ("002", 1, False, "200.00"),   # 篮球 below 满300
        ("002", 2, False, "200.00"),   # 400 ≥ 300 → 半价
        ("005", 1, False, "150.00"),   # 瑜伽垫: gift only
        ("008", 1, False, "599.00"),   # 篮球鞋 699 满500减100
        ("008", 2, False, "1298.00"),  # once per order, not per 500
        ("022", 1, False, "299.00"),   # 哑铃 below 500
        ("022", 2, False, "498.00"),   # 598 ≥ 500
        ("012", 3, False, "105.00"),   # 乒乓球 买三送一: pay 3
        ("037", 1, False, "49.00"),    # 水壶 包邮 never changes the price
    ],
)
async def test_shop_figures(conn, product_id, quantity, first, total):
    result = await calculate_final_price(conn, product_id, quantity, first)
    assert result.status == "verified"
    assert result.final_total == D(total)
    assert isinstance(result.final_total, Decimal)


async def test_one_racket_explains_why_no_discount(conn):
    result = await calculate_final_price(conn, "003", 1)
    assert result.applied_promotion is None
    assert result.outcomes[0].reason == "需购买2支及以上"
    assert result.final_total != D("240")


async def test_first_purchase_condition_is_reported(conn):
    result = await calculate_final_price(conn, "004", 1, False)
    outcome = result.outcomes[0]
    assert (outcome.promotion.promotion_id, outcome.promotion.promotion_text, outcome.applied, outcome.reason) == (
        "P004", "首次购买8折", False, "仅限首次购买")


async def test_buy_three_get_one_reports_paid_and_free_units(conn):
    three = await calculate_final_price(conn, "012", 3)
    assert (three.paid_quantity, three.free_quantity, three.total_units) == (3, 1, 4)
    assert three.subtotal == three.final_total == D("105.00")
    two = await calculate_final_price(conn, "012", 2)
    assert (two.free_quantity, two.final_total) == (0, D("70.00"))
    seven = await calculate_final_price(conn, "012", 7)
    assert (seven.free_quantity, seven.total_units) == (2, 9)


async def test_gift_and_free_shipping_never_lower_the_total(conn):
    mat = await calculate_final_price(conn, "005", 2)
    assert mat.final_total == mat.subtotal == D("300.00")
    assert [b.promotion_text for b in mat.benefits] == ["赠送教程视频"]
    one_bottle = await calculate_final_price(conn, "037", 4)   # 196 < 200
    assert one_bottle.benefits == () and not one_bottle.free_shipping
    assert one_bottle.outcomes[0].reason == "需单笔满200元"
    five = await calculate_final_price(conn, "037", 5)          # 245 ≥ 200
    assert five.final_total == D("245.00")
    assert [b.discount_type for b in five.benefits] == ["free_shipping"] and five.free_shipping


async def test_sources_name_the_rows_used(conn):
    result = await calculate_final_price(conn, "001", 2)
    assert result.sources == ["product:001", "promotion:P001"]
    assert result.evidence_id == "calc:001:2:regular"
    no_promo = await calculate_final_price(conn, "003", 1)
    assert no_promo.sources == ["product:003"]


async def test_quantity_above_stock_gives_available_stock_and_no_total(conn):
    result = await calculate_final_price(conn, "004", 21)
    assert result.status == "insufficient_stock"
    assert result.available_stock == 20
    assert not hasattr(result, "final_total")
    at_stock = await calculate_final_price(conn, "004", 20)
    assert at_stock.status == "verified"


async def test_free_units_count_against_stock(conn):
    # 乒乓球 stock 200: 150 paid → 50 free → 200 units fits; 151 paid → 201 units does not.
    assert (await calculate_final_price(conn, "012", 150)).status == "verified"
    assert (await calculate_final_price(conn, "012", 151)).status == "insufficient_stock"


@pytest.mark.parametrize("quantity", [0, -1, 10000, 2.5, "2", True, None])
async def test_bad_quantities_are_clear_errors(conn, quantity):
    result = await calculate_final_price(conn, "001", quantity)
    assert result.status == "invalid_quantity"
    assert result.message


async def test_unknown_product_is_not_found(conn):
    result = await calculate_final_price(conn, "999", 1)
    assert (result.status, result.product_id) == ("not_found", "999")


def _product(price="100", stock=100, name="测试商品"):
    return Product("T1", name, price=None if price is None else D(price), stock_quantity=stock)


def _promo(pid, kind, value=None, min_qty=None, min_spend=None, extra=None, text="活动"):
    return Promotion(pid, "T1", text, kind, None if value is None else D(value), min_qty,
                     None if min_spend is None else D(min_spend), extra)


@pytest.mark.parametrize(("quantity", "total"), [(4, "400.00"), (5, "400.00")])
def test_minimum_spend_boundary_exactly_at_and_one_below(quantity, total):
    # 满500减100: 400 is below the threshold, 500 is exactly at it.
    result = price_order(_product(), [_promo("X", "fixed_reduction", "100", min_spend="500")], quantity)
    assert result.final_total == D(total)


def test_best_price_promotion_wins_and_they_do_not_stack():
    promos = [_promo("A", "percentage", "0.9"), _promo("B", "fixed_reduction", "50", min_spend="300")]
    result = price_order(_product(), promos, 3)   # 300: 9折 → 270, 满300减50 → 250
    assert result.final_total == D("250.00")
    assert result.applied_promotion.promotion_id == "B"
    assert [o.applied for o in result.outcomes] == [False, True]


def test_rounding_is_half_up_to_cents():
    result = price_order(_product(price="0.05"), [_promo("A", "percentage", "0.9")], 1)  # 0.045 → 0.05
    assert result.final_total == D("0.05")
    assert price_order(_product(price="33.33"), [_promo("A", "percentage", "0.85")], 1).final_total == D("28.33")


def test_fixed_reduction_never_goes_below_zero():
    result = price_order(_product(price="50"), [_promo("A", "fixed_reduction", "100")], 1)
    assert result.final_total == D("0.00")


def test_missing_price_is_not_guessed():
    result = price_order(_product(price=None), [], 1)
    assert result.status == "price_unavailable"


async def test_results_built_from_one_read_equal_the_separate_reads(conn):
    """The tools read products and promotions once per turn and build every result from those rows:
    the same quotes, promotion lists and details as reading each on its own."""
    from db.catalog import (
        details_from,
        fetch_products,
        fetch_promotions,
        get_product_details,
        get_promotions,
        promotions_from,
    )
    from db.pricing import quote_from

    ids = ["001", "003", "005", "008", "999", "012"]
    found = await fetch_products(conn, ids)
    promotions = await fetch_promotions(conn, [i for i in ids if i in found])
    assert promotions_from(ids, found, promotions) == await get_promotions(conn, ids)
    assert details_from(ids, found) == await get_product_details(conn, ids)
    for pid in ids:
        for quantity, first in [(1, False), (2, True), (4, False), (0, False), ("两", False), (10_000, False)]:
            assert quote_from(found, promotions, pid, quantity, first) == \
                await calculate_final_price(conn, pid, quantity, first), (pid, quantity, first)


# --- the quantities the promotion plans are built on (db/promotion_plans.py) -----------------------------------

@pytest.mark.parametrize(("name", "specs", "word"), [
    ("乒乓球（10只装）", "40+新材料，白色，每盒10只", "盒"), ("羽毛球（12只装）", "每筒12只，77速", "筒"),
    ("网球（3只装）", "每罐3只，加压罐装", "罐"), ("运动袜（3双装）", "3双装，中筒", "盒"),
    ("运动水壶", "750毫升", "个"), ("可调节哑铃套装", "", "套"), ("健身手套", "", "副"), ("足球", "", "个"),
])
def test_measure_word_reads_the_pack_from_the_specifications(name, specs, word):
    from db.pricing import measure_word

    assert measure_word(name, specs) == word


async def test_a_quote_counts_in_the_pack_the_catalog_names(conn):
    assert (await calculate_final_price(conn, "015", 3)).unit == "筒"
    assert (await calculate_final_price(conn, "037", 5)).unit == "个"


def test_units_received_and_the_least_quantity_for_a_threshold():
    from db.pricing import least_quantity_for, units_received

    buy3get1 = _promo("B", "buy_x_get_y", "1", min_qty=3)
    assert [units_received(_product(), [buy3get1], q) for q in (2, 3, 6, 7)] == [2, 4, 8, 9]
    assert least_quantity_for(_product("49"), _promo("S", "free_shipping", min_spend="200")) == 5
    assert least_quantity_for(_product("50"), _promo("S", "free_shipping", min_spend="200")) == 4   # exactly at it
    assert least_quantity_for(_product("33.33"), _promo("S", "free_shipping", min_spend="100")) == 4
    assert least_quantity_for(_product(), _promo("Q", "percentage", "0.8", min_qty=2)) == 2
    assert least_quantity_for(_product(), _promo("F", "percentage", "0.8", extra="first_purchase")) is None
    assert least_quantity_for(_product(), _promo("F", "percentage", "0.8", extra="first_purchase"), True) == 1
    assert least_quantity_for(_product(price=None), _promo("S", "free_shipping", min_spend="200")) is None
    assert least_quantity_for(_product("0.01"), _promo("S", "free_shipping", min_spend="1000")) is None  # > 9999
