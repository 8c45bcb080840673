"""The operators' tool set for /ask with a chat model: query_orders (fixed SQL chosen by arguments,
never SQL text), make_chart (draws a verified aggregate named by its evidence id, never numbers), and
submit_answer; the prompt that goes with them."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from agent.analytics.charts import ChartKind
from agent.tools import SubmitAnswer
from db.aggregates import Dimension
from db.metrics import DEFINITIONS, MetricKey, statuses_phrase
from db.schema import ORDER_STATUSES, REGIONS


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class QueryOrders(_Args):
    """Compute one metric over the shop's orders by fixed SQL, optionally grouped and filtered. Dates are
    Asia/Shanghai local dates, both inclusive (YYYY-MM-DD). Returns the rows and an agg: evidence id."""

    metric: MetricKey
    start: date | None = None
    end: date | None = None
    region: Literal[REGIONS] | None = None   # type: ignore[valid-type]
    category: str | None = Field(None, max_length=20)
    status: Literal[ORDER_STATUSES] | None = None   # type: ignore[valid-type]
    statuses: list[Literal[ORDER_STATUSES]] | None = Field(None, max_length=6)   # type: ignore[valid-type]
    group_by: Dimension | None = None
    top_n: int = Field(10, ge=1, le=50)


class MakeChart(_Args):
    """Draw a verified aggregate (by its agg: evidence id) as a chart; the picture is sent with your answer."""

    evidence_id: str = Field(min_length=5, max_length=60)
    kind: ChartKind
    title: str = Field(min_length=1, max_length=60)


@dataclass(frozen=True)
class ChartDrawn:
    """make_chart's result: the chart of a grouped aggregate, drawn and attached to the reply."""

    evidence_id: str
    title: str
    status: str = "drawn"


OPERATOR_TOOLS: dict[str, type[BaseModel]] = {"query_orders": QueryOrders, "make_chart": MakeChart,
                                              "submit_answer": SubmitAnswer}

OPERATOR_PROMPT = """你是运动用品网店的经营数据助手，回答店员关于订单的统计问题。今天是 {today}（Asia/Shanghai）。

规则：
1. 所有数字只能来自 query_orders 的结果，绝不自己计算、估算或相加；需要几个指标就调用几次。
2. 时间范围用 start / end（含首尾）。{period_hint}
3. 地区只有：{regions}；订单状态只有：{statuses}（“已完成”指“已签收”）。
4. 指标（metric）按本店的定义计算，各自默认统计的订单状态如下；问题明确说了状态时，用 statuses 传入这些状态：
{metrics}
5. 要图表时，先 query_orders（带 group_by），再用它的 evidence_id 调用 make_chart。
6. 最后调用 submit_answer：answer 用简体中文，写明所用日期范围（如“2026-10-01 至 2026-10-31”，没有范围时写“全部历史”）
   和统计的订单状态（如“按已付款订单统计”，见结果的 counted_statuses），每个数字说清是什么（用结果的 metric_name，
   如销售额、下单额、订单数）以及属于哪个分组；citation_ids 填写 agg: 编号。
7. submit_answer 被拒绝时，按拒绝原因修改后重新提交。"""


def operator_prompt(today: date, start: date | None, end: date | None) -> str:
    hint = (f"这个问题说的时间范围是 {start} 至 {end}，请使用这个范围。" if start and end else
            "问题没有说时间范围时，不要设置 start / end（统计全部历史），并在答案中说明。")
    return OPERATOR_PROMPT.format(today=today.isoformat(), period_hint=hint, regions="、".join(REGIONS),
                                  statuses="、".join(ORDER_STATUSES), metrics="\n".join(
                                      f"   - {d.key}：{d.label}（{statuses_phrase(d.statuses)}）" for d in DEFINITIONS))
