"""Computing over orders: date phrases, aggregates recomputed independently from the raw rows with
Decimal, the cache and the timeout, the report checker, charts with Chinese labels, the operator's
analyst and a customer's own spending."""

from __future__ import annotations

import re
import sqlite3
from datetime import date
from decimal import ROUND_HALF_UP, Decimal

import pytest

from agent.analytics.analyst import SHOP_DATA_REFUSAL, Analyst, read_question
from agent.analytics.charts import ChartError, ChartKind, draw_chart
from agent.analytics.periods import resolve
from agent.turn import Agent
from db.aggregates import (
    PAID,
    AggregateError,
    Dimension,
    Metric,
    OrderAnalytics,
    OrderQuery,
    _fetch,
    query_orders,
)
from db.pricing import yuan
from guardrails.ledger import EvidenceLedger
from guardrails.reports import check_report
from tests.fakes.demo import DEMO_DAY

D = date


@pytest.mark.parametrize(("phrase", "start", "end"), [
    ("上个月已签收订单一共多少钱", D(2026, 10, 1), D(2026, 10, 31)),
    ("本月销售额", D(2026, 11, 1), D(2026, 11, 29)),
    ("这个月我花了多少钱", D(2026, 11, 1), D(2026, 11, 29)),
    ("最近7天的订单数", D(2026, 11, 23), D(2026, 11, 29)),
    ("近三十天", D(2026, 10, 31), D(2026, 11, 29)),
    ("上周卖了多少", D(2026, 11, 16), D(2026, 11, 22)),
    ("今年每个月", D(2026, 1, 1), D(2026, 11, 29)),
    ("第三季度各地区", D(2026, 7, 1), D(2026, 9, 30)),
    ("今年第三季度", D(2026, 7, 1), D(2026, 9, 30)),
    ("双十一卖了多少单", D(2026, 11, 11), D(2026, 11, 11)),
    ("去年双十一", D(2025, 11, 11), D(2025, 11, 11)),
    ("10月的订单", D(2026, 10, 1), D(2026, 10, 31)),
    ("12月的订单", D(2025, 12, 1), D(2025, 12, 31)),          # December has not begun this year
    ("2025年12月", D(2025, 12, 1), D(2025, 12, 31)),
    ("去年10月", D(2025, 10, 1), D(2025, 10, 31)),
    ("昨天的订单", D(2026, 11, 28), D(2026, 11, 28)),
    ("上个月去年同期", D(2025, 10, 1), D(2025, 10, 31)),
    ("去年同期", D(2025, 11, 1), D(2025, 11, 29)),
])
def test_periods_resolve_to_dates(phrase, start, end):
    period = resolve(phrase, DEMO_DAY)
    assert (period.start, period.end) == (start, end)
    assert str(period) == f"{start} 至 {end}"


@pytest.mark.parametrize("text", ["各地区销售额", "足球多少钱", ""])
def test_no_period_is_no_period(text):
    assert resolve(text, DEMO_DAY) is None


def expected(db, metric: Metric, start: date, end: date, **where) -> Decimal:
    """Independent recomputation: every matching row read, summed in Decimal in Python."""
    conn = sqlite3.connect(db)
    rows = [r for r in conn.execute(
        "SELECT o.total, o.quantity, o.status, o.region, p.category, o.user_id FROM orders o JOIN products p "
        "USING (product_id) WHERE substr(o.created_at, 1, 10) BETWEEN ? AND ?", (start.isoformat(), end.isoformat()))
        if all({"status": r[2], "region": r[3], "category": r[4], "user_id": r[5]}[k] == v for k, v in where.items())]
    conn.close()
    totals = [Decimal(r[0]) for r in rows]
    if metric is Metric.COUNT:
        return Decimal(len(rows))
    if metric is Metric.UNITS:
        return Decimal(sum(r[1] for r in rows))
    if metric is Metric.TOTAL:
        return sum(totals, Decimal(0))
    if metric is Metric.AVERAGE:
        return (sum(totals, Decimal(0)) / len(totals)).quantize(Decimal("0.01"), ROUND_HALF_UP)
    return max(totals) if metric is Metric.MAX else min(totals)


@pytest.mark.parametrize("metric", list(Metric))
@pytest.mark.parametrize("where", [{}, {"status": "已签收"}, {"region": "华东", "category": "跑步"}])
async def test_aggregates_equal_an_independent_decimal_recomputation(conn, demo_db, metric, where):
    start, end = D(2026, 10, 1), D(2026, 10, 31)
    result = await query_orders(conn, OrderQuery(metric, start, end, **where))
    assert result.whole == expected(demo_db, metric, start, end, **where)
    assert result.orders == expected(demo_db, Metric.COUNT, start, end, **where)
    assert result.evidence_id.startswith(f"agg:{metric}:")


async def test_groups_shares_and_the_demo_history(conn, demo_db):
    result = await query_orders(conn, OrderQuery(Metric.TOTAL, D(2026, 10, 1), D(2026, 10, 31),
                                                 group_by=Dimension.REGION))
    assert sum(r.value for r in result.rows) == result.whole
    assert {r.key for r in result.rows} == {"华东", "华南", "华北", "华中", "西南", "西北", "东北"}
    for row in result.rows:
        assert row.value == expected(demo_db, Metric.TOTAL, D(2026, 10, 1), D(2026, 10, 31), region=row.key)
        assert row.share == (row.value * 100 / result.whole).quantize(Decimal("0.1"), ROUND_HALF_UP)
    months = await query_orders(conn, OrderQuery(Metric.COUNT, group_by=Dimension.MONTH))
    assert sum(r.value for r in months.rows) >= 20_000 and len(months.rows) == 14   # 13 months and a part
    top = await query_orders(conn, OrderQuery(Metric.UNITS, group_by=Dimension.PRODUCT, top_n=3))
    assert len(top.rows) == 3 and top.rows[0].value >= top.rows[1].value >= top.rows[2].value


async def test_bad_queries_and_the_timeout(conn):
    with pytest.raises(AggregateError, match="region"):
        await query_orders(conn, OrderQuery(Metric.COUNT, region="火星"))
    with pytest.raises(AggregateError, match="starts after"):
        await query_orders(conn, OrderQuery(Metric.COUNT, D(2026, 10, 2), D(2026, 10, 1)))
    endless = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT count(*) FROM n"
    with pytest.raises(AggregateError, match="longer than 0.2 s"):
        await _fetch(conn, endless, [], 0.2)
    assert (await query_orders(conn, OrderQuery(Metric.COUNT))).orders > 0   # the connection still works


async def test_identical_queries_come_from_the_cache(conn):
    analytics = OrderAnalytics(conn)
    query = OrderQuery(Metric.TOTAL, D(2026, 10, 1), D(2026, 10, 31))
    first, second = await analytics.query(query), await analytics.query(query)
    assert first is second and (analytics.hits, analytics.misses) == (1, 1)
    await analytics.query(OrderQuery(Metric.TOTAL, D(2026, 10, 1), D(2026, 10, 30)))
    assert analytics.misses == 2


async def test_the_report_check(conn):
    ledger = EvidenceLedger()
    period = dict(start=D(2026, 10, 1), end=D(2026, 10, 31), status="已签收")
    total = await query_orders(conn, OrderQuery(Metric.TOTAL, **period))
    average = await query_orders(conn, OrderQuery(Metric.AVERAGE, **period))
    regions = await query_orders(conn, OrderQuery(Metric.TOTAL, D(2026, 10, 1), D(2026, 10, 31),
                                                  group_by=Dimension.REGION))
    ids = [ledger.add_aggregate(a) for a in (total, average, regions)]
    first, second = regions.rows[0], regions.rows[1]

    def codes(answer: str, cited=ids) -> list[str]:
        return check_report(answer, cited, ledger).codes

    assert codes(f"2026-10-01 至 2026-10-31 已签收订单共{total.orders}单，一共{total.whole}元，"
                 f"平均每单{average.whole}元。") == []
    assert codes(f"共{total.orders:,}单") == []                                   # thousands separators
    assert codes(f"{first.key}销售额{first.value}元，占{first.share}%") == []
    assert codes(f"已签收订单一共{average.whole}元。") == ["WRONG_ROLE"]          # an average stated as a total
    assert codes(f"{second.key}销售额{first.value}元。") == ["WRONG_ROLE"]        # another group's figure
    assert codes(f"共{total.orders + 1}单") == ["UNVERIFIED_QUANTITY"]
    assert codes("一共1,000.50元") == ["UNVERIFIED_AMOUNT"]
    assert codes(f"2026-09-01 至 2026-10-31 共{total.orders}单") == ["UNVERIFIED_DATE"]
    assert codes("10月的订单") == [] and codes("9月的订单") == ["UNVERIFIED_DATE"]
    assert codes(f"共{total.orders}单", []) == ["NO_CITATION"]
    assert codes(f"共{total.orders}单", ["agg:nope"]) == ["NEEDS_AGGREGATE", "UNKNOWN_CITATION"]


@pytest.mark.parametrize("kind", list(ChartKind))
async def test_charts_draw_chinese_without_missing_glyphs(conn, kind):
    result = await query_orders(conn, OrderQuery(Metric.TOTAL, D(2026, 10, 1), D(2026, 10, 31),
                                                 group_by=Dimension.CATEGORY))
    png = draw_chart(result, kind, "上个月各品类销售额（2026-10-01 至 2026-10-31）")
    assert png.startswith(b"\x89PNG") and len(png) > 5000


async def test_a_missing_glyph_fails_the_chart(conn):
    result = await query_orders(conn, OrderQuery(Metric.COUNT, group_by=Dimension.REGION))
    with pytest.raises(ChartError):
        draw_chart(result, ChartKind.BAR, "销售额 \U00020000")   # a CJK Extension B character no common font has


def test_reading_an_operator_question():
    ask = read_question("上个月华东已完成的跑步订单一共多少钱，平均客单价多少，做成饼图", DEMO_DAY,
                        frozenset({"跑步", "足球"}))
    assert ask.metrics == (Metric.TOTAL, Metric.AVERAGE) and ask.status == "已签收" and ask.region == "华东"
    assert ask.category == "跑步" and ask.chart is ChartKind.PIE and ask.group_by is Dimension.REGION
    assert read_question("今年每个月的订单数 折线图", DEMO_DAY).group_by is Dimension.MONTH
    assert read_question("卖得最好的前5个商品", DEMO_DAY).top_n == 5


async def test_the_analyst_answers_with_checked_figures_and_a_chart(conn, demo_db):
    analyst = Analyst(OrderAnalytics(conn), lambda: DEMO_DAY)
    report = await analyst.ask("上个月已签收的订单一共多少单，多少钱")
    count = expected(demo_db, Metric.COUNT, D(2026, 10, 1), D(2026, 10, 31), status="已签收")
    total = expected(demo_db, Metric.TOTAL, D(2026, 10, 1), D(2026, 10, 31), status="已签收")
    assert report.status == "grounded" and f"{count}单" in report.answer and f"{total}元" in report.answer
    assert "2026-10-01 至 2026-10-31" in report.answer and all(c.startswith("agg:") for c in report.citations)
    chart = await analyst.ask("最近7天各地区销售额，做成饼图")
    assert chart.chart.startswith(b"\x89PNG") and chart.caption == chart.answer and "华东" in chart.caption
    assert [v.ok for v in chart.trace.verdicts] == [True, True]                  # the answer, then the caption


async def test_a_customer_gets_their_own_spending_and_not_the_shops(conn, demo_db, search):
    agent = Agent(conn, search, today=lambda: DEMO_DAY)
    mine = await agent.answer("我这个月在店里花了多少钱", user_id="console")
    paid = sum((expected(demo_db, Metric.TOTAL, D(2026, 11, 1), DEMO_DAY, user_id="console", status=s)
                for s in PAID), Decimal(0))
    assert mine.status == "grounded" and yuan(paid) in mine.answer and "2026-11-01 至 2026-11-29" in mine.answer
    assert all(c.startswith("agg:") for c in mine.citations)
    stranger = await agent.answer("我这个月在店里花了多少钱", user_id="nobody-here")
    assert "没有已付款的订单" in stranger.answer
    for question in ["店里上个月卖了多少单", "你们这个月销售额多少", "别人买了什么"]:
        refused = await agent.answer(question, user_id="console")
        assert refused.answer == SHOP_DATA_REFUSAL and not re.search(r"\d", refused.answer)


# --- /ask with a chat model: the operator tool set, checked arguments, checked answers ---------------

def _tool_reply(name: str, arguments: dict, call_id: str = "c1"):
    import json

    from agent.models import ModelReply, call

    return ModelReply(tool_calls=[call(name, json.dumps(arguments, ensure_ascii=False), call_id)])


def _last_tool_result(messages) -> dict:
    import json

    return json.loads(next(m for m in reversed(messages) if m["role"] == "tool")["content"])


async def test_a_model_answers_with_the_operator_tools(conn, demo_db):
    from agent.models import ScriptedModel

    count = expected(demo_db, Metric.COUNT, D(2026, 10, 1), D(2026, 10, 31), status="已签收")

    def submit(messages):
        result = _last_tool_result(messages)
        return _tool_reply("submit_answer", {
            "answer": f"2026-10-01 至 2026-10-31 已签收的订单共{result['whole']}单。",
            "citation_ids": [result["evidence_id"]], "status": "grounded"}, "c3")

    model = ScriptedModel([
        _tool_reply("query_orders", {"metric": "count", "start": "2026-09-01", "end": "2026-09-30", "status": "已签收"}),
        _tool_reply("query_orders", {"metric": "count", "start": "2026-10-01", "end": "2026-10-31", "status": "已签收"},
                    "c2"),
        submit])
    analyst = Analyst(OrderAnalytics(conn), lambda: DEMO_DAY, model)
    report = await analyst.ask("上个月已签收的订单有多少单")
    assert report.status == "grounded" and report.answer == f"2026-10-01 至 2026-10-31 已签收的订单共{count}单。"
    first_result = model.calls[1][0][-1]["content"]
    assert "PERIOD_MISMATCH" in first_result and "2026-10-01" in first_result   # the wrong month was refused
    assert not report.trace.degraded and report.trace.model_calls == 3


async def test_a_model_that_invents_figures_never_reaches_the_operator(conn, demo_db):
    from agent.models import ScriptedModel

    lie = _tool_reply("submit_answer", {"answer": "2026-10-01 至 2026-10-31 已签收的订单共99999单，一共12345.67元。",
                                        "citation_ids": [], "status": "grounded"})
    model = ScriptedModel([_tool_reply("query_orders", {"metric": "total", "start": "2026-10-01",
                                                        "end": "2026-10-31", "status": "已签收"}), lie, lie, lie])
    report = await Analyst(OrderAnalytics(conn), lambda: DEMO_DAY, model).ask("上个月已签收订单一共多少钱")
    total = expected(demo_db, Metric.TOTAL, D(2026, 10, 1), D(2026, 10, 31), status="已签收")
    assert "99999" not in report.answer and "12345.67" not in report.answer
    assert report.trace.degraded and report.status == "grounded" and f"{total}元" in report.answer   # the template


async def test_a_model_charts_a_verified_aggregate_by_its_id(conn):
    from agent.models import ScriptedModel

    def chart(messages):
        return _tool_reply("make_chart", {"evidence_id": _last_tool_result(messages)["evidence_id"], "kind": "bar",
                                          "title": "最近7天各地区销售额"}, "c2")

    def submit(messages):
        query = json_of_first_query(messages)
        rows = "；".join(f"{r['key']}{r['value']}元" for r in query["rows"])
        return _tool_reply("submit_answer", {"answer": f"按已付款订单统计，2026-11-23 至 2026-11-29 各地区销售额：{rows}。",
                                             "citation_ids": [query["evidence_id"]], "status": "grounded"}, "c3")

    def json_of_first_query(messages):
        import json

        return json.loads(next(m for m in messages if m["role"] == "tool")["content"])

    model = ScriptedModel([_tool_reply("query_orders", {"metric": "total", "start": "2026-11-23", "end": "2026-11-29",
                                                        "group_by": "region"}), chart, submit])
    report = await Analyst(OrderAnalytics(conn), lambda: DEMO_DAY, model).ask("最近7天各地区销售额画个柱状图")
    assert report.status == "grounded" and report.chart.startswith(b"\x89PNG") and report.caption == report.answer
    assert not report.trace.degraded   # the model's own answer, released
    bad = ScriptedModel([_tool_reply("make_chart", {"evidence_id": "agg:total:0000000000", "kind": "pie",
                                                    "title": "x"})] + [_tool_reply("submit_answer", {
                                                        "answer": "没有数据", "citation_ids": [],
                                                        "status": "insufficient_evidence"})] * 3)
    report = await Analyst(OrderAnalytics(conn), lambda: DEMO_DAY, bad).ask("最近7天各地区销售额画个柱状图")
    assert "UNKNOWN_EVIDENCE" in bad.calls[1][0][-1]["content"] and report.trace.degraded


async def test_a_customers_own_orders_and_no_hint_about_anyone_elses(conn, search):
    agent = Agent(conn, search, today=lambda: DEMO_DAY)
    last = await agent.answer("我上次买的什么", user_id="console")
    assert "A1002" in last.answer and "瑜伽垫" in last.answer
    theirs = await agent.answer("查一下订单A1003", user_id="console")        # 10001's order
    nobody = await agent.answer("查一下订单Z9999", user_id="console")        # no such order
    assert theirs.answer == nobody.answer and "A1003" not in theirs.answer and "480" not in theirs.answer
