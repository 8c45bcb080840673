"""Charts of a verified aggregate, as PNG bytes: matplotlib's object API (a Figure and an Agg canvas,
never pyplot's global state, so it is safe in a worker thread), Chinese labels in the CJK font the
project installs (Debian's fonts-wqy-microhei). A chart draws an aggregate's rows, never numbers
from a model. A glyph missing from the font is an error, not a box in the picture."""

from __future__ import annotations

import io
import warnings
from enum import StrEnum
from pathlib import Path

from db.aggregates import Aggregate

CJK_FONTS = ("WenQuanYi Micro Hei", "Noto Sans CJK SC", "Noto Sans SC", "Source Han Sans SC")
WQY_PATH = Path("/usr/share/fonts/truetype/wqy/wqy-microhei.ttc")


class ChartKind(StrEnum):
    BAR = "bar"
    LINE = "line"
    PIE = "pie"


class ChartError(Exception):
    """The chart could not be drawn correctly (no CJK font, a missing glyph)."""


def cjk_font():
    """The font for Chinese labels (matplotlib is imported here: half a second the bot does not pay at start)."""
    from matplotlib import font_manager

    if WQY_PATH.exists():
        return font_manager.FontProperties(fname=str(WQY_PATH))
    for family in CJK_FONTS:
        try:
            path = font_manager.findfont(family, fallback_to_default=False)
        except ValueError:
            continue
        return font_manager.FontProperties(fname=path)
    raise ChartError("no CJK font is installed (apt install fonts-wqy-microhei)")


SMALL_SHARE = 0.04   # pie slices under this share of the whole are drawn as one slice, 其他
MAX_TICKS = 12       # time axes label at most this many points
OTHER = "其他"
TIME_GROUPS = ("day", "week", "month")
_UNIT = {"count": "单", "units": "件"}
_DIMENSION = {"day": "日期", "week": "周（周一起）", "month": "月份", "region": "地区", "category": "品类",
              "product": "商品", "status": "订单状态"}


def scope_line(aggregate: Aggregate) -> str:
    """What a chart counted, under its title: the statuses and the period."""
    from db.metrics import statuses_phrase

    start, end = aggregate.period
    when = f"{start} 至 {end}" if start and end else "全部历史"
    return f"按{statuses_phrase(aggregate.statuses)}统计 · {when}"


def _label(aggregate: Aggregate) -> str:
    definition = aggregate.definition
    name = definition.label_for(aggregate.statuses) if definition else {"count": "订单数", "total": "金额", "average": "平均每单",
                                                 "max": "最高一单", "min": "最低一单", "units": "售出件数"}[aggregate.metric]
    return f"{name}（{_UNIT.get(aggregate.metric, '元')}）"


def pie_slices(aggregate: Aggregate) -> list[tuple[str, float]]:
    """The pie's slices (drawing only): each group; those under SMALL_SHARE of the whole, and the groups
    beyond the top N of a sum, together as 其他 — so each slice's share is its share of the whole, as the
    answer states it."""
    rows = [(row.key, float(row.value)) for row in aggregate.rows if row.value > 0]
    listed = sum(v for _, v in rows)
    additive = aggregate.metric in ("count", "total", "units")
    rest = max(float(aggregate.whole) - listed, 0.0) if additive else 0.0
    whole = (listed + rest) or 1.0
    big = [(k, v) for k, v in rows if v / whole >= SMALL_SHARE]
    small = sum(v for k, v in rows if v / whole < SMALL_SHARE) + rest
    return big + ([(OTHER, small)] if small else [])


def build_figure(aggregate: Aggregate, kind: ChartKind, title: str):
    """The chart as a matplotlib Figure (an Agg canvas attached): the title, then what it counted beneath;
    value axes from zero; a pie's small slices as 其他 and its labels in a legend beside it."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import FuncFormatter

    font = cjk_font()
    figure = Figure(figsize=(8, 5), dpi=110, layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    if kind is ChartKind.PIE:
        slices = pie_slices(aggregate)
        values = [v for _, v in slices]
        whole = sum(values) or 1.0
        wedges, _ = axes.pie(values, startangle=90, counterclock=False, wedgeprops={"linewidth": 1, "edgecolor": "white"})
        legend = axes.legend(wedges, [f"{k}  {100 * v / whole:.1f}%" for k, v in slices], loc="center left",
                             bbox_to_anchor=(1.0, 0.5), frameon=False, prop=font)
        legend.set_title(_label(aggregate), prop=font)
        axes.axis("equal")
    else:
        labels = [row.key for row in aggregate.rows]
        values = [float(row.value) for row in aggregate.rows]   # drawing only: the figures stated are Decimal
        positions = list(range(len(labels)))
        group = aggregate.query.group_by
        top = max(values, default=0) * 1.1 or 1
        if kind is ChartKind.BAR and group is not None and group.value not in TIME_GROUPS:
            # names (products, categories) read along a horizontal bar, the largest on top
            axes.barh(positions, values, color="#2a7ab0")
            axes.set_yticks(positions, labels)
            axes.invert_yaxis()
            value_axis, names = axes.xaxis, axes.get_yticklabels()
            axes.set_xlim(left=0, right=top)   # from zero
            axes.set_xlabel(_label(aggregate), fontproperties=font)
            axes.grid(axis="x", alpha=0.3)
        else:
            if kind is ChartKind.BAR:
                axes.bar(positions, values, color="#2a7ab0")
            else:
                axes.plot(positions, values, marker="o", color="#2a7ab0")
            step = max(1, -(-len(labels) // MAX_TICKS))
            axes.set_xticks(positions[::step], labels[::step])
            names = axes.get_xticklabels()
            if max((len(label) for label in labels[::step]), default=0) * len(labels[::step]) > 40:
                for label in names:   # upright, so neighbouring labels' boxes cannot overlap
                    label.set_rotation(90)
            axes.set_ylim(bottom=0, top=top)   # from zero: a dip is not a collapse
            value_axis = axes.yaxis
            axes.set_ylabel(_label(aggregate), fontproperties=font)
            axes.set_xlabel(_DIMENSION.get(group.value if group else "", ""), fontproperties=font)
            axes.grid(axis="y", alpha=0.3)
        for label in names:
            label.set_fontproperties(font)
        value_axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
    figure.suptitle(title, fontproperties=font, fontsize=13)
    axes.set_title(scope_line(aggregate), fontproperties=font, fontsize=9, color="#555555")
    return figure


def draw_chart(aggregate: Aggregate, kind: ChartKind, title: str) -> bytes:
    """The aggregate's rows as a PNG: groups as labels, the metric as values."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        figure = build_figure(aggregate, kind, title)
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png")
    missing = [str(w.message) for w in caught if "missing from" in str(w.message) or "Glyph" in str(w.message)]
    if missing:
        raise ChartError(missing[0])
    return buffer.getvalue()
