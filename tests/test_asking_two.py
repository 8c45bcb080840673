"""Two things asked in one message, or one thing asked of two products: each part answered — the price and the
delivery, the price and the promotion, which of two has more in stock. Phrasings here are our own; the frozen
held-out split is test9 (tests/test_shopping.py)."""

from __future__ import annotations

import re

import pytest

from agent.intent import Ask, read
from tests.test_understanding import reply


@pytest.mark.parametrize("text", ["足球和篮球哪个库存多", "足球跟篮球哪个剩的多", "足球和篮球 哪个货多点"])
async def test_which_of_two_has_more_in_stock_states_each_ones_stock(agent, text):
    answer = await reply(agent, text)
    assert "库存50" in answer and "库存30" in answer and "足球库存更多" in answer, answer


@pytest.mark.parametrize("text", ["还剩的多吗", "哪个存货多", "哪个货少"])
def test_how_much_is_left_is_a_stock_question(vocabulary, text):
    assert Ask.STOCK in read(text, vocabulary).asks


def test_a_name_read_as_a_longer_products_keeps_the_other_products_named(vocabulary):
    assert read("哑铃套装和壶铃哪个便宜", vocabulary).products == ("022", "023")
    assert read("羽毛球网多少钱", vocabulary).products == ("051",)   # 羽毛球网架, not a miss


def test_a_delivery_question_in_so_many_words_beside_a_price_is_asked_too(vocabulary):
    asked = read("足球多少钱 今天下单啥时候发货", vocabulary, labels=frozenset({"price"}))
    assert {Ask.PRICE, Ask.POLICY} <= asked.asks
    # …but not the word 客服 that greets, nor a policy word with no product named
    assert Ask.POLICY not in read("客服 足球多少钱", vocabulary, labels=frozenset({"price"})).asks


@pytest.mark.parametrize("text", ["帐篷啥价 一般几天能到", "帐篷多钱 一般几天能到"])
def test_a_price_asked_as_what_price_beside_a_policy_question_is_asked_too(vocabulary, text):
    asked = read(text, vocabulary, labels=frozenset({"policy:shipping"}))
    assert {Ask.PRICE, Ask.POLICY} <= asked.asks


async def test_the_price_and_how_soon_to_pay_are_both_answered(agent):
    answer = await reply(agent, "护膝多少钱 下单后多久要付款")
    assert "79元" in answer and "30分钟" in answer, answer


async def test_the_price_and_the_delivery_are_both_answered(agent):
    answer = await reply(agent, "篮球啥价？我在上海 一般几天能到")
    assert "200元" in answer and "48小时" in answer, answer


@pytest.mark.parametrize("text", ["李宁护膝多少钱 有啥活动不", "有什么优惠吗", "这两个有什么区别", "有哪些颜色"])
def test_what_there_is_of_an_aspect_is_no_list_of_goods(vocabulary, text):
    assert Ask.LIST not in read(text, vocabulary, labels=frozenset({"price"})).asks


async def test_a_brands_product_priced_with_its_promotion_asked_is_not_the_brands_list(agent):
    answer = await reply(agent, "李宁护膝多少钱 有啥活动不")
    assert re.findall(r"\d+(?=元)", answer)[:1] == ["79"] and "为您找到这些李宁商品" not in answer, answer


@pytest.mark.parametrize(("text", "count"), [("我跟对象一人一支 买两支多少钱", 2), ("一家三口每人一双 买三双多少钱", 3),
                                             ("一人一个多少钱", 1)])
def test_what_each_person_gets_is_not_the_count_bought(vocabulary, text, count):
    assert read(text, vocabulary, has_focus=True, labels=frozenset({"price"})).quantity == count


async def test_a_first_purchase_with_its_promotion_asked_prices_the_product_in_focus(agent):
    from tests.test_understanding import converse
    _, priced = await converse(agent, ["阿迪达斯跑步鞋多少钱", "我第一次在你家买 有优惠不 算下来多少"])
    assert "实付400元" in priced and "订单" not in priced, priced


def test_a_first_purchase_with_a_promotion_asked_sums_no_spending(vocabulary):
    asked = read("我第一次在你家买 有优惠不 算下来多少", vocabulary, has_focus=True,
                 labels=frozenset({"own_spending", "promotion"}))
    assert Ask.SPENDING not in asked.asks and Ask.ORDER not in asked.asks and not asked.describes_need


async def test_two_products_named_with_a_budget_and_which_are_those_within_it(agent):
    answer = await reply(agent, "护具想要60以内的 护膝护腕选哪个")
    assert "49元" in answer and "79元" not in answer and "合计" not in answer, answer


@pytest.mark.parametrize(("text", "products"), [("护具想要80块以内的 护膝护踝哪个行", ("030", "031")),
                                                ("哑铃壶铃150以内的有吗", ("022", "023"))])
def test_two_names_written_back_to_back_are_the_two_not_a_near_miss(vocabulary, text, products):
    asked = read(text, vocabulary, labels=frozenset({"listing"}))
    assert asked.products == products and not asked.near_miss
    assert read("网球拍手胶有吗", vocabulary).near_miss == "网球拍手胶"   # a thing after a name is still one
