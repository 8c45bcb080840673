"""Normalization of shop figures, with the known traps pinned and round-trip properties."""

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from guardrails.figures import CLOCK, DISCOUNT, DURATION, MONEY, QUANTITY, STOCK, find_mentions, parse_number
from tests.fakes.renderings import discount_forms, money_forms

D = Decimal


def figures(text):
    return [(m.kind, m.value) for m in find_mentions(text)]


@pytest.mark.parametrize(("text", "expected"), [
    ("120元", [(MONEY, D(120))]),
    ("¥120.00", [(MONEY, D(120))]),
    ("￥１２０", [(MONEY, D(120))]),
    ("一百二十元", [(MONEY, D(120))]),
    ("两百块", [(MONEY, D(200))]),
    ("三百五十九点九元", [(MONEY, D("359.9"))]),
    ("壹佰贰拾元", [(MONEY, D(120))]),
    ("十块五", [(MONEY, D("10.5"))]),
    ("两块半", [(MONEY, D("2.5"))]),
    ("1.2万元", [(MONEY, D(12000))]),
    ("1,200元", [(MONEY, D(1200))]),
    ("120 RMB", [(MONEY, D(120))]),
    ("CNY120", [(MONEY, D(120))]),
    ("人民币120元", [(MONEY, D(120))]),
    ("两千块", [(MONEY, D(2000))]),
    ("零点一零元", [(MONEY, D("0.1"))]),
    ("两三百元", [(MONEY, None)]),          # a range: never 23
    ("切成两半", []),                        # not a number at all
    ("9折", [(DISCOUNT, D("0.9"))]),
    ("九折", [(DISCOUNT, D("0.9"))]),
    ("95折", [(DISCOUNT, D("0.95"))]),
    ("九五折", [(DISCOUNT, D("0.95"))]),
    ("8.5折", [(DISCOUNT, D("0.85"))]),
    ("半价", [(DISCOUNT, D("0.5"))]),
    ("90%的价格", [(DISCOUNT, D("0.9"))]),
    ("优惠10%", [(DISCOUNT, D("0.9"))]),
    ("100%纯棉", []),                        # a percentage that is no discount
    ("库存50件", [(STOCK, D(50))]),
    ("还剩二十双", [(STOCK, D(20))]),
    ("买两支", [(QUANTITY, D(2))]),
    ("3个月质保", [(DURATION, D(2160))]),   # a policy term, in hours
    ("签收后7天内", [(DURATION, D(168))]),
    ("付款后48小时内发货", [(DURATION, D(48))]),
    ("一般2到3天送达", [(DURATION, D(48)), (DURATION, D(72))]),
    ("每天9:00到21:00", [(CLOCK, D(540)), (CLOCK, D(1260))]),
    ("早上九点到晚上九点半", [(CLOCK, D(540)), (CLOCK, D(1290))]),
    ("再便宜一点", []),                      # 一点 is no time of day
    ("满200包邮", [(MONEY, D(200))]),         # 包 of 包邮 is no measure word
    ("1,999.00元", [(MONEY, D(1999))]),
    ("满500减100", [(MONEY, D(500)), (MONEY, D(100))]),
    ("买三送一", [(QUANTITY, D(3)), (QUANTITY, D(1))]),
    ("单笔满300元篮球半价", [(MONEY, D(300)), (DISCOUNT, D("0.5"))]),
])
def test_known_forms_and_traps(text, expected):
    assert figures(text) == expected


def test_parse_number_rejects_junk():
    assert parse_number("两三") is None
    assert parse_number("") is None
    assert parse_number("一万二") == D(12000)


cents = st.decimals(min_value=D("0.01"), max_value=D("99999999.99"), places=2, allow_nan=False,
                    allow_infinity=False)


@given(cents)
def test_every_money_form_round_trips(value):
    for form, text in money_forms(value).items():
        found = find_mentions(f"总价{text}。")
        assert [(m.kind, m.value) for m in found] == [(MONEY, value)], (form, text)


@given(st.sampled_from([D("0.5"), D("0.6"), D("0.7"), D("0.75"), D("0.8"), D("0.85"), D("0.88"), D("0.9"),
                        D("0.95"), D("0.98")]))
def test_every_discount_form_round_trips(multiplier):
    for form, text in discount_forms(multiplier).items():
        found = find_mentions(f"现在{text}")
        assert [(m.kind, m.value) for m in found] == [(DISCOUNT, multiplier)], (form, text)
