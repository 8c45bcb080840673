"""Sizes, packs and lengths inside a cited product's own name (斯伯丁5号儿童篮球, 儿童足球（4号球）, 护腕（2只装）)
are its name for both validators — the customer's (guardrails.validator) and the operators' report checker —
while a wrong figure beside the name is still blocked."""

from __future__ import annotations

from decimal import Decimal as D

import pytest

from db.aggregates import Aggregate, AggregateRow, Dimension, Metric, OrderQuery
from db.facts import Product
from guardrails.ledger import EvidenceLedger
from guardrails.reports import check_report
from guardrails.validator import validate

NAMES = ["斯伯丁5号儿童篮球", "儿童足球（4号球）", "护腕（2只装）", "跳绳 3米", "羽毛球（12只装）"]


def _product(name: str) -> tuple[EvidenceLedger, list[str]]:
    ledger = EvidenceLedger()
    return ledger, [ledger.add_product(Product("901", name, price=D(129), stock_quantity=7))]


def _units(name: str) -> tuple[EvidenceLedger, list[str]]:
    ledger = EvidenceLedger()
    agg = Aggregate(OrderQuery(Metric.UNITS, group_by=Dimension.PRODUCT), (AggregateRow(name, D(12), 5, D("40.0")),),
                    D(30), 11)
    return ledger, [ledger.add_aggregate(agg)]


@pytest.mark.parametrize("name", NAMES)
def test_a_name_with_figures_in_a_shop_answer(name):
    ledger, cites = _product(name)
    for answer in [f"{name}售价129元。", f"有的，{name}售价129元，库存7件。"]:
        assert validate(f"有{name}吗", answer, cites, ledger).ok, answer
    assert not validate(f"有{name}吗", f"{name}售价128元。", cites, ledger).ok
    assert not validate(f"有{name}吗", f"{name}库存9件。", cites, ledger).ok


@pytest.mark.parametrize("name", NAMES)
def test_a_name_with_figures_in_a_report(name):
    ledger, cites = _units(name)
    for answer in [f"{name}：12件（5单，占40.0%）", f"卖得最好的是{name}，卖出12件。"]:
        assert check_report(answer, cites, ledger).ok, answer
    assert check_report(f"{name}：13件", cites, ledger).codes == ["UNVERIFIED_QUANTITY"]
