"""Charts an operator can read: every chart kind over real demo aggregates rendered to PNG, and no two of
its text boxes (title, scope line, axis labels, tick labels, legend entries) overlapping, by matplotlib's
own extents; value axes from zero; a pie's small slices grouped as 其他; the title's scope line states the
statuses and the period."""

from __future__ import annotations

import itertools
from datetime import date

import pytest

from agent.analytics.charts import OTHER, SMALL_SHARE, ChartKind, build_figure, draw_chart, pie_slices
from db.aggregates import Dimension, metric_query, query_orders
from db.metrics import MetricKey

D = date
CASES = [
    (MetricKey.SALES, Dimension.REGION, D(2026, 11, 23), D(2026, 11, 29)),
    (MetricKey.UNITS, Dimension.PRODUCT, D(2026, 11, 11), D(2026, 11, 11)),      # pack names, many small slices
    (MetricKey.SALES, Dimension.CATEGORY, D(2026, 10, 1), D(2026, 10, 31)),
    (MetricKey.ORDERS, Dimension.MONTH, D(2025, 10, 1), D(2026, 11, 29)),
    (MetricKey.PLACED, Dimension.DAY, D(2026, 9, 1), D(2026, 11, 29)),             # 90 days on one axis
    (MetricKey.AOV, Dimension.WEEK, D(2026, 7, 1), D(2026, 11, 29)),
]


def _texts(figure):
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    from matplotlib.text import Text

    return [(artist.get_text(), artist.get_window_extent(renderer))   # (a legend's TextArea wraps a Text)
            for artist in figure.findobj(Text) if artist.get_visible() and artist.get_text().strip()]


def _overlaps(a, b) -> bool:
    """Strictly overlapping boxes (touching edges, within a pixel, is not overlapping)."""
    return a.x0 < b.x1 - 1 and b.x0 < a.x1 - 1 and a.y0 < b.y1 - 1 and b.y0 < a.y1 - 1


@pytest.mark.parametrize("kind", list(ChartKind))
@pytest.mark.parametrize(("key", "group", "start", "end"), CASES)
async def test_no_two_text_boxes_overlap(conn, kind, key, group, start, end):
    result = await query_orders(conn, metric_query(key, start=start, end=end, group_by=group, top_n=20))
    figure = build_figure(result, kind, "订单统计图表的标题")
    texts = _texts(figure)
    clashes = [(a, b) for (a, box_a), (b, box_b) in itertools.combinations(texts, 2) if _overlaps(box_a, box_b)]
    assert not clashes, clashes
    assert len(texts) >= 4
    scope = [t for t, _ in texts if t.startswith("按")]
    assert scope and f"{start} 至 {end}" in scope[0] and "订单" in scope[0]
    if kind is not ChartKind.PIE:
        (axes,) = figure.axes
        horizontal = kind is ChartKind.BAR and group in (Dimension.REGION, Dimension.PRODUCT, Dimension.CATEGORY)
        assert (axes.get_xlim() if horizontal else axes.get_ylim())[0] == 0     # the value axis starts at zero
    assert draw_chart(result, kind, "订单统计图表的标题").startswith(b"\x89PNG")


async def test_small_pie_slices_are_grouped_as_other(conn):
    result = await query_orders(conn, metric_query(MetricKey.UNITS, start=D(2026, 11, 1), end=D(2026, 11, 29),
                                                   group_by=Dimension.PRODUCT, top_n=30))
    small = [r for r in result.rows if r.value / result.whole < SMALL_SHARE]
    unlisted = result.whole - sum(r.value for r in result.rows)          # the products beyond the top 30
    slices = pie_slices(result)
    assert small and unlisted > 0 and slices[-1][0] == OTHER
    assert slices[-1][1] == float(sum(r.value for r in small) + unlisted)
    assert len(slices) == len(result.rows) - len(small) + 1
    total = sum(v for _, v in slices)
    for key, value in slices[:-1]:                                       # each slice's share is the answer's
        (row,) = [r for r in result.rows if r.key == key]
        assert abs(100 * value / total - float(row.share)) < 0.06


async def test_a_monthly_line_starts_at_zero(conn):
    """The issue's chart: a line whose axis began at 1,100 made a 4% dip look like a collapse."""
    result = await query_orders(conn, metric_query(MetricKey.ORDERS, start=D(2026, 1, 1), end=D(2026, 11, 29),
                                                   group_by=Dimension.MONTH))
    (axes,) = build_figure(result, ChartKind.LINE, "今年每月订单数").axes
    low, high = axes.get_ylim()
    assert low == 0 and high >= float(max(r.value for r in result.rows))
    assert axes.get_ylabel() == "订单数（单）" and axes.get_xlabel() == "月份"
