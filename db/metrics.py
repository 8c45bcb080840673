"""What the shop's figures mean, written once as data: each named metric (销售额, 客单价, 下单额…) is a
measure over the orders of some statuses. The operators' /ask (deterministic or with a chat model),
/stats, the web page and a customer's own spending all build their queries from these definitions, so
"销售额" means the same paid orders wherever it is shown. An operator who names statuses gets those
instead, and every answer says which statuses it counted."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from db.schema import ORDER_STATUSES

PAID = ("待发货", "运输中", "已签收")   # the orders a customer has paid for and not got back
PLACED = ORDER_STATUSES                # every order placed, whatever became of it
REFUNDED = ("已退款",)
CANCELLED = ("已取消",)


class Metric(StrEnum):
    """What is computed over the matching orders."""

    COUNT = "count"       # orders
    TOTAL = "total"       # the amount paid, summed
    AVERAGE = "average"   # amount per order
    MAX = "max"           # the largest single order
    MIN = "min"
    UNITS = "units"       # items sold


class MetricKey(StrEnum):
    """The named metrics (query_orders' `metric`). The first six keep the measure's own name: a model
    asking for "total" gets 销售额 over paid orders, the shop's meaning of a total."""

    ORDERS = "count"
    SALES = "total"
    AOV = "average"
    LARGEST = "max"
    SMALLEST = "min"
    UNITS = "units"
    PLACED = "placed"
    PLACED_COUNT = "placed_count"
    REFUNDS = "refunds"
    REFUND_COUNT = "refund_count"
    CANCELLED = "cancelled"


@dataclass(frozen=True)
class MetricDefinition:
    key: MetricKey
    label: str                      # what an operator reads
    measure: Metric
    statuses: tuple[str, ...]       # counted unless the operator names others
    words: str                      # how operators ask for it (a regular expression)

    def counted(self, named: tuple[str, ...] | None) -> tuple[str, ...]:
        """The statuses a query counts: those the operator named, else this metric's own."""
        return tuple(named) if named else self.statuses

    def label_for(self, statuses: tuple[str, ...] | None) -> str:
        """The name of this metric over these statuses: 销售额 and 客单价 are of paid orders; over orders not
        (all) paid the same sum is 订单金额, the same average 平均每单."""
        if self.statuses == PAID and not set(statuses or PLACED) <= set(PAID):
            return {Metric.TOTAL: "订单金额", Metric.AVERAGE: "平均每单"}.get(self.measure, self.label)
        return self.label


# Ordered: a more specific name is read before a general one ("退款金额" is 退款额, not 金额 of sales).
DEFINITIONS: tuple[MetricDefinition, ...] = (
    MetricDefinition(MetricKey.PLACED, "下单额", Metric.TOTAL, PLACED, "下单额|下单金额|下单总额"),
    MetricDefinition(MetricKey.PLACED_COUNT, "下单数", Metric.COUNT, PLACED, "下单数|下单量|下了多少单|下单多少"),
    MetricDefinition(MetricKey.REFUND_COUNT, "退款单数", Metric.COUNT, REFUNDED,
                     "退款单数|退款订单数|退了多少单|多少单退款|退款(?:的)?(?:订单)?(?:有)?(?:多少|几)单"),
    MetricDefinition(MetricKey.REFUNDS, "退款额", Metric.TOTAL, REFUNDED, "退款额|退款金额|退款总额|退了多少钱|退款多少"),
    MetricDefinition(MetricKey.CANCELLED, "取消单数", Metric.COUNT, CANCELLED,
                     "取消单数|取消订单数|取消了多少单|多少单取消|取消(?:的)?(?:订单)?(?:有)?(?:多少|几)单?"),
    MetricDefinition(MetricKey.AOV, "客单价", Metric.AVERAGE, PAID, "平均|客单价|均价|人均"),
    MetricDefinition(MetricKey.LARGEST, "最高一单", Metric.MAX, PAID, "最高|最大|最贵"),
    MetricDefinition(MetricKey.SMALLEST, "最低一单", Metric.MIN, PAID, "最低|最小|最便宜"),
    MetricDefinition(MetricKey.UNITS, "售出件数", Metric.UNITS, PAID,
                     "多少件|几件|件数|销量|卖了多少个|卖出多少|卖得最好|最畅销|热销"),
    MetricDefinition(MetricKey.ORDERS, "订单数", Metric.COUNT, PAID,
                     "多少单|几单|单量|订单数|多少笔|几笔|多少个订单|多少订单"),
    MetricDefinition(MetricKey.SALES, "销售额", Metric.TOTAL, PAID,
                     "多少钱|销售额|营业额|成交额|总额|金额|收入|流水|花了|消费"),
)
BY_KEY: dict[MetricKey, MetricDefinition] = {d.key: d for d in DEFINITIONS}

def in_order(statuses: tuple[str, ...] | None) -> tuple[str, ...]:
    """The statuses (None: all) in the schema's order."""
    return tuple(s for s in ORDER_STATUSES if s in (statuses or PLACED))


def statuses_phrase(statuses: tuple[str, ...] | None) -> str:
    """How an answer names the orders it counted: "已付款订单（待发货、运输中、已签收）"."""
    chosen = in_order(statuses)
    if chosen == PAID:
        return "已付款订单（" + "、".join(PAID) + "）"
    if chosen == PLACED:
        return "全部已下单订单（" + "、".join(PLACED) + "）"
    return "、".join(chosen) + "订单"


def stated_by(statuses: tuple[str, ...] | None) -> tuple[tuple[str, ...], ...]:
    """The ways an answer may state these statuses: any one alternative, every word of it present."""
    chosen = in_order(statuses)
    if chosen == PAID:
        return (("已付款",), PAID)
    if chosen == PLACED:
        return (("全部已下单",), ("全部订单",), ("所有订单",), PLACED)
    return (chosen,)
