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


def draw_chart(aggregate: Aggregate, kind: ChartKind, title: str) -> bytes:
    """The aggregate's rows as a PNG: groups as labels, the metric as values."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    font = cjk_font()
    labels = [row.key for row in aggregate.rows]
    values = [float(row.value) for row in aggregate.rows]   # drawing only: the figures stated are Decimal
    figure = Figure(figsize=(8, 5), dpi=110)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if kind is ChartKind.PIE:
            wedges, texts, autotexts = axes.pie(values, labels=labels, autopct="%1.1f%%", startangle=90,
                                                counterclock=False)
            for text in [*texts, *autotexts]:
                text.set_fontproperties(font)
            axes.axis("equal")
        else:
            if kind is ChartKind.BAR:
                axes.bar(labels, values, color="#2a7ab0")
            else:
                axes.plot(labels, values, marker="o", color="#2a7ab0")
            for label in axes.get_xticklabels():
                label.set_fontproperties(font)
                label.set_rotation(30 if len(labels) > 6 else 0)
            axes.grid(axis="y", alpha=0.3)
        axes.set_title(title, fontproperties=font)
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", bbox_inches="tight")
    missing = [str(w.message) for w in caught if "missing from" in str(w.message) or "Glyph" in str(w.message)]
    if missing:
        raise ChartError(missing[0])
    return buffer.getvalue()
