"""A customer who has not said what they want (有什么推荐的, 随便看看): what the shop sells is offered, by
category from SQL, and a question narrows it — never a product guessed from the words; the next message picks
a category, a sport or tells a need. Phrasings here are our own; the frozen held-out split is test9's open
requests (tests/test_shopping.py)."""

from __future__ import annotations

import re

import pytest

from agent import answers
from agent.follow_ups import names_only
from agent.intent import Ask, elliptical, read, refers_back
from agent.mentions import tells_something
from agent.tools import CALLABLE_TOOLS, tool_schemas
from db.catalog import list_categories
from db.facts import Category, CategoryList
from tests.test_understanding import converse, reply


async def test_the_categories_are_counted_by_sql_the_fullest_first(conn):
    listed = (await list_categories(conn)).categories
    async with conn.execute("SELECT category, COUNT(*) FROM products GROUP BY category") as cur:
        counts = {name: n for name, n in await cur.fetchall()}
    assert {c.name: c.products for c in listed} == counts
    assert [c.products for c in listed] == sorted((c.products for c in listed), reverse=True)
    assert all(c.name.strip() for c in listed)


def test_the_tool_is_offered_to_any_model_with_no_arguments():
    schema = {s["function"]["name"]: s["function"]["parameters"] for s in tool_schemas(CALLABLE_TOOLS)}
    assert schema["list_categories"]["properties"] == {}


def test_a_long_category_list_is_cut_and_none_asks_which_product():
    many = CategoryList(tuple(Category(f"类{k}", 1) for k in range(answers.CATEGORIES_OFFERED + 3)))
    text = answers.browse_answer(many)
    assert f"类{answers.CATEGORIES_OFFERED - 1}等" in text and f"类{answers.CATEGORIES_OFFERED}" not in text
    assert answers.browse_answer(CategoryList(())) == answers.CLARIFY


@pytest.mark.parametrize("text", ["有没有好东西给推荐几个", "第一次来不知道买什么", "你们这都有哪些商品啊",
                                  "想逛逛你们的店", "在吗 想随便看看"])
async def test_an_open_request_is_offered_the_shops_categories_and_no_product(agent, conn, text):
    answer = await reply(agent, text)
    assert "元" not in answer and "没有销售" not in answer, answer
    assert all(c.name in answer for c in (await list_categories(conn)).categories), answer
    assert answers.BROWSE_QUESTION in answer


async def test_a_sport_picked_after_the_categories_lists_its_goods(agent):
    _, listed = await converse(agent, ["你们这都有哪些商品啊", "打乒乓球用的"])
    assert {"129", "35"} <= set(re.findall(r"\d+(?=元)", listed)), listed   # the bat and the balls


async def test_a_category_named_after_the_categories_is_listed_though_a_product_bears_its_name(agent):
    _, listed = await converse(agent, ["有没有好东西给推荐几个", "篮球相关的"])
    assert {"200", "169"} <= set(re.findall(r"\d+(?=元)", listed)), listed   # 篮球 and 室外耐磨篮球


async def test_a_need_told_after_the_categories_is_searched_for(agent):
    offered, found = await converse(agent, ["第一次来不知道买什么", "周末想去爬山"])
    assert answers.BROWSE_QUESTION in offered
    assert answers.BROWSE_QUESTION not in found and re.search(r"\d+元", found), found


@pytest.mark.parametrize(("text", "tells"), [
    ("有啥好东西推荐一下", False), ("想看看你们家的商品", False), ("我第一次来不知道买啥", False),
    ("早上好，你们这边主要卖哪些东西", False), ("最近什么最火", False), ("你们店有啥", False),
    ("周末想去爬山", True), ("给我老婆挑个礼物", True), ("晚上跑步怕被车撞", True), ("膝盖不好想跑步", True),
    ("萨洛蒙那双越野的多少钱", True),   # a brand or place jieba tags as a place name tells something
    ("小哥哥 有啥好东西推荐一下不", False), ("美女 你家有哪些品类", False), ("亲 给我老婆挑个礼物", True)])
def test_shop_talk_tells_nothing_a_need_or_a_name_tells_something(text, tells):
    assert tells_something(text) is tells


def test_a_long_message_of_shop_talk_is_no_described_need(vocabulary):
    asked = read("哈喽，我第一次来你们家，想看看都有啥好东西", vocabulary, labels=frozenset({"greeting", "listing"}))
    assert not asked.describes_need and asked.browsing


@pytest.mark.parametrize(("text", "category"), [("踢足球的有啥", "足球"), ("打网球用的有吗", "网球"),
                                                ("打羽毛球需要的东西都卖啥", "羽毛球")])
def test_a_sport_played_and_nothing_more_asks_for_its_categorys_goods(vocabulary, text, category):
    asked = read(text, vocabulary, labels=frozenset({"listing"}))
    assert asked.category == category and not asked.products and not asked.goods and asked.listing


def test_a_sport_played_in_a_need_told_is_the_needs_setting_not_a_category(vocabulary):
    asked = read("我打网球老是手腕疼 有啥能护一下的", vocabulary, labels=frozenset({"listing"}))
    assert asked.category is None and asked.describes_need


def test_emoji_say_nothing_of_what_is_asked(vocabulary):
    plain = read("轮滑鞋有吗", vocabulary, labels=frozenset({"attribute"}))
    with_emoji = read("轮滑鞋有吗🛼✨", vocabulary, labels=frozenset({"attribute"}))
    assert Ask.STOCK in plain.asks and with_emoji.asks == plain.asks and with_emoji.products == plain.products


def test_every_reader_of_a_message_reads_it_without_emoji(vocabulary):
    """The readers that decide whether a message leans on the conversation read the same text `read` does."""
    assert refers_back("多少钱😊") and refers_back("多少钱")
    assert elliptical("那篮球呢🏀") and elliptical("那篮球呢")
    assert names_only("羽毛球网架👍", vocabulary) and names_only("羽毛球网架", vocabulary)
    assert not refers_back("篮球多少钱😊")


def test_goods_asked_for_alone_are_no_chit_chat_whatever_the_router_read(vocabulary):
    assert Ask.OFF_TOPIC not in read("冲浪板有吗", vocabulary, labels=frozenset({"off_topic"})).asks
    assert read("你有女朋友吗", vocabulary, labels=frozenset({"off_topic"})).asks == {Ask.OFF_TOPIC}


def test_a_budget_with_which_one_lists_the_goods_within_it(vocabulary):
    asked = read("300到500的球拍有哪个", vocabulary, labels=frozenset({"compare"}))
    assert Ask.LIST in asked.asks and Ask.COMPARE not in asked.asks


@pytest.mark.parametrize("text", ["我想买点东西", "想买点好东西", "有什么新品", "有啥爆款"])
def test_the_words_of_browsing_name_no_goods(text):
    from agent.mentions import goods_phrases
    assert goods_phrases(text, []) == []


@pytest.mark.parametrize("text", ["客服在吗？推荐推荐", "早上好 我就随便逛逛", "hello 你们家主打什么"])
async def test_a_greeting_with_goods_asked_for_offers_what_the_shop_sells(agent, text):
    answer = await reply(agent, text)
    assert "足球" in answer and "元" not in answer and "没有销售" not in answer, answer


def test_sports_goods_in_general_tell_nothing():
    assert not tells_something("想添点运动装备 还没想好买啥")
