"""The shop's metric definitions (db/metrics.py), each figure recomputed here by our own SQL over the demo
orders with the status list written out in this file; the README's /ask examples answered through the
analyst (what /ask and `bot.py ask` call) with figures equal to that SQL and the statuses stated; the
report checker refusing one metric's figure under another's name."""

from __future__ import annotations

import re
import sqlite3
from datetime import date
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import pytest

from agent.analytics.analyst import Analyst, read_question
from db.aggregates import Dimension, OrderAnalytics, metric_query, query_orders
from db.metrics import MetricKey
from db.pricing import yuan
from guardrails.ledger import EvidenceLedger
from guardrails.reports import check_report
from tests.fakes.demo import DEMO_DAY

D = date
ALL = ("待付款", "待发货", "运输中", "已签收", "已取消", "已退款")
PAID = ("待发货", "运输中", "已签收")
OCTOBER = (D(2026, 10, 1), D(2026, 10, 31))
README = Path(__file__).resolve().parent.parent / "README.md"

# what each named metric means, written independently of db/metrics.py: (measure, statuses)
MEANING = {
    MetricKey.SALES: ("sum", PAID), MetricKey.AOV: ("avg", PAID), MetricKey.ORDERS: ("count", PAID),
    MetricKey.UNITS: ("units", PAID), MetricKey.LARGEST: ("max", PAID), MetricKey.SMALLEST: ("min", PAID),
    MetricKey.PLACED: ("sum", ALL), MetricKey.PLACED_COUNT: ("count", ALL), MetricKey.REFUNDS: ("sum", ("已退款",)),
    MetricKey.REFUND_COUNT: ("count", ("已退款",)), MetricKey.CANCELLED: ("count", ("已取消",)),
}


def sql_figure(db: Path, measure: str, statuses: tuple[str, ...], start: date, end: date, **where) -> Decimal:
    """Our own query: the matching rows read one by one, the figure computed in Decimal here."""
    clauses = ["o.created_at >= ?", "o.created_at < date(?, '+1 day')",
               f"o.status IN ({','.join('?' * len(statuses))})"]
    args: list[object] = [start.isoformat(), end.isoformat(), *statuses]
    for column, value in where.items():
        clauses.append(f"{'p' if column == 'category' else 'o'}.{column} = ?")
        args.append(value)
    with sqlite3.connect(db) as shop:
        rows = shop.execute("SELECT o.total, o.quantity FROM orders o JOIN products p ON p.product_id = o.product_id "
                            f"WHERE {' AND '.join(clauses)}", args).fetchall()
    totals = [Decimal(t) for t, _ in rows]
    if measure == "count":
        return Decimal(len(rows))
    if measure == "units":
        return Decimal(sum(q for _, q in rows))
    if not rows:
        return Decimal("0.00")
    if measure == "sum":
        return sum(totals, Decimal(0))
    if measure == "avg":
        return (sum(totals, Decimal(0)) / len(totals)).quantize(Decimal("0.01"), ROUND_HALF_UP)
    return max(totals) if measure == "max" else min(totals)


@pytest.mark.parametrize("key", list(MetricKey))
async def test_each_definition_equals_our_own_sql(conn, demo_db, key):
    measure, statuses = MEANING[key]
    result = await query_orders(conn, metric_query(key, start=OCTOBER[0], end=OCTOBER[1]))
    assert result.whole == sql_figure(demo_db, measure, statuses, *OCTOBER)
    assert set(result.statuses or ALL) == set(statuses)


async def test_paid_is_not_placed(conn, demo_db):
    """The issue's case: 销售额 counted cancelled and unpaid orders. It differs from 下单额 in the demo month."""
    sales = await query_orders(conn, metric_query(MetricKey.SALES, start=OCTOBER[0], end=OCTOBER[1]))
    placed = await query_orders(conn, metric_query(MetricKey.PLACED, start=OCTOBER[0], end=OCTOBER[1]))
    assert sales.whole < placed.whole and sales.orders < placed.orders
    named = await query_orders(conn, metric_query(MetricKey.SALES, ("已签收", "运输中"), start=OCTOBER[0], end=OCTOBER[1]))
    assert named.whole == sql_figure(demo_db, "sum", ("已签收", "运输中"), *OCTOBER)


async def test_sales_of_unpaid_orders_is_not_called_sales(conn, demo_db):
    """An operator may name any statuses; a sum over orders not paid is stated as 订单金额, never 销售额."""
    report = await Analyst(OrderAnalytics(conn), lambda: DEMO_DAY).ask("上个月待付款订单的销售额")
    unpaid = sql_figure(demo_db, "sum", ("待付款",), *OCTOBER)
    assert report.status == "grounded" and "按待付款订单统计" in report.answer
    assert f"订单金额：{unpaid}元" in report.answer and "销售额" not in report.answer
    ledger = EvidenceLedger()
    unpaid_sum = await query_orders(conn, metric_query(MetricKey.SALES, ("待付款",), start=OCTOBER[0], end=OCTOBER[1]))
    cited = [ledger.add_aggregate(unpaid_sum)]
    scope = "按待付款订单统计，2026-10-01 至 2026-10-31："
    assert check_report(f"{scope}销售额{unpaid_sum.whole}元", cited, ledger).codes == ["WRONG_ROLE"]
    assert check_report(f"{scope}订单金额{unpaid_sum.whole}元", cited, ledger).ok
    signed = await Analyst(OrderAnalytics(conn), lambda: DEMO_DAY).ask("上个月已签收订单的销售额")
    assert f"销售额：{sql_figure(demo_db, 'sum', ('已签收',), *OCTOBER)}元" in signed.answer


def test_reading_metric_names_and_statuses():
    ask = read_question("上个月销售额和退款额分别多少", DEMO_DAY)
    assert ask.metrics == (MetricKey.SALES, MetricKey.REFUNDS) and ask.statuses == ()   # 退款 is the metric's
    ask = read_question("上个月下单额，取消了多少单", DEMO_DAY)
    assert ask.metrics == (MetricKey.PLACED, MetricKey.CANCELLED)
    ask = read_question("本月已签收和运输中的订单销售额", DEMO_DAY)
    assert ask.metrics == (MetricKey.SALES,) and set(ask.statuses) == {"已签收", "运输中"}
    assert read_question("本月已付款订单的客单价", DEMO_DAY).statuses == PAID
    assert read_question("本月待付款订单有多少单", DEMO_DAY).statuses == ("待付款",)


def _readme_examples() -> list[str]:
    text = README.read_text(encoding="utf-8")
    return re.findall(r"`/ask ([^`<>]+)`", text)


def test_the_readme_has_its_examples():
    assert len(_readme_examples()) >= 5


@pytest.mark.parametrize("question", _readme_examples())
async def test_every_readme_example_answers_and_states_what_it_counted(conn, question):
    report = await Analyst(OrderAnalytics(conn), lambda: DEMO_DAY).ask(question)
    assert report.status == "grounded" and "暂时无法核实" not in report.answer, report.answer
    assert re.search("按.*订单.*统计", report.answer) and re.search(r"\d{4}-\d{2}-\d{2} 至 \d{4}-\d{2}-\d{2}",
                                                                     report.answer), report.answer


async def test_the_readme_figures_equal_our_sql(conn, demo_db):
    analyst = Analyst(OrderAnalytics(conn), lambda: DEMO_DAY)

    signed = await analyst.ask("上个月已签收的订单一共多少单，多少钱")
    assert "按已签收订单统计" in signed.answer
    assert f"订单数：{sql_figure(demo_db, 'count', ('已签收',), *OCTOBER)}单" in signed.answer
    assert f"销售额：{sql_figure(demo_db, 'sum', ('已签收',), *OCTOBER)}元" in signed.answer

    november = (D(2026, 11, 1), DEMO_DAY)
    running = await analyst.ask("本月跑步品类的平均客单价")
    assert "按已付款订单（待发货、运输中、已签收）统计" in running.answer
    assert f"客单价：{sql_figure(demo_db, 'avg', PAID, *november, category='跑步')}元" in running.answer
    # before: every placed order was averaged (the unpaid and cancelled ones too); the figures differ
    assert sql_figure(demo_db, "avg", ALL, *november, category="跑步") != \
        sql_figure(demo_db, "avg", PAID, *november, category="跑步")

    week = (D(2026, 11, 23), DEMO_DAY)
    regions = await analyst.ask("最近7天各地区销售额，做成饼图")
    for region in ("华东", "华南", "华北", "华中", "西南", "西北", "东北"):
        assert f"{region}：{sql_figure(demo_db, 'sum', PAID, *week, region=region)}元" in regions.answer
    assert regions.chart.startswith(b"\x89PNG")

    months = await analyst.ask("今年每个月的订单数 折线图")
    for month in range(1, 12):
        start = D(2026, month, 1)
        end = min(D(2026, month + 1, 1) if month < 12 else D(2027, 1, 1), D(2026, 11, 30))
        count = sql_figure(demo_db, "count", PAID, start, D.fromordinal(end.toordinal() - 1))
        assert f"2026-{month:02d}：{count}单" in months.answer


async def test_the_best_sellers_of_double_eleven_name_pack_products(conn, demo_db):
    """卖得最好 is units sold; product names like 羽毛球（12只装）are names, not claims the checker refuses."""
    report = await Analyst(OrderAnalytics(conn), lambda: DEMO_DAY).ask("双十一卖得最好的前5个商品")
    with sqlite3.connect(demo_db) as shop:
        units = shop.execute(
            "SELECT p.product_name, SUM(o.quantity) FROM orders o JOIN products p ON p.product_id = o.product_id "
            "WHERE substr(o.created_at, 1, 10) = '2026-11-11' AND o.status IN ('待发货', '运输中', '已签收') "
            "GROUP BY p.product_name").fetchall()
    top = sorted(units, key=lambda row: (-row[1], row[0]))[:5]
    assert report.status == "grounded", report.answer
    for name, sold in top:
        assert f"{name}：{sold}件" in report.answer
    assert any(re.search(r"\d+(?:只|双|个)装|\d+号", name) for name, _ in top)   # a pack or size in a name


async def test_a_customers_spending_is_the_operators_sales_definition(conn, demo_db):
    analyst = Analyst(OrderAnalytics(conn), lambda: DEMO_DAY)
    mine = await analyst.for_customer("我这个月花了多少钱", "console")
    paid = sql_figure(demo_db, "sum", PAID, D(2026, 11, 1), DEMO_DAY, user_id="console")
    assert f"实付合计{yuan(paid)}" in mine.answer and mine.status == "grounded"
    operator = await query_orders(conn, metric_query(MetricKey.SALES, start=D(2026, 11, 1), end=DEMO_DAY,
                                                     user_id="console"))
    assert operator.whole == paid


async def test_a_figure_under_another_metrics_name_is_wrong_role(conn):
    ledger = EvidenceLedger()
    sales = await query_orders(conn, metric_query(MetricKey.SALES, start=OCTOBER[0], end=OCTOBER[1]))
    placed = await query_orders(conn, metric_query(MetricKey.PLACED, start=OCTOBER[0], end=OCTOBER[1]))
    cancelled = await query_orders(conn, metric_query(MetricKey.CANCELLED, start=OCTOBER[0], end=OCTOBER[1]))
    ids = [ledger.add_aggregate(a) for a in (sales, placed, cancelled)]
    scope = "2026-10-01 至 2026-10-31，按已付款订单统计，全部订单、已取消订单："

    def codes(body: str, require_scope: bool = True) -> list[str]:
        return check_report(scope + body, ids, ledger, require_scope).codes

    assert codes(f"销售额{sales.whole}元，下单额{placed.whole}元，取消单数{cancelled.whole}单。") == []
    assert codes(f"销售额{placed.whole}元。") == ["WRONG_ROLE"]            # a 下单额 figure called 销售额
    assert codes(f"下单额{sales.whole}元。") == ["WRONG_ROLE"]
    assert codes(f"成交额{placed.whole}元。") == ["WRONG_ROLE"]
    assert codes(f"一共{placed.whole}元。") == []                          # a generic word names no metric
    bare = check_report(f"销售额{sales.whole}元。", [ids[0]], ledger)
    assert [p.code for p in bare.problems] == ["SCOPE_UNSTATED"] * 2     # neither the statuses nor the period
    stated = check_report(f"按已付款订单统计，2026-10-01 至 2026-10-31 销售额{sales.whole}元。", [ids[0]], ledger)
    assert stated.ok
    assert check_report(f"销售额{sales.whole}元", [ids[0]], ledger, require_scope=False).ok   # a chart title


async def test_a_grouped_aggregate_keeps_its_definition(conn, demo_db):
    result = await query_orders(conn, metric_query(MetricKey.REFUNDS, start=OCTOBER[0], end=OCTOBER[1],
                                                   group_by=Dimension.REGION))
    for row in result.rows:
        assert row.value == sql_figure(demo_db, "sum", ("已退款",), *OCTOBER, region=row.key)
    assert result.as_tool_result()["metric_name"] == "退款额"
    assert result.as_tool_result()["counted_statuses"] == ["已退款"]
