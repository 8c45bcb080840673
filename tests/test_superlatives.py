"""The first of an order (最便宜的, 最贵的, 库存最多的) of a category, a brand, a kind or the whole shop, and which kinds
a name names (足球有哪几款): the catalog in that order by SQL, the one at the top stated. Phrasings here are our own;
the frozen held-out split is test11's superlatives (tests/test_shopping.py)."""

from __future__ import annotations

import re

import pytest

from agent.intent import read
from tests.test_understanding import converse, reply


def prices(text):
    return set(re.findall(r"(?<![\d.])(\d+)元", text))


async def test_the_fullest_of_a_category_by_its_stock(agent):
    answer = await reply(agent, "游泳的东西里哪款库存最多")
    assert "硅胶泳帽" in answer and "库存90" in answer and "库存最多" in answer, answer


@pytest.mark.parametrize(("text", "top", "price"), [("全店最便宜的是啥", "最便宜", "35"),
                                                     ("你们家最贵的商品多少钱", "最贵", "1999")])
async def test_the_first_of_the_whole_shop(agent, text, top, price):
    answer = await reply(agent, text)
    assert top in answer and prices(answer) == {price}, answer


async def test_the_dearest_of_a_brand_after_another_product(agent):
    answers = await converse(agent, ["护膝多少钱", "李宁的东西里最贵的是哪个"])
    assert "篮球鞋" in answers[1] and "699元" in answers[1] and "79元" not in answers[1], answers


@pytest.mark.parametrize("text", ["足球有哪几款", "足球你们都有哪些"])
async def test_the_kinds_a_name_names_are_listed(agent, text):
    answer = await reply(agent, text)
    assert {"120", "89", "159"} <= prices(answer) and "699" not in prices(answer), answer


def test_an_attribute_of_a_name_is_no_list_of_kinds(vocabulary):
    assert read("跑步鞋有哪些颜色", vocabulary).products == ("004",)
    assert read("篮球装备有哪些", vocabulary).category == "篮球"   # the category, not the balls


async def test_which_is_dearest_of_those_shown(agent):
    answers = await converse(agent, ["跑鞋有哪些", "哪个最贵"])
    assert "越野跑鞋" in answers[1] and "899元" in answers[1] and "500元" not in answers[1], answers


async def test_which_is_fullest_of_those_shown(agent):
    answers = await converse(agent, ["游泳的东西有哪些", "哪个库存最多"])
    assert "硅胶泳帽" in answers[1] and "库存90" in answers[1], answers


async def test_the_fullest_of_a_category_in_other_words(agent):
    answer = await reply(agent, "健身的东西哪个存货最充足")
    assert "计数跳绳" in answer and "库存150" in answer, answer


async def test_a_budget_after_a_list_narrows_what_was_shown(agent):
    answers = await converse(agent, ["李宁的东西都有什么", "100以内的就行"])
    assert {"39", "79", "49"} <= prices(answers[1]) and not {"699", "229"} & prices(answers[1]), answers


async def test_a_category_after_a_list_keeps_those_shown_of_it(agent):
    answers = await converse(agent, ["耐克的东西有哪些", "只看护具类的"])
    assert {"49", "39"} <= prices(answers[1]) and not {"120", "699"} & prices(answers[1]), answers


def test_a_pointer_with_a_kind_is_no_thing_not_sold(vocabulary):
    assert read("有没有便宜点的篮球 最便宜的那个球多少钱", vocabulary).near_miss == ""


@pytest.mark.parametrize(("text", "top"), [("护具那块最实惠的一样是啥", "39元"), ("你们这最贵的玩意儿是啥", "1999元")])
async def test_more_words_for_the_first_of_an_order(agent, text, top):
    answer = await reply(agent, text)
    assert top in answer and len(re.findall(r"售价", answer)) == 1, answer


def test_how_to_buy_most_cheaply_asks_a_deal_not_an_order(vocabulary):
    assert read("羽毛球拍怎么买最实惠", vocabulary).sort == "relevance"


async def test_which_is_lowest_priced_of_those_shown(agent):
    answers = await converse(agent, ["护具类有哪些", "就这几个 哪个价钱最低"])
    assert "运动头带" in answers[1] and "39元" in answers[1], answers


def test_goods_given_as_examples_mean_their_category(vocabulary):
    asked = read("护膝护腕这类的都有啥", vocabulary)
    assert asked.category == "护具" and asked.products == () and asked.listing
    assert read("护膝多少钱", vocabulary).products == ("030",)


async def test_examples_of_a_category_with_a_budget(agent):
    answer = await reply(agent, "衣服裤子之类的 150以内有啥")
    assert {"99", "89", "49"} <= set(re.findall(r"(?<![\d.])(\d+)元", answer)) and "329元" not in answer, answer


async def test_the_fullest_of_a_category_named_after_another_product(agent):
    answers = await converse(agent, ["足球有哪几款", "护具哪款货最多"])
    assert "运动头带" in answers[1] and "库存130" in answers[1], answers
