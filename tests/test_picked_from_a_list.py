"""An item picked from a list just shown by its brand or by what it is for (李宁那个, 手腕上戴的那个): the one it
describes, not the first shown. Phrasings here are our own; the frozen held-out split is test15
(tests/test_shopping.py)."""

from __future__ import annotations

import pytest

from agent.pointers import pointer_description
from tests.test_understanding import converse


@pytest.mark.parametrize(("listing", "pick", "fact", "not_fact"), [
    ("跑鞋都有哪几款", "阿迪达斯那双多少钱", "500元", "759元"),           # by brand, among running shoes
    ("服饰类都卖啥", "李宁那个多少钱", "49元", "99元"),                   # by brand, the socks
    ("护具有哪些", "戴在手腕上的那个多少钱", "49元", "79元"),              # by what it is for, the wristband
    ("配件有什么", "能保温的那个还有多少", "库存40", "库存60"),            # by what it does, the insulated cup
])
async def test_a_pointer_that_describes_picks_that_item(agent, listing, pick, fact, not_fact):
    answers = await converse(agent, [listing, pick])
    assert fact in answers[1] and not_fact not in answers[1], answers


async def test_a_kind_pointer_among_several_of_that_kind_picks_by_brand(agent):
    answers = await converse(agent, ["衣服裤子有哪些", "安踏那条裤子什么价"])
    assert "89元" in answers[1] and "329元" not in answers[1], answers


async def test_a_pointer_that_says_nothing_of_which_means_the_first_shown(agent):
    answers = await converse(agent, ["配件有什么", "这个多少钱"])
    assert "运动水壶" in answers[1] and "49元" in answers[1], answers


@pytest.mark.parametrize(("text", "described"), [("防崴脚那个还有多少库存", "防崴脚"), ("门将戴的那副多少钱", "门将戴的"),
                                                 ("这个多少钱", ""), ("大的那个买五个多少钱", ""), ("那就它吧，多少钱", "")])
def test_what_a_pointer_says_of_the_item(text, described):
    assert pointer_description(text) == described
