"""What a customer rules out (除了耐克, 帐篷就不要了, 鞋子不考虑) and what they correct (不是泳镜，我问的是泳帽): the
rest is listed without it, and a correction asks the earlier question of the product it names. Phrasings here are
our own; the frozen held-out split is test11 (tests/test_shopping.py)."""

from __future__ import annotations

import re

import pytest

from agent.intent import Ask, corrects, read
from agent.ruled_out import ruled_out
from tests.test_understanding import converse, reply


def prices(text):
    return set(re.findall(r"(?<![\d.])(\d+)元", text))


# --- the reader -------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "brands"), [
    ("羽毛球拍除了尤尼克斯的还有吗", {"尤尼克斯"}),
    ("不要李宁的，有别的跳绳吗", {"李宁"}),
    ("耐克和迪卡侬的都不考虑，还有啥", {"耐克", "迪卡侬"}),
    ("阿迪的就算了 换个牌子", {"阿迪达斯"}),
])
def test_a_brand_ruled_out_before_or_after_the_marker(vocabulary, text, brands):
    assert read(text, vocabulary).ruled_out.brands == brands


@pytest.mark.parametrize("text", ["要不要买个护膝", "护膝是不是李宁的", "不要太贵的跑鞋", "不用了谢谢", "护膝多少钱"])
def test_asking_and_other_negations_rule_nothing_out(vocabulary, text):
    assert not read(text, vocabulary).ruled_out


def test_a_product_ruled_out_leaves_its_category_listed(vocabulary):
    asked = read("瑜伽砖就算了，瑜伽类的还有啥", vocabulary)
    assert asked.ruled_out.products == {"027"} and asked.category == "瑜伽" and asked.listing
    assert "027" not in asked.products and "瑜伽砖" not in asked.named


def test_a_kind_ruled_out_is_read_by_how_names_end(vocabulary):
    asked = read("游泳的东西里，帽子不要，还有啥", vocabulary)
    assert asked.ruled_out.kinds == {"帽"} and asked.listing and asked.category == "游泳"


def test_a_product_ruled_out_by_its_brand_makes_its_kind_the_goods(vocabulary):
    asked = read("篮球我不要斯伯丁的，还有啥", vocabulary)
    assert asked.products == () and asked.goods == ("球",) and asked.category == "篮球" and asked.listing


def test_giving_goods_back_is_still_a_return(vocabulary):
    asked = read("这双鞋我不要了 能退吗", vocabulary, labels=frozenset({"policy:returns"}))
    assert Ask.POLICY in asked.asks and not asked.listing


def test_the_marker_rules_out_only_what_its_clause_names():
    spans = [(0, 2, "A"), (5, 7, "B")]
    found = ruled_out("足球不要，篮球呢", spans, ["耐克"], lambda word: frozenset())
    assert found.products == {"A"} and not found.brands


@pytest.mark.parametrize("text", ["不是泳镜，我问的是泳帽", "说错了 壶铃", "我是说越野跑鞋", "搞错了，我想问的是护踝",
                                  "不是哑铃 是壶铃"])
def test_a_correction_is_read(text):
    assert corrects(text)


@pytest.mark.parametrize("text", ["你们把我的订单搞错了", "发错货了 我买的是篮球", "护膝多少钱", "不是很贵吧"])
def test_what_is_no_correction(text):
    assert not corrects(text)


# --- the answers ------------------------------------------------------------------------------------------

async def test_the_rest_of_a_kind_after_its_brand_is_ruled_out(agent):
    first, second = await converse(agent, ["足球多少钱", "耐克的不要 换个牌子的呢"])
    assert "120元" in first
    assert {"89", "159"} <= prices(second) and "120" not in prices(second), second


async def test_the_rest_of_a_category_without_two_products(agent):
    answer = await reply(agent, "护具里除了护踝和护腕还有别的吗")
    assert {"79", "39"} <= prices(answer) and not {"99", "49"} & prices(answer), answer


async def test_the_rest_of_a_category_without_a_kind(agent):
    answer = await reply(agent, "健身的东西，垫子不考虑，其他的都多少钱")
    assert "199元" not in answer and "129元" in answer, answer   # not the mat; the kettlebell


@pytest.mark.parametrize(("first", "correction", "right", "wrong"), [
    ("泳镜多少钱", "说错了 我问的是泳帽", "49元", "129元"),
    ("哑铃还有货吗", "不是哑铃 是壶铃", "库存30", "库存20"),
    ("跑步鞋多少钱", "我是说越野跑鞋", "899元", "500元"),
])
async def test_a_correction_asks_the_earlier_question_of_the_product_it_names(agent, first, correction, right, wrong):
    answers = await converse(agent, [first, correction])
    assert right in answers[1] and wrong not in answers[1], answers


@pytest.mark.parametrize(("text", "ruled"), [("健身的东西里跳绳我已经有了，其他的呢", {"024"}),
                                             ("护具里刨去护膝还有啥", {"030"}),
                                             ("游泳的泳帽用不上 还有别的吗", {"042"})])
def test_having_it_already_or_leaving_it_aside_rules_it_out(vocabulary, text, ruled):
    asked = read(text, vocabulary)
    assert asked.ruled_out.products == ruled and asked.listing and not asked.products


def test_a_marker_is_no_goods(vocabulary):
    asked = read("李宁的pass 看看别的", vocabulary)
    assert asked.ruled_out.brands == {"李宁"} and asked.goods == ()


async def test_the_others_of_those_shown(agent):
    answers = await converse(agent, ["护具有哪些", "护膝跟护踝我都有了，剩下的多少钱"])
    assert {"49", "39"} <= prices(answers[1]) and not {"79", "99"} & prices(answers[1]), answers


def test_having_tried_it_rules_it_out(vocabulary):
    asked = read("阿迪那双跑鞋穿过不合脚 别的跑鞋呢", vocabulary)
    assert asked.ruled_out.brands == {"阿迪达斯"} and asked.brand is None and asked.listing


def test_a_brand_naming_the_product_ruled_out_is_neither_ruled_out_nor_a_filter(vocabulary):
    asked = read("配件里阿迪那个健身包不要 别的呢", vocabulary)
    assert asked.ruled_out.products == {"040"} and asked.ruled_out.naming == {"阿迪达斯"}
    assert not asked.ruled_out.brands and asked.brand is None and asked.category == "配件"


def test_nothing_is_ruled_out_when_nothing_else_is_asked(vocabulary):
    assert read("帐篷699太贵啦 能便宜点吗", vocabulary, labels=frozenset({"bargain"})).products == ("050",)
    assert read("羽毛球拍我自己有了 羽毛球类的其他东西呢", vocabulary).ruled_out.products == {"003"}


@pytest.mark.parametrize("text", ["不好意思问岔了，我想问泳帽", "我理解错了 是护踝"])
def test_more_ways_to_correct(text):
    assert corrects(text)


@pytest.mark.parametrize(("first", "correction", "right", "wrong"), [
    ("羽毛球多少钱", "不对 我要的是拍子", "300元", "98元"),        # a kind alone: the one of the shown product's line
    ("运动水壶多少钱", "搞错了 我问的是能保温的那种", "199元", "库存200"),   # described: searched, not the one shown
])
async def test_a_correction_by_a_kind_or_a_description(agent, first, correction, right, wrong):
    answers = await converse(agent, [first, correction])
    assert right in answers[1] and wrong not in answers[1], answers


async def test_a_product_owned_and_named_again_leaves_the_rest_of_its_kind(agent):
    answer = await reply(agent, "家里有个斯伯丁的篮球了 想再买个别的篮球 有啥")
    assert "169元" in answer and "200元" not in answer and "699元" not in answer, answer


def test_wearing_it_already_rules_it_out(vocabulary):
    assert read("李宁那双篮球鞋我已经穿着了 别的鞋呢", vocabulary).ruled_out.products == {"008"}


@pytest.mark.parametrize(("first", "correction", "right", "wrong"), [
    ("篮球多少钱", "不对 我说的是在水泥地上打的那种耐磨的", "169元", "200元"),
    ("足球还有货吗", "不是这个 我说的是给小孩练的那个小一号的", "库存80", "库存50"),
])
async def test_a_correction_that_describes_one_of_the_shown_products_line(agent, first, correction, right, wrong):
    answers = await converse(agent, [first, correction])
    assert right in answers[1] and wrong not in answers[1] and "没有销售" not in answers[1], answers


def test_one_size_up_or_down_is_no_size():
    from agent.sizes import sizes
    assert not sizes("要小一号的") and not sizes("大一码的有吗") and sizes("42码的有吗")
