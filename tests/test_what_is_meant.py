"""A price stated to be confirmed (网球拍是799来着？), a kind written after a sport's name (乒乓球…成品拍), and which
goods to wear asked without a size: what the customer means, not what the words alone say. Phrasings here are our
own; the frozen held-out split is test11 (tests/test_shopping.py)."""

from __future__ import annotations

import pytest

from agent.intent import Ask, read
from tests.test_understanding import reply


@pytest.mark.parametrize(("text", "price"), [("跳绳是30块吧", "39元"), ("泳帽49对吧", "49元"),
                                             ("护腕好像是59来着", "49元"), ("羽毛球拍我记得300是吗", "300元")])
async def test_a_price_stated_to_be_confirmed_is_answered_with_the_shops(agent, text, price):
    answer = await reply(agent, text)
    assert price in answer and "议价" not in answer and "抱歉" not in answer and "不够" not in answer, answer


def test_a_stated_price_is_no_count_and_no_budget(vocabulary):
    asked = read("壶铃99对吧", vocabulary, labels=frozenset({"complaint"}))
    assert asked.quantity is None and asked.max_price is None and asked.asks == {Ask.PRICE}


@pytest.mark.parametrize(("text", "product"), [("羽毛球刚学 想买支拍子", "003"), ("乒乓球入门 买个成品拍", "011"),
                                               ("足球踢了三年 想换双鞋", "053")])
def test_a_kind_written_after_a_sports_name_means_that_sports_goods(vocabulary, text, product):
    assert read(text, vocabulary).products == (product,)


@pytest.mark.parametrize(("text", "product"), [("乒乓球拍多少钱", "011"), ("乒乓球多少钱", "012"),
                                               ("网球和网球拍各一个", None)])
def test_names_written_whole_are_read_as_before(vocabulary, text, product):
    products = read(text, vocabulary).products
    assert products == ((product,) if product else ("014", "013"))


def test_which_shoes_to_wear_asks_no_size_guide(vocabulary):
    assert Ask.POLICY not in read("平时带瑜伽课 穿什么鞋合适", vocabulary, labels=frozenset({"policy:sizing"})).asks
    assert Ask.POLICY in read("脚长260穿多大码", vocabulary, labels=frozenset({"policy:sizing"})).asks


@pytest.mark.parametrize(("text", "high"), [("预算就180", 180), ("预算只有两百", 200), ("预算180", 180)])
def test_a_budget_said_with_a_word_between(text, high):
    from agent.counts import budget
    assert budget(text)[0] == high


async def test_whom_it_is_for_qualifies_the_product_in_focus(agent):
    from tests.test_understanding import converse
    answers = await converse(agent, ["足球多少钱", "给我家孩子买的，他才10岁"])
    assert "青少年训练足球" in answers[1] and "89元" in answers[1], answers
